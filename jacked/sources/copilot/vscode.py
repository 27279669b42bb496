"""GitHub Copilot Chat in VS Code: the chat sessions the editor keeps, read as `copilot` sessions.

VS Code writes each chat of a workspace to its user folder (`~/.config/Code/User` on Linux,
`~/Library/Application Support/Code/User` on macOS, `%APPDATA%\\Code\\User` on Windows; the same
under `Code - Insiders` and `VSCodium`):

    workspaceStorage/<hash>/chatSessions/<session id>.json     (the folder in <hash>/workspace.json)
    globalStorage/emptyWindowChatSessions/<session id>.json    (chats of a window with no folder)

A `.json` file is one `ISerializableChatData` (versions 1-3: `customTitle` from version 3,
`computedTitle` in 2), written whole each time. Newer releases write `<session id>.jsonl`
instead: an `ObjectMutationLog`, the whole state (`kind` 0) followed by changes to it (1 set a
path, 2 push onto (and cut) an array, 3 delete). Both as read in microsoft/vscode (MIT):
`src/vs/workbench/contrib/chat/common/chatModel.ts` at eb7b9cf3a5d297911e97049e1ba6a7539519fd42,
`chatSessionStore.ts` at d3935da7bdfe058b117ca7bef4d5ade4ce4a8b86 and
`model/objectMutationLog.ts` at ce1580aa66c166f369325f5dcaa55db7701cf6cc.

Each request is a turn: `message.text` (a bare string before the parsed form), `timestamp`
(epoch ms), `modelId`, `requestId`. Its `response` parts: `markdownContent` (and the bare
markdown strings of old files), with the `inlineReference`s named inside it, are the answer; `toolInvocationSerialized` a tool call
(`toolId`, `toolCallId`, `isComplete`, `resultDetails`; `isConfirmed` false or a denied or
skipped `ConfirmedReason`: refused, one the user allowed when asked: approved), the calls
between two pieces of text one batch; `textEditGroup` the edits of one file. `isCanceled` is an
interruption, `result.errorDetails` (earlier `responseErrorDetails`) an error, and
`result.timings.totalElapsed` when the answer ended.
"""
from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from jacked.sources.base import FoundSession, stat_fingerprint
from jacked.sources.briefs import add_raw, brief_input, brief_limit, head_and_tail, short
from jacked.sources.cline.source import editor_config_dir
from jacked.sources.cline.turns import iso_of_ms
from jacked.sources.decisions import mark_interrupted, tool_approved, tool_rejected
from jacked.sources.metrics import finish_turns
from jacked.sources.model import Invocation, Session, TextUnit, Turn, TurnEvent
from jacked.sources.paths import path_of_uri, repo_name_of
from jacked.sources.textclean import strip_ansi
from jacked.sources.values import as_object

EDITORS = ("Code", "Code - Insiders", "VSCodium")
EMPTY_WINDOW = ("globalStorage", "emptyWindowChatSessions")
MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_TEXT_CHARS = 200_000
EDIT_GROUP_TOOL = "edit"  # a `textEditGroup`: the edits Copilot made to one file
# `isConfirmed` as a `ConfirmedReason` (releases of 2025 on; a boolean before): its `type`, a
# `ToolConfirmKind` (chatService.ts): Denied 0, ConfirmationNotNeeded 1, Setting 2,
# LmServicePerTool 3 (allowed earlier for a scope), UserAction 4 (allowed when asked), Skipped 5
CONFIRM_DENIED, CONFIRM_BY_USER, CONFIRM_SKIPPED = 0, 4, 5


def vscode_user_dirs(environ: Mapping[str, str], platform: str = sys.platform) -> list[Path]:
    """The editors' user folders on this system, whether or not they exist (`JACKED_VSCODE_DIR`:
    the one user folder to read instead)."""
    configured = environ.get("JACKED_VSCODE_DIR", "").strip()
    if configured:
        return [Path(configured).expanduser()]
    base = editor_config_dir(environ, platform)
    return [base / editor / "User" for editor in EDITORS]


def chat_folders(user_dir: Path) -> list[Path]:
    """The `chatSessions` folders under one editor's user folder."""
    found = []
    storage = user_dir / "workspaceStorage"
    if storage.is_dir():
        found = sorted(p / "chatSessions" for p in storage.iterdir() if (p / "chatSessions").is_dir())
    empty = user_dir.joinpath(*EMPTY_WINDOW)
    return found + ([empty] if empty.is_dir() else [])


