"""GitHub Copilot CLI as a transcript source.

Copilot CLI keeps everything under `~/.copilot` (`COPILOT_HOME` when set), the same on Linux,
macOS and Windows. A session is an event log (JSON Lines):

    session-state/<session id>/events.jsonl     (with workspace.yaml, checkpoints/, files/)
    session-state/<session id>.jsonl            (before 2025-12)

Every line is an event `{type, id, parentId, timestamp, data, agentId?}`; the event types and
their data are those of the Copilot SDK's generated `session-events.ts`
(github/copilot-sdk `cc0438d66e3e68c333537cb935d9425d4e4ed8d5`, MIT). Read here:

* `session.start` / `session.resume` / `session.context_changed`: `context` (cwd, gitRoot,
  branch, repository), `copilotVersion`, `selectedModel`.
* `user.message`: `content` as shown — a turn, unless Copilot wrote it itself
  (`isAutopilotContinuation`, or a `source` of a skill or agent).
* `assistant.message`: `content`, `toolRequests` (the calls of one response: a batch), `model`.
* `assistant.usage`: one model call's `model`, `inputTokens` (the prompt, its cached part
  included, as OpenAI-style APIs count it), `outputTokens`, `cacheReadTokens`, `cacheWriteTokens`.
* `tool.execution_start` / `tool.execution_complete`: a call and its result (`success`,
  `result.content`, `error.message`, and the `model` that asked for it).
* `abort` (`user_initiated`): an interruption; `permission.completed`: the user's answer to a
  permission prompt (`denied-interactively-by-user`, with the user's `feedback`, is a refusal).
* `session.compaction_complete` (`summaryContent`), `session.model_change`, `session.error`,
  `session.title_changed`.
* Events of a subagent carry an `agentId` (or, earlier, `parentToolCallId`): they are the
  subagent's, linked to the call that started it (`subagent.started`: `toolCallId`, `agentName`).

VS Code's Copilot Chat sessions are `copilot` sessions too (`--agent copilot` finds both): the
source's folders are the CLI's home and the editors' user folders that hold chats
(`jacked.sources.copilot.vscode`); `discover` tells them apart by what is in them.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from jacked.sources.base import FoundSession, stat_fingerprint
from jacked.sources.copilot.vscode import chat_roots, discover_chats, read_chat
from jacked.sources.briefs import MAX_DIFF_CHARS, add_raw, brief_input, brief_limit, content_hash, head_and_tail, short
from jacked.sources.gemini.turns import string_edit_counts
from jacked.sources.metrics import compute_metrics, elapsed_ms, fill_subagent_counts
from jacked.sources.model import EDIT_TOOLS, SHELL_TOOLS, WRITE_TOOLS, Invocation, LlmCall, Session, Subagent, TextUnit, Turn, TurnEvent
from jacked.sources.paths import repo_name_of
from jacked.sources.reader import ReadResult, iter_records
from jacked.sources.values import as_object
from jacked.sources.textclean import strip_ansi

PARSER_VERSION = 3  # 2: Turn.raw_text (VS Code's Copilot Chat sessions too); 3: raw-text pieces kept whole up to 150,000 chars
MAX_TEXT_CHARS = 200_000
NOT_TYPED_SOURCES = ("skill-", "agent-", "system")
APPROVED = frozenset({"approved", "approved-for-session", "approved-for-location"})


def copilot_home(environ: Mapping[str, str]) -> Path:
    configured = environ.get("COPILOT_HOME", "").strip()
    if configured:
        return Path(configured).expanduser()
    home = environ.get("HOME", "").strip() or environ.get("USERPROFILE", "").strip()
    return (Path(home) if home else Path(os.path.expanduser("~"))) / ".copilot"


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0


class _Agent:
    """The turns of one agent of the session: the main one, or a subagent."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.cur: Turn | None = None
        self.calls: dict[str, Invocation] = {}
        self.owner: dict[str, Turn] = {}  # call id -> its turn (the result may come after the next prompt)
        self.batches: dict[str, int] = {}
        self.last_text: str | None = None
        self.models: list[str] = []

    def turn(self, ts: str | None) -> Turn:
        if self.cur is None:
            self.start(None, ts)
        assert self.cur is not None
        if ts is not None:
            self.cur.ended_at = ts
        return self.cur

    def start(self, prompt: str | None, ts: str | None, uuid: str | None = None) -> None:
        index = 0 if prompt is None else (self.turns[-1].index + 1 if self.turns else 1)
        self.cur = Turn(index=index, prompt=prompt, started_at=ts, ended_at=ts, started_by="prompt" if prompt else None,
                        is_slash_command=prompt is not None and prompt.startswith("/"), prompt_uuid=uuid)
        self.turns.append(self.cur)
        self.batches = {}

    def model(self, name: str | None) -> None:
        if name and name not in self.models:
            self.models.append(name)
        if name and self.cur is not None and name not in self.cur.models:
            self.cur.models.append(name)

    def call(self, call_id: str, name: str, args: Any, message_id: str, ts: str | None) -> Invocation:
        inv = self.calls.get(call_id)
        if inv is not None:
            return inv
        turn = self.turn(ts)
        seq = self.batches.setdefault(message_id, len(self.batches))
        position = 1 + sum(1 for i in turn.invocations if i.message_id == message_id)
        inv = Invocation(tool_name=name, tool_use_id=call_id, sequence=seq, position=position, message_id=message_id,
                         timestamp=ts, input_brief=brief_input(args))
        if isinstance(args, dict):
            path = args.get("path") or args.get("file_path") or args.get("filePath")
            if isinstance(path, str) and path:
                inv.file_path = path
            if name in SHELL_TOOLS and isinstance(args.get("command"), str):
                inv.command = args["command"]
            if isinstance(args.get("description"), str):
                inv.description = short(args["description"], 300)
            _file_change(inv, args)
        turn.invocations.append(inv)
        add_raw(turn, args)
        self.calls[call_id] = inv
        self.owner[call_id] = turn
        return inv

    def finish(self) -> None:
        for turn in self.turns:
            compute_metrics(turn)
            turn.duration_ms = elapsed_ms(turn.started_at, turn.ended_at)
            turn.duration_source = "timestamps" if turn.duration_ms is not None else None


