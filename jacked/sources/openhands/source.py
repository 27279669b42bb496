"""OpenHands as a transcript source: its conversations' event streams in its file store.

OpenHands (All-Hands-AI/OpenHands, read at 156d0686c46aafb0fa9d291da6421fb6f64dddc0) keeps each
conversation under its file store (`file_store_path`, default `~/.openhands`; `FILE_STORE_PATH`
names another, as does `JACKED_OPENHANDS_DIR`): `sessions/<id>/` (a signed-in user's:
`users/<user>/conversations/<id>/`) with `events/<n>.json` (one event per file,
`openhands/storage/locations.py`), pages of 25 of them in `event_cache/<start>-<end>.json`, and
`metadata.json` (title, selected repository, model). An event is `event_to_dict`'s
(`openhands/events/serialization/event.py`): `id`, `timestamp`, `source` (user, agent,
environment), `message`, `cause` (the action an observation answers), `action` with `args`, or
`observation` with `content` and `extras`, and `tool_call_metadata` (the function call and the
model response it came in).

How the events map onto the turn model:
* a `message` action from the user with non-blank `args.content` starts a turn; the agent's
  `message` and `finish` (`args.final_thought`, else `message`) are its answer;
* every other agent action is a tool call (`run`, `read`, `edit`, `browse`, `call_tool_mcp`,
  `delegate`, `think`, ...), named by the function the model called; the actions of one model
  response (`tool_call_metadata.model_response.id`) are a parallel batch; the response's `usage`
  counts once (prompt, completion, cache read and write tokens);
* the observation whose `cause` is the call is its result: `error` or `user_rejected` fail it (the
  latter a `feedback` event `tool_rejected`, as is an action left `confirmation_state`
  `rejected`), a `run` whose `extras.metadata.exit_code` is neither 0 nor -1 (still running)
  failed; an `edit` observation's `old_content` / `new_content` give its lines (a file that did
  not exist before: a `write`);
* confirmation mode (`AgentController.set_agent_state_to`): an action waiting for the user
  (`confirmation_state`, older `is_confirmed`, "awaiting_confirmation") is written again under a
  new id once answered — "confirmed" (a `decision` event `approval`) or "rejected" — so only the
  answered one is a call;
* the agent stopped or paused (`agent_state_changed` to `stopped` / `paused`) interrupts the turn
  (one `feedback` event `interrupted` per turn);
  a `condensation` with a `summary` compacts it.
"""
from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from jacked.sources.base import FoundSession, stat_fingerprint
from jacked.sources.decisions import mark_interrupted, tool_approved, tool_rejected
from jacked.sources.briefs import MAX_DIFF_CHARS, add_raw, brief_input, brief_limit, content_hash, head_and_tail, short
from jacked.sources.metrics import finish_turns
from jacked.sources.model import Invocation, LlmCall, Session, TextUnit, Turn, TurnEvent
from jacked.sources.opencode.build import diff_counts
from jacked.sources.paths import home_dir, repo_name_of
from jacked.sources.textclean import strip_ansi
from jacked.sources.values import as_count, as_object, nonblank

PARSER_VERSION = 4  # 3: Turn.raw_text; 4: raw-text pieces kept whole up to 150,000 chars
MAX_EVENT_BYTES = 32 << 20
MAX_TEXT_CHARS = 200_000
NOT_CALLS = frozenset({"message", "finish", "system", "start", "recall", "condensation", "condensation_request",
                       "change_agent_state", "null", "reject", "pause", "resume", "stop", "loop_recovery"})
# The tool a call is named by when the model's function name says less than the action
ACTION_TOOLS = {"read": "read", "write": "write", "run": "execute_bash", "run_ipython": "execute_ipython_cell"}
INTERRUPTED_STATES = frozenset({"stopped", "paused"})


def _ts(v: Any) -> str | None:
    """OpenHands' `datetime.now().isoformat()` (no zone: the server's, UTC in its images) as ISO UTC."""
    if not isinstance(v, str) or len(v) < 19:
        return None
    base, _, frac = v[:26].partition(".")
    if v.endswith("Z") or "+" in v[19:]:
        return v
    return f"{base}.{(frac + '000')[:3]}Z"


