"""Turns of a Cursor chat, from its bubbles (DESIGN "Turn rules", for Cursor).

How Cursor's records map onto the turn model (`jacked.sources.cursor.db` reads them):
* A composer (agent/ask/edit chat) is a session; its bubbles are read in the order of its
  `fullConversationHeadersOnly` (older releases: the inline `conversation` array, or
  `conversationMap`). A chat whose `subagentInfo.parentComposerId` names another chat is that
  chat's subagent run (a `task`/`task_v2` call), not a session of its own.
* A user bubble (`type` 1) with non-blank `text` starts a turn; its `modelInfo.modelName` is the
  model asked. Assistant bubbles (`type` 2) before any prompt form turn 0.
* An assistant bubble's non-blank `text` is the turn's answer; its `tokenCount`
  (`inputTokens`, `outputTokens`), when not zero, one API response.
* An assistant bubble with `toolFormerData` is one tool call: `name`, its arguments in
  `rawArgs` (the model's, a JSON string) or `params` (Cursor's own), the result in `result` (a
  JSON string), `status` (`completed`, `error`, `cancelled`, `running`). Cursor writes each call
  in a bubble of its own; calls that share `toolFormerData.modelCallId` came in one model
  response (a parallel batch), any other call is a step of its own. A call failed when its
  status is `error`, its result holds an `error`, a terminal command exited non-zero, or the
  user rejected it.
* `toolFormerData.userDecision`: `accepted` is a `decision` event (`kind: "approval"`),
  `rejected` a `feedback` event (`tool_rejected`). A chat left `aborted` marks its last turn
  interrupted (`feedback` `interrupted`).
* The chat pane of releases before the composer (`workbench.panel.aichat...chatdata`): each tab
  is a session, bubbles `type` "user" / "ai" with their `text`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from jacked.sources.decisions import interrupted, tool_approved, tool_rejected
from jacked.sources.briefs import MAX_DIFF_CHARS, add_raw, brief_input, brief_limit, head_and_tail, short, strings_of
from jacked.sources.metrics import fill_subagent_counts, finish_turns
from jacked.sources.model import (
    AGENT_TOOLS,
    EDIT_TOOLS,
    SHELL_TOOLS,
    WRITE_TOOLS,
    Invocation,
    LlmCall,
    Session,
    Subagent,
    TextUnit,
    Turn,
)
from jacked.sources.opencode.build import iso
from jacked.sources.paths import path_of_uri, repo_name_of, resolve_path
from jacked.sources.textclean import strip_ansi
from jacked.sources.values import as_count, as_object, nonblank

# Bumped whenever what `build_session` returns changes: every Cursor chat is read again.
PARSER_VERSION = 3  # 2: Turn.raw_text; 3: raw-text pieces kept whole up to 150,000 chars

MAX_TEXT_CHARS = 200_000
USER, ASSISTANT = (1, "user"), (2, "ai")
DONE_STATUSES = frozenset({"completed", "error", "cancelled", "aborted", "rejected"})
PATH_KEYS = ("target_file", "targetFile", "relativeWorkspacePath", "file_path", "filePath", "path", "effectiveUri")


def _json(v: Any) -> Any:
    """A field Cursor stores as JSON text (`rawArgs`, `params`, `result`), decoded; else as it is."""
    if isinstance(v, str) and v[:1] in ("{", "["):
        try:
            return orjson.loads(v)
        except orjson.JSONDecodeError:
            return v
    return v


def when(v: Any) -> str | None:
    """A Cursor time (ISO text in bubbles, epoch milliseconds in composers) as ISO UTC."""
    if isinstance(v, str) and v.strip():
        return v
    return iso(v)


def is_prompt(bubble: dict[str, Any]) -> bool:
    return bubble.get("type") in USER and nonblank(bubble.get("text")) is not None


@dataclass(slots=True)
class Built:
    turns: list[Turn] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    messages: int = 0
    unknown: int = 0
    started_at: str | None = None
    ended_at: str | None = None
    cwd: str | None = None
    last_text: str | None = None
    task_calls: dict[str, Invocation] = field(default_factory=dict)  # toolCallId / agentId -> task call
    task_turns: dict[int, int] = field(default_factory=dict)  # id(task call) -> its turn


class ChatBuilder:
    """Builds the turns of one chat (or one subagent chat) from its bubbles, in order."""

    def __init__(self, cwd: str | None, model: str | None = None) -> None:
        self.out = Built(cwd=cwd)
        self.cur: Turn | None = None
        self.default_model = model
        self._steps: dict[str, int] = {}  # step id -> its sequence among the turn's steps
        self._calls: dict[str, int] = {}  # step id -> calls so far
        self._last_step: str | None = None

    def _touch(self, ts: str | None) -> None:
        out = self.out
        if ts is None:
            return
        if out.started_at is None or ts < out.started_at:
            out.started_at = ts
        if out.ended_at is None or ts > out.ended_at:
            out.ended_at = ts
        if self.cur is not None and (self.cur.ended_at is None or ts > self.cur.ended_at):
            self.cur.ended_at = ts

    def _start(self, prompt: str | None, ts: str | None, uid: str | None) -> Turn:
        turns = self.out.turns
        index = 0 if prompt is None else (turns[-1].index + 1 if turns else 1)
        turn = Turn(index=index, prompt=prompt, started_at=ts, ended_at=ts,
                    started_by="prompt" if prompt is not None else None, prompt_uuid=uid)
        turns.append(turn)
        self.cur = turn
        self._steps, self._calls, self._last_step = {}, {}, None
        return turn

    def _model(self, turn: Turn, model: str | None) -> None:
        if model and model != "default":
            if model not in turn.models:
                turn.models.append(model)
            if model not in self.out.models:
                self.out.models.append(model)

    def feed(self, bubble: dict[str, Any], fallback_ts: str | None = None) -> None:
        kind = bubble.get("type")
        ts = when(bubble.get("createdAt")) or fallback_ts
        if kind in USER:
            self.out.messages += 1
            if self.out.cwd is None:
                uris = bubble.get("workspaceUris")
                self.out.cwd = path_of_uri(uris[0]) if isinstance(uris, list) and uris else None
            text = nonblank(bubble.get("text"))
            if text is None:
                self._touch(ts)  # an image or context only, or a bubble still being typed
                return
            turn = self._start(text[:MAX_TEXT_CHARS], ts, nonblank(bubble.get("bubbleId")))
            self._model(turn, nonblank(as_object(bubble.get("modelInfo")).get("modelName")) or self.default_model)
            self._touch(ts)
        elif kind in ASSISTANT:
            self.out.messages += 1
            self._assistant(bubble, ts)
        else:
            self.out.unknown += 1

    def _assistant(self, bubble: dict[str, Any], ts: str | None) -> None:
        turn = self.cur if self.cur is not None else self._start(None, ts, None)
        self._touch(ts)
        self._model(turn, nonblank(bubble.get("modelType")))  # the chat pane names the model per answer
        text = nonblank(bubble.get("text"))
        if text is not None:
            add_raw(turn, text)
            turn.assistant_text = self.out.last_text = text[:MAX_TEXT_CHARS]
            self._last_step = None  # text between calls: the calls after it are another response
        tokens = as_object(bubble.get("tokenCount"))
        used = (as_count(tokens.get("inputTokens")), as_count(tokens.get("outputTokens")))
        tool = bubble.get("toolFormerData")
        if isinstance(tool, dict) and (nonblank(tool.get("name")) or tool.get("tool") is not None):
            self._tool(turn, bubble, tool, ts)
        if any(used):
            call = LlmCall(message_id=str(bubble.get("bubbleId") or ""), model=turn.models[-1] if turn.models else None,
                           timestamp=ts, input_tokens=used[0], output_tokens=used[1], has_usage=True)
            turn.llm_calls.append(call)

    def _tool(self, turn: Turn, bubble: dict[str, Any], tool: dict[str, Any], ts: str | None) -> None:
        name = nonblank(tool.get("name")) or f"tool_{tool.get('tool')}"
        step = nonblank(tool.get("modelCallId")) or str(bubble.get("bubbleId") or len(turn.invocations))
        if step not in self._steps:
            self._steps[step] = len(self._steps)
            self._calls[step] = 0
        self._calls[step] += 1
        raw_args, params = as_object(_json(tool.get("rawArgs"))), as_object(_json(tool.get("params")))
        args = raw_args or params
        status = nonblank(tool.get("status"))
        decision = nonblank(tool.get("userDecision"))
        result = _json(tool.get("result"))
        inv = Invocation(tool_name=name, tool_use_id=str(tool.get("toolCallId") or bubble.get("bubbleId") or ""),
                         sequence=self._steps[step], position=self._calls[step], message_id=step, timestamp=ts,
                         input_brief=brief_input(args))
        path = next((nonblank(a.get(k)) for a in (raw_args, params) for k in PATH_KEYS if nonblank(a.get(k))), None)
        inv.file_path = resolve_path(path_of_uri(path) if path and "://" in path else path, self.out.cwd)
        if name in SHELL_TOOLS:
            inv.command = nonblank(args.get("command")) or nonblank(params.get("command"))
        if nonblank(args.get("explanation")) or nonblank(args.get("description")):
            inv.description = short(nonblank(args.get("description")) or args["explanation"], 300)
        out = as_object(result)
        exit_code = out.get("exitCode", out.get("exitCodeV2"))
        inv.has_result = status in DONE_STATUSES or result not in (None, "")
        inv.is_error = (status == "error" or decision == "rejected" or bool(nonblank(out.get("error")))
                        or (name in SHELL_TOOLS and exit_code.__class__ is int and exit_code != 0))
        text = _result_text(result)
        # every string of the result (an edit's diff, a search's hits), not only the one the brief shows
        add_raw(turn, args, [strip_ansi(t) for t in strings_of(result)])
        inv.result_brief = head_and_tail(text, brief_limit(name, inv.is_error)) if text else ""
        inv.result_timestamp = ts if inv.has_result else None
        if name in AGENT_TOOLS:
            inv.subagent_type = nonblank(args.get("subagent_type")) or nonblank(args.get("subagentType"))
            inv.agent_id = nonblank(out.get("agentId"))
            for key in (inv.tool_use_id, inv.agent_id):
                if key:
                    self.out.task_calls[key] = inv
            self.out.task_turns[id(inv)] = turn.index
        if not inv.is_error and (name in EDIT_TOOLS or name in WRITE_TOOLS):
            _file_change(inv, out)
        turn.invocations.append(inv)
        if decision == "accepted":
            turn.events.append(tool_approved(ts, inv))
        elif decision == "rejected":
            turn.events.append(tool_rejected(ts, inv))

    def finish(self, aborted: bool = False) -> Built:
        turns = self.out.turns
        if aborted and turns and turns[-1].index >= 1:
            last = turns[-1]
            last.interrupted = True
            running = next((i for i in reversed(last.invocations) if not i.has_result), None)
            last.events.append(interrupted(last.ended_at, running))
        finish_turns(turns)
        return self.out


def _result_text(result: Any) -> str:
    """What a call returned, as text: a command's output, a file's contents, an error, else the JSON."""
    if isinstance(result, str):
        return result
    if isinstance(result, dict):
        for key in ("error", "output", "contents", "content", "message"):
            if nonblank(result.get(key)):
                return result[key]
    if result is None:
        return ""
    try:
        return orjson.dumps(result).decode()
    except TypeError:
        return str(result)


def _file_change(inv: Invocation, result: dict[str, Any]) -> None:
    """Lines added/removed and a bounded diff of an edit, from the result's `diff.chunks`."""
    chunks = as_object(result.get("diff")).get("chunks")
    added = removed = 0
    diffs: list[str] = []
    for chunk in chunks if isinstance(chunks, list) else []:
        if not isinstance(chunk, dict):
            continue
        added += as_count(chunk.get("linesAdded"))
        removed += as_count(chunk.get("linesRemoved"))
        if nonblank(chunk.get("diffString")):
            diffs.append(chunk["diffString"])
    inv.lines_added, inv.lines_removed = added, removed
    inv.diff = short("\n".join(diffs), MAX_DIFF_CHARS) if diffs else None
    inv.file_created = result.get("isNewFile") is True