def _file_change(inv: Invocation, args: dict[str, Any]) -> None:
    """Lines changed by Copilot CLI's `edit` (old_str -> new_str) and `create` (file_text)."""
    old, new, text = args.get("old_str"), args.get("new_str"), args.get("file_text")
    if inv.tool_name in EDIT_TOOLS and isinstance(old, str) and isinstance(new, str):
        inv.lines_added, inv.lines_removed, diff = string_edit_counts(old, new)
        inv.diff = short(diff, MAX_DIFF_CHARS) if diff else None
    elif inv.tool_name in WRITE_TOOLS and isinstance(text, str):
        inv.lines_added, inv.file_created, inv.after_hash = len(text.splitlines()), True, content_hash(text)


class CopilotSource:
    """GitHub Copilot: the CLI (`COPILOT_HOME`, else `~/.copilot`) and VS Code's Copilot Chat."""

    name = "copilot"
    label = "GitHub Copilot"
    parser_version = PARSER_VERSION

    def default_root(self, environ: Mapping[str, str]) -> Path:
        return copilot_home(environ)

    def roots(self, environ: Mapping[str, str]) -> list[Path]:
        """Every folder read: the CLI's home and the editors' user folders with chats in them."""
        return [copilot_home(environ), *chat_roots(environ)]

    def discover(self, root: Path, errors: list[str]) -> Iterable[FoundSession]:
        if not (root / "session-state").is_dir():  # an editor's user folder, or nothing of Copilot's
            yield from discover_chats(root, errors)
            return
        state = root / "session-state"
        seen: set[str] = set()
        for entry in sorted(state.iterdir()):
            log = entry / "events.jsonl" if entry.is_dir() else entry if entry.suffix == ".jsonl" else None
            if log is None or not log.is_file():
                continue
            sid = entry.name if entry.is_dir() else entry.stem
            if sid in seen:
                continue  # the folder of a session also left as a legacy file: the folder is read
            seen.add(sid)
            yield FoundSession(sid, str(log.absolute()), [log], stat_fingerprint([log]))

    def read(self, found: FoundSession) -> Session:
        if found.extra.get("vscode"):
            return read_chat(found, self.name)
        path = Path(found.location)
        res = ReadResult()
        main = _Agent()
        subs: dict[str, _Agent] = {}
        sub_info: dict[str, dict[str, Any]] = {}  # subagent.started data by the call that started it
        linked: dict[str, str] = {}  # subagent instance id -> the call that started it
        meta: dict[str, Any] = {"versions": [], "texts": [], "lines_unknown": 0, "message_lines": 0}
        started = ended = None
        for ev in iter_records(path, result=res):
            ts = _str(ev.get("timestamp"))
            if ts:
                started = started or ts
                ended = ts
            data = as_object(ev.get("data"))
            owner = _str(ev.get("agentId")) or _str(data.get("parentToolCallId"))
            if owner and owner not in subs:
                subs[owner] = _Agent()
                # an instance id names no call: the subagent is the one started last and not yet seen
                unclaimed = next((sid for sid in sub_info if sid not in linked.values()), None)
                if owner not in sub_info and unclaimed is not None:
                    linked[owner] = unclaimed
            agent = subs[owner] if owner else main
            _event(ev.get("type"), data, ev, ts, agent, meta, sub_info)
            if ev.get("type") == "subagent.started" and owner and _str(data.get("toolCallId")):
                linked[owner] = data["toolCallId"]  # started by the subagent itself: its instance id names it
        main.finish()
        subagents = []
        for owner, agent in subs.items():
            agent.finish()
            info = sub_info.get(linked.get(owner, owner), {})
            first = next((t for t in agent.turns if t.index >= 1), None)
            sub = Subagent(agent_id=owner, layout="inline", file=str(path.absolute()), agent_type=info.get("agentName"),
                           description=info.get("agentDescription"), tool_use_id=info.get("toolCallId") or owner,
                           prompt=first.prompt if first else None, summary_text=agent.last_text,
                           started_at=agent.turns[0].started_at if agent.turns else None,
                           ended_at=agent.turns[-1].ended_at if agent.turns else None, turns=agent.turns)
            parent = main.calls.get(sub.tool_use_id or "")
            if parent is not None:
                sub.turn_index = next((t.index for t in main.turns if parent in t.invocations), None)
            fill_subagent_counts(sub)
            subagents.append(sub)
        cwd = meta.get("cwd")
        return Session(session_id=found.session_id, file=str(path.absolute()), agent=self.name,
                       project_dir=path.parent.name if path.name == "events.jsonl" else "session-state",
                       cwd=cwd, repo_name=repo_name_of(meta.get("git_root") or cwd), git_branch=meta.get("branch"),
                       version_first=meta["versions"][0] if meta["versions"] else None,
                       version_last=meta["versions"][-1] if meta["versions"] else None,
                       started_at=started, ended_at=ended, turns=main.turns, texts=meta["texts"],
                       models=main.models, subagents=subagents, lines=res.lines + res.pending_tail_malformed,
                       lines_malformed=res.malformed + res.pending_tail_malformed, lines_unknown=meta["lines_unknown"],
                       message_lines=meta["message_lines"])