def conversation_dirs(root: Path) -> Iterator[Path]:
    """Every conversation folder: `sessions/<id>/`, then `users/<user>/conversations/<id>/`."""
    bases = [root / "sessions"]
    try:
        bases += sorted(p / "conversations" for p in (root / "users").iterdir())
    except OSError:
        pass
    for base in bases:
        try:
            entries = sorted(os.scandir(base), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir() and not entry.name.startswith("."):
                yield Path(entry.path)


def _event_files(folder: Path) -> list[tuple[int, Path]]:
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    out = [(int(n[:-5]), folder / n) for n in names if n.endswith(".json") and n[:-5].isdigit()]
    return sorted(out)


def _load(path: Path) -> Any:
    try:
        if path.stat().st_size > MAX_EVENT_BYTES:
            return None
        return orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None


def read_events(folder: Path) -> tuple[list[dict[str, Any]], int, int]:
    """(a conversation's events in id order, records read, records that did not decode): the event
    files, and any event only a cache page holds."""
    events: dict[int, dict[str, Any]] = {}
    records = malformed = 0
    for eid, path in _event_files(folder / "events"):
        records += 1
        data = _load(path)
        if not isinstance(data, dict):
            malformed += 1
            continue
        data.setdefault("id", eid)
        events[eid] = data
    try:
        pages = sorted(p for p in (folder / "event_cache").iterdir() if p.suffix == ".json")
    except OSError:
        pages = []
    for page in pages:
        data = _load(page)
        for event in data if isinstance(data, list) else []:
            if isinstance(event, dict) and isinstance(event.get("id"), int) and event["id"] not in events:
                records += 1
                events[event["id"]] = event
    return [events[k] for k in sorted(events)], records, malformed


class OpenHandsSource:
    """OpenHands (`~/.openhands`): `sessions/<id>/events/*.json`."""

    name = "openhands"
    label = "OpenHands"
    parser_version = PARSER_VERSION

    def default_root(self, environ: Mapping[str, str]) -> Path:
        for key in ("JACKED_OPENHANDS_DIR", "FILE_STORE_PATH"):
            configured = environ.get(key, "").strip()
            if configured:
                return Path(configured).expanduser()
        return home_dir(environ) / ".openhands"

    def discover(self, root: Path, errors: list[str]) -> Iterable[FoundSession]:
        for folder in conversation_dirs(root):
            files = [p for _, p in _event_files(folder / "events")]
            try:
                files += sorted(p for p in (folder / "event_cache").iterdir() if p.suffix == ".json")
            except OSError:
                pass
            if not files:
                continue  # started, nothing said yet
            meta = folder / "metadata.json"
            files.append(meta)
            yield FoundSession(folder.name, str(folder.absolute()), files, stat_fingerprint(files),
                               extra={"folder": folder})

    def read(self, found: FoundSession) -> Session:
        folder: Path = found.extra["folder"]
        events, records, malformed = read_events(folder)
        meta = as_object(_load(folder / "metadata.json"))
        builder = _Builder(found.session_id)
        for event in events:
            builder.feed(event)
        turns = builder.finish()
        repo = nonblank(meta.get("selected_repository"))
        model = nonblank(meta.get("llm_model"))
        models = builder.models or ([model] if model else [])
        session = Session(session_id=found.session_id, file=str(folder.absolute()), agent="openhands",
                          project_dir=folder.parent.name, cwd=builder.cwd,
                          repo_name=repo.rstrip("/").rsplit("/", 1)[-1] if repo else repo_name_of(builder.cwd),
                          git_branch=nonblank(meta.get("selected_branch")),
                          started_at=builder.started_at or _ts(meta.get("created_at")),
                          ended_at=builder.ended_at or _ts(meta.get("last_updated_at")), turns=turns,
                          texts=builder.texts, models=models, lines=records, lines_malformed=malformed,
                          lines_unknown=builder.unknown, message_lines=builder.messages)
        title = nonblank(meta.get("title"))
        if title:
            session.texts.append(TextUnit("ai_title", title, _ts(meta.get("last_updated_at")), None))
        return session


class _Builder:
    def __init__(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        self.turns: list[Turn] = []
        self.texts: list[TextUnit] = []
        self.models: list[str] = []
        self.messages = self.unknown = 0
        self.started_at: str | None = None
        self.ended_at: str | None = None
        self.cwd: str | None = None
        self.calls: dict[int, tuple[Invocation, Turn]] = {}
        self.responses: set[str] = set()
        self.steps: dict[str, int] = {}
        self.rejected: set[int] = set()
        self.awaiting = False  # an action waits for the user's confirmation (written again once answered)

    def _turn(self, ts: str | None) -> Turn:
        if not self.turns:
            self.turns.append(Turn(index=0, prompt=None, started_at=ts, ended_at=ts))
        return self.turns[-1]

    def _touch(self, turn: Turn, ts: str | None) -> None:
        if ts is None:
            return
        self.started_at = min(self.started_at or ts, ts)
        self.ended_at = max(self.ended_at or ts, ts)
        turn.ended_at = max(turn.ended_at or ts, ts)

    def feed(self, event: dict[str, Any]) -> None:
        ts = _ts(event.get("timestamp"))
        action, observation = event.get("action"), event.get("observation")
        if isinstance(action, str):
            self._action(event, action, as_object(event.get("args")), ts)
        elif isinstance(observation, str):
            self._observation(event, observation, ts)
        else:
            self.unknown += 1

    def _action(self, event: dict[str, Any], action: str, args: dict[str, Any], ts: str | None) -> None:
        source = event.get("source")
        if source not in ("user", "agent"):
            return  # the environment's own bookkeeping (agent state changes, system prompts)
        if action == "message" and source == "user":
            self.messages += 1
            text = nonblank(args.get("content"))
            if text is not None:
                index = self.turns[-1].index + 1 if self.turns else 1
                self.turns.append(Turn(index=index, prompt=text[:MAX_TEXT_CHARS], started_at=ts, ended_at=ts,
                                       started_by="prompt",
                                       # event ids restart at 0 in every conversation: the id alone
                                       # would make turns of others look like copies of this one
                                       prompt_uuid=f"{self.conversation_id}/{event.get('id')}"))
            self._touch(self._turn(ts), ts)
            return
        if source != "agent" or (action in NOT_CALLS and action not in ("message", "finish") and not self.turns):
            return  # a state change the user asked for; the system prompt before any turn
        turn = self._turn(ts)
        self._touch(turn, ts)
        self._usage(turn, event, ts)
        if action in ("message", "finish"):
            self.messages += 1
            text = nonblank(args.get("final_thought")) or nonblank(args.get("content")) or nonblank(event.get("message"))
            if text:
                add_raw(turn, strip_ansi(text))
                turn.assistant_text = text[:MAX_TEXT_CHARS]
        elif action == "condensation":
            summary = nonblank(args.get("summary"))
            turn.compacted = True
            turn.events.append(TurnEvent("compaction", ts, {"trigger": "auto", "pre_tokens": None}))
            if summary:
                self.texts.append(TextUnit("compact_summary", summary[:MAX_TEXT_CHARS], ts, turn.index))
        elif action not in NOT_CALLS:
            confirmation = args.get("confirmation_state", args.get("is_confirmed"))
            if confirmation == "awaiting_confirmation":
                self.awaiting = True  # not a call yet: the same action comes again with the answer
                return
            self._call(turn, event, action, args, ts)
            if confirmation == "confirmed" and self.awaiting:
                turn.events.append(tool_approved(ts, turn.invocations[-1]))
            self.awaiting = False

    def _usage(self, turn: Turn, event: dict[str, Any], ts: str | None) -> None:
        response = as_object(as_object(event.get("tool_call_metadata")).get("model_response"))
        rid = nonblank(response.get("id"))
        if rid is None or rid in self.responses:
            return
        self.responses.add(rid)
        model = nonblank(response.get("model"))
        if model and model not in turn.models:
            turn.models.append(model)
        if model and model not in self.models:
            self.models.append(model)
        usage = as_object(response.get("usage"))
        counts = (as_count(usage.get("prompt_tokens")), as_count(usage.get("completion_tokens")),
                  as_count(usage.get("cache_read_input_tokens")), as_count(usage.get("cache_creation_input_tokens")))
        if any(counts):
            turn.llm_calls.append(LlmCall(message_id=rid, model=model, timestamp=ts, input_tokens=counts[0],
                                          output_tokens=counts[1], cache_read_tokens=counts[2],
                                          cache_creation_tokens=counts[3], has_usage=True))

    def _call(self, turn: Turn, event: dict[str, Any], action: str, args: dict[str, Any], ts: str | None) -> None:
        meta = as_object(event.get("tool_call_metadata"))
        step = nonblank(as_object(meta.get("model_response")).get("id")) or f"event-{event.get('id')}"
        if step not in self.steps:
            self.steps[step] = 0
        self.steps[step] += 1
        name = ACTION_TOOLS.get(action) or nonblank(meta.get("function_name")) or action
        if action == "edit":
            name = "write" if args.get("command") == "create" else "edit"
        shown = {k: v for k, v in args.items() if k not in ("thought", "hidden", "blocking", "is_input",
                                                               "security_risk", "impl_source")}
        order = list(dict.fromkeys(i.message_id for i in turn.invocations))
        inv = Invocation(tool_name=name, tool_use_id=nonblank(meta.get("tool_call_id")) or str(event.get("id")),
                         sequence=order.index(step) if step in order else len(order),
                         position=self.steps[step], message_id=step, timestamp=ts, input_brief=brief_input(shown))
        inv.file_path = nonblank(args.get("path"))
        if action in ("run", "run_ipython"):
            inv.command = nonblank(args.get("command")) or nonblank(args.get("code"))
        if action == "delegate":
            inv.subagent_type = nonblank(args.get("agent"))
        if action == "edit":
            _edit_lines(inv, args)
        if args.get("confirmation_state", args.get("is_confirmed")) == "rejected":
            self._reject(turn, inv, ts)
        turn.invocations.append(inv)
        thought = args.get("thought")  # the model's text that came with the call
        add_raw(turn, strip_ansi(thought) if isinstance(thought, str) else "", shown)
        if isinstance(event.get("id"), int):
            self.calls[event["id"]] = (inv, turn)

    def _reject(self, turn: Turn, inv: Invocation, ts: str | None) -> None:
        if id(inv) in self.rejected:
            return  # the action's own state and its `user_rejected` observation: one act
        self.rejected.add(id(inv))
        inv.is_error = True
        turn.events.append(tool_rejected(ts, inv))

    def _observation(self, event: dict[str, Any], observation: str, ts: str | None) -> None:
        extras = as_object(event.get("extras"))
        if not self.turns:
            return  # the environment starting up: no turn yet
        turn = self.turns[-1]
        self._touch(turn, ts)
        if observation == "agent_state_changed":
            if extras.get("agent_state") in INTERRUPTED_STATES and turn.index >= 1:
                running = next((i for i in reversed(turn.invocations) if not i.has_result), None)
                mark_interrupted(turn, ts, running)
            return
        if observation == "run" and self.cwd is None:
            self.cwd = nonblank(as_object(extras.get("metadata")).get("working_dir"))
        owner = self.calls.get(event["cause"]) if isinstance(event.get("cause"), int) else None
        if owner is None:
            return
        inv, call_turn = owner
        content = event.get("content")
        text = content if isinstance(content, str) else ""
        exit_code = as_object(extras.get("metadata")).get("exit_code", extras.get("exit_code"))
        if observation == "user_rejected":
            self._reject(call_turn, inv, ts)
        # exit code -1: the command is still running (OpenHands stopped waiting), not a failure
        failed = observation in ("error", "user_rejected") or (
            observation == "run" and exit_code.__class__ is int and exit_code not in (0, -1))
        inv.is_error = inv.is_error or failed
        inv.has_result = True
        inv.result_timestamp = ts
        inv.result_brief = head_and_tail(text, brief_limit(inv.tool_name, inv.is_error)) if text else ""
        add_raw(call_turn, strip_ansi(text))
        diff = nonblank(extras.get("diff"))
        if diff and not inv.diff:
            inv.diff = short(diff, MAX_DIFF_CHARS)
        if observation == "edit" and isinstance(extras.get("new_content"), str) and not failed:
            _edit_result(inv, extras)

    def finish(self) -> list[Turn]:
        return finish_turns(self.turns)


def _edit_result(inv: Invocation, extras: dict[str, Any]) -> None:
    """Lines and hashes of an edit from its observation's file contents before and after."""
    old, new = extras.get("old_content"), extras["new_content"]
    if extras.get("prev_exist") is False or old is None:
        inv.tool_name, inv.file_created = "write", extras.get("prev_exist") is False
        inv.lines_added, inv.lines_removed = len(new.splitlines()), 0
    elif isinstance(old, str):
        changes = [ln[:1] for ln in difflib.ndiff(old.splitlines(), new.splitlines()) if ln[:1] in "+-"]
        inv.lines_added, inv.lines_removed = changes.count("+"), changes.count("-")
        inv.before_hash = content_hash(old)
    inv.after_hash = content_hash(new)


def _edit_lines(inv: Invocation, args: dict[str, Any]) -> None:
    """Lines of an edit from its arguments: a created file's lines, a replacement's old and new."""
    command = args.get("command")
    if command == "create" and isinstance(args.get("file_text"), str):
        inv.file_created = True
        inv.lines_added = len(args["file_text"].splitlines())
    elif isinstance(args.get("new_str"), str):
        old = given if isinstance(given := args.get("old_str"), str) else ""
        inv.lines_added, inv.lines_removed = len(args["new_str"].splitlines()), len(old.splitlines())
    elif isinstance(args.get("content"), str):  # the LLM-based editor: the block it wrote
        inv.lines_added, inv.lines_removed = diff_counts(args["content"]) if args["content"].startswith("@@") \
            else (len(args["content"].splitlines()), 0)
