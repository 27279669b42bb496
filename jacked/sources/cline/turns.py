"""Turns from a Cline-family task's `ui_messages.json` (Cline, Roo Code, Kilo Code).

The file is the task's chat as the extension showed it: a JSON array of `ClineMessage`
{ts (ms), type: "say" | "ask", say | ask, text, images, partial, modelInfo}
(`src/shared/ExtensionMessage.ts`, read at cline/cline `791d2389966d927396830470c51d456d04687b69^`;
Roo Code and Kilo Code, its forks, keep the shape). Rules:

* A turn starts at `say: "task"` (the task's first prompt; Roo Code, Kilo Code and Cline before
  2024-10 open with a `say: "text"`) and at each `say: "user_feedback"`
  (what the user typed later: a follow-up, an answer, feedback with an approval or refusal).
  Messages still `partial` (a stream cut off) are left out.
* `say: "api_req_started"` is one model request; its `text` is JSON (`ClineApiReqInfo`:
  tokensIn, tokensOut, cacheWrites, cacheReads, cost, cancelReason, request). The calls that
  follow it until the next request are its batch. `cancelReason: "user_cancelled"` is an
  interruption; `request` holds what was sent, with the last calls' results
  (`[tool for 'x'] Result:` sections): "The user denied this operation." there is a refusal
  (`feedback`), "The tool execution failed" an error.
* Calls: `ask`/`say` `tool` (JSON: tool, path, diff, content, regex), `command` (the command;
  then `command_output`), `use_mcp_server` (JSON: serverName, toolName, arguments; then
  `mcp_server_response`), `browser_action_launch`. `diff_error`, `clineignore_error`,
  `rooignore_error` and `command_permission_denied` fail the last call; Roo Code's
  `subtask_result` is the result of its `new_task` call.
* `say: "text"` and `completion_result` are the assistant's text; `say: "error"` an event;
  `ask: "followup"` (JSON: question, options or Roo Code's `follow_up`) answered by the next
  `user_feedback` is a `decision`; `condense_context` (Roo Code: `contextCondense.summary`) and
  `condense` are compactions.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, UTC
from typing import Any

import orjson

from jacked.sources.decisions import interrupted, tool_rejected
from jacked.sources.briefs import MAX_DIFF_CHARS, add_raw, brief_input, brief_limit, content_hash, head_and_tail, short
from jacked.sources.gemini.turns import diff_counts, string_edit_counts
from jacked.sources.metrics import compute_metrics, elapsed_ms
from jacked.sources.model import READ_TOOLS, Invocation, LlmCall, TextUnit, Turn, TurnEvent
from jacked.sources.textclean import strip_ansi
from jacked.sources.values import as_object

PARSER_VERSION = 3  # 2: Turn.raw_text; 3: raw-text pieces kept whole up to 150,000 chars
MAX_TEXT_CHARS = 200_000
DENIED = "The user denied this operation."
# The `tool` message's name for a call -> the tool's own name (Cline's, then Roo Code's)
TOOL_NAMES = {
    "readFile": "read_file", "editedExistingFile": "replace_in_file", "newFileCreated": "write_to_file",
    "fileDeleted": "delete_file", "listFilesTopLevel": "list_files", "listFilesRecursive": "list_files",
    "listCodeDefinitionNames": "list_code_definition_names", "searchFiles": "search_files", "webFetch": "web_fetch",
    "webSearch": "web_search", "summarizeTask": "summarize_task", "useSkill": "use_skill",
    "appliedDiff": "apply_diff", "insertContent": "insert_content", "searchAndReplace": "search_and_replace",
    "codebaseSearch": "codebase_search", "switchMode": "switch_mode", "newTask": "new_task",
    "finishTask": "attempt_completion", "fetchInstructions": "fetch_instructions", "updateTodoList": "update_todo_list",
    "runSlashCommand": "run_slash_command", "generateImage": "generate_image",
}
CALL_ASKS = frozenset({"tool", "command", "use_mcp_server", "browser_action_launch"})
FAILS_LAST_CALL = frozenset({"diff_error", "clineignore_error", "rooignore_error", "command_permission_denied"})
_SEARCH_BLOCK = re.compile(r"^(?:-{3,} SEARCH|<{3,} SEARCH)\s*\n(.*?)\n={3,}\s*\n(.*?)\n(?:\+{3,} REPLACE|>{3,} REPLACE)",
                           re.S | re.M)
_LINE_HINTS = re.compile(r"\A(?::(?:start|end)_line:\s*\d+\s*\n)+-{3,}\s*\n")
_RESULT = re.compile(r"^\[(\w+)(?: for '.*?')?\] Result:\n?", re.M)
FAILED_RESULT = ("The tool execution failed", "Error executing", "<error>")
_CWD = re.compile(r"# Current (?:Working|Workspace) Directory \((.+?)\) Files")


def iso_of_ms(ts: Any) -> str | None:
    if not isinstance(ts, (int, float)) or isinstance(ts, bool) or ts <= 0:
        return None
    try:
        d = datetime.fromtimestamp(ts / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return d.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def cwd_in(text: str) -> str | None:
    """The workspace folder Cline names in its environment details."""
    m = _CWD.search(text)
    return m.group(1) if m and not m.group(1).startswith("Primary:") else None


def _json(text: Any) -> dict[str, Any]:
    if not isinstance(text, str) or not text.startswith("{"):
        return {}
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}
    return obj if isinstance(obj, dict) else {}


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0


def edit_counts(diff: str) -> tuple[int, int]:
    """Lines added and removed by a SEARCH/REPLACE diff (Cline, Roo Code), else a unified one."""
    blocks = _SEARCH_BLOCK.findall(diff)
    if not blocks:
        return diff_counts(diff)
    added = removed = 0
    for old, new in blocks:
        a, r, _ = string_edit_counts(_LINE_HINTS.sub("", old), new)  # Roo Code heads a block with `:start_line:`
        added, removed = added + a, removed + r
    return added, removed


@dataclass(slots=True)
class Built:
    turns: list[Turn] = field(default_factory=list)
    texts: list[TextUnit] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    message_lines: int = 0
    unknown: int = 0
    cwd: str | None = None
    started_at: str | None = None
    ended_at: str | None = None


class TurnBuilder:
    def __init__(self) -> None:
        self.out = Built()
        self.cur: Turn | None = None
        self.request_id = "request-0"
        self.batch: dict[str, int] = {}  # request id -> sequence in the current turn
        self.last_call: Invocation | None = None
        self.asked: list[Invocation] = []  # calls asked for approval since the last request
        self.pending: list[Invocation] = []  # calls since the last request: its text has their results
        self.question: dict[str, Any] | None = None
        self.seq = 0
        self.owner: dict[int, Turn] = {}  # id(call) -> its turn: a result can come after the next prompt
        self.streamed: set[int] = set()  # ids of calls whose output came in messages of their own

    def _raw_result(self, call: Invocation, text: str) -> None:
        """A call's result into its own turn's raw text."""
        add_raw(self.owner[id(call)], strip_ansi(text))

    def build(self, messages: list[Any]) -> Built:
        for msg in messages:
            if not isinstance(msg, dict) or msg.get("partial") is True:
                continue
            ts = iso_of_ms(msg.get("ts"))
            if ts is not None:
                self.out.started_at = self.out.started_at or ts
                self.out.ended_at = ts
            kind = msg.get("say") if msg.get("type") == "say" else msg.get("ask") if msg.get("type") == "ask" else None
            if not isinstance(kind, str):
                self.out.unknown += 1
                continue
            self._message(msg, msg["type"], kind, ts)
        for turn in self.out.turns:
            compute_metrics(turn)
            turn.duration_ms = elapsed_ms(turn.started_at, turn.ended_at)
            turn.duration_source = "timestamps" if turn.duration_ms is not None else None
        return self.out

    # ------------------------------------------------------------------ messages
    def _message(self, msg: dict[str, Any], mtype: str, kind: str, ts: str | None) -> None:
        text = given if isinstance(given := msg.get("text"), str) else ""
        # Roo Code, Kilo Code and Cline before `say: "task"` open the task with a `say: "text"`
        opens = mtype == "say" and kind == "text" and not self.out.turns
        if opens or mtype == "say" and kind in ("task", "user_feedback"):
            self.out.message_lines += 1
            typed = strip_ansi(text.strip())
            if not typed and not msg.get("images") and not msg.get("files"):
                return
            if self.question is not None and self.cur is not None and kind == "user_feedback":
                self.cur.events.append(TurnEvent("decision", ts, {**self.question, "answer": short(typed, 600)}))
            self.question = None
            self._start(typed[:MAX_TEXT_CHARS] or "[image]", ts)
            return
        turn = self._turn(ts)
        if mtype == "say" and kind == "api_req_started":
            self.out.message_lines += 1
            self._request(msg, _json(text), ts)
        elif mtype in ("say", "ask") and kind in CALL_ASKS:
            self._call(kind, text, ts, asked=mtype == "ask")
        elif kind in ("command_output", "mcp_server_response", "browser_action_result") and self.last_call is not None:
            call = self.last_call
            self._raw_result(call, text)
            self.streamed.add(id(call))
            joined = f"{call.result_brief}\n{text}".strip() if call.result_brief else text
            call.has_result, call.result_timestamp = True, ts
            call.result_brief = head_and_tail(strip_ansi(joined), brief_limit(call.tool_name, call.is_error))
        elif mtype == "say" and kind in FAILS_LAST_CALL and self.last_call is not None:
            self.last_call.is_error = True
            self.last_call.has_result = True
            self._raw_result(self.last_call, text)
            self.last_call.result_brief = head_and_tail(strip_ansi(text), brief_limit(self.last_call.tool_name, True))
        elif mtype == "say" and kind in ("text", "completion_result") and text.strip():
            self.out.message_lines += 1
            add_raw(turn, strip_ansi(text))
            turn.assistant_text = strip_ansi(text.strip()[:MAX_TEXT_CHARS])
        elif mtype == "say" and kind == "error" and text.strip():
            turn.events.append(TurnEvent("command_output", ts, {"output": strip_ansi(short(text, 1000)), "level": "error"}))
        elif mtype == "ask" and kind == "followup":
            q = _json(text)
            question = given if isinstance(given := q.get("question"), str) else text
            options = [o for o in q.get("options") or [] if isinstance(o, str)] if isinstance(q.get("options"), list) else []
            suggested = given if isinstance(given := q.get("follow_up"), list) else []  # Roo Code's suggestions
            options += [o if isinstance(o, str) else o["answer"] for o in suggested
                        if isinstance(o, str) or isinstance(o, dict) and isinstance(o.get("answer"), str)]
            self.question = {"kind": "question", "question": short(question, 600), "options": options[:50]}
            if question.strip():
                add_raw(turn, strip_ansi(question), options)
                turn.assistant_text = strip_ansi(question.strip()[:MAX_TEXT_CHARS])
        elif kind in ("condense", "summarize_task", "condense_context"):
            turn.compacted = True
            condensed = as_object(msg.get("contextCondense"))
            summary = given if isinstance(given := condensed.get("summary"), str) else text
            if summary.strip():
                self.out.texts.append(TextUnit("compact_summary", strip_ansi(summary.strip()[:MAX_TEXT_CHARS]), ts,
                                               turn.index))
        elif mtype == "say" and kind == "subtask_result":  # what a `new_task` child reported back (Roo Code)
            subtask = next((i for i in reversed(turn.invocations) if i.tool_name == "new_task"), None)
            if subtask is not None:
                subtask.has_result, subtask.result_timestamp = True, ts
                self._raw_result(subtask, text)
                subtask.result_brief = head_and_tail(strip_ansi(text), brief_limit(subtask.tool_name, False))

    def _turn(self, ts: str | None) -> Turn:
        if self.cur is None:
            self._start(None, ts)
        assert self.cur is not None
        if ts is not None:
            self.cur.ended_at = ts
        return self.cur

    def _start(self, prompt: str | None, ts: str | None) -> None:
        turns = self.out.turns
        index = 0 if prompt is None else (turns[-1].index + 1 if turns else 1)
        self.cur = Turn(index=index, prompt=prompt, started_at=ts, ended_at=ts,
                        is_slash_command=prompt is not None and prompt.startswith("/"),
                        started_by="prompt" if prompt is not None else None)
        turns.append(self.cur)
        self.batch = {}
        self.last_call = None

    def _request(self, msg: dict[str, Any], info: dict[str, Any], ts: str | None) -> None:
        turn = self._turn(ts)
        request = given if isinstance(given := info.get("request"), str) else ""
        if self.out.cwd is None and request:
            self.out.cwd = cwd_in(request)
        self._results(request, turn, ts)
        model_info = as_object(msg.get("modelInfo"))
        model = model_info.get("modelId") if isinstance(model_info.get("modelId"), str) and model_info.get("modelId") else None
        self.request_id = f"request-{msg.get('ts')}"
        call = LlmCall(message_id=self.request_id, model=model, timestamp=ts,
                       input_tokens=_int(info.get("tokensIn")), output_tokens=_int(info.get("tokensOut")),
                       cache_read_tokens=_int(info.get("cacheReads")), cache_creation_tokens=_int(info.get("cacheWrites")))
        call.has_usage = any((call.input_tokens, call.output_tokens, call.cache_read_tokens, call.cache_creation_tokens))
        cost = info.get("cost")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            call.agent_cost_usd = float(cost)
        turn.llm_calls.append(call)
        if model is not None:
            if model not in turn.models:
                turn.models.append(model)
            if model not in self.out.models:
                self.out.models.append(model)
        if info.get("cancelReason") == "user_cancelled":
            turn.interrupted = True
            turn.events.append(interrupted(ts))
        elif info.get("cancelReason") == "streaming_failed":
            failed = info.get("streamingFailedMessage")
            turn.events.append(TurnEvent("command_output", ts, {
                "output": strip_ansi(short(failed if isinstance(failed, str) else "streaming failed", 1000)),
                "level": "error"}))

    def _results(self, request: str, turn: Turn, ts: str | None) -> None:
        """The last calls' results, as this request sent them back (`[tool for 'x'] Result:` sections)."""
        heads = list(_RESULT.finditer(request))
        sections = [(m.group(1), request[m.end():heads[i + 1].start() if i + 1 < len(heads) else len(request)].strip())
                    for i, m in enumerate(heads)]
        denied: list[Invocation] = []
        if sections:
            for call in self.pending:
                at = next((i for i, (tool, _) in enumerate(sections) if tool == call.tool_name), 0 if
                          call.tool_name.startswith("mcp__") and sections else None)
                if at is None:
                    continue
                _, text = sections.pop(at)
                if text.startswith(DENIED):
                    denied.append(call)
                    continue
                call.has_result, call.result_timestamp = True, call.result_timestamp or ts
                call.is_error = call.is_error or text.startswith(FAILED_RESULT)
                if id(call) not in self.streamed:  # else its output came as messages of its own, already kept
                    self._raw_result(call, text)
                if not call.result_brief:
                    call.result_brief = head_and_tail(strip_ansi(text), brief_limit(call.tool_name, call.is_error))
        elif DENIED in request:  # results not in that form (native tool calls): the last calls asked for
            denied = self.asked[-request.count(DENIED):]
        for call in denied:
            call.is_error = call.has_result = True
            call.result_brief = DENIED
            turn.events.append(tool_rejected(ts, call))
        self.asked, self.pending = [], []

    def _call(self, kind: str, text: str, ts: str | None, asked: bool) -> None:
        turn = self._turn(ts)
        data = _json(text) if kind in ("tool", "use_mcp_server") else {}
        if kind == "tool":
            raw = given if isinstance(given := data.get("tool"), str) else "tool"
            name = TOOL_NAMES.get(raw, raw)
            args = {k: v for k, v in data.items() if k in ("path", "regex", "filePattern", "query", "mode", "url")}
        elif kind == "command":
            name, args = "execute_command", {"command": text}
        elif kind == "use_mcp_server":
            server, tool = data.get("serverName"), data.get("toolName") or data.get("uri")
            name = f"mcp__{server}__{tool}" if isinstance(server, str) and isinstance(tool, str) else "use_mcp_tool"
            args = {k: data[k] for k in ("arguments", "uri") if isinstance(data.get(k), str)}
        else:
            name, args = "browser_action", {"url": text}
        seq = self.batch.setdefault(self.request_id, len(self.batch))
        position = 1 + sum(1 for i in turn.invocations if i.message_id == self.request_id)
        self.seq += 1
        inv = Invocation(tool_name=name, tool_use_id=f"{self.request_id}#{self.seq}", sequence=seq, position=position,
                         message_id=self.request_id, timestamp=ts, input_brief=brief_input(args))
        path = data.get("path")
        if isinstance(path, str) and path:
            inv.file_path = path
        if kind == "command":
            inv.command = text
        diff, content = data.get("diff"), data.get("content")
        if name in ("replace_in_file", "apply_diff", "search_and_replace", "insert_content") and isinstance(diff, str):
            inv.lines_added, inv.lines_removed = edit_counts(diff)
            inv.diff = short(diff, MAX_DIFF_CHARS)
        elif name == "write_to_file" and isinstance(content, str):
            inv.lines_added = len(content.splitlines())
            inv.file_created = True
            inv.after_hash = content_hash(content)
            inv.diff = short("\n".join("+" + ln for ln in content[:MAX_DIFF_CHARS * 2].splitlines()), MAX_DIFF_CHARS)
        elif name in READ_TOOLS and isinstance(content, str) and content != path:
            inv.has_result, inv.result_brief = True, short(content, brief_limit(name, False))
        turn.invocations.append(inv)
        # the whole message: a command, an edit's diff, a written file, a read's content, MCP arguments
        add_raw(turn, text if kind in ("command", "browser_action_launch") else
                {k: v for k, v in data.items() if k != "tool"} if kind == "tool" else args)
        self.owner[id(inv)] = turn
        self.last_call = inv
        self.pending.append(inv)
        if asked:
            self.asked.append(inv)


def build_turns(messages: list[Any]) -> Built:
    return TurnBuilder().build(messages)