def _event(etype: Any, data: dict[str, Any], ev: dict[str, Any], ts: str | None, agent: _Agent,
           meta: dict[str, Any], sub_info: dict[str, dict[str, Any]]) -> None:
    if etype in ("session.start", "session.resume", "session.context_changed"):
        context = given if isinstance(given := data.get("context"), dict) else data
        if etype != "session.context_changed" or meta.get("cwd") is None:
            meta["cwd"] = meta.get("cwd") or _str(context.get("cwd"))
            meta["git_root"] = meta.get("git_root") or _str(context.get("gitRoot"))
            meta["branch"] = meta.get("branch") or _str(context.get("branch"))
        version = _str(data.get("copilotVersion"))
        if version and version not in meta["versions"]:
            meta["versions"].append(version)
        agent.model(_str(data.get("selectedModel")))
    elif etype == "user.message":
        meta["message_lines"] += 1
        text = strip_ansi(str(data.get("content") or "").strip())
        source = given if isinstance(given := data.get("source"), str) else ""
        if text and data.get("isAutopilotContinuation") is not True and not source.startswith(NOT_TYPED_SOURCES):
            agent.start(text[:MAX_TEXT_CHARS], ts, _str(ev.get("id")))
        else:
            agent.turn(ts)
    elif etype == "assistant.message":
        meta["message_lines"] += 1
        turn = agent.turn(ts)
        text = str(data.get("content") or "").strip()
        if text:
            add_raw(turn, strip_ansi(text))
            turn.assistant_text = agent.last_text = strip_ansi(text[:MAX_TEXT_CHARS])
        agent.model(_str(data.get("model")))
        mid = _str(data.get("messageId")) or _str(ev.get("id")) or f"message-{len(turn.llm_calls)}"
        requests = given if isinstance(given := data.get("toolRequests"), list) else []
        for req in requests:
            if isinstance(req, dict) and _str(req.get("toolCallId")):
                agent.call(req["toolCallId"], str(req.get("name") or "?"), req.get("arguments"), mid, ts)
    elif etype == "assistant.usage":
        turn = agent.turn(ts)
        model = _str(data.get("model"))
        agent.model(model)
        inp, cached = _int(data.get("inputTokens")), _int(data.get("cacheReadTokens"))
        call = LlmCall(message_id=_str(data.get("apiCallId")) or _str(ev.get("id")) or f"usage-{len(turn.llm_calls)}",
                       model=model, timestamp=ts, input_tokens=max(0, inp - cached), cache_read_tokens=cached,
                       output_tokens=_int(data.get("outputTokens")), cache_creation_tokens=_int(data.get("cacheWriteTokens")))
        call.has_usage = any((inp, call.output_tokens, cached, call.cache_creation_tokens))
        turn.llm_calls.append(call)
    elif etype == "tool.execution_start" and _str(data.get("toolCallId")):
        agent.call(data["toolCallId"], str(data.get("toolName") or "?"), data.get("arguments"),
                   _str(data.get("turnId")) or data["toolCallId"], ts)
    elif etype == "tool.execution_complete" and _str(data.get("toolCallId")):
        inv = agent.calls.get(data["toolCallId"]) or agent.call(data["toolCallId"], "?", None, data["toolCallId"], ts)
        result = as_object(data.get("result"))
        error = as_object(data.get("error"))
        text = str(result.get("content") or error.get("message") or "")
        inv.has_result, inv.result_timestamp = True, ts
        inv.is_error = inv.is_error or data.get("success") is False
        inv.result_brief = head_and_tail(strip_ansi(text), brief_limit(inv.tool_name, inv.is_error))
        add_raw(agent.owner[data["toolCallId"]], strip_ansi(text))
        agent.model(_str(data.get("model")))  # 1.0.x names the model only here, with no assistant.usage
        agent.turn(ts)
    elif etype == "permission.completed":
        result = as_object(data.get("result"))
        asked = agent.calls.get(str(data.get("toolCallId")))
        tool = asked.tool_name if asked is not None else None
        turn = agent.turn(ts)
        if result.get("kind") == "denied-interactively-by-user":
            if asked is not None:
                asked.is_error = True
            turn.events.append(TurnEvent("feedback", ts, {"kind": "tool_rejected", "tool_name": tool,
                                                          "reason": short(result["feedback"], 600)
                                                          if _str(result.get("feedback")) else None}))
        elif result.get("kind") in APPROVED:
            turn.events.append(TurnEvent("decision", ts, {"kind": "approval", "outcome": "approved", "tool_name": tool,
                                                          "scope": result["kind"]}))
    elif etype == "abort":
        turn = agent.turn(ts)
        turn.interrupted = True
        turn.events.append(TurnEvent("feedback", ts, {"kind": "interrupted", "reason": _str(data.get("reason"))}))
    elif etype == "session.compaction_complete":
        turn = agent.turn(ts)
        summary = _str(data.get("summaryContent"))
        if data.get("success") is not False:
            turn.compacted = True
            turn.events.append(TurnEvent("compaction", ts, {"trigger": _str(data.get("trigger")),
                                                            "pre_tokens": data.get("preCompactionTokens")}))
        if summary:
            meta["texts"].append(TextUnit("compact_summary", strip_ansi(summary[:MAX_TEXT_CHARS]), ts, turn.index))
    elif etype == "session.model_change":
        agent.model(_str(data.get("newModel")))
    elif etype in ("session.error", "session.warning"):
        message = _str(data.get("message"))
        if message:
            agent.turn(ts).events.append(TurnEvent("command_output", ts, {
                "output": strip_ansi(short(message, 1000)), "level": "error" if etype == "session.error" else "warning"}))
    elif etype == "session.title_changed" and _str(data.get("title")):
        meta["texts"].append(TextUnit("ai_title", data["title"], ts, None))
    elif etype == "subagent.started" and _str(data.get("toolCallId")):
        sub_info[data["toolCallId"]] = data
    elif not isinstance(etype, str):
        meta["lines_unknown"] += 1
