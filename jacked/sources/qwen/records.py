"""Qwen Code's JSONL chat records (2025-11 on), turned into Gemini CLI's message shape.

Qwen Code forked Gemini CLI and then rewrote its recorder
(`packages/core/src/services/chatRecordingService.ts`, read at QwenLM/qwen-code
`015346f1d5d7312fddaf84a7ef1f83c7d217d389`): `projects/<sanitized cwd>/chats/<session id>.jsonl`,
appended to, one `ChatRecord` per line — `uuid`, `parentUuid`, `sessionId`, `timestamp`, `cwd`,
`version`, `gitBranch`, and by `type`:

* `user`: `message` (a Gemini `Content`: role + parts) as sent; `systemPayload.displayText`
  what was typed when it differs. A `subtype`, or a `provenance` other than `real_user`
  (2026), marks a user record nobody typed (a notification, a cron job, a goal's next step).
* `assistant`: one model response: `message.parts` (text, `thought` text, `functionCall`
  {id, name, args}), `usageMetadata` (Gemini's token counts), `model`.
* `tool_result`: a call's result: `message.parts` (`functionResponse` {id, name, response})
  and `toolCallResult` {callId, status: success | error | cancelled, resultDisplay, error}.
* `system`: events by `subtype` — `chat_compression` (`systemPayload.compressedHistory`, the
  summary first), `slash_command` (`phase`, `rawCommand`), `custom_title`, `ui_telemetry`,
  `at_command`, `rewind`, … A record with `isSidechain` and an `agentId` is a subagent's.

The records are mapped onto the messages `jacked.sources.gemini.turns` builds turns from (the
model's response as a `gemini` message with its `toolCalls`, each call given its result's
status and parts), so Gemini CLI and its fork share one set of turn rules.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jacked.sources.gemini.turns import SNAPSHOT_TAG, parts_of, text_of
from jacked.sources.reader import ReadResult, iter_records
from jacked.sources.values import as_object

RECORD_TYPES = frozenset({"user", "assistant", "tool_result", "system"})


@dataclass(slots=True)
class QwenChat:
    """The records of one chat file: the main conversation's and each subagent's, as messages."""

    session_id: str | None = None
    cwd: str | None = None
    git_branch: str | None = None
    versions: list[str] = field(default_factory=list)
    title: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    subagents: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # agent id -> messages
    subagent_names: dict[str, str] = field(default_factory=dict)
    approval_modes: list[tuple[str | None, str]] = field(default_factory=list)  # (time, mode)
    lines: int = 0
    malformed: int = 0
    unknown: int = 0


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def _tokens(usage: Any) -> dict[str, int] | None:
    """Gemini's `usageMetadata` as the `tokens` of a Gemini CLI message."""
    if not isinstance(usage, dict):
        return None

    def n(key: str) -> int:
        v = usage.get(key)
        return v if isinstance(v, int) and v > 0 else 0

    return {"input": n("promptTokenCount"), "output": n("candidatesTokenCount"),
            "cached": n("cachedContentTokenCount"), "thoughts": n("thoughtsTokenCount"),
            "tool": n("toolUsePromptTokenCount")}