# ------------------------------------------------------------------ sessions
@dataclass(slots=True)
class RawChat:
    """One composer as read: its `composerData`, its bubbles in order, its subagent chats."""

    chat_id: str
    location: str
    data: dict[str, Any]
    bubbles: list[dict[str, Any]]
    cwd: str | None = None
    project_dir: str = ""
    records: int = 0
    malformed: int = 0
    children: list[RawChat] = field(default_factory=list)


def headers_of(data: dict[str, Any]) -> list[str]:
    """The bubble ids of a composer's conversation, in order."""
    headers = data.get("fullConversationHeadersOnly")
    return [str(h["bubbleId"]) for h in headers if isinstance(h, dict) and h.get("bubbleId")] \
        if isinstance(headers, list) else []


def inline_bubbles(data: dict[str, Any]) -> list[Any]:
    """Bubbles an older composer kept in its own row (`conversation`, or `conversationMap`)."""
    conversation = data.get("conversation")
    if isinstance(conversation, list) and conversation:
        return conversation
    mapping = data.get("conversationMap")
    if isinstance(mapping, dict) and mapping:
        order = headers_of(data)
        return [mapping[b] for b in order if b in mapping] + [v for k, v in mapping.items() if k not in set(order)]
    return []


def _built(chat: RawChat) -> Built:
    data = chat.data
    builder = ChatBuilder(chat.cwd, nonblank(as_object(data.get("modelConfig")).get("modelName")))
    start = when(data.get("createdAt"))
    for bubble in chat.bubbles:
        builder.feed(bubble, start)
    return builder.finish(aborted=data.get("status") == "aborted")


