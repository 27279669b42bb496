"""`jacked install --agent opencode`: jacked's MCP server in opencode's own configuration.

opencode reads its global configuration from `$XDG_CONFIG_HOME/opencode/` (default
`~/.config/opencode/`): `opencode.json` and `opencode.jsonc`, merged. Install adds, to the one
that exists (`opencode.json` when both or neither do), an entry under `mcp`:

    "mcp": {"jacked": {"type": "local", "command": [<jacked>, "mcp"], "enabled": true}}

Every other key is kept. The previous file is copied to `<file>.jacked.bak` (mode 0600) before
it is written; a file that is a symlink (a dotfiles repo) is written through to its target. A
file jacked cannot read (not JSON, not an object, `mcp` not an object) is refused with a
`JackedError` before anything is touched, and so is a file with comments: opencode accepts
them, but rewriting the file would drop them. Uninstall takes out exactly the `jacked` entry
(and `mcp` when nothing else is left in it; the file when nothing is left at all).
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jacked.errors import JackedError
from jacked.surfaces.agent_install.configfile import load_json_object, read_config, write_json

NAME = "jacked"
FILES = ("opencode.json", "opencode.jsonc")


def config_dir(environ: Mapping[str, str]) -> Path:
    """opencode's global configuration folder (`XDG_CONFIG_HOME`, else `~/.config`)."""
    xdg = environ.get("XDG_CONFIG_HOME", "").strip()
    if xdg:
        return Path(xdg).expanduser() / "opencode"
    home = environ.get("HOME", "").strip() or os.path.expanduser("~")
    return Path(home) / ".config" / "opencode"


def config_path(environ: Mapping[str, str]) -> Path:
    """The file install writes: the existing `opencode.json`, else an existing `opencode.jsonc`,
    else a new `opencode.json`."""
    folder = config_dir(environ)
    for name in FILES:
        if os.path.lexists(folder / name):
            return folder / name
    return folder / FILES[0]


def entry(exe: list[str]) -> dict[str, Any]:
    """The MCP server entry (opencode's `McpLocalConfig`: type, command, enabled)."""
    return {"type": "local", "command": [*exe, "mcp"], "enabled": True}


def install(exe: list[str], environ: Mapping[str, str]) -> Path:
    """Add (or update) the `jacked` MCP server in opencode's configuration; the file written."""
    path = config_path(environ)
    raw = read_config(path, "opencode's configuration file")
    data = _load(path, raw, for_writing=True)
    servers = data.setdefault("mcp", {})
    if not isinstance(servers, dict):
        raise JackedError(f'{path}: "mcp" is not an object; jacked leaves the file untouched')
    wanted = entry(exe)
    if servers.get(NAME) == wanted:
        return path  # already installed: nothing to write
    servers[NAME] = wanted
    write_json(path, raw, data)
    return path


def uninstall(environ: Mapping[str, str]) -> Path | None:
    """Take the `jacked` MCP server out of opencode's configuration; the file changed, or None."""
    folder = config_dir(environ)
    plans: list[tuple[Path, bytes, dict[str, Any]]] = []
    for name in FILES:  # every file read (and refused if need be) before any is written
        path = folder / name
        raw = read_config(path, "opencode's configuration file")
        if raw is None:
            continue
        data = _load(path, raw)
        servers = data.get("mcp")
        if isinstance(servers, dict) and NAME in servers:
            _load(path, raw, for_writing=True)  # a file with comments is refused, not rewritten
            del servers[NAME]
            if not servers:
                del data["mcp"]
            plans.append((path, raw, data))
    for path, raw, data in plans:
        write_json(path, raw, data)
    return plans[0][0] if plans else None


def _load(path: Path, raw: bytes | None, for_writing: bool = False) -> dict[str, Any]:
    """The configuration as a dict, or a one-line refusal; nothing is written before this. A file
    with comments can be read, not written (`for_writing`)."""
    return load_json_object(path, raw, comments_refusal=(
        f'add this to its "mcp" object by hand, or remove the comments: "{NAME}": {{"type": "local", '
        f'"command": [<jacked>, "mcp"], "enabled": true}}') if for_writing else None)