def discover_chats(user_dir: Path, errors: list[str]) -> Iterator[FoundSession]:
    """Every chat session under an editor's user folder (a `.jsonl` over a `.json` of the same id)."""
    try:
        folders = chat_folders(user_dir)
    except OSError as e:
        errors.append(f"{user_dir}: {e.strerror or e}")
        return
    for folder in folders:
        try:
            files = sorted(p for p in folder.iterdir() if p.suffix in (".json", ".jsonl") and p.is_file())
        except OSError as e:
            errors.append(f"{folder}: {e.strerror or e}")
            continue
        chosen = {p.stem: p for p in files if p.suffix == ".json"} | {p.stem: p for p in files if p.suffix == ".jsonl"}
        workspace = folder.parent / "workspace.json"
        for sid, chat in sorted(chosen.items()):
            size = chat.stat().st_size
            if size > MAX_FILE_BYTES:
                errors.append(f"{chat}: {size} bytes, over the {MAX_FILE_BYTES} read; skipped")
                continue
            used = [chat, workspace] if workspace.is_file() else [chat]
            yield FoundSession(sid, str(chat.absolute()), used, stat_fingerprint(used),
                               extra={"vscode": True, "workspace": workspace})


def load_chat(path: Path) -> tuple[dict[str, Any], int, int]:
    """The chat's data, the entries read and those that did not decode. A `.json` that does not
    decode raises ValueError (VS Code rewrites it whole: it was cut mid-write)."""
    raw = path.read_bytes()
    if path.suffix != ".jsonl":
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            raise ValueError(f"not a whole chat session (cut short while VS Code wrote it?): {e}") from e
        if not isinstance(data, dict):
            raise ValueError("not a VS Code chat session (no JSON object)")
        return data, 1, 0
    state: Any = None
    lines = malformed = 0
    for line in raw.splitlines():
        if not line.strip():
            continue
        lines += 1
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            malformed += 1
            continue
        if not isinstance(entry, dict):
            malformed += 1
        elif entry.get("kind") == 0:
            state = entry.get("v")
        elif not _apply(state, entry):
            malformed += 1
    if not isinstance(state, dict):
        raise ValueError("not a VS Code chat session log (no initial state)")
    return state, lines, malformed


def _apply(state: Any, entry: dict[str, Any]) -> bool:
    """One mutation of an `ObjectMutationLog`; False when its path does not lead anywhere."""
    path = entry.get("k")
    if not isinstance(path, list) or not path:
        return False
    target = state
    for step in path[:-1]:
        target = _child(target, step)
        if target is None:
            return False
    last, kind = path[-1], entry.get("kind")
    if kind == 2:
        items = _child(target, last)
        items = items if isinstance(items, list) else []
        if isinstance(entry.get("i"), int):
            del items[entry["i"]:]
        items.extend(entry.get("v") or [])
        return _set(target, last, items)
    return _set(target, last, entry.get("v") if kind == 1 else None)


def _child(obj: Any, step: Any) -> Any:
    if isinstance(obj, dict) and isinstance(step, str):
        return obj.get(step)
    if isinstance(obj, list) and isinstance(step, int) and -len(obj) <= step < len(obj):
        return obj[step]
    return None


def _set(obj: Any, step: Any, value: Any) -> bool:
    if isinstance(obj, dict) and isinstance(step, str):
        obj[step] = value
        return True
    if isinstance(obj, list) and isinstance(step, int) and 0 <= step <= len(obj):
        obj[step:step + 1] = [value]
        return True
    return False


def _text(value: Any) -> str:
    """A markdown string (`{value}`) or a plain one."""
    if isinstance(value, str):
        return value
    return value["value"] if isinstance(value, dict) and isinstance(value.get("value"), str) else ""


