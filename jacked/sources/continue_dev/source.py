"""Continue (continue.dev, the VS Code / JetBrains extension and `cn` CLI) as a transcript source.

Continue keeps its sessions under its global folder, `$CONTINUE_GLOBAL_DIR`, else `~/.continue`
(`%USERPROFILE%\\.continue` on Windows): one `sessions/<sessionId>.json` per session
(`{sessionId, title, workspaceDirectory, history, mode?, chatModelTitle?, usage?}`) and
`sessions/sessions.json`, the list (`{sessionId, title, dateCreated (epoch ms as text),
workspaceDirectory}`). Read from Continue's source (`core/index.d.ts`, `core/util/history.ts`,
`core/util/paths.ts`, continuedev/continue at d0a3c0b626b5bebc3bef4742eec05a0242be0bab).

How a session's `history` (`ChatHistoryItem`s: `message`, `contextItems`, `promptLogs`,
`toolCallStates`, `conversationSummary`) maps onto the turn model:
* a `user` message whose text (a string, or the `text` parts of a list) is not blank starts a
  turn; items before any prompt form turn 0;
* an `assistant` message's text is the turn's answer; its `usage` (`promptTokens`,
  `completionTokens`, `promptTokensDetails.cachedTokens` / `cacheWriteTokens`) one API response;
  the model is the item's `promptLogs[].modelTitle`, else the session's `chatModelTitle`;
* its `toolCalls` (and any call only its states hold) are that response's calls (a parallel
  batch when there are several); each
  call's state (`toolCallStates`, before mid-2025 a single `toolCallState`) says how it went:
  `done`, `errored` (failed), `canceled` (the user rejected it, or stopped the response before
  it ran: failed, and a `feedback` event `tool_rejected`), `generated` / `calling` (no result);
  the result is the state's `output` context items, else the `tool` message answering the call;
* `conversationSummary` is a compaction summary; `thinking` and `system` messages are not part of
  the conversation.
Items carry no times: the session starts at its `dateCreated` and ends at its file's mtime.
A session file that is half-written or not a session is skipped and reported.
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from jacked.sources.base import FoundSession
from jacked.sources.decisions import tool_rejected
from jacked.sources.briefs import add_raw, brief_input, brief_limit, head_and_tail
from jacked.sources.metrics import compute_metrics
from jacked.sources.model import SHELL_TOOLS, Invocation, LlmCall, Session, TextUnit, Turn
from jacked.sources.opencode.build import iso
from jacked.sources.paths import home_dir, path_of_uri, repo_name_of, resolve_path
from jacked.sources.textclean import strip_ansi
from jacked.sources.values import as_count, as_object, nonblank

PARSER_VERSION = 3  # 2: Turn.raw_text; 3: raw-text pieces kept whole up to 150,000 chars
MAX_FILE_BYTES = 64 << 20
MAX_TEXT_CHARS = 200_000
NEW_SESSION_TITLE = "New Session"  # Continue's title until it names the session
FAILED = frozenset({"errored", "canceled"})
FINISHED = frozenset({"done", "errored", "canceled"})
PATH_KEYS = ("filepath", "filePath", "file_path", "path")


def text_of(content: Any) -> str:
    """A message's content (a string, or parts of which the `text` ones count) as text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and p.get("type") == "text"
                         and isinstance(p.get("text"), str))
    return ""


