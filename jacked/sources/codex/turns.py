"""Turn reconstruction for Codex CLI rollouts: the lines of one rollout file in, turns out.

The rules (DESIGN "Turn rules", as they apply to Codex; `jacked/sources/codex/__init__.py`
explains the format):

- **A turn starts at a human prompt.** Codex writes one prompt up to three times: as a user
  `message` response item, as an `event_msg` `user_message`, and (0.149+) as an `event_msg`
  `item_completed` with a `UserMessage` item. Records of one prompt (same text, whitespace
  folded, from different record kinds, before any model output) are counted ONCE. User
  messages Codex injects itself (`<environment_context>`, `<user_instructions>`, AGENTS.md,
  `<turn_aborted>`, …) and developer messages start nothing. Model output before any prompt
  is turn 0. A turn Codex started without a person (a subagent woken by another agent: a new
  `turn_id` followed by model output, no prompt) starts a turn with `started_by="agent"`.
- **Batches.** Codex writes no response id. One API response is the model output between two
  `token_count` events that carry new usage (a `token_count` repeating the previous cumulative
  total is a UI refresh, not a response); so the calls between two such events form one batch
  (`parallel_group` 1..m), a call alone in its response gets 0. A file with no usable
  `token_count` (legacy rollouts) is cut at tool outputs instead: the model sees an output only
  in its next request, so the first model item after an output starts a new response.
- **Tokens.** Each counted `token_count` is one API call: `last_token_usage` (else the
  difference of `total_token_usage` from the previous one; totals are never summed). OpenAI's
  `input_tokens` include the cached ones: jacked stores `input - cached` as input and `cached`
  as cache reads; `output_tokens` already include reasoning.
- **Results.** `function_call_output` / `custom_tool_call_output` by `call_id`; `is_error` from
  the exit code (JSON metadata, "Exit code: N", "Process exited with code N", or an
  `exec_command_end` event), `success: false`, an MCP `isError`, or a known failure message.
- **Files.** apply_patch (custom tool, JSON function, or `apply_patch` run through the shell)
  counts the `+` / `-` lines of each file of its patch; added files are written, the others
  modified. Reads come from `read_file` calls and, where the rollout has them, the `read`
  commands Codex parsed out of a shell call (`exec_command_end.parsed_cmd`).
- **Forks and resumes.** A fork copies its parent's lines (with their `turn_id`s, under the
  parent's `session_meta`) before its own. Each turn gets a `prompt_uuid` — its `turn_id`, else
  a hash of the rollout it was first written in and the prompts so far — so the catalog counts
  a copied turn once, in the session that started first.
"""
from __future__ import annotations

import hashlib
from typing import Any

from jacked.sources.briefs import MAX_DIFF_CHARS, add_raw, brief_input, brief_limit, head_and_tail, short
from jacked.sources.codex.records import (
    CALL_TYPES,
    MODEL_OUTPUT_TYPES,
    OUTPUT_TYPES,
    SHELL_COMMAND_PREFIX,
    PatchFile,
    command_text,
    heredoc_patch,
    is_injected,
    normalize,
    parse_arguments,
    parse_output,
    parse_patch,
    patch_text,
    environment_cwd,
    prompt_key,
    text_of_content,
)
from jacked.sources.decisions import mark_interrupted, tool_rejected
from jacked.sources.metrics import compute_metrics, elapsed_ms
from jacked.sources.model import READ_TOOLS, SHELL_TOOLS, Invocation, LlmCall, TextUnit, Turn, TurnEvent
from jacked.sources.textclean import strip_ansi

# Bumped whenever the reconstruction changes: every Codex session is read again.
PARSER_VERSION = 5  # 2: one compaction event when a token_count sits between its two records; 3: feedback events; 4: Turn.raw_text; 5: raw-text pieces kept whole up to 150,000 chars
# What Codex tells the model when the user declines a call (codex-rs/core/src/tools/events.rs,
# `ToolEmitter::finish`; the orchestrator's "rejected by user" for other tools)
REFUSED_OUTPUTS = frozenset({"exec command rejected by user", "patch rejected by user", "rejected by user"})

