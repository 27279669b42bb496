"""A glance at a Claude Code transcript: the prompts a person typed, read fast.

A backfill makes a session findable only once it has read it whole (turns, invocations,
archive, catalog); a glance reads just what makes it findable by its prompts. The main file is
streamed once, and a line is decoded only when a substring test says it may be a person's
prompt (a `user` line without a tool result, or a queued message); the turn rules then decide,
with the same predicate the reconstruction uses (`is_human_prompt`): no tool results, meta or
compaction lines, command output or caveats, interruptions, task notifications, sidechains.

What is kept is bounded per session (its first and its last prompts, within a character
budget), but `keep_out(prompt)` is asked of every prompt, past the bound too: a session it
catches (`#nomem`) yields nothing. Texts come back as written, not redacted: the caller redacts.
"""
from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from jacked.sources.claude.turns import _message, _text_of, is_human_prompt, is_notification
from jacked.sources.model import prompt_text
from jacked.sources.reader import MAX_LINE_BYTES, READ_CHUNK

HEAD_PROMPTS = 50  # the first prompts kept: what a session set out to do
TAIL_PROMPTS = 50  # and the last ones: where it ended
HEAD_CHARS = TAIL_CHARS = 32_000
PROMPT_CHARS = 8_000  # a pasted log is a prompt too: its start is enough to find it by

_TIMESTAMP = re.compile(rb'"timestamp"\s*:\s*"([^"\\]{1,64})"')


@dataclass(slots=True)
class Glimpse:
    """What a glance saw of one session's main file."""

    session_id: str
    prompts: list[tuple[str, str | None]] = field(default_factory=list)  # (indexable text, its time), in order
    cwds: list[str] = field(default_factory=list)  # every working directory named; the first record's first
    git_branch: str | None = None
    started_at: str | None = None
    ended_at: str | None = None

    @property
    def cwd(self) -> str | None:
        return self.cwds[0] if self.cwds else None


def glance(path: Path, session_id: str, keep_out: Callable[[str], bool] | None = None) -> Glimpse | None:
    """The prompts of a main transcript (bounded, de-duplicated); None when `keep_out` catches one
    of them. Raises OSError when the file cannot be read."""
    g = Glimpse(session_id)
    head: list[tuple[str, str | None]] = []
    tail: deque[tuple[str, str | None]] = deque()
    head_chars = tail_chars = 0
    head_open = True
    seen: set[int] = set()
    last = b""
    loads = orjson.loads
    with open(path, "rb", buffering=READ_CHUNK) as fh:
        readline = fh.readline
        for raw in iter(partial(readline, MAX_LINE_BYTES), b""):
            if len(raw) == MAX_LINE_BYTES and raw[-1] != 10:  # oversized (a snapshot): pass it over
                while (piece := readline(MAX_LINE_BYTES)) and piece[-1] != 10:
                    pass
                continue
            last = raw
            user = b'"user"' in raw and b'"tool_result"' not in raw
            if not (user or b'"enqueue"' in raw or (not g.cwds and b'"cwd"' in raw)):
                continue  # most lines: assistant output, tool results, snapshots
            try:
                rec = loads(raw)
            except orjson.JSONDecodeError:
                continue
            if rec.__class__ is not dict:
                continue
            cwd = rec.get("cwd")
            if cwd.__class__ is str and cwd and cwd not in g.cwds:
                g.cwds.append(cwd)
            ts = rec.get("timestamp")
            ts = ts if ts.__class__ is str else None
            if g.started_at is None and ts is not None and rec.get("type") != "file-history-snapshot":
                g.started_at = ts
            found = _prompt(rec)
            if found is None:
                continue
            prompt, slash = found
            if keep_out is not None and keep_out(prompt):
                return None
            if g.git_branch is None and isinstance(rec.get("gitBranch"), str):
                g.git_branch = rec["gitBranch"]
            text = prompt_text(prompt, slash)
            key = hash(text)
            if not text or key in seen:  # a queued message and its user line; lines written again on resume
                continue
            seen.add(key)
            text = text[:PROMPT_CHARS]
            if head_open and len(head) < HEAD_PROMPTS and head_chars + len(text) <= HEAD_CHARS:
                head.append((text, ts))
                head_chars += len(text)
                continue
            head_open = False
            tail.append((text, ts))
            tail_chars += len(text)
            while len(tail) > TAIL_PROMPTS or tail_chars > TAIL_CHARS:
                tail_chars -= len(tail.popleft()[0])
    g.prompts = head + list(tail)
    m = _TIMESTAMP.search(last[-512:]) if last else None
    g.ended_at = m.group(1).decode("utf-8", "replace") if m else (g.prompts[-1][1] if g.prompts else g.started_at)
    if g.started_at is None and g.prompts:
        g.started_at = g.prompts[0][1]
    return g


def _prompt(rec: dict[str, Any]) -> tuple[str, bool] | None:
    """(prompt as written, is a slash command) when the record starts a turn at a person's prompt."""
    rtype = rec.get("type")
    if rtype == "user":
        if rec.get("isSidechain"):
            return None  # a 1.0.x inline subagent's line
        msg = rec.get("message")
        if msg.__class__ is not dict:
            msg = _message(rec)
        origin = rec.get("origin")
        if origin.__class__ is dict and origin.get("kind") == "task-notification":
            return None
        starts, prompt, slash = is_human_prompt(rec, msg.get("content"))
        return (prompt, slash) if starts else None
    if rtype == "queue-operation" and rec.get("operation") == "enqueue":
        content = rec.get("content")
        text = _text_of(content) if content is not None else ""
        if not text.strip() or is_notification(text):
            return None
        starts, prompt, slash = is_human_prompt({}, content if isinstance(content, (str, list)) else text)
        return (prompt, slash) if starts else None
    return None
