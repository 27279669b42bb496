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

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jacked.errors import JackedError
from jacked.util.fs import atomic_write

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
    raw = _read(path)
    data = _load(path, raw, for_writing=True)
    servers = data.setdefault("mcp", {})
    if not isinstance(servers, dict):
        raise JackedError(f'{path}: "mcp" is not an object; jacked leaves the file untouched')
    wanted = entry(exe)
    if servers.get(NAME) == wanted:
        return path  # already installed: nothing to write
    servers[NAME] = wanted
    _write(path, raw, data)
    return path


def uninstall(environ: Mapping[str, str]) -> Path | None:
    """Take the `jacked` MCP server out of opencode's configuration; the file changed, or None."""
    folder = config_dir(environ)
    plans: list[tuple[Path, bytes, dict[str, Any]]] = []
    for name in FILES:  # every file read (and refused if need be) before any is written
        path = folder / name
        raw = _read(path)
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
        _write(path, raw, data)
    return plans[0][0] if plans else None


# --------------------------------------------------------------------------- reading and writing
def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None  # (a symlink to a missing file too: install creates its target)
    except IsADirectoryError:
        raise JackedError(f"{path}: is a folder, not opencode's configuration file") from None
    except OSError as e:
        raise JackedError(f"{path}: cannot read it ({e.strerror or e})") from None


def _load(path: Path, raw: bytes | None, for_writing: bool = False) -> dict[str, Any]:
    """The configuration as a dict, or a one-line refusal; nothing is written before this. A file
    with comments can be read, not written (`for_writing`)."""
    if raw is None:
        return {}
    untouched = "jacked leaves it untouched"
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        raise JackedError(f"{path}: not UTF-8 text (byte {e.start}); {untouched}") from None
    if not text.strip():
        return {}
    plain, commented = strip_jsonc(text)
    if commented and for_writing:
        raise JackedError(
            f"{path}: has comments, which jacked cannot keep when it rewrites the file; add this to its "
            f'"mcp" object by hand, or remove the comments: "{NAME}": {{"type": "local", "command": '
            f'[<jacked>, "mcp"], "enabled": true}}')
    try:
        data = json.loads(plain)
    except json.JSONDecodeError as e:
        raise JackedError(f"{path}: invalid JSON at line {e.lineno}, column {e.colno} ({e.msg}); "
                          f"fix it first, {untouched}") from None
    except RecursionError:
        raise JackedError(f"{path}: JSON nested too deeply to read; {untouched}") from None
    if not isinstance(data, dict):
        raise JackedError(f"{path}: expected a JSON object; {untouched}")
    return data


def _write(path: Path, raw: bytes | None, data: dict[str, Any]) -> None:
    """Back the old file up beside it, then replace it (through a symlink, keeping its mode);
    a file left empty that jacked could have created is removed."""
    target = Path(os.path.realpath(path))
    try:
        mode = target.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o600  # a new file: opencode's configuration may come to hold provider keys
    if raw is not None:
        atomic_write(path.with_name(path.name + ".jacked.bak"), raw, mode=0o600)
    if not data and raw is not None and not path.is_symlink():
        path.unlink()
        return
    body = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    atomic_write(target, body.encode("utf-8"), mode=mode)


def strip_jsonc(text: str) -> tuple[str, bool]:
    """(JSON text of a JSONC text: comments blanked and trailing commas dropped, whether it had
    comments). Characters inside strings are left as they are."""
    out: list[str] = []
    commented = False
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            commented = True
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            commented = True
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))  # keeps line numbers
            i = j
        elif c in "}]":
            k = len(out) - 1
            while k >= 0 and out[k].isspace():
                k -= 1
            if k >= 0 and out[k] == ",":
                out[k] = " "  # a trailing comma
            out.append(c)
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out), commented
