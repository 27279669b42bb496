"""Goose (block/goose, the CLI and desktop app) as a transcript source.

Goose's data folder: `$GOOSE_PATH_ROOT/data` when that is set (an absolute path), else on Linux
and macOS `$XDG_DATA_HOME/goose` (default `~/.local/share/goose`: goose picks the XDG layout on
macOS too; `~/Library/Application Support/Block/goose` is read when only it exists), on Windows
`%APPDATA%\\Block\\goose\\data`; `JACKED_GOOSE_DIR` names another (tests). Under it `sessions/`
holds both generations: `sessions.db` (releases since 2025-10, see `jacked.sources.goose.db`) and
the older `<name>.jsonl` files (a first line of session metadata, then one message a line).
Goose copies the `.jsonl` sessions into a new `sessions.db` once, so a file whose name is a
session id in the database is read from the database only. Read from Goose's source
(block/goose at 0164300649cf5e4ab327105d9155779ab8bfde4b: `crates/goose/src/session/`
`session_manager.rs` and `legacy.rs`, `conversation/message.rs`, `conversation/tool_result_serde.rs`,
`config/paths.rs`).

A message (`{role, created, content: [...], metadata: {userVisible, agentVisible}}`) maps onto
the turn model:
* a `user` message with non-blank `text` parts that the user saw (`userVisible` not false)
  starts a turn; messages before any prompt form turn 0;
* an `assistant` message's `text` is the turn's answer; its `toolRequest` (and
  `frontendToolRequest`) parts are one response's calls, a parallel batch when there are
  several (a request whose `toolCall.status` is "error" names no tool and is not a call);
* `toolResponse` parts (in `user` messages) answer calls by id: `toolResult.status` "error", or
  `value.isError`, is a failed call; Goose's answer for a call the user declined
  ("The user has declined to run this tool") is a failed call and a `feedback` event
  `tool_rejected`; a call Goose asked about (a `toolConfirmationRequest` part with its id) and
  answered otherwise is a `decision` event `approval`; "Interrupted by the user to make a
  correction" (Goose's answer for calls stopped with Ctrl-C) interrupts the turn (one `feedback`
  event `interrupted`);
* `thinking`, `redactedThinking`, `image`, confirmations and notifications are not part of the
  conversation. Goose records tokens per session only (`accumulated_*_tokens`, else the last
  reply's): they are one API call on the session's last turn; the model from `model_config_json`.
Developer-extension tools are named by what they do (`developer__shell` is `shell`,
`developer__text_editor` is `view` / `write` / `edit` by its `command`), other tools keep Goose's
name. A line that is not JSON (half-written) is skipped and counted in `lines_malformed`.
"""
from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterable, Mapping
from datetime import datetime, UTC
from pathlib import Path
from typing import Any

import orjson

from jacked.sources.base import FoundSession, stat_fingerprint
from jacked.sources.briefs import add_raw, brief_input, brief_limit, head_and_tail
from jacked.sources.decisions import mark_interrupted, tool_approved, tool_rejected
from jacked.sources.goose.db import GooseDb
from jacked.sources.metrics import finish_turns
from jacked.sources.model import SHELL_TOOLS, Invocation, LlmCall, Session, TextUnit, Turn
from jacked.sources.opencode.build import iso
from jacked.sources.paths import home_dir, repo_name_of, resolve_path
from jacked.sources.textclean import strip_ansi
from jacked.sources.values import as_count, as_object, nonblank

PARSER_VERSION = 4  # 2: approvals and interruptions; 3: Turn.raw_text; 4: raw-text pieces kept whole up to 150,000 chars
MAX_FILE_BYTES = 64 << 20
MAX_TEXT_CHARS = 200_000
DB_NAME = "sessions.db"
DECLINED = "The user has declined to run this tool"
# What Goose answers for the calls that ran when the user pressed Ctrl-C (goose-cli
# `session/mod.rs`, `handle_interrupted_messages`; the desktop app writes the same words)
INTERRUPTED = "Interrupted by the user to make a correction"
EDITOR_COMMANDS = {"view": "view", "write": "write", "create": "write", "str_replace": "edit", "insert": "edit",
                   "edit": "edit", "undo_edit": "edit"}
