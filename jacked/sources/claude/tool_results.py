"""Tool outputs that Claude Code moved out of the transcript (2.1.x `tool-results/`).

A tool result over ~50K characters (100K before 2.1.51) is written to
`<project>/<session>/tool-results/<tool_use_id>.txt` (`.json` for JSON output), and the
transcript's `tool_result` keeps only a reference with a short preview:

    <persisted-output>
    Output too large (34.3KB). Full output saved to: /…/<session>/tool-results/toolu_01….txt

    Preview (first 2KB):
    …
    </persisted-output>

(an older wording: `<persisted-output>Tool result saved to: …/toolu_….txt\n\nUse Read to
view</persisted-output>`). The path is the writer's: another machine's home, a Windows path.
Only its file name (and the session folder it names) is used, and only files inside the
session's project folder are ever opened.

`resolve_reference` reads the head of the referenced file — at most what a brief needs,
never the whole file — so the brief shows the output itself (what people search for, an
error's text) instead of the wrapper. `resolve_session` applies it to every invocation of a
built session; a reference whose file is gone is counted and left as it was.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from jacked.sources.redact import redact
from jacked.sources.textclean import strip_ansi
from jacked.sources.model import Session, Turn
from jacked.sources.briefs import BRIEF_OK_RESULT_CHARS, brief_limit

__all__ = ["REFERENCE_TAG", "looks_like_reference", "reference_name", "resolve_reference", "resolve_brief",
           "resolve_session"]

REFERENCE_TAG = "<persisted-output>"
TOOL_RESULTS_DIR = "tool-results"
OK_CHARS = BRIEF_OK_RESULT_CHARS
MAX_BYTES_PER_CHAR = 4  # UTF-8: reading limit * 4 bytes always yields `limit` characters when there are that many

_SAVED_TO = re.compile(r"(?:saved to|Saved to|written to)\s*:\s*([^\n<]+)")
_SAFE_NAME = re.compile(r"^[A-Za-z0-9._-]{1,255}$")


def looks_like_reference(text: str | None) -> bool:
    """Whether a result text is a `<persisted-output>` reference (cheap: its first characters;
    a result that only quotes the tag further in, e.g. a file read, is not one)."""
    return bool(text) and text[:64].lstrip().startswith(REFERENCE_TAG)  # type: ignore[index]  # bool(text) ruled out None


def reference_name(text: str) -> tuple[str | None, str | None]:
    """(file name, session folder) named by a reference's path, either possibly None."""
    m = _SAVED_TO.search(text)
    if not m:
        return None, None
    raw = m.group(1).strip().rstrip(".")
    parts = [p for p in re.split(r"[\\/]", raw) if p]
    name = parts[-1] if parts else None
    folder = parts[-3] if len(parts) >= 3 and parts[-2] == TOOL_RESULTS_DIR else None
    return (name if name and _SAFE_NAME.match(name) else None,
            folder if folder and _SAFE_NAME.match(folder) and folder not in (".", "..") else None)


def _candidates(text: str, session_dir: Path, tool_use_id: str | None) -> list[Path]:
    name, folder = reference_name(text)
    names = [name] if name and name not in (".", "..") else []
    if tool_use_id and _SAFE_NAME.match(tool_use_id):
        names += [tool_use_id + ".txt", tool_use_id + ".json"]
    dirs = [session_dir / TOOL_RESULTS_DIR]
    if folder and folder != session_dir.name:
        # A resumed or forked session repeats its parent's lines, references included: the
        # file is in the parent's folder of the same project.
        dirs.append(session_dir.parent / folder / TOOL_RESULTS_DIR)
    return [d / n for d in dirs for n in dict.fromkeys(names)]


def resolve_reference(text: str, session_dir: Path | str, tool_use_id: str | None = None,
                      limit: int = OK_CHARS) -> str | None:
    """The head of the output a `<persisted-output>` reference names: at most `limit`
    characters (a longer output ends with "… [+N bytes]"), read from the file's start
    (at most `limit * 4` bytes). None when the file cannot be found or read.

    Not redacted nor cleaned: see `resolve_brief`.
    """
    session_dir = Path(session_dir)
    for path in _candidates(text, session_dir, tool_use_id):
        try:
            with open(path, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                data = fh.read(limit * MAX_BYTES_PER_CHAR)
        except OSError:
            continue
        head = data.decode("utf-8", "replace")
        if len(data) < size:  # cut inside the file: a character may be split at the end
            head = head.rstrip("\ufffd")
        if len(head) > limit:
            head = head[:limit]
        rest = size - len(head.encode("utf-8", "surrogatepass"))
        return head + (f"… [+{rest} bytes]" if rest > 0 else "")
    return None


def resolve_brief(text: str, session_dir: Path | str, tool_use_id: str | None = None,
                  limit: int = OK_CHARS) -> str | None:
    """`resolve_reference`, with terminal escapes stripped and secrets redacted: ready to
    be a result brief."""
    head = resolve_reference(text, session_dir, tool_use_id, limit)
    if head is None:
        return None
    return redact(strip_ansi(head))


def _turns_of(session: Session) -> list[list[Turn]]:
    return [session.turns] + [sub.turns for sub in session.subagents]


def resolve_session(session: Session, session_dir: Path | str | None) -> tuple[int, int]:
    """Replace every reference brief of the session (main and subagent invocations) with the
    head of its output; returns (resolved, missing). A missing file leaves the brief as it was
    (it holds Claude Code's own preview)."""
    resolved = missing = 0
    if session_dir is None:  # nowhere to look: left as they are, and not counted
        return resolved, missing
    seen: set[int] = set()
    for turns in _turns_of(session):
        for turn in turns:
            for inv in turn.invocations:
                if id(inv) in seen or not looks_like_reference(inv.result_brief):
                    continue
                seen.add(id(inv))
                limit = brief_limit(inv.tool_name, inv.is_error)
                head = resolve_brief(inv.result_brief, session_dir, inv.tool_use_id or None, limit)
                if head is None:
                    missing += 1
                else:
                    inv.result_brief = head
                    resolved += 1
    return resolved, missing