def _results(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each call's result by call id: its status, parts, display and time."""
    out: dict[str, dict[str, Any]] = {}
    for rec in records:
        if rec.get("type") != "tool_result":
            continue
        meta = as_object(rec.get("toolCallResult"))
        parts = parts_of(rec["message"].get("parts")) if isinstance(rec.get("message"), dict) else []
        ids = [p["functionResponse"].get("id") for p in parts if isinstance(p.get("functionResponse"), dict)]
        for cid in [_str(meta.get("callId")), *ids]:
            if cid and cid not in out:
                out[cid] = {"status": _str(meta.get("status")), "parts": parts,
                            "display": meta.get("resultDisplay"), "timestamp": _str(rec.get("timestamp")),
                            "error": meta.get("error")}
    return out


def _message(rec: dict[str, Any], results: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """One record as a Gemini CLI message; None for a record that is not part of the conversation."""
    rtype, subtype = rec.get("type"), rec.get("subtype")
    uid, ts = _str(rec.get("uuid")), _str(rec.get("timestamp"))
    content = rec["message"].get("parts") if isinstance(rec.get("message"), dict) else None
    if rtype == "user":
        if subtype is not None or rec.get("provenance", "real_user") != "real_user":
            return None  # written by Qwen Code itself (a notification, a cron run, a goal's step), not typed
        payload = as_object(rec.get("systemPayload"))
        msg: dict[str, Any] = {"type": "user", "id": uid, "timestamp": ts, "content": content}
        if _str(payload.get("displayText")):
            msg["displayContent"] = payload["displayText"]
        return msg
    if rtype == "assistant":
        calls = []
        for p in parts_of(content):
            fc = p.get("functionCall")
            if not isinstance(fc, dict):
                continue
            cid = _str(fc.get("id"))
            res = results.get(cid or "")
            call: dict[str, Any] = {"id": cid, "name": fc.get("name"), "args": fc.get("args"), "timestamp": ts}
            if res is not None:
                call.update(status=res["status"], result=res["parts"], timestamp=res["timestamp"] or ts)
                if res["display"] is not None:
                    call["resultDisplay"] = res["display"]
                if not res["parts"] and isinstance(res["error"], dict):  # a call that failed before it ran
                    call["result"] = [{"text": str(res["error"].get("message") or "")}]
            calls.append(call)
        return {"type": "gemini", "id": uid, "timestamp": ts,
                "content": [p for p in parts_of(content) if "functionCall" not in p],
                "toolCalls": calls, "tokens": _tokens(rec.get("usageMetadata")), "model": _str(rec.get("model"))}
    if rtype == "system" and subtype == "slash_command":
        payload = as_object(rec.get("systemPayload"))
        if payload.get("phase") == "invocation" and _str(payload.get("rawCommand")) \
                and not payload.get("sentToModel") and not payload.get("hiddenInvocation"):
            return {"type": "user", "id": uid, "timestamp": ts, "content": payload["rawCommand"]}
        return None
    if rtype == "system" and subtype == "chat_compression":
        payload = as_object(rec.get("systemPayload"))
        history = given if isinstance(given := payload.get("compressedHistory"), list) else []
        summary = next((text_of(c.get("parts")) for c in history if isinstance(c, dict) and text_of(c.get("parts"))), "")
        if not summary.strip():
            return None
        if SNAPSHOT_TAG not in summary:  # the summary as Gemini CLI's turn rules know it
            summary = f"{SNAPSHOT_TAG}\n{summary}"
        return {"type": "user", "id": uid, "timestamp": ts, "content": summary}
    return None


def load_chat(path: Path) -> QwenChat:
    """One chat file; `OSError` when it cannot be read, `ValueError` when it holds no record."""
    chat = QwenChat()
    res = ReadResult()
    records: list[dict[str, Any]] = []
    for rec in iter_records(path, result=res):
        if rec.get("type") not in RECORD_TYPES:
            chat.unknown += 1
            continue
        records.append(rec)
    chat.lines = res.lines + res.pending_tail_malformed
    chat.malformed = res.malformed + res.pending_tail_malformed
    if not records:
        raise ValueError("not a Qwen Code chat file (no chat record)")
    results = _results(records)
    for rec in records:
        ts = _str(rec.get("timestamp"))
        if ts:
            chat.started_at = chat.started_at or ts
            chat.ended_at = ts if chat.ended_at is None or ts > chat.ended_at else chat.ended_at
        chat.session_id = chat.session_id or _str(rec.get("sessionId"))
        side = rec.get("isSidechain") is True and _str(rec.get("agentId"))
        if not side:
            chat.cwd = _str(rec.get("cwd")) or chat.cwd
            chat.git_branch = _str(rec.get("gitBranch")) or chat.git_branch
            version = _str(rec.get("version"))
            if version and version != "unknown" and version not in chat.versions:
                chat.versions.append(version)
        payload = as_object(rec.get("systemPayload"))
        if rec.get("subtype") == "custom_title" and _str(payload.get("customTitle")):
            chat.title = payload["customTitle"]
        if rec.get("subtype") == "session_approval_mode" and _str(payload.get("mode")):
            chat.approval_modes.append((ts, payload["mode"]))
        msg = _message(rec, results)
        if msg is None:
            continue
        if side:
            chat.subagents.setdefault(side, []).append(msg)
            if _str(rec.get("agentName")):
                chat.subagent_names[side] = rec["agentName"]
        else:
            chat.messages.append(msg)
    return chat