REQUESTS = ("toolRequest", "frontendToolRequest")


def default_data_dir(environ: Mapping[str, str], platform: str = sys.platform) -> Path:
    """Goose's data folder on this platform (`Paths::data_dir`)."""
    configured = environ.get("GOOSE_PATH_ROOT", "").strip()
    if configured and Path(configured).is_absolute():
        return Path(configured) / "data"
    home = home_dir(environ)
    if platform.startswith("win"):
        appdata = environ.get("APPDATA", "").strip()
        return (Path(appdata) if appdata else home / "AppData" / "Roaming") / "Block" / "goose" / "data"
    data = environ.get("XDG_DATA_HOME", "").strip()
    xdg = (Path(data).expanduser() if data else home / ".local" / "share") / "goose"
    native = home / "Library" / "Application Support" / "Block" / "goose"
    if platform == "darwin" and not xdg.exists() and native.exists():
        return native
    return xdg


def text_of(content: list[Any]) -> str:
    return "\n".join(p["text"] for p in content if isinstance(p, dict) and p.get("type") == "text"
                     and isinstance(p.get("text"), str))


def iso_seconds(value: Any) -> str | None:
    return iso(value * 1000) if value.__class__ in (int, float) else None


def iso_timestamp(value: Any) -> str | None:
    """SQLite's `CURRENT_TIMESTAMP` text (UTC, `2025-10-01 12:00:00`) or RFC 3339 as ISO 8601 with a Z."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    dt = dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


class GooseSource:
    """Goose (block/goose): `sessions/sessions.db`, and the older `sessions/<name>.jsonl`."""

    name = "goose"
    label = "Goose"
    parser_version = PARSER_VERSION

    def default_root(self, environ: Mapping[str, str]) -> Path:
        configured = environ.get("JACKED_GOOSE_DIR", "").strip()
        return Path(configured).expanduser() if configured else default_data_dir(environ)

    def discover(self, root: Path, errors: list[str]) -> Iterable[FoundSession]:
        folder = root / "sessions"
        db_path = folder / DB_NAME
        in_db: set[str] = set()
        if db_path.is_file():
            try:
                with GooseDb(db_path) as db:
                    stats, locked = db.stats(), db.immutable
            except OSError as e:
                errors.append(f"{e}; its sessions skipped")
                stats, locked = {}, False
            for sid, stat in stats.items():
                in_db.add(sid)
                fingerprint = hashlib.blake2b(repr(stat).encode(), digest_size=12).hexdigest()
                yield FoundSession(sid, f"{db_path.absolute()}#{sid}", [db_path], fingerprint,
                                   extra={"immutable": locked})
        try:
            entries = sorted((e for e in os.scandir(folder) if e.name.endswith(".jsonl")), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            sid = entry.name[:-6]
            if sid in in_db:
                continue  # Goose copied it into sessions.db
            path = Path(entry.path)
            try:
                size = entry.stat().st_size
            except OSError:
                continue
            if size > MAX_FILE_BYTES:
                errors.append(f"{path}: {size} bytes, over the {MAX_FILE_BYTES} read; skipped")
                continue
            yield FoundSession(sid, str(path.absolute()), [path], stat_fingerprint([path]))

    def read(self, found: FoundSession) -> Session:
        path = found.files[0]
        if path.name == DB_NAME:
            return self._read_db(found, path)
        return self._read_jsonl(found, path)

    def _read_db(self, found: FoundSession, path: Path) -> Session:
        with GooseDb(path, immutable=bool(found.extra.get("immutable"))) as db:
            row = db.session(found.session_id)
            if row is None:
                raise ValueError(f"{path}#{found.session_id}: no longer in the database")
            rows = list(db.messages(found.session_id))
        built = _Builder(row.get("working_dir"), _model_of(row))
        for role, content_json, created, metadata_json in rows:
            if content_json is None:
                built.malformed += 1  # over the size read
                continue
            try:
                content = orjson.loads(content_json)
                metadata = orjson.loads(metadata_json) if metadata_json else {}
            except orjson.JSONDecodeError:
                built.malformed += 1
                continue
            built.feed({"role": role, "created": created, "content": content, "metadata": metadata})
        started = iso_timestamp(row.get("created_at"))
        ended = iso_timestamp(row.get("updated_at"))
        return built.session(found, path, row, started, ended, len(rows))

    def _read_jsonl(self, found: FoundSession, path: Path) -> Session:
        lines = path.read_bytes().splitlines()
        meta: dict[str, Any] = {}
        records: list[Any] = []
        malformed = 0
        for number, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                malformed += 1
                continue
            if number == 0 and isinstance(record, dict) and "role" not in record:
                meta = record  # the session's metadata line
                continue
            records.append(record)
        built = _Builder(meta.get("working_dir"), None)
        built.malformed = malformed
        for record in records:
            built.feed(record)
        stamps = [created for created in (r.get("created") for r in records if isinstance(r, dict)) if type(created) is int]
        started = iso_seconds(min(stamps)) if stamps else None
        ended = iso_seconds(max(stamps)) if stamps else None
        row = {"name": meta.get("description"), **{k: meta.get(k) for k in (
            "input_tokens", "output_tokens", "accumulated_input_tokens", "accumulated_output_tokens")}}
        return built.session(found, path, row, started, ended, len(lines))


def _model_of(row: Mapping[str, Any]) -> str | None:
    try:
        config = orjson.loads(row.get("model_config_json") or "null")
    except orjson.JSONDecodeError:
        return None
    return nonblank(as_object(config).get("model_name"))


def _tool_name(name: str, args: dict[str, Any]) -> str:
    """Developer-extension tools by what they do, so metrics count their files and commands."""
    extension, _, tool = name.rpartition("__")
    if extension != "developer":
        return name
    if tool == "text_editor":
        return EDITOR_COMMANDS.get(str(args.get("command")), name)
    return tool if tool in SHELL_TOOLS else name


def _result_text(result: dict[str, Any]) -> tuple[str, bool]:
    """A `toolResult`'s text and whether it failed (both the `CallToolResult` and older list shapes)."""
    if result.get("status") == "error":
        return str(result.get("error") or ""), True
    value = result.get("value")
    items = value.get("content") if isinstance(value, dict) else value
    text = "\n".join(c["text"] for c in items if isinstance(c, dict) and isinstance(c.get("text"), str)) \
        if isinstance(items, list) else ""
    return text, isinstance(value, dict) and value.get("isError") is True


