"""Settings: where the Claude directory and jacked's data live, which backend and model to use.

Precedence: CLI flags > `<claude dir>/jacked.json` > environment (`JACKED_*`) > defaults.
"""
from __future__ import annotations

import getpass
import os
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path


class ConfigError(Exception):
    """A configuration problem the user must fix; the message names the key or file."""


def default_claude_dir() -> Path:
    """`CLAUDE_CONFIG_DIR` (Claude Code's own variable), else `~/.claude`."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() if env else Path.home() / ".claude"


def default_user_name() -> str:
    """`JACKED_USER_NAME`, else `git config user.name`, else the OS user."""
    env = os.environ.get("JACKED_USER_NAME")
    if env:
        return env
    try:
        out = subprocess.run(["git", "config", "user.name"], capture_output=True, text=True, timeout=2)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        return getpass.getuser()
    except Exception:  # getuser raises various errors when no user can be found
        return "unknown"


@dataclass
class Settings:
    """Resolved settings for one jacked run."""

    claude_dir: Path = field(default_factory=default_claude_dir)
    home: Path | None = None
    user_name: str = field(default_factory=default_user_name)
    machine: str = field(default_factory=socket.gethostname)

    def __post_init__(self) -> None:
        self.claude_dir = Path(self.claude_dir).expanduser()
        if self.home is None:
            env = os.environ.get("JACKED_HOME")
            self.home = Path(env).expanduser() if env else self.claude_dir / "jacked"
        self.home = Path(self.home).expanduser()

    @property
    def projects_dir(self) -> Path:
        return self.claude_dir / "projects"

    @property
    def plans_dir(self) -> Path:
        return self.claude_dir / "plans"

    @property
    def catalog_path(self) -> Path:
        return self.home / "catalog.db"


def load_settings(claude_dir: Path | str | None = None, **overrides: object) -> Settings:
    """Settings for this run; `claude_dir` and `overrides` come from CLI flags."""
    kwargs: dict[str, object] = {k: v for k, v in overrides.items() if v is not None}
    if claude_dir is not None:
        kwargs["claude_dir"] = Path(claude_dir)
    return Settings(**kwargs)  # type: ignore[arg-type]
