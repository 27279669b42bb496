"""Turns from the messages of one Gemini CLI chat file (DESIGN "Turn rules", for Gemini).

* A `user` message whose text someone typed starts a turn (its `displayContent` when Gemini
  CLI kept what was typed apart from what was sent; else its content, cut where the files an
  `@path` pulled in begin). Not prompts: tool results Gemini CLI 2026 records as `user`
  messages of `functionResponse` parts, the context it adds itself (`<session_context>`,
  `<hook_context>`), and the `<state_snapshot>` of a compression, which is the session's
  compaction summary. A typed `/command` starts a turn marked as a slash command.
* `gemini` messages before the first prompt form turn 0. Each `gemini` message is one model
  response: its tokens count once (a JSONL file repeats a message as it grows; the loader
  keeps its last version), its `toolCalls` are the calls of that response, so several calls
  in one message are a parallel batch.
* After a compression Gemini CLI (2026) records the history it kept again, under new ids,
  right after the `<state_snapshot>`: those copies are left out (`duplicates`).
* `info`, `warning` and `error` messages (what the CLI printed) are events of the turn;
  "Request cancelled." and a cancelled tool call mark it interrupted.
* A call failed when its status is `error` or `cancelled`, and a shell call also when its
  output ends with a non-zero `Exit Code:` or a `Signal:` (Gemini CLI records those as
  `success`).
* Tokens: Gemini's `input` (promptTokenCount) includes the `cached` part; jacked's
  `input_tokens` is the part not read from cache (+ `tool`, the tool-use prompt), the cached
  part is `cache_read_tokens`, and `output_tokens` is `output` + `thoughts` (both billed as
  output, as Claude's output tokens include its thinking).
* Lines added/removed of `replace` and `write_file`: from the diff Gemini CLI showed
  (`resultDisplay.fileDiff`), else from `old_string`/`new_string` (a line diff of the two)
  or, for a written file, its lines.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from jacked.sources.briefs import MAX_DIFF_CHARS, add_raw, brief_input, brief_limit, content_hash, head_and_tail, short
from jacked.sources.decisions import interrupted, tool_rejected
from jacked.sources.metrics import compute_metrics, elapsed_ms
from jacked.sources.model import (
    AGENT_TOOLS,
    EDIT_TOOLS,
    READ_TOOLS,
    SHELL_TOOLS,
    WRITE_TOOLS,
    Invocation,
    LlmCall,
    TextUnit,
    Turn,
    TurnEvent,
)
from jacked.sources.textclean import strip_ansi
from jacked.util.time import parse_ts

PARSER_VERSION = 4  # 2: refusals and interruptions as feedback events; 3: Turn.raw_text; 4: raw-text pieces kept whole up to 150,000 chars

MAX_TEXT_CHARS = 200_000
REFERENCE_CONTENT_START = "--- Content from referenced files ---"
CONTEXT_PREFIXES = ("<session_context>", "<hook_context>")
SNAPSHOT_TAG = "<state_snapshot>"
CANCELLED_NOTICE = "Request cancelled."
# The reason Gemini CLI (and Qwen Code) give a call the user declined at its confirmation
# (`coreToolScheduler.ts`, `handleConfirmationResponse`: status `cancelled`); a call cancelled
# otherwise was stopped while it ran (Esc / Ctrl-C).
DECLINED_REASON = "did not allow tool call"
NOTICE_TYPES = frozenset({"info", "warning", "error"})
EXIT_PLAN_TOOL = "exit_plan_mode"

_EXIT_CODE = re.compile(r"^Exit Code: (-?\d+)\s*$", re.M)
_SIGNAL = re.compile(r"^Signal: (.+?)\s*$", re.M)


def parts_of(content: Any) -> list[dict[str, Any]]:
    """A `PartListUnion` (a string, a part, or a list of strings and parts) as parts."""
    if isinstance(content, str):
        return [{"text": content}]
    if isinstance(content, dict):
        return [content]
    if isinstance(content, list):
        return [p if isinstance(p, dict) else {"text": p} for p in content if isinstance(p, (dict, str))]
    return []


def text_of(content: Any) -> str:
    """The text parts of a content, thoughts left out (parts are pieces of one message)."""
    return "".join(p["text"] for p in parts_of(content)
                   if isinstance(p.get("text"), str) and not p.get("thought"))


def result_text(result: Any) -> str:
    """What a tool call returned to the model: the `functionResponse` outputs and errors, text
    parts, and a mark for binary parts."""
    out: list[str] = []
    for p in parts_of(result):
        fr = p.get("functionResponse")
        if isinstance(fr, dict):
            resp = fr.get("response")
            if isinstance(resp, dict):
                found = [resp[k] for k in ("output", "error", "llmContent", "content") if isinstance(resp.get(k), str)]
                if found:
                    out.extend(found)
                elif resp:
                    out.append(orjson.dumps(resp).decode()[:4000])
            elif isinstance(resp, str):
                out.append(resp)
        elif isinstance(p.get("text"), str):
            out.append(p["text"])
        elif "inlineData" in p or "fileData" in p:
            out.append("[binary]")
    return "\n".join(out)


def function_response_ids(content: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(p["functionResponse"]["id"], p["functionResponse"]) for p in parts_of(content)
            if isinstance(p.get("functionResponse"), dict) and isinstance(p["functionResponse"].get("id"), str)]


def copy_key(msg: dict[str, Any]) -> tuple[Any, ...]:
    """What a message and the copy Gemini CLI records of it after a compression share: the
    kept history is written again under new ids (tool calls as `functionCall` parts then)."""
    content = msg.get("content")
    results = tuple(sorted(cid for cid, _ in function_response_ids(content)))
    if results:
        return (msg.get("type"), "results", results)
    listed = msg.get("toolCalls")
    calls = [c.get("id") for c in listed if isinstance(c, dict)] if isinstance(listed, list) else []
    if not calls:
        calls = [p["functionCall"].get("id") for p in parts_of(content) if isinstance(p.get("functionCall"), dict)]
    return (msg.get("type"), text_of(content).strip(), tuple(sorted(str(c) for c in calls)))


def shell_failed(text: str) -> bool:
    """A shell result that reports a non-zero exit code or a terminating signal."""
    codes = _EXIT_CODE.findall(text)
    if codes and int(codes[-1]) != 0:
        return True
    signals = _SIGNAL.findall(text)
    return bool(signals) and signals[-1] not in ("(none)", "null", "0")


def diff_counts(diff: str) -> tuple[int, int]:
    """(+, -) lines of a unified diff, its file headers left out."""
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


def string_edit_counts(old: str, new: str) -> tuple[int, int, str]:
    """(+, -, diff) of replacing `old` by `new`, line by line."""
    diff = list(difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=1))
    added, removed = diff_counts("\n".join(diff[2:]))
    return added, removed, "\n".join(diff[2:])


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0


def _later(a: str | None, b: str | None) -> str | None:
    if a is None:
        return b
    if b is None:
        return a
    da, db = parse_ts(a), parse_ts(b)
    if da is None or db is None:
        return max(a, b)
    return b if db > da else a


@dataclass(slots=True)
class Built:
    """What the messages of one chat file gave."""

    turns: list[Turn] = field(default_factory=list)
    texts: list[TextUnit] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    message_lines: int = 0
    unknown: int = 0
    duplicates: int = 0  # messages recorded again after a compression, left out
    started_at: str | None = None
    ended_at: str | None = None
    last_assistant_text: str | None = None
    plan_file: str | None = None  # `plan_filename` of the last exit_plan_mode call
    written: dict[str, str] = field(default_factory=dict)  # file_path -> content of write_file calls
    paths: list[str] = field(default_factory=list)  # absolute paths the calls name (to find the project root)


class TurnBuilder:
    """Feeds the messages of one chat file, in order, into turns."""

    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self.messages = messages
        self.out = Built()
        self.cur: Turn | None = None
        self.responses: dict[str, dict[str, Any]] = {}
        self.after_snapshot = False
        self.calling_messages: dict[str, int] = {}  # message id -> sequence, in the current turn
        self.stopped: set[int] = set()  # id() of turns with a refusal or interruption reported

    def build(self) -> Built:
        for msg in self.messages:
            if msg.get("type") == "user":
                for cid, fr in function_response_ids(msg.get("content")):
                    self.responses.setdefault(cid, fr)
        seen: set[tuple[Any, ...]] = set()
        copying = False
        for msg in self.messages:
            mtype = msg.get("type")
            if mtype in ("user", "gemini"):
                key = copy_key(msg)
                if copying and key in seen:
                    self.out.duplicates += 1  # the compressed history's kept tail, recorded again
                    continue
                # the model's acknowledgement of the summary comes before the copies
                ack = copying and mtype == "gemini" and not msg.get("tokens") and not msg.get("toolCalls")
                copying = ack
                seen.add(key)
                if mtype == "user" and SNAPSHOT_TAG in text_of(msg.get("content")):
                    copying = True
            ts = given if isinstance(given := msg.get("timestamp"), str) else None
            if ts is not None:
                self.out.started_at = self.out.started_at or ts
                self.out.ended_at = _later(self.out.ended_at, ts)
            if mtype == "user":
                self.out.message_lines += 1
                self._user(msg, ts)
            elif mtype == "gemini":
                self.out.message_lines += 1
                self._gemini(msg, ts)
            elif mtype in NOTICE_TYPES:
                self._notice(msg, mtype, ts)
            else:
                self.out.unknown += 1
        for turn in self.out.turns:
            self.out.ended_at = _later(self.out.ended_at, turn.ended_at)  # a call may end after its message
            compute_metrics(turn)
            turn.duration_ms = elapsed_ms(turn.started_at, turn.ended_at)
            turn.duration_source = "timestamps" if turn.duration_ms is not None else None
        return self.out

    # ------------------------------------------------------------------ turns
    def _extend(self, ts: str | None) -> None:
        if self.cur is not None and ts is not None:
            self.cur.ended_at = _later(self.cur.ended_at, ts)

    def _start(self, prompt: str | None, ts: str | None, slash: bool = False, msg_id: str | None = None) -> Turn:
        turns = self.out.turns
        index = 0 if prompt is None else (turns[-1].index + 1 if turns else 1)
        turn = Turn(index=max(index, 1) if prompt is not None else 0, prompt=prompt, started_at=ts,
                    is_slash_command=slash, started_by="prompt" if prompt is not None else None,
                    prompt_uuid=msg_id if prompt is not None else None, ended_at=ts)
        turns.append(turn)
        self.cur = turn
        self.calling_messages = {}
        return turn

    def _user(self, msg: dict[str, Any], ts: str | None) -> None:
        content = msg.get("content")
        if any(isinstance(p.get("functionResponse"), dict) for p in parts_of(content)):
            self._extend(ts)  # tool results, recorded as a user message (2026)
            return
        shown = msg.get("displayContent")
        text = text_of(shown) if shown is not None else ""
        if not text.strip():
            text = text_of(content)
        stripped = text.strip()
        if not stripped:
            self._extend(ts)
            return
        if SNAPSHOT_TAG in stripped:
            index = self.cur.index if self.cur is not None else None
            self.out.texts.append(TextUnit("compact_summary", strip_ansi(stripped[:MAX_TEXT_CHARS]), ts, index))
            if self.cur is not None:
                self.cur.compacted = True
                self.cur.events.append(TurnEvent("compaction", ts, {"trigger": None, "pre_tokens": None}))
                self._extend(ts)
            self.after_snapshot = True
            return
        if stripped.startswith(CONTEXT_PREFIXES):
            self._extend(ts)
            return
        prompt = text.split(REFERENCE_CONTENT_START, 1)[0].strip() or stripped
        self.after_snapshot = False
        self._start(strip_ansi(prompt[:MAX_TEXT_CHARS]), ts, prompt.startswith("/"),
                    msg.get("id") if isinstance(msg.get("id"), str) else None)

    def _interrupt(self, turn: Turn, ts: str | None, running: Invocation | None = None) -> None:
        """The user stopped the turn: one `interrupted` feedback, unless a refusal already said it."""
        turn.interrupted = True
        if id(turn) not in self.stopped:
            self.stopped.add(id(turn))
            turn.events.append(interrupted(ts, running))

    def _notice(self, msg: dict[str, Any], mtype: str, ts: str | None) -> None:
        text = text_of(msg.get("content")).strip()
        if self.cur is None or not text:
            return
        if text == CANCELLED_NOTICE:
            self._interrupt(self.cur, ts)
        output = strip_ansi(short(text, 1000))
        self.cur.events.append(TurnEvent("command_output", ts, {"output": output, "level": mtype}))
        self._extend(ts)

    def _gemini(self, msg: dict[str, Any], ts: str | None) -> None:
        if self.cur is None:
            self._start(None, ts)
        turn = self.cur
        assert turn is not None
        self._extend(ts)
        mid = given if isinstance(given := msg.get("id"), str) else f"gemini-{len(turn.llm_calls)}"
        listed = msg.get("toolCalls")
        calls = [c for c in listed if isinstance(c, dict)] if isinstance(listed, list) else []
        tokens = given if isinstance(given := msg.get("tokens"), dict) else None
        text = text_of(msg.get("content")).strip()
        if self.after_snapshot and tokens is None and not calls:
            self.after_snapshot = False  # the model's acknowledgement Gemini CLI puts after a compression summary
            return
        self.after_snapshot = False
        model = msg.get("model") if isinstance(msg.get("model"), str) and msg.get("model") else None
        if model is not None:
            if model not in turn.models:
                turn.models.append(model)
            if model not in self.out.models:
                self.out.models.append(model)
        if model is not None or tokens is not None:
            call = LlmCall(message_id=mid, model=model, timestamp=ts, tool_calls=len(calls))
            if tokens is not None:
                inp, out, cached = _int(tokens.get("input")), _int(tokens.get("output")), _int(tokens.get("cached"))
                thoughts, tool = _int(tokens.get("thoughts")), _int(tokens.get("tool"))
                call.input_tokens = max(0, inp - cached) + tool
                call.cache_read_tokens = min(cached, inp) if inp else cached
                call.output_tokens = out + thoughts
                call.has_usage = any((inp, out, cached, thoughts, tool))
            turn.llm_calls.append(call)
        if text:
            add_raw(turn, strip_ansi(text))
            turn.assistant_text = strip_ansi(text[:MAX_TEXT_CHARS])
            self.out.last_assistant_text = turn.assistant_text
        if calls:
            seq = self.calling_messages.setdefault(mid, len(self.calling_messages))
            for pos, tc in enumerate(calls, 1):
                turn.invocations.append(self._invocation(tc, mid, seq, pos, ts))
                self._extend(tc.get("timestamp") if isinstance(tc.get("timestamp"), str) else None)

    # ------------------------------------------------------------------ tool calls
    def _invocation(self, tc: dict[str, Any], mid: str, seq: int, pos: int, ts: str | None) -> Invocation:
        name = str(tc.get("name") or "?")
        args = given if isinstance(given := tc.get("args"), dict) else {}
        call_id = given if isinstance(given := tc.get("id"), str) and given else f"{mid}#{pos}"
        when = given if isinstance(given := tc.get("timestamp"), str) else ts
        inv = Invocation(tool_name=name, tool_use_id=call_id, sequence=seq, position=pos, message_id=mid,
                         timestamp=when, input_brief=brief_input(args))
        fp = given if isinstance(given := args.get("file_path"), str) else args.get("absolute_path")
        if isinstance(fp, str) and fp:
            inv.file_path = fp
        if name in SHELL_TOOLS and isinstance(args.get("command"), str):
            inv.command = args["command"]
        if isinstance(args.get("description"), str):
            inv.description = short(args["description"], 300)
        if name in AGENT_TOOLS:
            agent = args.get("agent_name") or args.get("agentName") or args.get("subagent_type")  # Qwen Code's `task`
            inv.subagent_type = agent if isinstance(agent, str) else None
        if isinstance(tc.get("agentId"), str):
            inv.agent_id = tc["agentId"]
        self._note_paths(args, tc)
        status = tc.get("status")
        result = tc.get("result")
        if result is None and call_id in self.responses:
            result = [{"functionResponse": self.responses[call_id]}]
        text = result_text(result)
        display = tc.get("resultDisplay")
        if not text and isinstance(display, str):
            text = display
        inv.has_result = result is not None or status in ("success", "error", "cancelled")
        inv.is_error = status in ("error", "cancelled")
        if name in SHELL_TOOLS and shell_failed(text):
            inv.is_error = True
        if status == "cancelled" and self.cur is not None:
            if DECLINED_REASON in text[:300].lower():
                self.cur.interrupted = True  # declining a call ends the turn: the refusal says it
                self.cur.events.append(tool_rejected(when, inv))
                self.stopped.add(id(self.cur))
            else:
                self._interrupt(self.cur, when, inv)
        if inv.has_result:
            inv.result_timestamp = when
            text = strip_ansi(text)
            limit = brief_limit(name, inv.is_error)
            inv.result_brief = short(text, limit) if name in READ_TOOLS else head_and_tail(text, limit)
        if self.cur is not None:
            add_raw(self.cur, args, text)
        if not inv.is_error and (name in EDIT_TOOLS or name in WRITE_TOOLS):
            self._file_change(inv, args, display, text)
        if name == EXIT_PLAN_TOOL and isinstance(args.get("plan_filename"), str):
            self.out.plan_file = args["plan_filename"]
        if name in WRITE_TOOLS and isinstance(fp, str) and isinstance(args.get("content"), str) and "plans" in fp:
            self.out.written[fp] = args["content"][:MAX_TEXT_CHARS]
        return inv

    def _note_paths(self, args: dict[str, Any], tc: dict[str, Any]) -> None:
        if len(self.out.paths) >= 200:
            return
        for key in ("file_path", "absolute_path", "dir_path", "directory", "path", "cwd"):
            v = args.get(key)
            if isinstance(v, str) and _absolute(v):
                self.out.paths.append(v)
        desc = tc.get("description")
        if isinstance(desc, str):
            m = _CWD_IN_DESCRIPTION.search(desc)
            if m:
                self.out.paths.append(m.group(1))

    def _file_change(self, inv: Invocation, args: dict[str, Any], display: Any, text: str) -> None:
        old, new = args.get("old_string"), args.get("new_string")
        content = args.get("content")
        if isinstance(display, dict) and isinstance(display.get("fileDiff"), str):
            inv.lines_added, inv.lines_removed = diff_counts(display["fileDiff"])
            inv.diff = short(display["fileDiff"], MAX_DIFF_CHARS)
            before, after = display.get("originalContent"), display.get("newContent")
            inv.before_hash = content_hash(before) if isinstance(before, str) and before else None
            inv.after_hash = content_hash(after) if isinstance(after, str) else None
            inv.file_created = display.get("isNewFile") is True or (inv.tool_name in WRITE_TOOLS and not before)
            return
        if inv.tool_name in EDIT_TOOLS and isinstance(old, str) and isinstance(new, str):
            inv.lines_added, inv.lines_removed, diff = string_edit_counts(old, new)
            inv.diff = short(diff, MAX_DIFF_CHARS) if diff else None
        elif inv.tool_name in WRITE_TOOLS and isinstance(content, str):
            # the diff is not recorded: every written line counts as added
            inv.lines_added = len(content.splitlines())
            inv.file_created = "overwrote" not in text.lower()
            inv.after_hash = content_hash(content)
            inv.diff = short("\n".join("+" + ln for ln in content[:MAX_DIFF_CHARS * 2].splitlines()), MAX_DIFF_CHARS)


_CWD_IN_DESCRIPTION = re.compile(r"\[current working directory (.+?)\]")
_WINDOWS_ABS = re.compile(r"^[A-Za-z]:[\\/]")


def _absolute(p: str) -> bool:
    return p.startswith("/") or bool(_WINDOWS_ABS.match(p))


def build_turns(messages: list[dict[str, Any]]) -> Built:
    # Qwen Code, a fork, wrote its model's messages as `qwen` in the same files (2025-08 … 11)
    return TurnBuilder([{**m, "type": "gemini"} if m.get("type") == "qwen" else m for m in messages]).build()
