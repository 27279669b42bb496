"""Reading and rewriting another agent's configuration file safely: one-line refusals before
anything is written, a `.jacked.bak` copy of the old bytes, writes through a symlink to its
target keeping its mode (owner-only for a new file: these files come to hold keys)."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from jacked.errors import JackedError
from jacked.util.fs import atomic_write

UNTOUCHED = "jacked leaves it untouched"


def read_config(path: Path, what: str) -> bytes | None:
    """The file's bytes, None when there is none (a symlink to a missing file too: install creates
    its target); `what` names the file in a refusal ("Codex's configuration file")."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise JackedError(f"{path}: is a folder, not {what}") from None
    except OSError as e:
        raise JackedError(f"{path}: cannot read it ({e.strerror or e})") from None


def decode(path: Path, raw: bytes) -> str:
    try:
        return raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        raise JackedError(f"{path}: not UTF-8 text (byte {e.start}); {UNTOUCHED}") from None


def load_json_object(path: Path, raw: bytes | None, comments_refusal: str | None = None) -> dict[str, Any]:
    """The file as a JSON object (comments and trailing commas allowed), or a one-line refusal.
    `comments_refusal`: the message for a file with comments, which cannot be rewritten with them
    (None: comments are fine, the file is only read)."""
    if raw is None:
        return {}
    text = decode(path, raw)
    if not text.strip():
        return {}
    plain, commented = strip_jsonc(text)
    if commented and comments_refusal:
        raise JackedError(f"{path}: has comments, which jacked cannot keep when it rewrites the file; "
                          f"{comments_refusal}")
    try:
        data = json.loads(plain)
    except json.JSONDecodeError as e:
        raise JackedError(f"{path}: invalid JSON at line {e.lineno}, column {e.colno} ({e.msg}); "
                          f"fix it first, {UNTOUCHED}") from None
    except RecursionError:
        raise JackedError(f"{path}: JSON nested too deeply to read; {UNTOUCHED}") from None
    if not isinstance(data, dict):
        raise JackedError(f"{path}: expected a JSON object; {UNTOUCHED}")
    return data


def write_config(path: Path, raw: bytes | None, text: str, empty: bool) -> None:
    """Back the old file up beside it, then replace it with `text` (through a symlink, keeping its
    mode). A file left `empty` that existed is removed, unless it is a symlink (then its target
    gets `text`)."""
    target = Path(os.path.realpath(path))
    try:
        mode = target.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o600
    if raw is not None:
        atomic_write(path.with_name(path.name + ".jacked.bak"), raw, mode=0o600)
    if empty and raw is not None and not path.is_symlink():
        path.unlink()
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, text.encode("utf-8"), mode=mode)


def write_json(path: Path, raw: bytes | None, data: dict[str, Any]) -> None:
    write_config(path, raw, json.dumps(data, indent=2, ensure_ascii=False) + "\n", empty=not data)


def strip_jsonc(text: str) -> tuple[str, bool]:
    """(JSON text of a JSONC text: comments blanked and trailing commas dropped, whether it had
    comments). Characters inside strings are left as they are; line numbers are kept."""
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
