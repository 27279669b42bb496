"""Turns of an opencode session, from its messages and their parts (DESIGN "Turn rules").

How opencode's records map onto the turn model:
* A user message with text the person typed (text parts not marked `synthetic`/`ignored`) starts
  a turn; so does one carrying a `subtask` part (a command run as a subagent). A user message
  holding only a `compaction` part is opencode compacting the conversation (`auto` or `/compact`):
  a compaction event of the running turn, not a prompt. Assistant messages before any prompt
  form turn 0.
* One model response is one *step*: the parts between a `step-start` and its `step-finish`
  (older releases put many steps in one assistant message, newer ones one per message). Tool
  parts of one step are a parallel batch; the step's `step-finish` carries its tokens, so each
  response is counted once (a message without any `step-finish` counts its own `tokens`).
  Output tokens include reasoning tokens, as Claude's do.
* A tool part is an invocation: `state.status` `completed` (its `output`), `error` (its `error`:
  a failed call) or `pending`/`running` (no result yet: still running, or opencode stopped). A
  shell call that completed with a non-zero `metadata.exit` is a failed call too.
* An assistant message with `summary: true` is a compaction summary (`compact_summary`); the
  `summary.body` opencode wrote for a user message (older releases) is a recap of its turn.
* A session whose `parentID` is set is a subagent run (the `task` tool's child session, named
  in the call's `metadata.sessionId`): a `Subagent` of its parent, not a session of its own.

OpenCode 2.x records (`RawSession.entries`, one per `session_message` row, by `seq`):
* `user` with non-blank `text` (else attached `files`) starts a turn; `assistant` is one model
  step: its `content` parts inline (`text`, `reasoning`, `tool`), its `tokens` once, its
  `error` (a step that failed) an error event of the turn. The tool parts of one step are a
  parallel batch. A `tool` part holds call and result (`state.status` `streaming`, `running`,
  `completed` with `content[]`, `error` with `error.message`); a completed call whose
  `metadata.error` is true (code mode's `execute` returning the error it caught) failed, as
  does a completed `shell` call with a non-zero `metadata.exit`.
* `shell` (a command the user ran with `!`) is a command output of the running turn, not a
  prompt nor a tool call; `compaction` (`completed`) compacts the running turn, its `summary`
  the compaction summary, its `tokens` the summarising response; `idle` ends a turn (outcome
  `interrupted`: the turn was interrupted); `synthetic` (text opencode added for the model),
  `agent-switched`, `model-switched`, `system`, `skill` and `location-switched` are not part
  of the conversation.
* The `subagent` tool starts a child session (`metadata.sessionID`, `input.agent`).
"""
from __future__ import annotations

import ntpath
import posixpath
import re
from datetime import datetime, UTC
from typing import Any

from jacked.sources.briefs import MAX_DIFF_CHARS, add_raw, brief_input, brief_limit, content_hash, head_and_tail, short
from jacked.sources.decisions import mark_interrupted, tool_rejected
from jacked.sources.metrics import compute_metrics, elapsed_ms, fill_subagent_counts
from jacked.sources.model import (
    AGENT_TOOLS,
    EDIT_TOOLS,
    READ_TOOLS,
    SHELL_TOOLS,
    WRITE_TOOLS,
    Invocation,
    LlmCall,
    Session,
    Subagent,
    TextUnit,
    Turn,
    TurnEvent,
)
from jacked.sources.opencode.store import RawSession
from jacked.sources.paths import repo_name_of
from jacked.sources.textclean import strip_ansi

# Bumped whenever what `build_session` returns changes: every opencode session is read again.
PARSER_VERSION = 6  # 3: the cost opencode recorded per response is kept; 4: feedback events; 5: Turn.raw_text; 6: raw-text pieces kept whole up to 150,000 chars

MAX_TEXT_CHARS = 200_000  # a distilled text longer than this is kept whole up to here
PART_TYPES = frozenset({"text", "reasoning", "tool", "step-start", "step-finish", "patch", "snapshot", "file",
                        "agent", "compaction", "subtask", "retry"})