class _Builder:
    def __init__(self, cwd: Any, model: str | None) -> None:
        self.cwd = nonblank(cwd)
        self.model = model
        self.turns: list[Turn] = []
        self.messages = self.unknown = self.malformed = 0
        self.calls: dict[str, Invocation] = {}
        self.owner: dict[str, Turn] = {}  # call id -> its turn (answered in a later `user` message)
        self.asked: set[str] = set()  # ids of calls Goose asked the user to confirm (`toolConfirmationRequest`)

    def _turn(self, at: str | None) -> Turn:
        if not self.turns:
            self.turns.append(Turn(index=0, prompt=None, started_at=at, ended_at=at))
        return self.turns[-1]

    def feed(self, message: Any) -> None:
        if not isinstance(message, dict) or not isinstance(message.get("content"), list):
            self.malformed += 1
            return
        role, content = message.get("role"), message["content"]
        at = iso_seconds(message.get("created"))
        if role == "user":
            self.messages += 1
            text = text_of(content)
            if text.strip() and as_object(message.get("metadata")).get("userVisible") is not False:
                index = self.turns[-1].index + 1 if self.turns else 1
                self.turns.append(Turn(index=index, prompt=text[:MAX_TEXT_CHARS], started_at=at, ended_at=at,
                                       started_by="prompt"))
            for part in content:
                if isinstance(part, dict) and part.get("type") == "toolResponse":
                    self._response(part, at)
        elif role == "assistant":
            self.messages += 1
            self._assistant(content, at)
        else:
            self.unknown += 1
        if self.turns and at:
            self.turns[-1].ended_at = at

    def _assistant(self, content: list[Any], at: str | None) -> None:
        turn = self._turn(at)
        if self.model and self.model not in turn.models:
            turn.models.append(self.model)
        text = text_of(content)
        if text.strip():
            add_raw(turn, strip_ansi(text))
            turn.assistant_text = text[:MAX_TEXT_CHARS]
        response = f"{turn.index}#{len({i.message_id for i in turn.invocations})}#{len(turn.invocations)}"
        sequence = len({i.message_id for i in turn.invocations})
        position = 0
        for part in content:
            if isinstance(part, dict) and part.get("type") == "toolConfirmationRequest":
                self.asked.add(str(part.get("id")))
            if not isinstance(part, dict) or part.get("type") not in REQUESTS:
                continue
            call = as_object(part.get("toolCall"))
            value = as_object(call.get("value"))
            name = nonblank(value.get("name"))
            if call.get("status") != "success" or name is None:
                continue
            position += 1
            args = as_object(value.get("arguments"))
            tool = _tool_name(name, args)
            call_id = str(part.get("id") or f"{response}.{position}")
            inv = Invocation(tool_name=tool, tool_use_id=call_id, sequence=sequence, position=position,
                             message_id=response, timestamp=at, input_brief=brief_input(args))
            inv.file_path = resolve_path(nonblank(args.get("path")), self.cwd)
            if tool in SHELL_TOOLS:
                inv.command = nonblank(args.get("command"))
            turn.invocations.append(inv)
            add_raw(turn, args)
            self.calls[call_id] = inv
            self.owner[call_id] = turn

    def _response(self, part: dict[str, Any], at: str | None) -> None:
        inv = self.calls.get(str(part.get("id")))
        if inv is None or inv.has_result:
            return
        text, failed = _result_text(as_object(part.get("toolResult")))
        declined = text.startswith(DECLINED)
        inv.has_result, inv.is_error, inv.result_timestamp = True, failed or declined, at
        if text:
            inv.result_brief = head_and_tail(text, brief_limit(inv.tool_name, inv.is_error))
        turn = self.owner[inv.tool_use_id]
        add_raw(turn, strip_ansi(text))
        if declined:
            turn.events.append(tool_rejected(at, inv))
        elif text.startswith(INTERRUPTED):
            mark_interrupted(turn, at, inv)
        elif inv.tool_use_id in self.asked:  # the user was asked, and let it run
            turn.events.append(tool_approved(at, inv))

    def session(self, found: FoundSession, path: Path, row: Mapping[str, Any], started: str | None,
                ended: str | None, lines: int) -> Session:
        tokens_in = as_count(row.get("accumulated_input_tokens")) or as_count(row.get("input_tokens"))
        tokens_out = as_count(row.get("accumulated_output_tokens")) or as_count(row.get("output_tokens"))
        if self.messages and (tokens_in or tokens_out):
            self._turn(started).llm_calls.append(LlmCall(message_id="session", model=self.model, timestamp=ended,
                                                    input_tokens=tokens_in, output_tokens=tokens_out,
                                                    has_usage=True))
        if self.turns and not self.turns[0].started_at:
            self.turns[0].started_at = started
        finish_turns(self.turns)
        session = Session(session_id=found.session_id, file=str(path.absolute()), agent="goose",
                          project_dir=path.parent.name, cwd=self.cwd, repo_name=repo_name_of(self.cwd),
                          started_at=started, ended_at=ended or started, turns=self.turns,
                          models=[self.model] if self.model else [], lines=lines,
                          lines_malformed=self.malformed, lines_unknown=self.unknown, message_lines=self.messages)
        title = nonblank(row.get("name")) or nonblank(row.get("description"))
        if title:
            session.texts.append(TextUnit("ai_title", title, ended, None))
        return session
