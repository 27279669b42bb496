"""Cursor's SQLite state (`state.vscdb`), read-only: the one place jacked runs SQL on Cursor's
tables (not jacked's catalog).

Every `state.vscdb` holds two key/value tables, `ItemTable` and `cursorDiskKV` (`key TEXT`,
`value BLOB` holding JSON text). What jacked reads:

* `globalStorage/state.vscdb`, `cursorDiskKV`: `composerData:<composerId>` (one agent/composer
  chat: its bubble headers in order, title, mode, model, `subagentInfo` for a subagent's chat)
  and `bubbleId:<composerId>:<bubbleId>` (one message: `type` 1 user, 2 assistant);
* `workspaceStorage/<hash>/state.vscdb`, `ItemTable`: `composer.composerData` (which composers
  belong to that workspace) and, from releases before the composer, the chat pane's tabs
  (`workbench.panel.aichat.view.aichat.chatdata`); `workspace.json` beside it names the folder.

Cursor keeps the database open while it runs: it is opened with `mode=ro` (never written, no
journal created) and, when Cursor holds a write lock, again with `immutable=1` (read without
taking any lock). A value that is not JSON, or larger than `MAX_VALUE_BYTES`, is skipped and
counted; a file that is not a Cursor database raises `OSError`.
"""
from __future__ import annotations

from collections.abc import Sized
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from jacked.sources.sqlite_ro import ReadOnlyDb, open_read_only, sqlite_errors as _errors

MAX_VALUE_BYTES = 32 << 20  # a value larger than this (a pasted dump, a huge file state) is skipped
COMPOSER_PREFIX = "composerData:"
BUBBLE_PREFIX = "bubbleId:"
CHAT_PANE_KEY = "workbench.panel.aichat.view.aichat.chatdata"
WORKSPACE_COMPOSERS_KEY = "composer.composerData"


def _prefix_range(prefix: str) -> tuple[str, str]:
    """Bounds of the keys starting with `prefix`, for an index range scan (`:` + 1 is `;`)."""
    return prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)


def decode(raw: Any) -> Any:
    """A value's JSON (None when it is not JSON)."""
    if isinstance(raw, (bytes, str)):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return None
    return None


@dataclass(slots=True)
class ComposerRow:
    """A `composerData:` row as discovery sees it: the few fields that tell what changed and how
    chats nest (the whole value, often megabytes of file states, is not kept: the chat's read
    decodes it again)."""

    composer_id: str
    size: int
    updated: Any = None  # lastUpdatedAt
    status: Any = None
    headers: int = 0  # bubbles named in fullConversationHeadersOnly
    inline: int = 0  # bubbles kept in the row itself (conversation, conversationMap)
    parent: str | None = None  # subagentInfo.parentComposerId

    @classmethod
    def of(cls, composer_id: str, size: int, data: dict[str, Any]) -> ComposerRow:
        def length(value: Any, kind: type[Sized]) -> int:
            return len(value) if isinstance(value, kind) else 0

        parent = data.get("subagentInfo")
        parent = parent.get("parentComposerId") if isinstance(parent, dict) else None
        return cls(composer_id, size, data.get("lastUpdatedAt"), data.get("status"),
                   length(data.get("fullConversationHeadersOnly"), list),
                   length(data.get("conversation"), list) + length(data.get("conversationMap"), dict),
                   parent if isinstance(parent, str) else None)


@dataclass(slots=True)
class RawBubbles:
    """A composer's bubbles in conversation order, with what could not be read."""

    bubbles: list[dict[str, Any]] = field(default_factory=list)
    records: int = 0
    malformed: int = 0  # not JSON, not an object, or over MAX_VALUE_BYTES
    missing: int = 0  # a header whose bubble row is not (yet) there