# OpenCode 2.x: the record types of `session_message`, and the parts of an assistant record.
ENTRY_TYPES = frozenset({"user", "assistant", "shell", "synthetic", "compaction", "idle", "agent-switched",
                         "model-switched", "system", "skill", "location-switched"})
CONTENT_TYPES = frozenset({"text", "reasoning", "tool"})
TASK_TOOLS = AGENT_TOOLS | {"subagent"}  # 2.x names opencode's task tool `subagent`
FILE_TOOLS = READ_TOOLS | WRITE_TOOLS | EDIT_TOOLS
MAX_EVENT_CHARS = 1000
# The error a tool part gets when the user answers its permission prompt with "reject"
# (anomalyco/opencode 0197fee96cdea6790eeb905cee48d894d6d2e53d, `permission/index.ts`:
# `RejectedError`, and `CorrectedError` "… with the following feedback: <what the user typed>";
# earlier releases add "You may try again with different parameters."). `DeniedError` ("The user
# has specified a rule …") is the configuration refusing, not the user: no feedback.
REJECTED_PERMISSION = "The user rejected permission to use this"
REJECTION_FEEDBACK = "with the following feedback:"
# The title opencode gives a session until its title agent names it: not a title of its own.
DEFAULT_TITLE = re.compile(r"^(?:New session|Child session) - \d{4}-\d{2}-\d{2}T")
SUBAGENT_TITLE = re.compile(r"^(.*) \(@([^()]+) subagent\)\s*$", re.S)
PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.M)