MAX_TEXT_CHARS = 200_000
PATCH_TOOLS = frozenset({"apply_patch"})
# The events that open a Codex turn (and name it); an event_msg type jacked does not read is
# known and passed over, never counted as unknown (Codex adds event types often).
_TURN_ID_EVENTS = frozenset({"task_started", "turn_started"})


class RolloutBuilder:
    """Rebuilds the turns of one Codex rollout file, fed its decoded lines in order."""

    def __init__(self, path: str, session_id: str) -> None:
        self.path = path
        self.session_id = session_id
        self.turns: list[Turn] = []
        self.cur: Turn | None = None
        self.texts: list[TextUnit] = []
        self.lines = self.unknown = self.messages = 0
        self.meta_id: str | None = None  # the file's own session_meta id
        self.origin_id: str | None = None  # the id of the latest session_meta line (a fork's parent)
        self.forked_from: str | None = None  # session_meta.forked_from_id (a fork or a spawned subagent)
        self.cwd: str | None = None
        self.git_branch: str | None = None
        self.version_first: str | None = None
        self.version_last: str | None = None
        self.started_at: str | None = None
        self.ended_at: str | None = None
        self.models: list[str] = []
        self.model: str | None = None  # from the latest turn_context
        self.plan: str | None = None
        self.last_assistant_text: str | None = None
        # prompts: the running turn's prompt key and the record kinds that gave it
        self._prompt_key: str | None = None
        self._prompt_sources: set[str] = set()
        self._has_output = False  # model output in the running turn
        self._chain = ""  # hash of the prompts so far (a turn's identity without a turn_id)
        self._turn_ids: dict[int, str] = {}  # id(turn) -> Codex turn_id
        self._pending_turn_id: str | None = None
        # responses: token-bounded and output-bounded segment counters (see the module doc)
        self._tok_seg = self._out_seg = 0
        self._tok_open = self._out_open = False
        self._counted = 0  # token_count events counted as API calls
        self._calls: list[tuple[Invocation, int, int]] = []
        self._llm_by_seg: dict[int, LlmCall] = {}
        self._prev_total: dict[str, int] | None = None
        self._pending: dict[str, Invocation] = {}  # call_id -> invocation
        self._turn_of_call: dict[int, Turn] = {}  # id of an invocation -> its turn (its output may come later)
        self._exec_end: dict[str, dict[str, Any]] = {}  # call_id -> exec_command_end payload
        self._patches: dict[int, list[PatchFile]] = {}  # id(invocation) -> its patch's files
        self._reads: dict[int, list[str]] = {}  # id(invocation) -> files its shell command read
        self._end_error: dict[str, bool] = {}  # call_id -> failure said by a patch/MCP end event
        self._owner: dict[int, Turn] = {}  # id(invocation) -> the turn that made the call
        self._rejected: set[int] = set()  # id(invocation) of calls the user refused
        self._declined_ids: set[str] = set()  # call_ids an end event says were declined
        self._compaction_just_noted = False  # the previous line was a compaction (its event is kept)
        self._preamble = False  # the current line opens the next turn (task_started, context, …)

    # ------------------------------------------------------------------ feeding
    def feed(self, rec: dict[str, Any]) -> None:
        self.lines += 1
        kind, payload, ts = normalize(rec)
        self._preamble = kind in ("session_meta", "turn_context", "state", "world_state",
                                  "inter_agent_communication_metadata")
        if ts is not None:
            if self.started_at is None:
                self.started_at = ts
            self.ended_at = ts
        if kind == "session_meta":
            self._session_meta(payload, ts)
        elif kind == "response_item":
            self._response_item(payload, ts)
        elif kind == "event_msg":
            self._event(payload, ts)
        elif kind == "turn_context":
            self._turn_context(payload)
        elif kind == "compacted":
            self._compacted(payload, ts)
        elif kind == "unknown":
            self.unknown += 1
        if ts is not None and self.cur is not None and not self._preamble:
            self.cur.ended_at = ts  # what Codex writes before the next prompt does not lengthen this turn
        if not (kind == "event_msg" and payload.get("type") == "token_count"):  # 0.139 writes one between
            self._compaction_just_noted = kind == "compacted" or (                # `compacted` and its event
                kind == "response_item" and payload.get("type") in ("compaction", "compaction_summary"))

    def _session_meta(self, p: dict[str, Any], ts: str | None) -> None:
        sid = given if isinstance(given := p.get("id"), str) else None
        if self.meta_id is None:
            self.meta_id = sid or self.session_id
            if isinstance(p.get("timestamp"), str) and self.started_at is None:
                self.started_at = p["timestamp"]
            if isinstance(p.get("forked_from_id"), str):
                self.forked_from = p["forked_from_id"]
            if isinstance(p.get("model"), str) and p["model"]:
                self.model = p["model"]  # newer builds name it here too; turn_context overrides
            git = p.get("git")
            if isinstance(git, dict) and isinstance(git.get("branch"), str) and git["branch"]:
                self.git_branch = git["branch"]
        if self.cwd is None and isinstance(p.get("cwd"), str) and p["cwd"]:
            self.cwd = p["cwd"]  # the file's own session_meta comes first: a fork's parent never wins
            version = p.get("cli_version")
            if isinstance(version, str) and version:  # a fork's copied parent header is not this file's
                self.version_first = self.version_last = version
        self.origin_id = sid or self.origin_id or self.session_id
        self._chain = ""  # a copied rollout starts its own prompt chain, as it did in its file

    def _turn_context(self, p: dict[str, Any]) -> None:
        model = p.get("model")
        if isinstance(model, str) and model:
            self.model = model
            if model not in self.models:
                self.models.append(model)
        if self.cwd is None and isinstance(p.get("cwd"), str) and p["cwd"]:
            self.cwd = p["cwd"]
        if isinstance(p.get("turn_id"), str) and p["turn_id"]:
            self._turn_id(p["turn_id"])

    # ------------------------------------------------------------------ turns
    def _turn_id(self, tid: str) -> None:
        """A Codex turn started (`task_started`, `turn_context`): the running turn's id if it has
        none yet and no output, else the id of the turn that the next prompt or output starts."""
        cur = self.cur
        if cur is not None and self._turn_ids.get(id(cur)) == tid:
            return
        if cur is not None and id(cur) not in self._turn_ids and not self._has_output and cur.started_by is not None:
            self._turn_ids[id(cur)] = tid
            return
        self._pending_turn_id = tid

    def _start_turn(self, prompt: str | None, ts: str | None, started_by: str | None) -> Turn:
        index = 0 if started_by is None else max(1, self.turns[-1].index + 1 if self.turns else 1)
        turn = Turn(index=index, prompt=prompt, started_at=ts, ended_at=ts, started_by=started_by)
        if started_by is not None and self._pending_turn_id is not None:
            self._turn_ids[id(turn)] = self._pending_turn_id
        self._pending_turn_id = None
        if started_by is not None:
            link = prompt_key(prompt) if prompt is not None else "(agent)"
            self._chain = hashlib.blake2b(f"{self._chain}\0{link}".encode("utf-8", "surrogatepass"),
                                          digest_size=12).hexdigest()
            turn.prompt_uuid = f"codex:{self.origin_id or self.session_id}:{self._chain}"
        self.turns.append(turn)
        self.cur = turn
        self._has_output = False
        self._tok_open = self._out_open = False
        return turn

    def _prompt(self, text: str, source: str, ts: str | None, turn_id: str | None = None) -> None:
        key = prompt_key(text)
        if not key:
            return
        cur = self.cur
        if (cur is not None and cur.started_by == "prompt" and key == self._prompt_key
                and source not in self._prompt_sources and not self._has_output):
            self._prompt_sources.add(source)  # another record of the same prompt: counted once
            if turn_id and id(cur) not in self._turn_ids:
                self._turn_ids[id(cur)] = turn_id
            return
        self.messages += 1
        if turn_id:
            self._pending_turn_id = turn_id
        self._start_turn(text[:MAX_TEXT_CHARS], ts, "prompt")
        self._prompt_key, self._prompt_sources = key, {source}

    def _turn(self, ts: str | None) -> Turn:
        """The turn model output belongs to: the running one, turn 0 before any prompt, or a new
        turn started by an agent when Codex began a turn (a new turn_id) that no prompt opened."""
        pending = self._pending_turn_id
        if pending is not None and (self.cur is None or self._turn_ids.get(id(self.cur)) != pending):
            return self._start_turn(None, ts, "agent")
        if self.cur is None:
            return self._start_turn(None, ts, None)
        return self.cur

    def _model_output(self, ts: str | None) -> Turn:
        turn = self._turn(ts)
        self._has_output = True
        if not self._tok_open:
            self._tok_seg += 1
            self._tok_open = True
        if not self._out_open:
            self._out_seg += 1
            self._out_open = True
        if self.model and self.model not in turn.models:
            turn.models.append(self.model)
        return turn

    # ------------------------------------------------------------------ response items
    def _response_item(self, p: dict[str, Any], ts: str | None) -> None:
        itype = p.get("type")
        if itype == "message":
            role = p.get("role")
            text = text_of_content(p.get("content"))
            if role == "user":
                if text.lstrip().startswith(SHELL_COMMAND_PREFIX):
                    self._shell_event(text, ts)
                elif text.strip() and not is_injected(text):
                    self._prompt(text, "item", ts)
                else:
                    self._preamble = True
                    if self.cwd is None:
                        self.cwd = environment_cwd(text)
            elif role == "assistant":
                self.messages += 1
                turn = self._model_output(ts)
                self._assistant_text(turn, text)
            else:  # developer and system messages: instructions, not the conversation
                self._preamble = True
        elif itype in CALL_TYPES:
            self._call(p, itype, ts)
        elif itype in OUTPUT_TYPES:
            call_id = p.get("call_id")
            if isinstance(call_id, str):
                self._result(call_id, p.get("output"), ts)
            self._out_open = False
        elif itype in MODEL_OUTPUT_TYPES:  # reasoning
            self._model_output(ts)
        elif itype == "compaction" or itype == "compaction_summary":
            self._compaction_mark(ts, event=not self._compaction_just_noted)

    def _assistant_text(self, turn: Turn, text: str) -> None:
        if text.strip():
            add_raw(turn, strip_ansi(text))
            text = strip_ansi(text[:MAX_TEXT_CHARS])
            turn.assistant_text = text
            self.last_assistant_text = text

    def _call(self, p: dict[str, Any], itype: str, ts: str | None) -> None:
        turn = self._model_output(ts)
        call_id = p.get("call_id") or p.get("id") or ""
        name = given if isinstance(given := p.get("name"), str) else None
        args: dict[str, Any]
        if itype == "function_call":
            args = parse_arguments(p.get("arguments"))
        elif itype == "custom_tool_call":
            raw = p.get("input")
            args = {"input": raw} if isinstance(raw, str) else parse_arguments(raw)
        elif itype == "local_shell_call":
            action = given if isinstance(given := p.get("action"), dict) else {}
            args = {k: v for k, v in action.items() if k != "type"}
            name = "local_shell"
        elif itype == "web_search_call":
            action = given if isinstance(given := p.get("action"), dict) else {}
            args = {k: v for k, v in action.items() if k != "type"}
            name = "web_search"
        else:
            args = {k: v for k, v in p.items() if k not in ("type", "id", "call_id", "status")}
            name = name or itype.removesuffix("_call")
        name = name or "?"
        command = None
        if name in SHELL_TOOLS or name == "container.exec":
            command = command_text(args.get("command", args.get("cmd")))
            argv = args.get("command")
            if (isinstance(argv, list) and argv and argv[0] == "apply_patch") or heredoc_patch(command):
                name = "apply_patch"  # Codex intercepts `apply_patch` run through the shell and patches itself
        inv = Invocation(tool_name=name, tool_use_id=str(call_id), sequence=0, position=0, message_id="",
                         timestamp=ts, input_brief=brief_input(args), command=command if name != "apply_patch" else None)
        if name in PATCH_TOOLS:
            patch = patch_text(args) or heredoc_patch(command) or (
                args["command"][1] if isinstance(args.get("command"), list) and len(args["command"]) > 1
                and isinstance(args["command"][1], str) else None)
            files = parse_patch(patch) if patch else []
            if files:
                self._patches[id(inv)] = files
                inv.file_path = files[0].path
                inv.diff = short(patch or "", MAX_DIFF_CHARS)
        else:
            for key in ("file_path", "path", "dir_path"):
                if isinstance(args.get(key), str) and args[key]:
                    inv.file_path = args[key]
                    break
        if itype == "web_search_call":  # answered inside the response: no output item follows
            inv.has_result = True
            inv.is_error = p.get("status") == "failed"
            inv.result_timestamp = ts
        turn.invocations.append(inv)
        add_raw(turn, args)
        self._owner[id(inv)] = turn
        self._calls.append((inv, self._tok_seg, self._out_seg))
        if inv.tool_use_id:
            self._pending[inv.tool_use_id] = inv

    def _result(self, call_id: str, output: Any, ts: str | None) -> None:
        inv = self._pending.get(call_id)
        if inv is None:
            return
        out = parse_output(output)
        inv.has_result = True
        inv.result_timestamp = ts
        inv.is_error = bool(out.is_error)
        text = strip_ansi(out.text)
        end = self._exec_end.get(call_id)
        if end is not None:
            self._apply_exec_end(inv, end)
            if not text.strip():
                text = strip_ansi(str(end.get("aggregated_output") or end.get("formatted_output") or ""))
        if call_id in self._end_error:
            inv.is_error = self._end_error[call_id]
        if text.strip().lower() in REFUSED_OUTPUTS or call_id in self._declined_ids:
            self._reject(inv, ts)
        limit = brief_limit(inv.tool_name, inv.is_error)
        inv.result_brief = short(text, limit) if inv.tool_name in READ_TOOLS else head_and_tail(text, limit)
        if (owner := self._owner.get(id(inv))) is not None:
            add_raw(owner, text)
        self._settle_patch(inv)

    def _reject(self, inv: Invocation, ts: str | None) -> None:
        """The user refused the call (its output line and its end event are one act)."""
        if id(inv) in self._rejected:
            return
        self._rejected.add(id(inv))
        inv.is_error = True
        self._owner[id(inv)].events.append(tool_rejected(ts, inv))

    def _declined(self, call_id: Any, ts: str | None) -> None:
        """An end event's `status: declined` (releases that persist end events)."""
        if not isinstance(call_id, str):
            return
        self._declined_ids.add(call_id)
        inv = self._pending.get(call_id)
        if inv is not None and inv.has_result:
            self._reject(inv, ts)

    def _settle_patch(self, inv: Invocation) -> None:
        files = self._patches.get(id(inv))
        if not files:
            return
        if inv.is_error:
            inv.lines_added = inv.lines_removed = 0
            inv.file_created = False
            return
        inv.lines_added = sum(f.added for f in files)
        inv.lines_removed = sum(f.removed for f in files)
        inv.file_created = any(f.op == "add" for f in files)

    def _apply_exec_end(self, inv: Invocation, end: dict[str, Any]) -> None:
        code = end.get("exit_code")
        if isinstance(code, int):
            inv.is_error = code != 0
        reads = []
        for parsed in end.get("parsed_cmd") or []:
            if isinstance(parsed, dict) and parsed.get("type") == "read":
                path = parsed.get("path") or parsed.get("name")
                if isinstance(path, str) and path:
                    reads.append(path)
        if reads:
            self._reads[id(inv)] = reads

    # ------------------------------------------------------------------ events
    def _event(self, p: dict[str, Any], ts: str | None) -> None:
        etype = p.get("type")
        if etype == "user_message":
            kind = p.get("kind")
            text = p.get("message")
            if (kind is None or kind == "plain") and isinstance(text, str) and text.strip():
                if text.lstrip().startswith(SHELL_COMMAND_PREFIX):
                    self._shell_event(text, ts)
                elif not is_injected(text):
                    tid = given if isinstance(given := p.get("turn_id"), str) else None
                    self._prompt(text, "event", ts, tid)
        elif etype == "item_completed":
            self._item_completed(p, ts)
        elif etype == "agent_message":
            text = p.get("message")
            if isinstance(text, str):
                turn = self._turn(ts)
                self._assistant_text(turn, text)
        elif etype == "token_count":
            self._token_count(p, ts)
        elif etype in _TURN_ID_EVENTS:
            self._preamble = True
            if isinstance(p.get("turn_id"), str) and p["turn_id"]:
                self._turn_id(p["turn_id"])
        elif etype == "turn_aborted":
            if self.cur is not None and p.get("reason") in (None, "interrupted"):
                running = next((i for i in reversed(self.cur.invocations) if not i.has_result), None)
                mark_interrupted(self.cur, ts, running)
        elif etype == "context_compacted":
            self._compaction_mark(ts, event=not self._compaction_just_noted)
        elif etype == "thread_name_updated":
            name = p.get("thread_name")
            if isinstance(name, str) and name.strip():
                self.texts.append(TextUnit("custom_title", name.strip(), ts, self._index()))
        elif etype == "exec_command_end":
            call_id = p.get("call_id")
            if isinstance(call_id, str):
                self._exec_end[call_id] = p
                if p.get("status") == "declined":
                    self._declined(call_id, ts)
                inv = self._pending.get(call_id)
                if inv is not None and inv.has_result:
                    self._apply_exec_end(inv, p)
        elif etype == "patch_apply_end":
            if p.get("status") == "declined":
                self._declined(p.get("call_id"), ts)
            if isinstance(p.get("success"), bool):
                self._end_event_error(p.get("call_id"), not p["success"])
        elif etype == "mcp_tool_call_end":
            result = p.get("result")
            if isinstance(result, dict):
                ok = result.get("Ok")
                self._end_event_error(p.get("call_id"), "Err" in result or (
                    isinstance(ok, dict) and (ok.get("isError") or ok.get("is_error")) is True))
        elif etype == "exited_review_mode":
            review = p.get("review_output")
            if isinstance(review, dict) and self.cur is not None:
                self._assistant_text(self.cur, _review_text(review))
        elif etype == "web_search_end":
            inv = self._pending.get(str(p.get("call_id")))
            if inv is not None and isinstance(p.get("query"), str):
                inv.input_brief = brief_input({"query": p["query"]})

    def _end_event_error(self, call_id: Any, failed: bool) -> None:
        """A patch or MCP call's end event says whether it failed: it decides, before or after
        the output line."""
        if not isinstance(call_id, str):
            return
        self._end_error[call_id] = failed
        inv = self._pending.get(call_id)
        if inv is not None and inv.has_result:
            inv.is_error = failed
            self._settle_patch(inv)

    def _item_completed(self, p: dict[str, Any], ts: str | None) -> None:
        item = p.get("item")
        if not isinstance(item, dict):
            return
        itype = item.get("type")
        if itype == "UserMessage":
            text = text_of_content(item.get("content"), ("text", "input_text"))
            if text.strip() and not is_injected(text):
                tid = given if isinstance(given := p.get("turn_id"), str) else None
                self._prompt(text, "item_event", ts, tid)
        elif itype == "AgentMessage":
            text = text_of_content(item.get("content"), ("text", "Text", "output_text"))
            if text.strip():
                self._assistant_text(self._turn(ts), text)
        elif itype == "Plan":
            plan = item.get("text")
            if isinstance(plan, str) and plan.strip():
                self.plan = plan[:MAX_TEXT_CHARS]

    def _shell_event(self, text: str, ts: str | None) -> None:
        """A command the user ran with `!` (`<user_shell_command>`): what the user saw, kept
        as a command output of the running turn, not a prompt."""
        if self.cur is not None:
            self.cur.events.append(TurnEvent("command_output", ts, {"output": strip_ansi(text.strip())[:1000]}))

    def _token_count(self, p: dict[str, Any], ts: str | None) -> None:
        info = p.get("info")
        self._preamble = True  # until it proves to be a response's usage
        if not isinstance(info, dict):
            return
        total = _usage(info.get("total_token_usage"))
        last = _usage(info.get("last_token_usage"))
        if total is not None and total == self._prev_total:
            return  # the same cumulative total again: a refresh, not a new response
        if last is not None:
            usage = last
        elif total is not None:
            prev = self._prev_total or {}
            usage = {k: max(0, v - prev.get(k, 0)) for k, v in total.items()}
        else:
            return
        if total is not None:
            self._prev_total = total
        if not any(usage.values()):
            return
        # Usage belongs to the running turn (a /compact request has no turn of its own).
        turn = self.cur if self.cur is not None else self._start_turn(None, ts, None)
        seg = self._tok_seg if self._tok_open else -(self._counted + 1)
        cached = min(usage["cached_input_tokens"], usage["input_tokens"])
        call = LlmCall(message_id=f"t{seg}", model=self.model, timestamp=ts,
                       input_tokens=usage["input_tokens"] - cached, output_tokens=usage["output_tokens"],
                       cache_read_tokens=cached, has_usage=True)
        turn.llm_calls.append(call)
        if self.model and self.model not in turn.models:
            turn.models.append(self.model)
        self._preamble = False
        if seg > 0:
            self._llm_by_seg[seg] = call
        self._counted += 1
        self._tok_open = self._out_open = False

    def _compacted(self, p: dict[str, Any], ts: str | None) -> None:
        text = p.get("message")
        if isinstance(text, str) and text.strip():
            self.texts.append(TextUnit("compact_summary", text[:MAX_TEXT_CHARS], ts, self._index()))
        self._compaction_mark(ts, event=True)

    def _compaction_mark(self, ts: str | None, event: bool) -> None:
        if self.cur is None:
            return
        self.cur.compacted = True
        if event:
            self.cur.events.append(TurnEvent("compaction", ts, {"trigger": None, "pre_tokens": None}))

    def _index(self) -> int | None:
        return self.cur.index if self.cur is not None else None

    # ------------------------------------------------------------------ results
    def finalize(self) -> list[Turn]:
        """Settle batches, sequences, metrics, file lists, durations and turn identities."""
        by_tokens = self._counted > 0
        for inv, tok_seg, out_seg in self._calls:
            inv.message_id = f"t{tok_seg}" if by_tokens else f"o{out_seg}"
            call = self._llm_by_seg.get(tok_seg) if by_tokens else None
            if call is not None:
                call.tool_calls += 1
        for turn in self.turns:
            seq: dict[str, int] = {}
            pos: dict[str, int] = {}
            for inv in turn.invocations:
                seq.setdefault(inv.message_id, len(seq))
                pos[inv.message_id] = pos.get(inv.message_id, 0) + 1
                inv.sequence, inv.position = seq[inv.message_id], pos[inv.message_id]
            compute_metrics(turn)
            self._file_lists(turn)
            turn.duration_ms = elapsed_ms(turn.started_at, turn.ended_at)
            turn.duration_source = "timestamps" if turn.duration_ms is not None else None
            tid = self._turn_ids.get(id(turn))
            if tid:
                turn.prompt_uuid = f"codex-turn:{tid}"
        return self.turns

    def _file_lists(self, turn: Turn) -> None:
        """Every file of a successful patch (not only its first), and what shell commands read."""
        m = turn.metrics
        for inv in turn.invocations:
            if inv.is_error:
                continue
            for f in self._patches.get(id(inv), []):
                if f.op == "add":
                    if f.path in m.files_modified and f.path == inv.file_path:
                        m.files_modified.remove(f.path)
                    _add(m.files_written, f.path)
                else:
                    _add(m.files_modified, f.path)
                    if f.move_to:
                        _add(m.files_written, f.move_to)
            for path in self._reads.get(id(inv), []):
                _add(m.files_read, path)


def _review_text(review: dict[str, Any]) -> str:
    """A `/review`'s result as text: its overall verdict, then each finding's title and body."""
    parts = [str(review.get("overall_explanation") or "").strip()]
    for f in review.get("findings") or []:
        if isinstance(f, dict) and (f.get("title") or f.get("body")):
            parts.append(f"- {str(f.get('title') or '').strip()}: {str(f.get('body') or '').strip()}")
    return "\n".join(p for p in parts if p)


def _add(items: list[str], value: str) -> None:
    if value and value not in items:
        items.append(value)


_USAGE_KEYS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens", "total_tokens")


def _usage(value: Any) -> dict[str, int] | None:
    """A TokenUsage object with every counter an int (missing or odd ones 0), else None."""
    if not isinstance(value, dict):
        return None
    out = {}
    for k in _USAGE_KEYS:
        v = value.get(k, value.get("cache_read_input_tokens", 0) if k == "cached_input_tokens" else 0)
        out[k] = v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0
    return out