class CursorDb(ReadOnlyDb):
    """One `state.vscdb`, opened read-only (immutable when Cursor holds it locked)."""

    def __init__(self, path: Path, immutable: bool = False) -> None:
        self.path = path
        # known locked (at discovery): not waited for again per chat
        self.conn, self.immutable = open_read_only(path, immutable)
        try:
            with _errors(path):
                self.tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if not self.tables & {"ItemTable", "cursorDiskKV"}:
                raise OSError(f"{path}: not a Cursor state database (no ItemTable nor cursorDiskKV)")
        except BaseException:
            self.conn.close()
            raise

    # ------------------------------------------------------------------ key/value access
    def item(self, key: str, table: str = "ItemTable") -> Any:
        """One value, decoded (None when absent, too large or not JSON)."""
        if table not in self.tables:
            return None
        with _errors(self.path):
            row = self.conn.execute(f"SELECT length(value), value FROM {table} WHERE key = ?", (key,)).fetchone()
        if row is None or (row[0] or 0) > MAX_VALUE_BYTES:
            return None
        return decode(row[1])

    def composers(self, errors: list[str]) -> list[ComposerRow]:
        """Every `composerData:` row, decoded unless too large (then reported in `errors`)."""
        if "cursorDiskKV" not in self.tables:
            return []
        low, high = _prefix_range(COMPOSER_PREFIX)
        out: list[ComposerRow] = []
        with _errors(self.path):
            sizes = self.conn.execute("SELECT key, length(value) FROM cursorDiskKV WHERE key >= ? AND key < ?",
                                      (low, high)).fetchall()
            for key, size in sizes:
                cid = str(key)[len(COMPOSER_PREFIX):]
                if (size or 0) > MAX_VALUE_BYTES:
                    errors.append(f"{self.path}#{cid}: composer data of {size} bytes, over the {MAX_VALUE_BYTES} "
                                  "read; skipped")
                    continue
                value = self.conn.execute("SELECT value FROM cursorDiskKV WHERE key = ?", (key,)).fetchone()
                data = decode(value[0]) if value else None
                if not isinstance(data, dict):
                    errors.append(f"{self.path}#{cid}: composer data is not a JSON object; skipped")
                    continue
                out.append(ComposerRow.of(cid, int(size or 0), data))
        return out

    def composer(self, composer_id: str) -> dict[str, Any]:
        """One composer's whole `composerData` (empty when gone or unreadable since discovery)."""
        data = self.item(f"{COMPOSER_PREFIX}{composer_id}", "cursorDiskKV")
        return data if isinstance(data, dict) else {}

    def bubble_stats(self) -> dict[str, tuple[int, int]]:
        """{composer id: (bubble rows, their total bytes)}: with the composer's own row, what tells
        that a chat changed without reading its bubbles (an index-only range scan)."""
        if "cursorDiskKV" not in self.tables:
            return {}
        low, high = _prefix_range(BUBBLE_PREFIX)
        out: dict[str, list[int]] = {}
        with _errors(self.path):
            for key, size in self.conn.execute(
                    "SELECT key, length(value) FROM cursorDiskKV WHERE key >= ? AND key < ?", (low, high)):
                composer = str(key)[len(BUBBLE_PREFIX):].partition(":")[0]
                entry = out.setdefault(composer, [0, 0])
                entry[0] += 1
                entry[1] += int(size or 0)
        return {k: (v[0], v[1]) for k, v in out.items()}

    def bubbles(self, composer_id: str, order: list[str]) -> RawBubbles:
        """A composer's bubbles: those its headers name, in that order (the conversation's order),
        then any other row of the composer (a header list cut short), by key."""
        raw = RawBubbles()
        if "cursorDiskKV" not in self.tables:
            return raw
        low, high = _prefix_range(f"{BUBBLE_PREFIX}{composer_id}:")
        rows: dict[str, Any] = {}
        with _errors(self.path):
            self.conn.execute("BEGIN")
            try:
                for key, size in self.conn.execute(
                        "SELECT key, length(value) FROM cursorDiskKV WHERE key >= ? AND key < ?", (low, high)).fetchall():
                    bubble_id = str(key)[len(low):]
                    if (size or 0) > MAX_VALUE_BYTES:
                        rows[bubble_id] = None
                        continue
                    value = self.conn.execute("SELECT value FROM cursorDiskKV WHERE key = ?", (key,)).fetchone()
                    rows[bubble_id] = decode(value[0]) if value else None
            finally:
                self.conn.rollback()
        ordered = [b for b in order if b in rows] + sorted(b for b in rows if b not in set(order))
        raw.missing = sum(1 for b in order if b not in rows)
        for bubble_id in ordered:
            raw.records += 1
            data = rows[bubble_id]
            if not isinstance(data, dict):
                raw.malformed += 1
                continue
            data.setdefault("bubbleId", bubble_id)
            raw.bubbles.append(data)
        return raw


def workspace_dbs(user_dir: Path) -> list[Path]:
    """Every `workspaceStorage/<hash>/state.vscdb` under Cursor's `User` folder."""
    base = user_dir / "workspaceStorage"
    try:
        return sorted(p / "state.vscdb" for p in base.iterdir() if (p / "state.vscdb").is_file())
    except OSError:
        return []