def iso(ms: Any) -> str | None:
    """opencode's epoch milliseconds as ISO 8601 UTC with a Z."""
    if ms.__class__ not in (int, float) or ms <= 0:
        return None
    try:
        dt = datetime.fromtimestamp(ms / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _int(v: Any) -> int:
    return int(v) if v.__class__ in (int, float) and v == v and abs(v) < 1 << 62 else 0


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v.strip() else None


def diff_counts(diff: str) -> tuple[int, int]:
    """(lines added, lines removed) of a unified diff: the `+`/`-` lines of its hunks (file
    headers such as `--- a` / `+++ b` and `Index:` are not changes)."""
    added = removed = 0
    hunks = diff.startswith("@@") or "\n@@" in diff
    in_hunk = not hunks  # a diff with no hunk header: every +/- line but the file headers
    for line in diff.splitlines():
        if line.startswith("@@"):
            in_hunk = True
        elif line.startswith(("Index: ", "diff --git ")):
            in_hunk = not hunks
        elif not in_hunk or (not hunks and line.startswith(("+++", "---"))):
            continue
        elif line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
    return added, removed


def _created_diff(body: str) -> str:
    head = body[:MAX_DIFF_CHARS * 2]
    return short("\n".join("+" + ln for ln in head.splitlines()), MAX_DIFF_CHARS)


class SessionBuilder:
    """Builds the turns of one session (or one subagent session) from its messages, in order."""

    def __init__(self, directory: str | None = None) -> None:
        self.directory = directory  # the session's folder: 2.x tools name files relative to it
        self.turns: list[Turn] = []
        self.cur: Turn | None = None
        self.texts: list[TextUnit] = []
        self.models: list[str] = []
        self.agents: list[str] = []  # the agents that answered (`build`, `plan`, `explore`, ...)
        self.messages = 0
        self.unknown = 0
        self.started_at: str | None = None
        self.ended_at: str | None = None
        self.cwd: str | None = None
        self.last_assistant_text: str | None = None
        self._step_seq: dict[str, int] = {}  # step id -> sequence among the turn's steps with calls
        self._step_calls: dict[str, int] = {}

    # ------------------------------------------------------------------ feeding
    def feed(self, message: dict[str, Any], parts: list[dict[str, Any]]) -> None:
        for p in parts:
            kind = p.get("type")
            if kind.__class__ is not str or kind not in PART_TYPES:
                self.unknown += 1  # kept in the count, never fatal
        role = message.get("role")
        if role == "user":
            self.messages += 1
            self._user(message, parts)
        elif role == "assistant":
            self.messages += 1
            self._assistant(message, parts)
        else:
            self.unknown += 1

    def _touch(self, ts: str | None) -> None:
        if ts is None:
            return
        if self.started_at is None or ts < self.started_at:
            self.started_at = ts
        if self.ended_at is None or ts > self.ended_at:
            self.ended_at = ts
        if self.cur is not None and (self.cur.ended_at is None or ts > self.cur.ended_at):
            self.cur.ended_at = ts

    def _start_turn(self, prompt: str | None, ts: str | None, uid: str | None) -> Turn:
        index = 0 if prompt is None else (self.turns[-1].index + 1 if self.turns else 1)
        typed = prompt is not None
        turn = Turn(index=index, prompt=prompt, started_at=ts, ended_at=ts, started_by="prompt" if typed else None,
                    prompt_uuid=uid if typed else None)
        self.turns.append(turn)
        self.cur = turn
        self._step_seq, self._step_calls = {}, {}
        return turn

    def _user(self, message: dict[str, Any], parts: list[dict[str, Any]]) -> None:
        ts = iso(_dict(message.get("time")).get("created"))
        texts: list[str] = []
        subtask: dict[str, Any] | None = None
        attached: list[str] = []
        compaction: dict[str, Any] | None = None
        for p in parts:
            kind = p.get("type")
            if kind == "text":
                text = p.get("text")
                if p.get("synthetic") is True or p.get("ignored") is True or not isinstance(text, str):
                    continue  # what opencode added itself: a file's content, "Continue if you have next steps"
                if text.strip():
                    texts.append(text)
            elif kind == "subtask" and subtask is None:
                subtask = p
            elif kind == "file":
                name = _str(p.get("filename")) or _str(_dict(p.get("source")).get("path"))
                if name:
                    attached.append(name)
            elif kind == "compaction" and compaction is None:
                compaction = p
        if compaction is not None and self.cur is not None:
            self.cur.compacted = True
            trigger = "auto" if compaction.get("auto") is True else "manual"
            self.cur.events.append(TurnEvent("compaction", ts, {"trigger": trigger, "pre_tokens": None}))
        prompt = "\n".join(texts) if texts else None
        if prompt is None and subtask is not None:
            prompt = _str(subtask.get("prompt")) or _str(subtask.get("description"))
        if prompt is None and attached and compaction is None:
            prompt = "\n".join(f"[attached {name}]" for name in attached)
        if prompt is None:
            self._touch(ts)
            return
        turn = self._start_turn(prompt[:MAX_TEXT_CHARS], ts, _str(message.get("id")))
        self._touch(ts)
        body = _str(_dict(message.get("summary")).get("body"))
        if body:
            self.texts.append(TextUnit("recap", body[:MAX_TEXT_CHARS], ts, turn.index))

    def _assistant(self, message: dict[str, Any], parts: list[dict[str, Any]]) -> None:
        times = _dict(message.get("time"))
        ts = iso(times.get("created"))
        if self.cur is None:
            self._start_turn(None, ts, None)
        turn = self.cur
        assert turn is not None
        self._touch(ts)
        self._touch(iso(times.get("completed")))
        mid = str(message.get("id") or "")
        model = _str(message.get("modelID"))
        if model is not None:
            if model not in turn.models:
                turn.models.append(model)
            if model not in self.models:
                self.models.append(model)
        agent = _str(message.get("agent")) or _str(message.get("mode"))
        if agent and agent not in self.agents:
            self.agents.append(agent)
        if self.cwd is None:
            self.cwd = _str(_dict(message.get("path")).get("cwd"))
        aborted = _dict(message.get("error")).get("name") == "MessageAbortedError"
        is_summary = message.get("summary") is True
        summary: list[str] = []
        calls: dict[int, LlmCall] = {}

        def llm(step: int) -> LlmCall:
            call = calls.get(step)
            if call is None:
                call = calls[step] = LlmCall(message_id=f"{mid}#{step}", model=model, timestamp=ts)
                turn.llm_calls.append(call)
            return call

        step = 0
        finished = False
        for p in parts:
            kind = p.get("type")
            if kind == "step-start":
                step += 1
            elif kind == "step-finish":
                _usage(llm(step), p.get("tokens"), cost=p.get("cost"))
                finished = True
            elif kind == "tool":
                self._tool(turn, p, llm(step), ts)
            elif kind == "text":
                text = p.get("text")
                self._touch(iso(_dict(p.get("time")).get("end")))
                if not isinstance(text, str) or not text.strip() or p.get("synthetic") is True:
                    continue
                if is_summary:
                    summary.append(text)
                else:
                    add_raw(turn, text)
                    turn.assistant_text = self.last_assistant_text = text[:MAX_TEXT_CHARS]
        if not finished and isinstance(message.get("tokens"), dict):
            _usage(llm(1 if step else 0), message["tokens"], only_if_any=True, cost=message.get("cost"))
        if aborted:
            _interrupt(turn, ts)
        if is_summary and summary:
            turn.compacted = True
            self.texts.append(TextUnit("compact_summary", "\n".join(summary)[:MAX_TEXT_CHARS], ts, turn.index))

    def _tool(self, turn: Turn, p: dict[str, Any], call: LlmCall, ts: str | None) -> Invocation:
        name = _str(p.get("tool")) or "?"
        state = _dict(p.get("state"))
        inp = _dict(state.get("input"))
        meta = _dict(state.get("metadata"))
        times = _dict(state.get("time"))
        start, end = iso(times.get("start")), iso(times.get("end"))
        self._touch(start)
        self._touch(end)
        step_id = call.message_id
        if step_id not in self._step_seq:
            self._step_seq[step_id] = len(self._step_seq)
            self._step_calls[step_id] = 0
        self._step_calls[step_id] += 1
        call.tool_calls += 1
        inv = Invocation(tool_name=name, tool_use_id=str(p.get("callID") or p.get("id") or ""),
                         sequence=self._step_seq[step_id], position=self._step_calls[step_id], message_id=step_id,
                         timestamp=start or ts, input_brief=brief_input(inp))
        inv.file_path = _str(inp.get("filePath")) or _str(inp.get("file_path")) or _patch_file(name, inp, meta)
        if name in SHELL_TOOLS and isinstance(inp.get("command"), str):
            inv.command = inp["command"]
        if _str(inp.get("description")):
            inv.description = short(inp["description"], 300)
        if name in TASK_TOOLS:
            inv.subagent_type = _str(inp.get("subagent_type")) or _str(inp.get("agent"))
            inv.agent_id = _str(meta.get("sessionId")) or _str(meta.get("sessionID"))
        status = state.get("status")
        text = ""
        if status == "completed":
            inv.has_result = True
            text = given if isinstance(given := state.get("output"), str) else ""
            exit_code = meta.get("exit")
            if name in SHELL_TOOLS and exit_code.__class__ is int and exit_code != 0:
                inv.is_error = True
        elif status == "error":
            inv.has_result = inv.is_error = True
            text = given if isinstance(given := state.get("error"), str) else ""
            if text.lstrip().startswith(REJECTED_PERMISSION):
                reason = text.partition(REJECTION_FEEDBACK)[2].strip() or None
                turn.events.append(tool_rejected(end or ts, inv, reason))
        if inv.has_result:
            inv.result_timestamp = end
            text = strip_ansi(text)
            limit = brief_limit(name, inv.is_error)
            inv.result_brief = short(text, limit) if name in READ_TOOLS else head_and_tail(text, limit)
            if not inv.is_error and (name in EDIT_TOOLS or name in WRITE_TOOLS):
                _file_change(inv, inp, meta)
        add_raw(turn, inp, text)
        turn.invocations.append(inv)
        return inv

    # ------------------------------------------------------------------ OpenCode 2.x records
    def feed_entry(self, entry: dict[str, Any]) -> None:
        """One `session_message` record (its `data`, with the row's `id` and `type`)."""
        kind = entry.get("type")
        if kind == "user":
            self.messages += 1
            self._entry_user(entry)
        elif kind == "assistant":
            self.messages += 1
            self._entry_assistant(entry)
        elif kind == "shell":
            self.messages += 1
            self._entry_shell(entry)
        elif kind == "compaction":
            self.messages += 1
            self._entry_compaction(entry)
        elif kind == "idle":
            self._touch(iso(_dict(entry.get("time")).get("created")))
            if entry.get("outcome") == "interrupted" and self.cur is not None:
                _interrupt(self.cur, iso(_dict(entry.get("time")).get("created")))
        elif kind.__class__ is not str or kind not in ENTRY_TYPES:
            self.unknown += 1  # kept in the count, never fatal

    def _running_turn(self, ts: str | None) -> Turn:
        return self.cur if self.cur is not None else self._start_turn(None, ts, None)

    def _entry_user(self, entry: dict[str, Any]) -> None:
        ts = iso(_dict(entry.get("time")).get("created"))
        text = entry.get("text")
        prompt = text if isinstance(text, str) and text.strip() else None
        if prompt is None:
            files = entry.get("files")
            names = [n for f in (files if isinstance(files, list) else []) if isinstance(f, dict)
                     for n in [_str(f.get("name")) or _str(_dict(f.get("source")).get("path"))] if n]
            prompt = "\n".join(f"[attached {name}]" for name in names) or None
        if prompt is not None:
            self._start_turn(prompt[:MAX_TEXT_CHARS], ts, _str(entry.get("id")))
        self._touch(ts)

    def _entry_assistant(self, entry: dict[str, Any]) -> None:
        times = _dict(entry.get("time"))
        ts = iso(times.get("created"))
        turn = self._running_turn(ts)
        self._touch(ts)
        self._touch(iso(times.get("completed")))
        mid = str(entry.get("id") or "")
        model = _str(_dict(entry.get("model")).get("id"))
        if model is not None:
            if model not in turn.models:
                turn.models.append(model)
            if model not in self.models:
                self.models.append(model)
        agent = _str(entry.get("agent"))
        if agent and agent not in self.agents:
            self.agents.append(agent)
        calls: list[LlmCall] = []

        def llm() -> LlmCall:  # the step's one API response
            if not calls:
                calls.append(LlmCall(message_id=mid, model=model, timestamp=ts))
                turn.llm_calls.append(calls[0])
            return calls[0]

        content = entry.get("content")
        for p in content if isinstance(content, list) else []:
            kind = p.get("type") if isinstance(p, dict) else None
            if kind == "tool":
                self._entry_tool(turn, p, llm(), ts)
            elif kind == "text":
                text = p.get("text")
                if isinstance(text, str) and text.strip():
                    add_raw(turn, text)
                    turn.assistant_text = self.last_assistant_text = text[:MAX_TEXT_CHARS]
            elif kind.__class__ is not str or kind not in CONTENT_TYPES:
                self.unknown += 1
        if isinstance(entry.get("tokens"), dict):
            _usage(llm(), entry["tokens"], only_if_any=True, cost=entry.get("cost"))
        error = entry.get("error")
        message = _str(error) or _str(_dict(error).get("message")) or _str(_dict(error).get("type"))
        if message:
            turn.events.append(TurnEvent("command_output", ts, {"output": short(message, MAX_EVENT_CHARS),
                                                                "level": "error"}))

    def _entry_tool(self, turn: Turn, p: dict[str, Any], call: LlmCall, ts: str | None) -> None:
        part = _tool_part(p)
        inv = self._tool(turn, part, call, ts)
        if inv.file_path is None and inv.tool_name in FILE_TOOLS:
            path = _str(_dict(_dict(p.get("state")).get("input")).get("path"))
            if path and not part["state"]["output"].startswith("Read directory "):
                inv.file_path = _resolve(path, self.directory)

    def _entry_shell(self, entry: dict[str, Any]) -> None:
        times = _dict(entry.get("time"))
        ts = iso(times.get("created"))
        turn = self._running_turn(ts)
        command = _str(entry.get("command")) or ""
        output = _dict(entry.get("output")).get("output")
        text = strip_ansi(f"$ {command}\n{output if isinstance(output, str) else ''}".strip())
        exit_code = entry.get("exit")
        turn.events.append(TurnEvent("command_output", ts, {
            "output": short(text, MAX_EVENT_CHARS), "command": command,
            "exit": exit_code if exit_code.__class__ is int else None, "status": _str(entry.get("status"))}))
        self._touch(ts)
        self._touch(iso(times.get("completed")))

    def _entry_compaction(self, entry: dict[str, Any]) -> None:
        ts = iso(_dict(entry.get("time")).get("created"))
        turn = self._running_turn(ts)
        self._touch(ts)
        trigger = entry.get("reason") if entry.get("reason") in ("auto", "manual") else None
        status = entry.get("status")
        if status == "completed":
            turn.compacted = True
            turn.events.append(TurnEvent("compaction", ts, {"trigger": trigger, "pre_tokens": None}))
            summary = _str(entry.get("summary"))
            if summary:
                self.texts.append(TextUnit("compact_summary", summary[:MAX_TEXT_CHARS], ts, turn.index))
        elif status == "failed":
            error = entry.get("error")
            message = _str(error) or _str(_dict(error).get("message")) or "failed"
            turn.events.append(TurnEvent("command_output", ts, {
                "output": short(f"compaction failed: {message}", MAX_EVENT_CHARS), "level": "error"}))
        if isinstance(entry.get("tokens"), dict):  # the summarising response
            call = LlmCall(message_id=str(entry.get("id") or ""), model=_str(_dict(entry.get("model")).get("id")),
                           timestamp=ts)
            turn.llm_calls.append(call)
            _usage(call, entry["tokens"], only_if_any=True, cost=entry.get("cost"))

    # ------------------------------------------------------------------ results
    def finalize(self) -> list[Turn]:
        for turn in self.turns:
            compute_metrics(turn)
            turn.duration_ms = elapsed_ms(turn.started_at, turn.ended_at)
            turn.duration_source = "timestamps" if turn.duration_ms is not None else None
        return self.turns


def _usage(call: LlmCall, tokens: Any, only_if_any: bool = False, cost: Any = None) -> None:
    """A step's (or message's) token counts, and the cost opencode recorded for it, into its API call."""
    t = _dict(tokens)
    cache = _dict(t.get("cache"))
    counts = (_int(t.get("input")), _int(t.get("output")) + _int(t.get("reasoning")),
              _int(cache.get("read")), _int(cache.get("write")))
    if only_if_any and not any(counts):
        return  # a message still streaming (or aborted before any usage): no response to count
    call.input_tokens, call.output_tokens, call.cache_read_tokens, call.cache_creation_tokens = counts
    call.has_usage = True
    if isinstance(cost, (int, float)) and not isinstance(cost, bool):
        call.agent_cost_usd = float(cost)


def _interrupt(turn: Turn, ts: str | None) -> None:
    """The user stopped the turn, naming the call left unfinished (opencode ends a running call as an
    error "Tool execution aborted")."""
    running = next((i for i in reversed(turn.invocations) if not i.has_result
                    or i.is_error and "aborted" in (i.result_brief or "")[:100].lower()), None)
    mark_interrupted(turn, ts, running)


def _tool_part(p: dict[str, Any]) -> dict[str, Any]:
    """A 2.x tool part (`id`, `name`, `state.content[]`, `state.error.message`, `time.created`)
    in the 1.x shape `SessionBuilder._tool` reads."""
    state = _dict(p.get("state"))
    status = state.get("status")
    meta = _dict(state.get("metadata"))
    texts: list[str] = []
    content = state.get("content")
    for item in content if isinstance(content, list) else []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "text" and isinstance(item.get("text"), str):
            texts.append(item["text"])
        elif item.get("type") == "file":
            texts.append(f"[file {_str(item.get('name')) or _str(item.get('uri')) or ''}]")
    output = "\n".join(texts)
    error = state.get("error")
    error_text = _str(error) or _str(_dict(error).get("message")) or _str(_dict(error).get("type")) or ""
    if status == "streaming":
        status = "pending"
    elif status == "completed" and meta.get("error") is True:
        status, error_text = "error", output  # the call reported its failure as its result
    elif status == "error" and not error_text:
        error_text = output
    inp = state.get("input")
    times = _dict(p.get("time"))
    return {"type": "tool", "callID": p.get("id"), "tool": p.get("name"),
            "state": {"status": status, "input": inp if isinstance(inp, dict) else {}, "output": output,
                      "error": error_text, "metadata": meta,
                      "time": {"start": times.get("created"), "end": times.get("completed")}}}


def _resolve(path: str, directory: str | None) -> str:
    """A file a 2.x tool named, relative to the session's folder, as an absolute path."""
    if not directory:
        return path
    flavour = posixpath if directory.startswith("/") else ntpath
    return path if flavour.isabs(path) else flavour.normpath(flavour.join(directory, path))


def _patch_file(name: str, inp: dict[str, Any], meta: dict[str, Any]) -> str | None:
    """The (first) file a patch call changed, for `patch`/`apply_patch`."""
    if name not in ("patch", "apply_patch"):
        return None
    files = meta.get("files")
    for f in files if isinstance(files, list) else []:
        if isinstance(f, dict):
            path = _str(f.get("filePath")) or _str(f.get("movePath")) or _str(f.get("relativePath"))
            if path:
                return path
    text = inp.get("patchText") or inp.get("patch")
    m = PATCH_FILE.search(text) if isinstance(text, str) else None
    return m.group(1).strip() if m else None


def _file_change(inv: Invocation, inp: dict[str, Any], meta: dict[str, Any]) -> None:
    """Lines added/removed, a bounded diff and content hashes of a successful file change."""
    if inv.tool_name in WRITE_TOOLS:
        content = inp.get("content")
        if isinstance(content, str):
            inv.after_hash = content_hash(content)
            if meta.get("exists") is not True and not meta.get("diff") and not meta.get("filediff"):
                inv.lines_added, inv.lines_removed = len(content.splitlines()), 0
                inv.file_created = meta.get("exists") is False
                inv.diff = _created_diff(content)
                return
    changes = [meta]
    for key in ("results", "files"):  # multiedit: one entry per edit; apply_patch: one per file
        if isinstance(meta.get(key), list) and meta[key]:
            changes = [c for c in meta[key] if isinstance(c, dict)]
            break
    added = removed = 0
    diffs: list[str] = []
    hashes: list[tuple[Any, Any]] = []
    for change in changes:
        filediff = _dict(change.get("filediff")) or change
        diff = given if isinstance(given := change.get("diff"), str) else filediff.get("patch")
        if isinstance(diff, str) and diff.strip():
            diffs.append(diff)
        if filediff.get("additions").__class__ is int and filediff.get("deletions").__class__ is int:
            added += filediff["additions"]
            removed += filediff["deletions"]
        elif isinstance(diff, str):
            a, r = diff_counts(diff)
            added += a
            removed += r
        hashes.append((filediff.get("before"), filediff.get("after")))
    if not diffs and isinstance(meta.get("diff"), str) and meta["diff"].strip():
        diffs.append(meta["diff"])
        if not added and not removed:
            added, removed = diff_counts(meta["diff"])
    inv.lines_added, inv.lines_removed = added, removed
    inv.diff = short("\n".join(diffs), MAX_DIFF_CHARS) if diffs else None
    if len(hashes) == 1:
        before, after = hashes[0]
        inv.before_hash = content_hash(before) if isinstance(before, str) else None
        inv.after_hash = content_hash(after) if isinstance(after, str) else inv.after_hash


# ------------------------------------------------------------------ the session
def build_session(raw: RawSession) -> Session:
    """A session and its subagent sessions (`raw.children`, any depth) as the agent-neutral model."""
    info = raw.info
    main = _built(raw)
    times = _dict(info.get("time"))
    cwd = _str(info.get("directory")) or main.cwd or _str(raw.project.get("worktree"))
    version = _str(info.get("version"))
    session = Session(
        session_id=raw.session_id, file=raw.location, agent="opencode", project_dir=_str(info.get("projectID")) or "",
        cwd=cwd, repo_name=repo_name_of(cwd), slug=_str(info.get("slug")), version_first=version, version_last=version,
        started_at=iso(times.get("created")) or main.started_at,
        ended_at=_later(main.ended_at, iso(times.get("updated"))),
        turns=main.turns, texts=main.texts, models=list(main.models),
        lines=raw.records, lines_malformed=raw.malformed, lines_unknown=main.unknown, message_lines=main.messages,
    )
    title = _str(info.get("title"))
    if title and not DEFAULT_TITLE.match(title):
        session.texts.append(TextUnit("ai_title", title, iso(times.get("updated")), None))
    # Task calls by the child session they started: in this session's turns, then in the children's.
    calls: dict[str, tuple[Invocation, int | None]] = {}
    unlinked: list[tuple[Invocation, int | None]] = []
    _collect_calls(main.turns, True, calls, unlinked)
    built: list[tuple[RawSession, SessionBuilder]] = []
    for child in _descendants(raw):
        builder = _built(child)
        built.append((child, builder))
        session.lines += child.records
        session.lines_malformed += child.malformed
        session.lines_unknown += builder.unknown
        for model in builder.models:
            if model not in session.models:
                session.models.append(model)
        _collect_calls(builder.turns, False, calls, unlinked)
    for child, builder in built:
        link = calls.get(child.session_id) or _by_title(child, unlinked)
        session.subagents.append(_subagent(child, builder, link))
    return session


def _built(raw: RawSession) -> SessionBuilder:
    """A session's turns, from its 1.x messages or its 2.x records."""
    builder = SessionBuilder(_str(raw.info.get("directory")))
    for entry in raw.entries:
        builder.feed_entry(entry)
    for message, parts in raw.messages:
        builder.feed(message, parts)
    builder.finalize()
    return builder


def _collect_calls(turns: list[Turn], main: bool, calls: dict[str, tuple[Invocation, int | None]],
                   unlinked: list[tuple[Invocation, int | None]]) -> None:
    """Task calls by the child session they started (a call in a subagent has no turn of the session)."""
    for turn in turns:
        for inv in turn.invocations:
            if inv.tool_name in TASK_TOOLS:
                entry = (inv, turn.index if main else None)
                if inv.agent_id is None:
                    unlinked.append(entry)
                else:
                    calls.setdefault(inv.agent_id, entry)


def _later(a: str | None, b: str | None) -> str | None:
    return max(x for x in (a, b) if x) if a or b else None


def _descendants(raw: RawSession) -> list[RawSession]:
    out: list[RawSession] = []
    stack = list(reversed(raw.children))
    seen = {raw.session_id}
    while stack:
        child = stack.pop()
        if child.session_id in seen:
            continue
        seen.add(child.session_id)
        out.append(child)
        stack.extend(reversed(child.children))
    return out


def _by_title(child: RawSession, unlinked: list[tuple[Invocation, int | None]]) -> tuple[Invocation, int | None] | None:
    """A task call with no child session id (older releases): the one whose description opencode
    put in the child's title ("<description> (@<agent> subagent)")."""
    m = SUBAGENT_TITLE.match(_str(child.info.get("title")) or "")
    if m is None:
        return None
    for i, (inv, turn_index) in enumerate(unlinked):
        if inv.description and inv.description.strip() == m.group(1).strip():
            del unlinked[i]
            inv.agent_id = child.session_id
            return inv, turn_index
    return None


def _subagent(child: RawSession, builder: SessionBuilder, link: tuple[Invocation, int | None] | None) -> Subagent:
    info = child.info
    times = _dict(info.get("time"))
    titled = SUBAGENT_TITLE.match(_str(info.get("title")) or "")
    inv, turn_index = link if link is not None else (None, None)
    agent_type = (inv.subagent_type if inv else None) or _str(info.get("agent")) \
        or (titled.group(2).strip() if titled else None) or next((a for a in builder.agents), None)
    description = (inv.description if inv and inv.description else None) \
        or (titled.group(1).strip() if titled else None)
    first = next((t for t in builder.turns if t.index >= 1), None)
    sub = Subagent(agent_id=child.session_id, layout="child_session", file=child.location, agent_type=agent_type,
                   description=description, tool_use_id=inv.tool_use_id if inv else None, turn_index=turn_index,
                   prompt=first.prompt if first else None, summary_text=builder.last_assistant_text,
                   started_at=iso(times.get("created")) or builder.started_at,
                   ended_at=_later(builder.ended_at, iso(times.get("updated"))), turns=builder.turns)
    fill_subagent_counts(sub)
    return sub