def _states(item: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """An item's tool call states by call id (the list, or the single state of older releases)."""
    states = item.get("toolCallStates")
    listed = states if isinstance(states, list) else [item.get("toolCallState")]
    return {s["toolCallId"]: s for s in listed if isinstance(s, dict) and isinstance(s.get("toolCallId"), str)}


def _output_text(output: Any) -> str:
    if not isinstance(output, list):
        return ""
    return "\n".join(c["content"] for c in output if isinstance(c, dict) and isinstance(c.get("content"), str))


class ContinueSource:
    """Continue (`$CONTINUE_GLOBAL_DIR`, else `~/.continue`): `sessions/<id>.json`."""

    name = "continue"
    label = "Continue"
    parser_version = PARSER_VERSION

    def default_root(self, environ: Mapping[str, str]) -> Path:
        configured = environ.get("CONTINUE_GLOBAL_DIR", "").strip()
        if configured:
            return Path(configured).expanduser()
        return home_dir(environ) / ".continue"

    def discover(self, root: Path, errors: list[str]) -> Iterable[FoundSession]:
        folder = root / "sessions"
        listed = _listed(folder / "sessions.json")
        try:
            entries = sorted((e for e in os.scandir(folder) if e.name.endswith(".json") and e.name != "sessions.json"),
                             key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            try:
                st = entry.stat()
            except OSError:
                continue
            sid = entry.name[:-5]
            if st.st_size > MAX_FILE_BYTES:
                errors.append(f"{entry.path}: {st.st_size} bytes, over the {MAX_FILE_BYTES} read; skipped")
                continue
            created = listed.get(sid)
            fingerprint = hashlib.blake2b(f"{st.st_size}\0{st.st_mtime_ns}\0{created}".encode(),
                                          digest_size=12).hexdigest()
            yield FoundSession(sid, str(Path(entry.path).absolute()), [Path(entry.path)], fingerprint,
                               extra={"created": created, "mtime": st.st_mtime_ns})

    def read(self, found: FoundSession) -> Session:
        path = found.files[0]
        try:
            data = orjson.loads(path.read_bytes())
        except orjson.JSONDecodeError as e:
            raise ValueError(f"{path}: not JSON (half-written?): {e}") from e
        if not isinstance(data, dict) or not isinstance(data.get("history"), list):
            raise ValueError(f"{path}: not a Continue session (no history)")
        created = found.extra.get("created")
        mtime = found.extra.get("mtime")
        started = iso(created)
        ended = iso(mtime / 1e6) if isinstance(mtime, int) else None
        cwd = path_of_uri(data.get("workspaceDirectory"))
        built = _Builder(started, nonblank(data.get("chatModelTitle")), cwd)
        for item in data["history"]:
            built.feed(item)
        session = Session(session_id=str(data.get("sessionId") or found.session_id), file=str(path.absolute()),
                          agent="continue", project_dir=path.parent.name, cwd=cwd, repo_name=repo_name_of(cwd),
                          started_at=started, ended_at=ended or started, turns=built.finish(ended),
                          texts=built.texts, models=built.models, lines=len(data["history"]),
                          lines_malformed=built.malformed, lines_unknown=built.unknown, message_lines=built.messages)
        title = nonblank(data.get("title"))
        if title and title != NEW_SESSION_TITLE:
            session.texts.append(TextUnit("ai_title", title, ended, None))
        return session


def _listed(path: Path) -> dict[str, Any]:
    """{session id: dateCreated (epoch ms)} from `sessions.json` (empty when it cannot be read)."""
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    out: dict[str, Any] = {}
    for entry in data if isinstance(data, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("sessionId"), str):
            created = entry.get("dateCreated")
            try:
                out[entry["sessionId"]] = float(created) if isinstance(created, (str, int, float)) else None
            except ValueError:
                out[entry["sessionId"]] = None
    return out


class _Builder:
    def __init__(self, started: str | None, model: str | None, cwd: str | None) -> None:
        self.started = started
        self.cwd = cwd
        self.default_model = model
        self.turns: list[Turn] = []
        self.texts: list[TextUnit] = []
        self.models: list[str] = []
        self.messages = self.unknown = self.malformed = 0
        self.calls: dict[str, Invocation] = {}
        self.owner: dict[str, Turn] = {}  # call id -> its turn (a `tool` message answers it later)

    def _turn(self) -> Turn:
        if not self.turns:
            self.turns.append(Turn(index=0, prompt=None, started_at=self.started, ended_at=self.started))
        return self.turns[-1]

    def feed(self, item: Any) -> None:
        message = as_object(item).get("message") if isinstance(item, dict) else None
        if not isinstance(message, dict):
            self.malformed += 1
            return
        role = message.get("role")
        if role == "user":
            self.messages += 1
            text = text_of(message.get("content"))
            if text.strip():
                index = self.turns[-1].index + 1 if self.turns else 1
                self.turns.append(Turn(index=index, prompt=text[:MAX_TEXT_CHARS], started_at=self.started,
                                       ended_at=self.started, started_by="prompt"))
        elif role == "assistant":
            self.messages += 1
            self._assistant(item, message)
        elif role == "tool":
            inv = self.calls.get(str(message.get("toolCallId")))
            text = text_of(message.get("content"))
            if inv is not None and not inv.result_brief and text:
                add_raw(self.owner[str(message.get("toolCallId"))], strip_ansi(text))
                inv.result_brief = head_and_tail(text, brief_limit(inv.tool_name, inv.is_error))
                inv.has_result = True
        elif role not in ("thinking", "system"):
            self.unknown += 1
        summary = nonblank(item.get("conversationSummary"))
        if summary:
            turn = self._turn()
            turn.compacted = True
            self.texts.append(TextUnit("compact_summary", summary[:MAX_TEXT_CHARS], None, turn.index))

    def _assistant(self, item: dict[str, Any], message: dict[str, Any]) -> None:
        turn = self._turn()
        logs = item.get("promptLogs")
        model = next((nonblank(p.get("modelTitle")) for p in logs if isinstance(p, dict) and nonblank(p.get("modelTitle"))),
                     None) if isinstance(logs, list) else None
        model = model or self.default_model
        if model and model not in turn.models:
            turn.models.append(model)
        if model and model not in self.models:
            self.models.append(model)
        text = text_of(message.get("content"))
        if text.strip():
            add_raw(turn, text)
            turn.assistant_text = text[:MAX_TEXT_CHARS]
        response = f"{len(self.turns)}#{len(turn.llm_calls)}#{len(turn.invocations)}"
        listed = message.get("toolCalls")
        states = _states(item)
        calls = [c for c in listed if isinstance(c, dict)] if isinstance(listed, list) else []
        named = {c.get("id") for c in calls}
        # a state whose call the message does not list (some releases keep the call in the state only)
        calls += [as_object(s.get("toolCall")) | {"id": cid} for cid, s in states.items() if cid not in named]
        sequence = len({i.message_id for i in turn.invocations})
        position = 0
        for call in calls:
            function = as_object(as_object(call).get("function"))
            name = nonblank(function.get("name"))
            if name is None:
                continue
            position += 1
            self._call(turn, as_object(call), name, function, states, response, sequence, position)
        usage = as_object(message.get("usage"))
        prompt, completion = as_count(usage.get("promptTokens")), as_count(usage.get("completionTokens"))
        details = as_object(usage.get("promptTokensDetails"))
        if prompt or completion:
            turn.llm_calls.append(LlmCall(message_id=response, model=model, timestamp=None, input_tokens=prompt,
                                          output_tokens=completion, cache_read_tokens=as_count(details.get("cachedTokens")),
                                          cache_creation_tokens=as_count(details.get("cacheWriteTokens")), has_usage=True))

    def _call(self, turn: Turn, call: dict[str, Any], name: str, function: dict[str, Any],
              states: dict[str, dict[str, Any]], response: str, sequence: int, position: int) -> None:
        call_id = str(call.get("id") or f"{response}.{position}")
        state = states.get(call_id, {})
        args: Any = state.get("parsedArgs")
        if not isinstance(args, dict):
            try:
                args = orjson.loads(function.get("arguments") or "{}")
            except (orjson.JSONDecodeError, TypeError):
                args = {"arguments": function.get("arguments")}
        args = as_object(args)
        status = state.get("status")
        inv = Invocation(tool_name=name, tool_use_id=call_id, sequence=sequence, position=position,
                         message_id=response, input_brief=brief_input(args))
        inv.file_path = resolve_path(next((nonblank(args.get(k)) for k in PATH_KEYS if nonblank(args.get(k))), None), self.cwd)
        if name in SHELL_TOOLS:
            inv.command = nonblank(args.get("command"))
        inv.is_error = status in FAILED
        inv.has_result = status in FINISHED
        text = _output_text(state.get("output"))
        add_raw(turn, args, strip_ansi(text))  # a terminal's colours could split a secret the redactor would see
        if text:
            inv.result_brief = head_and_tail(text, brief_limit(name, inv.is_error))
        turn.invocations.append(inv)
        self.calls[call_id] = inv
        self.owner[call_id] = turn
        if status == "canceled":
            turn.events.append(tool_rejected(None, inv))

    def finish(self, ended: str | None) -> list[Turn]:
        for turn in self.turns:
            compute_metrics(turn)
        if self.turns and ended:
            self.turns[-1].ended_at = ended
        for a, b in zip(self.turns, self.turns[1:]):
            a.ended_at = a.ended_at or b.started_at
        return self.turns
