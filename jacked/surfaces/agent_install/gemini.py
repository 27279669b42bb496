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

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jacked.errors import JackedError
from jacked.util.fs import atomic_write

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
    if not exe:
        raise JackedError("no jacked command to register")
    path = settings_path(environ)
    raw = _read(path)
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
    _write(path, raw, data)
    return path


def uninstall(environ: Mapping[str, str]) -> Path | None:
    """Take the `jacked` MCP server out of Gemini CLI's settings; the file changed, or None."""
    path = settings_path(environ)
    raw = _read(path)
    if raw is None:
        return None
    data = _load(path, raw)
    servers = data.get(KEY)
    if not isinstance(servers, dict) or not is_ours(servers.get(NAME)):
        return None
    del servers[NAME]
    if not servers:
        del data[KEY]
    _write(path, raw, data)
    return path


# --------------------------------------------------------------------------- reading and writing
def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None  # (a symlink to a missing file too: install creates its target)
    except IsADirectoryError:
        raise JackedError(f"{path}: is a folder, not Gemini CLI's settings file") from None
    except OSError as e:
        raise JackedError(f"{path}: cannot read it ({e.strerror or e})") from None


def _load(path: Path, raw: bytes | None) -> dict[str, Any]:
    """The settings as a dict, or a one-line refusal; nothing is written before this."""
    if raw is None:
        return {}
    untouched = "jacked leaves it untouched"
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        raise JackedError(f"{path}: not UTF-8 text (byte {e.start}); {untouched}") from None
    if not text.strip():
        return {}
    plain, commented = _strip_comments(text)
    if commented:
        raise JackedError(
            f"{path}: has comments, which jacked cannot keep when it rewrites the file; add this to its "
            f'"{KEY}" object by hand, or remove the comments: "{NAME}": {{"command": <jacked>, "args": ["mcp"]}}')
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
    a file left empty is removed (unless it is a symlink: its target is emptied to `{}`)."""
    target = Path(os.path.realpath(path))
    try:
        mode = target.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o600  # Gemini CLI's settings may hold keys: owner-only
    if raw is not None:
        atomic_write(path.with_name(path.name + ".jacked.bak"), raw, mode=0o600)
    if not data and raw is not None and not path.is_symlink():
        path.unlink()
        return
    body = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    atomic_write(target, body.encode("utf-8"), mode=mode)


def _strip_comments(text: str) -> tuple[str, bool]:
    """(the text with `//` and `/* */` comments blanked, whether it had any); strings are kept
    as they are."""
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
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out), commented
