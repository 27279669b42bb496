"""Agent-neutral briefs of what a session holds: shortened tool arguments and results, bounded
diffs, content hashes. Every source keeps the same amounts, so views and search treat every
agent alike."""
from __future__ import annotations

import hashlib
import re
import zlib
from typing import Any

import orjson

from jacked.sources.model import READ_TOOLS, Turn

BRIEF_INPUT_CHARS = 1200
BRIEF_RESULT_CHARS = 2000  # an error's text is kept up to here: what people search for
BRIEF_OK_RESULT_CHARS = 1000  # a successful result's head
BRIEF_READ_RESULT_CHARS = 300  # a file's content is in the repo; its head identifies it
MAX_DIFF_CHARS = 4000  # a file change's diff is kept up to here (timelines show changes, not files)
# A turn's raw text (`Turn.raw_text`): each piece's head and tail, up to this much per turn. A
# piece of up to 150,000 characters is kept whole: Claude Code's longest file read (25,000 tokens,
# about 100,000 characters) and a long reply are searched to their last line (at 10,000 the names
# in the middle of a 50,000-character read, or of a 1,100-line Aider reply, were lost).
RAW_PIECE_CHARS = 100_000
RAW_TURN_CHARS = 200_000


def short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"… [+{len(text) - limit} chars]"


def head_and_tail(text: str, limit: int) -> str:
    """The first `limit` characters and the last `limit // 2`, cut at line ends where one is
    near: a command's or a traceback's last lines (the exception, the test summary) say the most."""
    tail_chars = limit // 2
    if len(text) <= limit + tail_chars:
        return text
    head, tail = text[:limit], text[-tail_chars:]
    nl = head.rfind("\n")
    if nl >= limit * 3 // 4:
        head = head[:nl]
    nl = tail.find("\n")
    if 0 <= nl <= tail_chars // 4:
        tail = tail[nl + 1:]
    return f"{head}\n… [{len(text) - len(head) - len(tail)} chars] …\n{tail}"


def brief_input(inp: Any) -> str:
    """Arguments as compact JSON with long strings shortened, then redacted."""
    def shrink(v: Any) -> Any:
        if isinstance(v, str):
            return short(v, 400)
        if isinstance(v, dict):
            return {k: shrink(x) for k, x in v.items()}
        if isinstance(v, list):
            return [shrink(x) for x in v[:20]]
        return v
    try:
        whole = orjson.dumps(inp)
        # Most arguments are small (a path, a command): shorten only the ones that are not.
        text = whole.decode() if len(whole) <= BRIEF_INPUT_CHARS else orjson.dumps(shrink(inp)).decode()
    except TypeError:
        text = str(inp)
    return short(text, BRIEF_INPUT_CHARS)


def brief_limit(tool_name: str, is_error: bool) -> int:
    """How many characters of a tool result its brief keeps."""
    if is_error:
        return BRIEF_RESULT_CHARS
    return BRIEF_READ_RESULT_CHARS if tool_name in READ_TOOLS else BRIEF_OK_RESULT_CHARS


def content_hash(text: str) -> str:
    """The hash jacked gives a file's content (before/after an edit, or a file-history backup).

    SHA-256 (cut to 128 bits): CPUs hash it in hardware, twice as fast as BLAKE2 here,
    and whole files are hashed on every edit a transcript holds."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def add_raw(turn: Turn, *pieces: Any) -> str:
    """Append what the turn said or did to its raw text: strings as they are, anything else as the
    strings it holds (a tool's arguments); each piece's head and tail, the turn within its cap.
    Returns what was appended (the pieces as kept, one per line)."""
    have = len(turn.raw_text or "")
    added: list[str] = []
    for text in strings_of(pieces):
        if have >= RAW_TURN_CHARS:
            break
        piece = head_and_tail(text, min(RAW_PIECE_CHARS, (RAW_TURN_CHARS - have) * 2 // 3 + 1))  # + half for the tail
        turn.raw_text = f"{turn.raw_text}\n{piece}" if turn.raw_text else piece
        have += len(piece) + 1
        added.append(piece)
    return "\n".join(added)


# A line of a numbered listing (`cat -n`, Claude Code's Read: "    12→text" or "    12\ttext").
_LINE_NUMBER = re.compile(r"^\s*\d+(?:→|\t)")


def _line_key(line: str) -> int:
    return zlib.crc32(_LINE_NUMBER.sub("", line, count=1).strip().encode("utf-8", "surrogatepass"))


def line_keys(text: str) -> set[int]:
    """A stable 32-bit key of each non-blank line, its listing number and outer whitespace left
    out: which lines of a file the raw text already holds, compared without keeping the lines
    (a builder's saved state holds these keys, never the text, which may hold a secret)."""
    return {_line_key(line) for line in text.splitlines() if line.strip()}


def unseen_lines(text: str, seen: set[int]) -> str:
    """The non-blank lines of `text` whose key is not in `seen`, each once, in order."""
    out: list[str] = []
    new: set[int] = set()
    for line in text.splitlines():
        if line.strip() and (key := _line_key(line)) not in seen and key not in new:
            new.add(key)
            out.append(line)
    return "\n".join(out)


def add_subagent_raw(turn: Turn, subagent_turns: list[Turn]) -> None:
    """Fold a subagent's raw text into the turn that started it, within a cap of its own: what the
    subagent's tools read and printed is that turn's work, searched verbatim like the turn's own
    (its briefs alone lost the names and lines people search for)."""
    text = "\n".join(t.raw_text for t in subagent_turns if t.raw_text)
    if text:
        text = head_and_tail(text, RAW_TURN_CHARS * 2 // 3)  # + half for the tail: the turn's cap again
        turn.raw_text = f"{turn.raw_text}\n{text}" if turn.raw_text else text


def strings_of(value: Any) -> list[str]:
    """The non-empty strings inside a JSON-like value (dict values and list items, depth first)."""
    if isinstance(value, str):
        return [value.strip()] if value.strip() else []
    if isinstance(value, dict):
        return [t for v in value.values() for t in strings_of(v)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in strings_of(v)]
    return []
