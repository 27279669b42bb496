"""`jacked install --agent gemini`: jacked's MCP server in Gemini CLI's user settings.

Gemini CLI reads its user settings from `~/.gemini/settings.json`, where `~` is
`GEMINI_CLI_HOME` when that is set (Gemini CLI's own `homedir()`), else the home folder. Install
adds a stdio server under `mcpServers`:

    "mcpServers": {"jacked": {"command": <jacked>, "args": [..., "mcp"]}}

Every other key is kept. The previous file is copied to `<file>.jacked.bak` (mode 0600) before
it is written; a file that is a symlink (a dotfiles repo) is written through to its target.
A file jacked cannot read (not JSON, not an object, `mcpServers` not an object, a `jacked`
server that is someone else's) is refused with a `JackedError` before anything is touched, and
so is a file with comments: Gemini CLI accepts them, but rewriting the file would drop them.
Uninstall takes out exactly the `jacked` entry (and `mcpServers` when nothing else is left in
it; the file when nothing is left at all).
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jacked.errors import JackedError
from jacked.surfaces.agent_install.configfile import load_json_object, read_config, write_json

NAME = "jacked"
KEY = "mcpServers"


def settings_path(environ: Mapping[str, str]) -> Path:
    """Gemini CLI's user settings file."""
    home = environ.get("GEMINI_CLI_HOME", "").strip()
    if not home:
        home = environ.get("HOME", "").strip() or os.path.expanduser("~")
    return Path(home).expanduser() / ".gemini" / "settings.json"


def entry(exe: list[str]) -> dict[str, Any]:
    """The MCP server entry (Gemini CLI's `MCPServerConfig` for a stdio server)."""
    return {"command": exe[0], "args": [*exe[1:], "mcp"]}


def is_ours(value: Any) -> bool:
    """A `jacked` server install could have written: one that runs `<something> mcp`."""
    return (isinstance(value, dict) and isinstance(value.get("command"), str) and isinstance(value.get("args"), list)
            and value["args"][-1:] == ["mcp"])


def install(exe: list[str], environ: Mapping[str, str]) -> Path:
    """Add (or update) the `jacked` MCP server in Gemini CLI's settings; the file written."""
    return install_into(settings_path(environ), "Gemini CLI's settings file", exe)


def install_into(path: Path, what: str, exe: list[str]) -> Path:
    """Add (or update) the `jacked` stdio server under `mcpServers` of the JSON file `path`
    (Gemini CLI's shape, which Cursor shares); the file written."""
    if not exe:
        raise JackedError("no jacked command to register")
    raw = read_config(path, what)
    data = _load(path, raw)
    servers = data.setdefault(KEY, {})
    if not isinstance(servers, dict):
        raise JackedError(f'{path}: "{KEY}" is not an object; jacked leaves the file untouched')
    if NAME in servers and not is_ours(servers[NAME]):
        raise JackedError(f'{path}: an MCP server named "{NAME}" is already there and is not jacked\'s; '
                          f"rename or remove it first, jacked leaves the file untouched")
    wanted = entry(exe)
    if servers.get(NAME) == wanted:
        return path  # already installed: nothing to write
    servers[NAME] = wanted
    write_json(path, raw, data)
    return path


def uninstall(environ: Mapping[str, str]) -> Path | None:
    """Take the `jacked` MCP server out of Gemini CLI's settings; the file changed, or None."""
    return uninstall_from(settings_path(environ), "Gemini CLI's settings file")


def uninstall_from(path: Path, what: str) -> Path | None:
    """Take the `jacked` server out of `mcpServers` of the JSON file `path`; the file changed, or None."""
    raw = read_config(path, what)
    if raw is None:
        return None
    data = _load(path, raw)
    servers = data.get(KEY)
    if not isinstance(servers, dict) or not is_ours(servers.get(NAME)):
        return None
    del servers[NAME]
    if not servers:
        del data[KEY]
    write_json(path, raw, data)
    return path


def _load(path: Path, raw: bytes | None) -> dict[str, Any]:
    """The settings as a dict, or a one-line refusal; nothing is written before this."""
    return load_json_object(path, raw, comments_refusal=(
        f'add this to its "{KEY}" object by hand, or remove the comments: '
        f'"{NAME}": {{"command": <jacked>, "args": ["mcp"]}}'))
