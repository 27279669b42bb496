"""`jacked install --agent codex`: jacked's MCP server in Codex CLI's own configuration.

Codex reads `$CODEX_HOME/config.toml` (default `~/.codex/config.toml`); install adds

    [mcp_servers.jacked]
    command = "<jacked>"
    args = ["mcp"]

(`command` is the first word of the jacked command, `args` the rest and `mcp`). The file is
edited with tomlkit (`jacked.sources.codex.mcp_config`): the user's comments, order and other
tables stay byte for byte. The previous file is copied to `config.toml.jacked.bak` (mode 0600)
before it is written; a symlinked file is written through to its target. A file jacked cannot
edit (not TOML, not UTF-8, `mcp_servers` not a table, a `jacked` server that runs something
else) is refused with a `JackedError` before anything is touched. Uninstall takes out exactly
the `jacked` table (and `[mcp_servers]` when nothing else is left; the file when nothing is
left at all and jacked could have created it).
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from jacked.errors import JackedError
from jacked.sources.codex import mcp_config
from jacked.surfaces.agent_install.configfile import decode, read_config, write_config

NAME = "jacked"


def config_path(environ: Mapping[str, str]) -> Path:
    """`$CODEX_HOME/config.toml`, else `~/.codex/config.toml`."""
    return mcp_config.config_path(environ)


def install(exe: list[str], environ: Mapping[str, str]) -> Path:
    """Add (or update) the `jacked` MCP server in Codex's configuration; the file written."""
    if not exe:
        raise JackedError("no jacked command to register")
    path = config_path(environ)
    raw, text = _read(path)
    try:
        new = mcp_config.add_server(text, NAME, exe[0], [*exe[1:], "mcp"])
    except mcp_config.CodexConfigError as e:
        raise JackedError(f"{path}: {e}") from None
    if raw is None or new != text:
        write_config(path, raw, new, empty=not new.strip())
    return path


def uninstall(environ: Mapping[str, str]) -> Path | None:
    """Take the `jacked` MCP server out of Codex's configuration; the file changed, or None."""
    path = config_path(environ)
    raw, text = _read(path)
    if raw is None:
        return None
    try:
        new, found = mcp_config.remove_server(text, NAME)
    except mcp_config.CodexConfigError as e:
        raise JackedError(f"{path}: {e}") from None
    if not found:
        return None
    write_config(path, raw, new, empty=not new.strip())
    return path


def _read(path: Path) -> tuple[bytes | None, str]:
    raw = read_config(path, "Codex's configuration file")
    return (raw, decode(path, raw)) if raw is not None else (None, "")