def read_chat(found: FoundSession, agent: str) -> Session:
    path = Path(found.location)
    data, lines, malformed = load_chat(path)
    cwd = _workspace_folder(found.extra.get("workspace"))
    turns: list[Turn] = []
    texts: list[TextUnit] = []
    models: list[str] = []
    requests = data.get("requests")
    for req in requests if isinstance(requests, list) else []:
        if isinstance(req, dict):
            turns.append(_turn(req, len(turns) + 1, models))
    title = data.get("customTitle") or data.get("computedTitle")
    if isinstance(title, str) and title.strip():
        texts.append(TextUnit("ai_title", title.strip(), iso_of_ms(data.get("lastMessageDate")), None))
    started = iso_of_ms(data.get("creationDate")) or next((t.started_at for t in turns if t.started_at), None)
    ended = max([t.ended_at for t in turns if t.ended_at] + [iso_of_ms(data.get("lastMessageDate")) or ""]) or started
    return Session(session_id=str(data.get("sessionId") or found.session_id), file=str(path.absolute()), agent=agent,
                   project_dir=path.parent.parent.name if path.parent.name == "chatSessions" else path.parent.name,
                   cwd=cwd, repo_name=repo_name_of(cwd), started_at=started, ended_at=ended,
                   turns=finish_turns(turns), texts=texts, models=models, lines=lines, lines_malformed=malformed,
                   message_lines=2 * len(turns))


def _workspace_folder(workspace: Any) -> str | None:
    """The folder a workspace's `workspace.json` names (a multi-root workspace: its file's folder)."""
    if not isinstance(workspace, Path) or not workspace.is_file():
        return None
    try:
        data = as_object(orjson.loads(workspace.read_bytes()))
    except (OSError, orjson.JSONDecodeError):
        return None
    folder = path_of_uri(data.get("folder"))
    if folder:
        return folder
    config = path_of_uri(data.get("workspace") or data.get("configuration"))
    return config.replace("\\", "/").rsplit("/", 1)[0] if config else None


def _turn(req: dict[str, Any], index: int, models: list[str]) -> Turn:
    message = req.get("message")
    prompt = (message if isinstance(message, str) else _text({"value": as_object(message).get("text")})).strip()
    ts = iso_of_ms(req.get("timestamp"))
    turn = Turn(index=index, prompt=prompt[:MAX_TEXT_CHARS] or None, started_at=ts, ended_at=ts,
                started_by="prompt", is_slash_command=prompt.startswith("/"),
                prompt_uuid=req.get("requestId") if isinstance(req.get("requestId"), str) else None)
    model = req.get("modelId")
    if isinstance(model, str) and model:
        turn.models.append(model)
        if model not in models:
            models.append(model)
    runs: list[str] = [""]  # the answer's text between tool calls: its pieces streamed, joined as shown
    batch, after_text = 0, True
    parts = req.get("response")
    for part in parts if isinstance(parts, list) else []:
        kind = part.get("kind") if isinstance(part, dict) else None
        if kind in (None, "markdownContent", "inlineReference"):
            text = _reference_name(part) if kind == "inlineReference" else _text(part.get("content") if kind else part)
            runs[-1] += text
            after_text = after_text or bool(text.strip())
            continue
        if kind not in ("toolInvocationSerialized", "textEditGroup"):
            continue
        if after_text:  # the calls after a piece of text came in one model response
            batch, after_text = batch + (1 if turn.invocations else 0), False
        add_raw(turn, runs[-1])  # the text before the call, in the order it was written
        inv = _tool_call(part, turn, batch, ts) if kind == "toolInvocationSerialized" else _edit_group(part, turn, batch, ts)
        turn.invocations.append(inv)
        runs.append("")
    add_raw(turn, runs[-1])
    answer = "\n\n".join(r.strip() for r in runs if r.strip())
    if answer:
        turn.assistant_text = answer[:MAX_TEXT_CHARS]
    result = as_object(req.get("result"))
    elapsed = as_object(result.get("timings")).get("totalElapsed")
    if ts and isinstance(elapsed, (int, float)) and not isinstance(elapsed, bool) and elapsed > 0:
        turn.ended_at = iso_of_ms(req["timestamp"] + elapsed)
    error = as_object(result.get("errorDetails") or req.get("responseErrorDetails"))
    if isinstance(error.get("message"), str) and error["message"].strip():
        turn.events.append(TurnEvent("command_output", turn.ended_at, {"output": short(error["message"], 1000),
                                                                       "level": "error"}))
    if req.get("isCanceled") is True:
        running = next((i for i in reversed(turn.invocations) if not i.has_result), None)
        mark_interrupted(turn, turn.ended_at, running)
    return turn


def _reference_name(part: dict[str, Any]) -> str:
    """How an `inlineReference` (a file, a location or a symbol named inside the answer) reads: its
    name, else its file's name."""
    ref = as_object(part.get("inlineReference"))
    if isinstance(part.get("name"), str) and part["name"]:
        return f"`{part['name']}`"
    if isinstance(ref.get("name"), str) and ref["name"]:
        return f"`{ref['name']}`"
    path = path_of_uri(as_object(ref.get("uri") or as_object(ref.get("location")).get("uri") or ref).get("path"))
    return f"`{path.rsplit('/', 1)[-1]}`" if path else ""


