"""Splitting Aider's chat history file (`.aider.chat.history.md`) into sessions and lines.

Aider appends everything it shows to one Markdown file per repository (its git root, or the
folder it ran in): a session starts with `# aider chat started at YYYY-MM-DD HH:MM:SS` (local
time); what the user typed is written as `#### ` lines; what Aider itself printed (notices,
confirmations and their answers, token reports, errors) as `> ` block quotes, each message
ending with two spaces; the model's replies as plain Markdown. A message Aider printed over
several lines is quoted on its first line only: its other lines follow unquoted up to the one
that ends with the two spaces (`Kind.TOOL` covers them all).

Content before the first header (a file whose head was cut) is a session of its own with no
start time. A session with nothing typed and no reply (Aider started, then quit) is none.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

HEADER = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s*$")


class Kind(Enum):
    USER = "user"  # `#### ` lines: what the user typed
    TOOL = "tool"  # `> ` lines: what Aider printed
    TEXT = "text"  # the model's reply


@dataclass(slots=True)
class Line:
    kind: Kind
    text: str  # without its `#### ` / `> ` prefix and its trailing line-break spaces


@dataclass(slots=True)
class Block:
    """One session's part of the file."""

    started: str | None  # the header's local time, "YYYY-MM-DD HH:MM:SS"; None before the first header
    ordinal: int  # place among the blocks with the same header time (a file copied twice into itself)
    text: str
    line_offset: int  # 0-based line number of the header in the file

    @property
    def key(self) -> str:
        return f"{self.started or 'head'}#{self.ordinal}"


@dataclass(slots=True)
class Parsed:
    lines: list[Line] = field(default_factory=list)
    raw_lines: int = 0


def split_sessions(text: str) -> list[Block]:
    """The sessions of a history file, in file order (blank ones left out)."""
    blocks: list[Block] = []
    seen: dict[str | None, int] = {}
    starts: list[tuple[int, str | None]] = [(0, None)]
    starts += [(m.start(), m.group(1)) for m in _HEADERS.finditer(text)]
    line = 0
    for i, (pos, started) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        body = text[pos:end]
        if i > 0:
            line += text.count("\n", starts[i - 1][0], pos)
        if has_conversation(body):
            n = seen.get(started, 0)
            seen[started] = n + 1
            blocks.append(Block(started, n, body, line))
    return blocks


_HEADERS = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)[ \t]*\r?$", re.M)
_TYPED = re.compile(r"^#### ?\S", re.M)
_NOT_A_NOTICE = re.compile(r"^(?!>|# aider chat started at |[ \t]*\r?$)", re.M)


def has_conversation(body: str) -> bool:
    """Whether a session's text holds a typed line or a reply (not only Aider's notices)."""
    if _TYPED.search(body):
        return True  # something typed: no need to read the lines one by one
    if not _NOT_A_NOTICE.search(body):
        return False  # Aider's notices only
    return any(line.kind in (Kind.USER, Kind.TEXT) and line.text.strip() for line in parse_lines(body).lines)


def _strip_break(s: str) -> tuple[str, bool]:
    """A line without its Markdown line break (two trailing spaces), and whether it had one."""
    if s.endswith("  "):
        return s[:-2], True
    return s, False


def parse_lines(body: str) -> Parsed:
    out = Parsed()
    in_quote = False  # inside a message Aider printed over several lines
    for raw in body.splitlines():
        out.raw_lines += 1
        if HEADER.match(raw):
            continue
        if in_quote and not _is_user(raw) and not _is_quote(raw):
            text, ended = _strip_break(raw)
            out.lines.append(Line(Kind.TOOL, text))
            in_quote = not ended
            continue
        in_quote = False
        if _is_user(raw):
            text, _ = _strip_break(raw[5:])
            out.lines.append(Line(Kind.USER, text))
        elif _is_quote(raw):
            text, ended = _strip_break(raw[2:])
            out.lines.append(Line(Kind.TOOL, text))
            in_quote = not ended and bool(raw[2:].strip())
        else:
            out.lines.append(Line(Kind.TEXT, raw))
    return out


def _is_user(raw: str) -> bool:
    return raw.startswith("####") and (len(raw) == 4 or raw[4] == " ")


def _is_quote(raw: str) -> bool:
    return raw.startswith(">") and (len(raw) == 1 or raw[1] == " ")