def build_session(chat: RawChat, agent: str = "cursor") -> Session:
    """A Cursor chat and its subagent chats (any depth) as the agent-neutral model."""
    data = chat.data
    main = _built(chat)
    cwd = chat.cwd or main.cwd
    session = Session(
        session_id=chat.chat_id, file=chat.location, agent=agent, project_dir=chat.project_dir, cwd=cwd,
        repo_name=repo_name_of(cwd), git_branch=nonblank(data.get("createdOnBranch")),
        started_at=when(data.get("createdAt")) or main.started_at,
        ended_at=_later(main.ended_at, when(data.get("lastUpdatedAt"))), turns=main.turns, models=list(main.models),
        lines=chat.records, lines_malformed=chat.malformed, lines_unknown=main.unknown, message_lines=main.messages)
    title = nonblank(data.get("name")) or nonblank(data.get("chatTitle"))
    if title:
        session.texts.append(TextUnit("ai_title", title, when(data.get("lastUpdatedAt")), None))
    calls, turns_of = dict(main.task_calls), dict(main.task_turns)
    stack = list(reversed(chat.children))
    seen = {chat.chat_id}
    while stack:
        child = stack.pop()
        if child.chat_id in seen:
            continue
        seen.add(child.chat_id)
        stack.extend(reversed(child.children))
        child.cwd = child.cwd or cwd
        built = _built(child)
        session.lines += child.records
        session.lines_malformed += child.malformed
        session.lines_unknown += built.unknown
        session.models.extend(m for m in built.models if m not in session.models)
        calls.update({k: v for k, v in built.task_calls.items() if k not in calls})
        session.subagents.append(_subagent(child, built, calls, turns_of))
    return session


def _later(a: str | None, b: str | None) -> str | None:
    return max(x for x in (a, b) if x) if a or b else None


def _subagent(child: RawChat, built: Built, calls: dict[str, Invocation], turns_of: dict[int, int]) -> Subagent:
    info = as_object(child.data.get("subagentInfo"))
    call_id = nonblank(info.get("toolCallId"))
    inv = calls.get(call_id or "") or calls.get(child.chat_id)
    if inv is not None:
        inv.agent_id = child.chat_id
    first = next((t for t in built.turns if t.index >= 1), None)
    sub = Subagent(agent_id=child.chat_id, layout="child_session", file=child.location,
                   agent_type=nonblank(info.get("subagentTypeName")) or (inv.subagent_type if inv else None),
                   description=(inv.description if inv else None) or nonblank(child.data.get("name")),
                   tool_use_id=call_id or (inv.tool_use_id if inv else None),
                   turn_index=turns_of.get(id(inv)) if inv is not None else None,
                   prompt=first.prompt if first else None, summary_text=built.last_text,
                   started_at=when(child.data.get("createdAt")) or built.started_at,
                   ended_at=_later(built.ended_at, when(child.data.get("lastUpdatedAt"))), turns=built.turns)
    fill_subagent_counts(sub)
    return sub
