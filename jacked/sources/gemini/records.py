"""Loading one Gemini CLI chat file, in every generation Gemini CLI has written.

* 2025-08 … 2026-04: `chats/session-<YYYY-MM-DDTHH-MM>-<id8>.json`, one JSON document
  (`ConversationRecord`: sessionId, projectHash, startTime, lastUpdated, messages, and later
  summary, directories, kind), rewritten whole (not atomically) on every change.
* 2026-04 on: `….jsonl`, appended to: a metadata line (sessionId, projectHash, startTime, …),
  then one line per message write — a message is written again, whole, each time it grows
  (tokens, tool calls), so the last line with an `id` is that message —, `{"$set": {…}}`
  metadata updates (lastUpdated, summary, directories; `messages` is a checkpoint of the whole
  history after compression, masking or a rolled-back request) and `{"$rewindTo": id}` (the
  user went back to before that message). Resuming a `.json` session writes a `.jsonl` copy
  next to it (same name + "l") and leaves the `.json` as it was.

What happened stays: messages a checkpoint or a rewind drops from Gemini's own view (they
were sent, answered, their tools ran) are kept, in the order they were first written; a
checkpoint only adds the messages it holds that were never written before (the compaction's
`<state_snapshot>`, for one). Nothing here raises for bad content: lines that do not decode
are counted (`malformed`), records of no known shape too (`unknown`); a `.json` document cut
short (Gemini CLI was writing it) gives the messages before the cut.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from jacked.sources.reader import ReadResult, complete_array_items, iter_records

META_KEYS = ("sessionId", "projectHash", "startTime", "lastUpdated", "summary", "directories", "kind")
HEAD_BYTES = 16 * 1024  # where a file's session id is looked for at discovery


@dataclass(slots=True)
class ChatFile:
    """One chat file as Gemini CLI meant it: metadata and messages (last version of each id)."""

    path: Path
    meta: dict[str, Any] = field(default_factory=dict)
    messages: list[dict[str, Any]] = field(default_factory=list)
    lines: int = 0  # JSONL lines, or for a `.json` document: 1 + its messages
    malformed: int = 0
    unknown: int = 0
    rewinds: int = 0
    checkpoints: int = 0
    truncated: bool = False  # a `.json` document cut short, or a JSONL last line still being written

    @property
    def session_id(self) -> str | None:
        sid = self.meta.get("sessionId")
        return sid if isinstance(sid, str) and sid else None


def load_chat(path: Path) -> ChatFile:
    """The chat file at `path`; `OSError` when it cannot be read, `ValueError` when it holds
    no conversation at all."""
    if path.suffix == ".jsonl":
        chat = _load_jsonl(path)
    else:
        chat = _load_document(path)
    if chat.session_id is None and not chat.messages:
        raise ValueError("not a Gemini CLI chat file (no sessionId, no messages)")
    return chat


class _Messages:
    """Messages by id in first-written order; a later write of an id replaces its content."""

    def __init__(self) -> None:
        self.by_id: dict[str, dict[str, Any]] = {}

    def put(self, msg: dict[str, Any]) -> None:
        self.by_id[msg["id"]] = msg

    def add_new(self, msg: dict[str, Any]) -> None:
        if msg["id"] not in self.by_id:
            self.by_id[msg["id"]] = msg


def _is_message(rec: Any) -> bool:
    return isinstance(rec, dict) and isinstance(rec.get("id"), str)


def _merge_meta(meta: dict[str, Any], rec: dict[str, Any]) -> None:
    for k in META_KEYS:
        if k in rec and rec[k] is not None:
            meta[k] = rec[k]


def _load_jsonl(path: Path) -> ChatFile:
    chat = ChatFile(path)
    msgs = _Messages()
    res = ReadResult()
    for rec in iter_records(path, result=res):
        if isinstance(rec.get("$rewindTo"), str):
            chat.rewinds += 1
        elif isinstance(rec.get("$set"), dict):
            update = rec["$set"]
            _merge_meta(chat.meta, update)
            if isinstance(update.get("messages"), list):
                chat.checkpoints += 1
                for m in update["messages"]:
                    if _is_message(m):
                        msgs.add_new(m)
        elif _is_message(rec):
            msgs.put(rec)
        elif isinstance(rec.get("sessionId"), str):
            # the first line; or a whole legacy record written on one line
            _merge_meta(chat.meta, rec)
            if isinstance(rec.get("messages"), list):
                for m in rec["messages"]:
                    if _is_message(m):
                        msgs.put(m)
        else:
            chat.unknown += 1
    chat.lines = res.lines + res.pending_tail_malformed
    chat.malformed = res.malformed + res.pending_tail_malformed
    chat.truncated = res.pending_tail_malformed > 0
    chat.messages = list(msgs.by_id.values())
    return chat


def _load_document(path: Path) -> ChatFile:
    raw = path.read_bytes()
    chat = ChatFile(path)
    if not raw.strip():
        return chat
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        doc = None
    if isinstance(doc, dict):
        _merge_meta(chat.meta, doc)
        msgs = _Messages()
        listed = given if isinstance(given := doc.get("messages"), list) else []
        for m in listed:
            if _is_message(m):
                msgs.put(m)
            else:
                chat.unknown += 1
        chat.messages = list(msgs.by_id.values())
        chat.lines = 1 + len(listed)
        return chat
    first = raw.lstrip().split(b"\n", 1)[0]
    if first != raw.strip() and isinstance(_decode(first), dict):
        # JSON Lines under a .json name (a copy, a hand-made file): read it as such
        lines_chat = _load_jsonl(path)
        if lines_chat.session_id or lines_chat.messages:
            return lines_chat
    return _salvage(path, raw.decode("utf-8", "replace"))


_META_FIELD = re.compile(r'"(sessionId|projectHash|startTime|lastUpdated|summary|kind)"\s*:\s*"((?:[^"\\]|\\.)*)"')


def _salvage(path: Path, text: str) -> ChatFile:
    """The metadata and the complete messages of a `.json` document cut short."""
    chat = ChatFile(path, truncated=True, malformed=1)
    start = text.find('"messages"')
    head = text if start < 0 else text[:start]
    for m in _META_FIELD.finditer(head):
        try:
            chat.meta.setdefault(m.group(1), json.loads(f'"{m.group(2)}"'))
        except ValueError:
            continue
    if start < 0:
        chat.lines = 1
        return chat
    pos = text.find("[", start)
    msgs = _Messages()
    count = 0
    for obj in complete_array_items(text, pos) if pos >= 0 else ():
        count += 1
        if _is_message(obj):
            msgs.put(obj)
        else:
            chat.unknown += 1
    chat.messages = list(msgs.by_id.values())
    chat.lines = 1 + count + 1  # the header, the messages, the line cut short
    return chat


def _decode(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


def peek_session(path: Path) -> tuple[str | None, str | None]:
    """(sessionId, kind) of a chat file from its first bytes, without reading it whole: the
    metadata comes first in both generations. (None, None) for a file with none yet."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError:
        return None, None
    if not head.strip():
        return None, None
    first = _decode(head.lstrip().split(b"\n", 1)[0])
    if isinstance(first, dict) and isinstance(first.get("sessionId"), str):  # a JSONL metadata line
        kind = first.get("kind")
        return first["sessionId"] or None, kind if isinstance(kind, str) else None
    found: dict[str, str] = {}
    for m in _META_FIELD.finditer(head.decode("utf-8", "replace").split('"messages"', 1)[0]):
        try:
            found.setdefault(m.group(1), json.loads(f'"{m.group(2)}"'))
        except ValueError:
            continue
    if "sessionId" not in found and len(head) == HEAD_BYTES:  # a huge first line: decode the file
        try:
            chat = load_chat(path)
        except (OSError, ValueError):
            return None, None
        kind = chat.meta.get("kind")
        return chat.session_id, kind if isinstance(kind, str) else None
    return found.get("sessionId") or None, found.get("kind")
