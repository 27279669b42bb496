"""Registering jacked's MCP server with Codex CLI: the `[mcp_servers.<name>]` table of
`$CODEX_HOME/config.toml` (`command` and `args`, as Codex reads them).

The file is edited with tomlkit, so the user's comments, order and formatting stay as they
are; only jacked's table is added or taken out. These functions work on text; writing the
file (backups, byte-identical uninstall) is the installer's job.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import tomlkit
from tomlkit.exceptions import TOMLKitError

from jacked.sources.codex.source import codex_home

CONFIG_FILE = "config.toml"
TABLE = "mcp_servers"


class CodexConfigError(ValueError):
    """config.toml cannot be edited as it is (not TOML, or `mcp_servers` is not a table)."""


def config_path(environ: Mapping[str, str]) -> Path:
    """`$CODEX_HOME/config.toml` (else `~/.codex/config.toml`)."""
    return codex_home(environ) / CONFIG_FILE


def _parse(text: str) -> tomlkit.TOMLDocument:
    try:
        return tomlkit.parse(text)
    except TOMLKitError as e:
        raise CodexConfigError(f"not valid TOML ({e}): fix it first; jacked leaves it untouched") from None


def _servers(doc: tomlkit.TOMLDocument, create: bool) -> dict | None:
    servers = doc.get(TABLE)
    if servers is None:
        if not create:
            return None
        servers = tomlkit.table(is_super_table=True)
        doc[TABLE] = servers
    if not isinstance(servers, dict):
        raise CodexConfigError(f"`{TABLE}` is not a table: jacked leaves it untouched")
    return servers


def is_ours(entry: object) -> bool:
    """A server entry jacked wrote: its args end with `mcp` (a server of the same name that
    runs something else is the user's)."""
    if not isinstance(entry, dict):
        return False
    args = entry.get("args")
    return isinstance(args, list) and list(args)[-1:] == ["mcp"]


def add_server(text: str, name: str, command: str, args: list[str]) -> str:
    """`text` with `[mcp_servers.<name>]` set to `command` and `args` (unchanged text when it
    already is). A same-named server that is not jacked's is an error, not overwritten."""
    doc = _parse(text)
    servers = _servers(doc, create=True)
    assert servers is not None
    current = servers.get(name)
    wanted = {"command": command, "args": list(args)}
    if current is not None:
        if not is_ours(current):
            raise CodexConfigError(f"[{TABLE}.{name}] is another server: jacked leaves it untouched")
        plain = current.unwrap() if hasattr(current, "unwrap") else dict(current)
        if {k: plain.get(k) for k in wanted} == wanted:
            return text
        for key, value in wanted.items():
            current[key] = value  # other keys (env, timeouts) the user added stay
        return tomlkit.dumps(doc)
    table = tomlkit.table()
    table["command"] = command
    table["args"] = list(args)
    servers[name] = table
    return tomlkit.dumps(doc)


def remove_server(text: str, name: str) -> tuple[str, bool]:
    """`(text without jacked's [mcp_servers.<name>], whether it was there)`; an `mcp_servers`
    table left empty goes too."""
    doc = _parse(text)
    servers = _servers(doc, create=False)
    if servers is None or not is_ours(servers.get(name)):
        return text, False
    del servers[name]
    if not servers:
        del doc[TABLE]
    out = tomlkit.dumps(doc)
    return (out.rstrip("\n") + "\n" if out.strip() else ""), True