def _new_call(turn: Turn, tool: str, call_id: str, batch: int, ts: str | None) -> Invocation:
    position = 1 + sum(1 for i in turn.invocations if i.sequence == batch)
    return Invocation(tool_name=tool, tool_use_id=call_id, sequence=batch, position=position,
                      message_id=f"{turn.prompt_uuid or turn.index}:{batch}", timestamp=ts)


def _tool_call(part: dict[str, Any], turn: Turn, batch: int, ts: str | None) -> Invocation:
    given = part.get("toolCallId")
    call_id = given if isinstance(given, str) and given else f"{turn.index}-{len(turn.invocations)}"
    inv = _new_call(turn, str(part.get("toolId") or "?"), call_id, batch, ts)
    specific = as_object(part.get("toolSpecificData"))
    details = part.get("resultDetails")
    command = as_object(specific.get("commandLine")).get("original") or specific.get("command")
    if isinstance(command, str) and command:
        inv.command = command
    raw_input = specific.get("rawInput") if specific.get("kind") == "input" else as_object(details).get("input")
    said = raw_input if raw_input is not None else _text(part.get("invocationMessage"))
    inv.input_brief = brief_input(said)
    add_raw(turn, said)
    inv.description = short(_text(part.get("pastTenseMessage")) or _text(part.get("invocationMessage")), 300) or None
    if isinstance(details, list):  # the files or locations the tool used
        uris = [path_of_uri(as_object(u).get("path") if isinstance(u, dict) and "scheme" in u else u) for u in details]
        inv.file_path = next((u for u in uris if u), None)
    if part.get("isComplete") is True:
        inv.has_result, inv.result_timestamp = True, ts
        inv.is_error = as_object(details).get("isError") is True
        output = as_object(details).get("output")
        text = "\n".join(_text(o) for o in output if isinstance(o, dict)) if isinstance(output, list) else ""
        add_raw(turn, strip_ansi(text))
        inv.result_brief = head_and_tail(text, brief_limit(inv.tool_name, inv.is_error)) if text else ""
    confirmed = part.get("isConfirmed")
    kind = as_object(confirmed).get("type")
    if confirmed is False or kind in (CONFIRM_DENIED, CONFIRM_SKIPPED):
        inv.is_error = True
        turn.events.append(tool_rejected(ts, inv, "skipped" if kind == CONFIRM_SKIPPED else None))
    elif kind == CONFIRM_BY_USER:
        turn.events.append(tool_approved(ts, inv))
    return inv


def _edit_group(part: dict[str, Any], turn: Turn, batch: int, ts: str | None) -> Invocation:
    uri = part.get("uri")
    file_path = path_of_uri(as_object(uri).get("path") if isinstance(uri, dict) else uri)
    inv = _new_call(turn, EDIT_GROUP_TOOL, f"{turn.prompt_uuid or turn.index}:edit:{len(turn.invocations)}", batch, ts)
    inv.file_path = file_path
    inv.has_result = part.get("done") is not False
    edits = part.get("edits")
    for group in edits if isinstance(edits, list) else []:
        for edit in group if isinstance(group, list) else []:
            add_raw(turn, _text(as_object(edit).get("text")))  # the code written: its names are searched for
            added, removed = _edit_lines(as_object(edit))
            inv.lines_added += added
            inv.lines_removed += removed
    inv.input_brief = brief_input({"file": file_path})
    return inv


def _edit_lines(edit: dict[str, Any]) -> tuple[int, int]:
    """Lines one `TextEdit` wrote and replaced: its text's lines, its range's lines (none when empty)."""
    text = _text(edit.get("text"))
    span = as_object(edit.get("range"))
    start, end = span.get("startLineNumber"), span.get("endLineNumber")
    removed = 0
    if isinstance(start, int) and isinstance(end, int) and (end > start or span.get("endColumn") != span.get("startColumn")):
        removed = end - start + 1
    return len(text.splitlines()), removed


def has_chats(user_dir: Path) -> bool:
    try:
        return bool(chat_folders(user_dir))
    except OSError:
        return False


def chat_roots(environ: Mapping[str, str]) -> Iterable[Path]:
    """The editors' user folders that hold Copilot chats."""
    return [d for d in vscode_user_dirs(environ) if has_chats(d)]
