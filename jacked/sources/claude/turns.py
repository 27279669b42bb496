"""Turn reconstruction: records of one transcript file in, turns and invocations out.

`FileBuilder` consumes the records of one file in order (main session file or subagent
file) and keeps only what the catalog needs, redacted as it is captured. It is picklable,
so a file that grows is resumed from its saved state instead of being re-read whole.
The rules are DESIGN.md's "Turn rules"; each branch below names the rule it follows.
"""
from __future__ import annotations

import hashlib
import re
from typing import Any

import orjson

from jacked.sources.redact import redact, redact_many, redact_obj
from jacked.sources.textclean import strip_ansi
from jacked.sources.briefs import (
    BRIEF_OK_RESULT_CHARS,
    MAX_DIFF_CHARS,
    add_raw,
    brief_input,
    brief_limit,
    content_hash,
    head_and_tail,
    line_keys,
    short,
    unseen_lines,
)
from jacked.sources import decisions as dec
from jacked.sources.metrics import compute_metrics, elapsed_ms, fill_subagent_counts
from jacked.sources.model import (
    AGENT_TOOLS,
    EDIT_TOOLS,
    READ_TOOLS,
    WRITE_TOOLS,
    FileBackup,
    Invocation,
    LlmCall,
    Subagent,
    TextUnit,
    Turn,
    TurnEvent,
    slash_command_text,
    typed_prompt,
)

# Bumped whenever the reconstruction changes, so saved states are rebuilt, not resumed.
PARSER_VERSION = 17  # 17: a bash-mode command's prompt as typed ("!command"); 16: raw text keeps pieces up to 150,000 chars whole, a failed call's recorded result and the lines of a changed file not yet held; 15: a subagent's raw text joins its starting turn's; 14: each turn's raw text (Turn.raw_text); 12: compaction runs keep their API responses (billed tokens); 13: queued messages handed over mid-turn

MAX_TEXT_CHARS = 200_000  # a distilled text longer than this is kept whole up to here
MAX_CONTEXT_CHARS = 2_000  # an IDE selection kept as a turn's context

COMMAND_OUTPUT_OPEN, COMMAND_OUTPUT_CLOSE = "<local-command-stdout>", "</local-command-stdout>"
NOT_PROMPT_PREFIXES = ("<local-command-stdout>", "<local-command-caveat>", "[Request interrupted by user")
NOTIFICATION_PREFIX = "<task-notification>"
ABSORBED_REASON = "absorbed_mid_turn"  # a queue `remove`: the message went to the running turn
KNOWN_TYPES = frozenset({
    "user", "assistant", "system", "summary", "attachment", "progress", "file-history-snapshot",
    "queue-operation", "permission-mode", "last-prompt", "ai-title", "custom-title", "pr-link",
    "agent-name", "tag", "result",
})


def _message(rec: dict[str, Any]) -> dict[str, Any]:
    """`message` as a dict: it is sometimes a JSON string."""
    msg = rec.get("message")
    if isinstance(msg, str):
        try:
            msg = orjson.loads(msg)
        except orjson.JSONDecodeError:
            return {"content": msg}
    return msg if isinstance(msg, dict) else {}


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return []


def _text_of(content: Any) -> str:
    """A string content, or the text blocks of a list joined by newlines."""
    if isinstance(content, str):
        return content
    parts = []
    for b in _blocks(content):
        if b.get("type") == "text" and isinstance(b.get("text"), str):
            parts.append(b["text"])
    return "\n".join(parts)


def _result_text(content: Any) -> str:
    """A tool_result's content as text: a string, or the text of its blocks."""
    if isinstance(content, str):
        return content
    parts = []
    for b in _blocks(content):
        t = b.get("type")
        if t == "text" and isinstance(b.get("text"), str):
            parts.append(b["text"])
        elif t == "image":
            parts.append("[image]")
        elif t == "tool_reference":
            parts.append(f"[tool_reference {b.get('tool_name', '')}]")
    return "\n".join(parts)


def _usage_counts(usage: dict[str, Any]) -> tuple[int, int, int, int]:
    """(input, output, cache read, cache creation) tokens of a `usage` object; non-integers count 0."""
    a, b, c, d = (usage.get("input_tokens", 0), usage.get("output_tokens", 0),
                  usage.get("cache_read_input_tokens", 0), usage.get("cache_creation_input_tokens", 0))
    if a.__class__ is int and b.__class__ is int and c.__class__ is int and d.__class__ is int:
        return a, b, c, d
    return tuple(x if isinstance(x, int) else 0 for x in (a, b, c, d))  # type: ignore[return-value]  # four ints


def _one_hour_writes(usage: dict[str, Any], cache_creation: int) -> int:
    """Of a response's cache writes, those kept for an hour (`cache_creation.ephemeral_1h_input_tokens`):
    billed at twice the input rate, where five-minute writes cost 1.25 times it."""
    split = usage.get("cache_creation")
    n = split.get("ephemeral_1h_input_tokens") if split.__class__ is dict else None
    return min(n, cache_creation) if n.__class__ is int and n > 0 else 0


def _patch_counts(patch: Any) -> tuple[int, int]:
    """(lines added, lines removed) of `structuredPatch` hunks."""
    added = removed = 0
    if isinstance(patch, list):
        for hunk in patch:
            lines = hunk.get("lines") if isinstance(hunk, dict) else None
            if isinstance(lines, list):
                # Patch lines hold no newline: joined, a line start is a "\n" (C speed, not a loop).
                text = "\n" + "\n".join(ln for ln in lines if ln.__class__ is str)
                added += text.count("\n+")
                removed += text.count("\n-")
    return added, removed


def _patch_diff(patch: Any) -> str | None:
    """`structuredPatch` hunks as unified-diff text, bounded (the lines are what people read)."""
    if not isinstance(patch, list) or not patch:
        return None
    out: list[str] = []
    for hunk in patch:
        if not isinstance(hunk, dict):
            continue
        out.append(f"@@ -{hunk.get('oldStart', '?')},{hunk.get('oldLines', '?')} "
                   f"+{hunk.get('newStart', '?')},{hunk.get('newLines', '?')} @@")
        lines = hunk.get("lines")
        if isinstance(lines, list):
            out.extend(ln for ln in lines if ln.__class__ is str)
    return short("\n".join(out), MAX_DIFF_CHARS) if out else None


def _created_diff(body: str) -> str:
    """A created file's diff: every line an addition."""
    head = body[:MAX_DIFF_CHARS * 2]
    return short("\n".join("+" + ln for ln in head.splitlines()), MAX_DIFF_CHARS)


def _apply_edits(original: Any, edits: list[tuple[Any, Any, bool]]) -> str | None:
    """The file after string edits, or None when it cannot be known for sure."""
    if not isinstance(original, str):
        return None
    text = original
    for old, new, replace_all in edits:
        if not isinstance(old, str) or not isinstance(new, str) or old not in text:
            return None
        text = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    return text


def _file_change(inv: Invocation, tur: dict[str, Any]) -> None:
    """Diff and before/after hashes of a successful Edit/MultiEdit/Write, from its toolUseResult."""
    if tur.get("type") == "create":
        body = tur.get("content")
        if isinstance(body, str):
            inv.diff = _patch_diff(tur.get("structuredPatch")) or _created_diff(body)
            inv.after_hash = content_hash(body)
        return
    inv.diff = _patch_diff(tur.get("structuredPatch"))
    if inv.tool_name in WRITE_TOOLS:  # an update Write: the old file and the new content
        if isinstance(tur.get("originalFile"), str):
            inv.before_hash = content_hash(tur["originalFile"])
        if isinstance(tur.get("content"), str):
            inv.after_hash = content_hash(tur["content"])
        return
    original = tur.get("originalFile", tur.get("originalFileContents"))
    if not isinstance(original, str):
        return
    inv.before_hash = content_hash(original)
    if isinstance(tur.get("edits"), list):  # MultiEdit
        edits = [(e.get("old_string"), e.get("new_string"), e.get("replace_all") is True)
                 for e in tur["edits"] if isinstance(e, dict)]
    else:
        edits = [(tur.get("oldString"), tur.get("newString"), tur.get("replaceAll") is True)]
    after = _apply_edits(original, edits)
    inv.after_hash = content_hash(after) if after is not None else None


def is_human_prompt(rec: dict[str, Any], content: Any) -> tuple[bool, str, bool]:
    """(starts a turn, prompt text, is a slash command) for a main-chain user record."""
    if rec.get("isMeta") or rec.get("isCompactSummary"):
        return False, "", False
    blocks = _blocks(content)
    if isinstance(content, list):
        if any(b.get("type") == "tool_result" for b in blocks):
            return False, "", False
        if not all(b.get("type") in ("text", "image") for b in blocks) or not blocks:
            return False, "", False
    elif not isinstance(content, str):
        return False, "", False
    text = _text_of(content)
    if "<command-name>" in text:
        return True, text, True
    stripped = text.lstrip()
    if stripped.startswith(NOT_PROMPT_PREFIXES) or stripped.startswith(NOTIFICATION_PREFIX):
        return False, "", False
    return True, text, False


def is_notification(content: Any) -> bool:
    """A `<task-notification>` user line: a background task reporting back, not a person."""
    return _text_of(content).lstrip().startswith(NOTIFICATION_PREFIX)


def _notification_summary(text: str) -> str:
    """The `<summary>` of a task notification, cleaned (event data is stored as it is)."""
    m = _NOTIFICATION_SUMMARY.search(text)
    return redact(strip_ansi(short((m.group(1) if m else text).strip(), 300)))


def queue_key(text: str, slash: bool = False) -> str:
    """What a queued message and the user line that may repeat it are compared by: the text
    as typed, whitespace folded (a slash command's line is compared as "/name args")."""
    if slash or "<command-name>" in text:
        text = slash_command_text(text)
    return " ".join(text.split())


def prompt_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


_NOTIFICATION_SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.S)


class FileBuilder:
    """Reconstructs the turns of one transcript file from its records, in file order.

    `is_subagent_file` files (flat or subagents/ layout) are all sidechain lines: there the
    sidechain flag does not mark an inline subagent.
    """

    def __init__(self, rel_path: str, is_subagent_file: bool = False) -> None:
        self.rel_path = rel_path
        self.is_subagent_file = is_subagent_file
        self.version = PARSER_VERSION
        self.seen_uuids: set[str] = set()
        self.turns: list[Turn] = []
        self.cur: Turn | None = None
        self.cur_msg_seq: dict[str, int] = {}  # message.id -> sequence in the current turn
        self.cur_msg_calls: dict[str, int] = {}  # message.id -> tool calls so far
        # message.id -> its API response record, in the turn where the response's first line
        # stands (a prompt typed mid-stream may split a response's lines over two turns)
        self.llm_by_id: dict[str, LlmCall] = {}
        # Turns started by a queue-operation line, still waiting for the user line that may
        # repeat their text (that line then wins): (position in `turns`, queue key).
        self.queued_open: list[tuple[int, str]] = []
        self.messages = 0  # user and assistant lines
        self.last_uuid: str | None = None
        self._line_prev_uuid: str | None = None  # the uuid before the current line's
        self.leaf_uuids: list[str] = []  # the last uuid of each finished turn
        self._end_before_line: str | None = None  # the running turn's end before this line
        self._line_uuid: Any = None  # the current line's uuid
        self.team_name: str | None = None  # a teammate's file: its team and member name
        self.member_name: str | None = None
        # file-history backups seen before the prompt they belong to (snapshots precede it),
        # and the (path, version) pairs already recorded: snapshots repeat every entry each turn
        self.pending_backups: list[FileBackup] = []
        self.backup_keys: set[tuple[str, int]] = set()
        self.pending: dict[str, Invocation] = {}  # tool_use_id -> invocation of any turn
        # file path -> keys of its lines the raw text holds (`briefs.line_keys`: no text), from its
        # reads and the content before each change: a change adds only the lines not yet held
        self.file_lines: dict[str, set[int]] = {}
        # Decisions, feedback and snapshots (jacked.sources.decisions). What a call proposed, kept
        # until its result says what the user chose (redacted before the state is stored, see
        # `_stash`): AskUserQuestion questions, ExitPlanMode plan titles, TodoWrite lists; the last
        # TodoWrite list; the state the next turn starts from; a rejection or interruption that the
        # next "[Request interrupted…]" line belongs to.
        self.asks: dict[str, Any] = {}
        self.plan_titles: dict[str, str | None] = {}
        self.todo_calls: dict[str, list[list[str]]] = {}  # tool_use_id -> [content, status, key] items
        self.last_todos: list[list[str]] | None = None
        self.cur_cwd: str | None = None
        self.permission_mode: str | None = None
        self._stop: TurnEvent | None = None
        self.texts: list[TextUnit] = []
        self.session_id: str | None = None
        self.agent_id: str | None = None
        self.cwd: str | None = None
        self._ids_known = False  # the three above are settled: no need to look for them
        self.git_branch: str | None = None
        self.slug: str | None = None
        self.version_first: str | None = None
        self.version_last: str | None = None
        self.started_at: str | None = None
        self.ended_at: str | None = None
        self.models: list[str] = []
        self.exit_plan: str | None = None
        self.lines = 0
        self.malformed = 0
        self.unknown = 0
        self.duplicates = 0
        self.last_assistant_text: str | None = None
        # inline (1.0.x) sidechain subagents of a main file
        self.inline: list[tuple[FileBuilder, Subagent]] = []
        self.inline_cur: FileBuilder | None = None
        # Objects whose texts (`_TEXT_FIELDS`) may still be raw: redacted together, in one
        # batch, by `finalize()` — before the state is ever stored or shown.
        self._dirty: list[Any] = []

    def _add_text(self, unit: TextUnit) -> None:
        self.texts.append(unit)
        self._dirty.append(unit)

    def _redact_pending(self) -> None:
        """Redact every text captured since the last call, as one batch (redacting a text
        twice changes nothing, so an object listed again costs a little time only)."""
        objects = {id(o): o for o in self._dirty}.values()
        self._dirty = []
        refs: list[tuple[Any, Any, str]] = []  # (object, attribute name / key / index, text)
        for o in objects:
            for a in _TEXT_FIELDS[o.__class__]:
                v = getattr(o, a)
                if v.__class__ is str:
                    refs.append((o, a, v))
            if o.__class__ is FileBuilder:
                # What decision tools proposed, kept until their results arrive (and the last todo list).
                refs += [(o.plan_titles, k, v) for k, v in o.plan_titles.items() if v.__class__ is str]
                for items in [*o.todo_calls.values(), o.last_todos or []]:
                    refs += [(item, 0, item[0]) for item in items]
            if o.__class__ is Turn:
                # Event texts (a notification's summary, a command's output, a decision's question
                # and answer, a rejection's reason) are shown and indexed too.
                for e in o.events:
                    if e.type == "snapshot":
                        continue  # paths of backups (redacted as such), cwd, branch, version, model
                    d = e.data
                    refs += [(d, k, d[k]) for k in EVENT_TEXT_KEYS if d.get(k).__class__ is str]
                    if e.type in _LIST_EVENTS:
                        refs += [(d[k], i, v) for k in dec.LIST_KEYS if d.get(k).__class__ is list
                                 for i, v in enumerate(d[k]) if v.__class__ is str]
        if not refs:
            return
        # The same text often sits in two places (a turn's last answer is also the file's):
        # each distinct string is scanned once.
        distinct = list(dict.fromkeys(v for _, _, v in refs))
        # Terminal escapes go first: they could split a secret the redactor would otherwise see.
        clean = dict(zip(distinct, redact_many([strip_ansi(v) for v in distinct])))
        for o, a, v in refs:
            c = clean[v]
            if c is not v:
                if o.__class__ is dict or o.__class__ is list:
                    o[a] = c
                else:
                    setattr(o, a, c)

    # ------------------------------------------------------------------ feeding
    def feed(self, rec: dict[str, Any]) -> None:
        """Apply one decoded record."""
        self.lines += 1
        uid = self._line_uuid = rec.get("uuid")
        if uid.__class__ is str:
            if uid in self.seen_uuids:
                self.duplicates += 1  # written again on resume: the first occurrence wins
                return
            self.seen_uuids.add(uid)
            self._line_prev_uuid, self.last_uuid = self.last_uuid, uid
        rtype = rec.get("type")
        if rtype not in KNOWN_TYPES:
            self.unknown += 1
            return
        self._note_context(rec, rtype)
        if rtype == "user" or rtype == "assistant":
            self.messages += 1
            if rec.get("isSidechain") and not self.is_subagent_file:
                self._feed_inline(rec, rtype)
            elif rtype == "user":
                self._user(rec)
            else:
                self._assistant(rec)
        elif rtype == "system":
            self._system(rec)
        elif rtype == "summary":
            text = rec.get("summary")
            if isinstance(text, str) and text.strip():
                self._add_text(TextUnit("summary_label", text, None, None, rec.get("leafUuid")))
        elif rtype == "ai-title":
            self._title("ai_title", rec.get("aiTitle") or rec.get("title"), rec)
        elif rtype == "custom-title":
            self._title("custom_title", rec.get("customTitle") or rec.get("title"), rec)
        elif rtype == "file-history-snapshot":
            self._snapshot(rec)
        elif rtype == "queue-operation":
            self._queue_operation(rec)
        elif rtype == "attachment":
            att = rec.get("attachment")
            if att.__class__ is dict and att.get("type") == "queued_command":
                # 2.1.x: a queued message handed to the model inside the running turn
                self._queued_delivered(att.get("prompt"))
        elif rtype == "permission-mode":
            mode = rec.get("permissionMode")
            if mode.__class__ is str:
                self.permission_mode = mode

    def _queue_operation(self, rec: dict[str, Any]) -> None:
        """An `enqueue` is a message typed while Claude worked (2.1.x writes nothing else for
        it): a turn starts at its time, unless a user line with the same text follows, which
        then wins (see `_start_turn`). A `remove` of the same text (2.1.x: handed to the model
        inside the running turn) settles it as a prompt."""
        operation = rec.get("operation")
        if operation == "remove":
            if rec.get("reason") in (None, ABSORBED_REASON):  # no reason: the same, before 2.1.246
                self._queued_delivered(rec.get("content"))
            return
        if operation != "enqueue":
            return
        content = rec.get("content")
        text = _text_of(content) if content is not None else ""
        if not text.strip():
            self.unknown += 1  # nothing to keep: skipped and counted
            return
        ts = given if isinstance(given := rec.get("timestamp"), str) else None
        if is_notification(text):
            turn = self._start_turn(None, ts, False, started_by="notification", queued=True)
            turn.events.append(TurnEvent("notification", ts, {"summary": _notification_summary(text)}))
            self._dirty.append(turn)
        else:
            starts, prompt, slash = is_human_prompt({}, content if isinstance(content, (str, list)) else text)
            if not starts:
                return
            self._start_turn(prompt, ts, slash, started_by="queued", queued=True)
        self.queued_open.append((len(self.turns) - 1, queue_key(text)))

    def _queued_delivered(self, content: Any) -> None:
        """A queued message reached the model mid-turn: no user line will repeat it, so its turn
        stands even if the next prompt happens to have the same text."""
        if content.__class__ is not str and content.__class__ is not list:
            return
        key = queue_key(_text_of(content))
        for i, (_, k) in enumerate(self.queued_open):
            if k == key:
                del self.queued_open[i]
                return

    def _snapshot(self, rec: dict[str, Any]) -> None:
        """Record new file-history backups: an update belongs to the running turn, a fresh
        snapshot to the prompt that follows it."""
        snap = rec.get("snapshot")
        backups = snap.get("trackedFileBackups") if isinstance(snap, dict) else None
        if not isinstance(backups, dict) or not backups:
            return
        fresh: list[FileBackup] = []
        for path, b in backups.items():
            if not isinstance(path, str) or not isinstance(b, dict) or not isinstance(b.get("version"), int):
                continue
            key = (path, b["version"])
            if key in self.backup_keys:
                continue
            self.backup_keys.add(key)
            name = b.get("backupFileName")
            when = b.get("backupTime")
            fb = FileBackup(path=path, version=b["version"], backup_file=name if isinstance(name, str) else None,
                            backup_time=when if isinstance(when, str) else None)
            self._dirty.append(fb)
            fresh.append(fb)
        if rec.get("isSnapshotUpdate") and self.cur is not None:
            self.cur.backups.extend(fresh)
        else:
            self.pending_backups.extend(fresh)

    def _note_context(self, rec: dict[str, Any], rtype: str) -> None:
        """Times, ids, cwd, branch, slug and version from any line (runs once per line)."""
        get = rec.get
        ts = get("timestamp")
        if ts.__class__ is str and rtype != "file-history-snapshot":
            if self.started_at is None:
                self.started_at = ts
            self.ended_at = ts
            if self.cur is not None:
                # A line that starts the next turn does not extend this one: `_start_turn` puts it back.
                self._end_before_line = self.cur.ended_at
                self.cur.ended_at = ts
        if not self._ids_known:
            if self.session_id is None and isinstance(get("sessionId"), str):
                self.session_id = rec["sessionId"]
            if self.agent_id is None and isinstance(get("agentId"), str):
                self.agent_id = rec["agentId"]
            if self.cwd is None:
                cwd = get("cwd")
                if isinstance(cwd, str) and cwd:
                    self.cwd = cwd
            if self.is_subagent_file and self.team_name is None:
                team = get("teamName")  # 2.1.x teammates: their records name team and member
                if team.__class__ is str and team.strip():
                    self.team_name = team.strip()
                    name = get("agentName")
                    self.member_name = name.strip() if name.__class__ is str and name.strip() else None
                    self._dirty.append(self)
            self._ids_known = (self.session_id is not None and self.cwd is not None
                               and (self.agent_id is not None or not self.is_subagent_file))
        branch = get("gitBranch")
        if branch and branch.__class__ is str:
            self.git_branch = branch
        slug = get("slug")
        if slug and slug.__class__ is str:
            self.slug = slug
        v = get("version")
        if v.__class__ is str:
            if self.version_first is None:
                self.version_first = v
            self.version_last = v

    def _title(self, kind: str, text: Any, rec: dict[str, Any]) -> None:
        if isinstance(text, str) and text.strip():
            self._add_text(TextUnit(kind, text, rec.get("timestamp"), self._turn_index()))

    def _turn_index(self) -> int | None:
        return self.cur.index if self.cur is not None else None

    def _start_turn(self, prompt: str | None, ts: str | None, slash: bool,
                    started_by: str | None = "prompt", key: str | None = None, queued: bool = False) -> Turn:
        """A new turn from this line on. `started_by=None` is turn 0 (assistant lines before
        any prompt); every other turn is numbered after the last one, from 1. A user line
        (`key`: its queue key) settles the queued turns before it."""
        if started_by is None:
            prompt = None
        if self.cur is not None:
            if self._end_before_line is not None:
                self.cur.ended_at = self._end_before_line
            if self._line_prev_uuid is not None:
                self.leaf_uuids.append(self._line_prev_uuid)
        if started_by is not None and not queued and self.queued_open:
            self._settle_queued(key if key is not None else queue_key(prompt or "", slash))
        index = 0 if started_by is None else max(1, self.turns[-1].index + 1 if self.turns else 1)
        context: list[dict[str, str]] = []
        if prompt is not None:  # shown as typed; the file or selection the IDE added is kept as context
            prompt, context = typed_prompt(prompt, slash)
        turn = Turn(index=index, prompt=prompt, started_at=ts, is_slash_command=slash, ended_at=ts,
                    started_by=started_by)
        if not queued and self._line_uuid.__class__ is str:
            turn.prompt_uuid = self._line_uuid
        self._dirty.append(turn)
        self._stop = None
        if started_by is not None and not self.is_subagent_file:
            self._start_events(turn, self.cur, prompt, slash, ts, context)
        if prompt is not None and self.pending_backups:
            turn.backups.extend(self.pending_backups)
            self.pending_backups = []
        self.turns.append(turn)
        self.cur = turn
        self._end_before_line = None
        self.cur_msg_seq = {}
        self.cur_msg_calls = {}
        return turn

    def _start_events(self, turn: Turn, prev: Turn | None, prompt: str | None, slash: bool, ts: str | None,
                      context: list[dict[str, str]]) -> None:
        """The state the turn starts from (its model and backed-up files are settled by `finalize`;
        the file or selection open in the IDE, redacted here: snapshots are not redacted later)
        and, when its prompt corrects the turn before it, that feedback."""
        data: dict[str, Any] = {
            "cwd": self.cur_cwd or self.cwd, "git_branch": self.git_branch, "version": self.version_last,
            "model": None, "permission_mode": self.permission_mode}
        if context:
            texts = redact_many([strip_ansi(short(c["text"], MAX_CONTEXT_CHARS)) for c in context])
            data["ide_context"] = [{"kind": c["kind"], "text": t} for c, t in zip(context, texts)]
        turn.events.append(TurnEvent("snapshot", ts, data))
        if (dec.CORRECTIONS_KEPT and prompt and not slash and prev is not None
                and (prev.assistant_text or prev.invocations)):
            cue = dec.correction_cue(prompt)
            if cue:
                typed = dec.typed_text(prompt) or prompt
                turn.events.append(TurnEvent("feedback", ts, {
                    "kind": _START_FEEDBACK, "about_turn": prev.index, "cue": cue, "prompt": short(typed, 300),
                    "rule_version": dec.CORRECTION_RULE_VERSION}))

    def _settle_queued(self, key: str) -> None:
        """A user line repeats a queued message: that line starts the turn, so the queued
        turn (and any after it) fold back into the turn before it. Otherwise the queued
        turns stand."""
        match = next((pos for pos, k in self.queued_open if k == key), None)
        self.queued_open = []
        if match is None or match == 0 or match >= len(self.turns):
            if match == 0:  # nothing before it to fold into: the queued turn gives way
                del self.turns[0]
                self.cur = self.turns[-1] if self.turns else None
            return
        into = self.turns[match - 1]
        for gone in self.turns[match:]:
            into.invocations.extend(gone.invocations)
            into.llm_calls.extend(gone.llm_calls)
            into.events.extend(e for e in gone.events
                               if e.type != "snapshot" and e.data.get("kind") != _START_FEEDBACK)
            into.backups.extend(gone.backups)
            for model in gone.models:
                if model not in into.models:
                    into.models.append(model)
            into.assistant_text = gone.assistant_text or into.assistant_text
            into.compacted = into.compacted or gone.compacted
            into.interrupted = into.interrupted or gone.interrupted
            into.ended_at = gone.ended_at or into.ended_at
            if gone.duration_source == "turn_duration":
                into.duration_ms, into.duration_source = gone.duration_ms, gone.duration_source
        del self.turns[match:]
        _renumber_calls(into)
        self.cur = into

    # ------------------------------------------------------------------ user lines
    def _user(self, rec: dict[str, Any]) -> None:
        msg = rec.get("message")
        if msg.__class__ is not dict:
            msg = _message(rec)
        content = msg.get("content")
        ts = rec.get("timestamp")
        if rec.get("isCompactSummary"):
            text = _text_of(content)
            if text.strip():
                self._add_text(TextUnit("compact_summary", text[:MAX_TEXT_CHARS], ts, self._turn_index()))
            if self.cur is not None:
                self.cur.compacted = True
            return
        if isinstance(content, list):
            # Tool results (most user lines): never a prompt.
            results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
            if results:
                tur = rec.get("toolUseResult") if len(results) == 1 else None
                for b in results:
                    self._result(b, tur, ts)
                if len(results) < len(content):
                    self._note_interrupted(content, ts)
                return
        origin = rec.get("origin")
        # 2.1.x also marks who wrote a user line: `origin.kind` "task-notification" is no person
        from_task = origin.__class__ is dict and origin.get("kind") == "task-notification"
        starts, prompt, slash = is_human_prompt(rec, content)
        ts = ts if isinstance(ts, str) else None
        cwd, mode = rec.get("cwd"), rec.get("permissionMode")  # the state a turn starts from
        if cwd.__class__ is str and cwd:
            self.cur_cwd = cwd
        if mode.__class__ is str:
            self.permission_mode = mode
        if starts and not from_task:
            self._start_turn(prompt, ts, slash)
            return
        if not rec.get("isMeta") and (from_task or is_notification(content)):
            text = _text_of(content)
            turn = self._start_turn(None, ts, False, started_by="notification", key=queue_key(text))
            turn.events.append(TurnEvent("notification", ts, {"summary": _notification_summary(text)}))
            self._dirty.append(turn)
            return
        if self.cur is not None and content.__class__ is str and content.lstrip().startswith(COMMAND_OUTPUT_OPEN):
            # What a local command (/model, /cost, …) printed: no prompt, but what the user saw.
            output = content.replace(COMMAND_OUTPUT_OPEN, "").replace(COMMAND_OUTPUT_CLOSE, "").strip()
            if output:
                self.cur.events.append(TurnEvent("command_output", ts, {"output": output[:BRIEF_OK_RESULT_CHARS]}))
                self._dirty.append(self.cur)
            return
        self._note_interrupted(content, ts)

    def _note_interrupted(self, content: Any, ts: Any = None) -> None:
        if self.cur is None:
            return
        hit = False
        if isinstance(content, str):
            hit = content.lstrip().startswith("[Request interrupted")
        elif isinstance(content, list):
            hit = any(isinstance(b, dict) and str(b.get("text", "")).startswith("[Request interrupted") for b in content)
        if not hit:
            return
        self.cur.interrupted = True
        if self.is_subagent_file:
            return
        if self._stop is not None:
            # Claude Code writes this line right after a refused (or interrupted) call: the same act.
            self._stop.data["stopped_turn"] = True
            self._stop = None
            return
        running = next((inv for inv in reversed(self.cur.invocations) if not inv.has_result), None)
        self._event(self.cur, "feedback", ts, {
            "kind": "interrupted", "tool_name": running.tool_name if running else None,
            "tool_use_id": running.tool_use_id if running else None})

    def _event(self, turn: Turn, etype: str, ts: Any, data: dict[str, Any]) -> TurnEvent:
        ev = TurnEvent(etype, ts if ts.__class__ is str else None, data)
        turn.events.append(ev)
        self._dirty.append(turn)
        return ev

    def _turn_of(self, inv: Invocation) -> Turn | None:
        """The turn holding a call (its result may come after a queued prompt started the next)."""
        for turn in reversed(self.turns):
            if any(x is inv for x in turn.invocations):
                return turn
        return self.cur

    def _add_recorded(self, turn: Turn, inv: Invocation, tur: Any, text: str, added: str) -> None:
        """Add to the turn's raw text the lines Claude Code's record of a result (`toolUseResult`)
        holds beyond what the model was sent: a failed call's result as recorded ("Error: …" where
        the model saw `<tool_use_error>…` or the bare text), and a changed file's content before the
        change (`originalFile`; 1.0.x `originalFileContents`) — the lines of it that the session's
        reads and earlier changes of that file did not already bring (a file changed ten times is
        kept about once). Other fields repeat the call's input or the result's text."""
        if isinstance(tur, str):
            extra = unseen_lines(tur, line_keys(text)) if tur.strip() != text.strip() else ""
            if extra:
                add_raw(turn, extra)
            return
        if not isinstance(tur, dict) or not inv.file_path or inv.is_error:
            return
        if inv.tool_name in READ_TOOLS:
            self.file_lines.setdefault(inv.file_path, set()).update(line_keys(added))
            return
        if inv.tool_name not in EDIT_TOOLS and inv.tool_name not in WRITE_TOOLS:
            return
        original = tur.get("originalFile", tur.get("originalFileContents"))
        if isinstance(original, str) and original:
            seen = self.file_lines.setdefault(inv.file_path, set())
            extra = unseen_lines(original, seen)
            if extra:
                seen.update(line_keys(add_raw(turn, extra)))

    def _result(self, block: dict[str, Any], tur: Any, ts: Any) -> None:
        inv = self.pending.get(str(block.get("tool_use_id")))
        if inv is None:
            return
        inv.has_result = True
        inv.is_error = block.get("is_error") is True
        inv.result_timestamp = ts if isinstance(ts, str) else None
        text = _result_text(block.get("content"))
        owner = self._turn_of(inv)
        if owner is not None:
            added = add_raw(owner, text)
            self._add_recorded(owner, inv, tur, text, added)
            self._dirty.append(owner)
        limit = brief_limit(inv.tool_name, inv.is_error)
        # A file's head identifies it; any other output ends with what matters most.
        inv.result_brief = short(text, limit) if inv.tool_name in READ_TOOLS else head_and_tail(text, limit)
        self._dirty.append(inv)
        if isinstance(tur, dict):  # (1.0.x Task results are lists, with no agentId: inline linking does it)
            if inv.tool_name in AGENT_TOOLS and isinstance(tur.get("agentId"), str):
                inv.agent_id = tur["agentId"]
            if inv.tool_name in AGENT_TOOLS and isinstance(tur.get("agentType"), str) and not inv.subagent_type:
                inv.subagent_type = tur["agentType"]
            if inv.tool_name == "Workflow" and isinstance(tur.get("runId"), str):
                inv.agent_id = tur["runId"]  # the run it started: assembly attaches the run's agents
            if not inv.is_error and (inv.tool_name in EDIT_TOOLS or inv.tool_name in WRITE_TOOLS):
                _file_change(inv, tur)
                if tur.get("type") == "create":
                    body = tur.get("content")
                    inv.lines_added = len(body.splitlines()) if isinstance(body, str) else 0
                    inv.lines_removed = 0
                    inv.file_created = True
                else:
                    inv.lines_added, inv.lines_removed = _patch_counts(tur.get("structuredPatch"))
        if inv.is_error:
            inv.lines_added = inv.lines_removed = 0
        if (inv.is_error or inv.tool_name in _DECISION_TOOLS) and not self.is_subagent_file:
            self._verdict(inv, text, tur, ts)
        # The result is settled; drop it from the join table only once the turn is known complete.

    def _verdict(self, inv: Invocation, text: str, tur: Any, ts: Any) -> None:
        """What a result says the user chose or refused: decision and feedback events."""
        turn = self._turn_of(inv)
        if turn is None:
            return
        rejected = inv.is_error and dec.is_rejection(text)
        title = self.plan_titles.pop(inv.tool_use_id, None) if inv.tool_name == dec.PLAN_TOOL else None
        if inv.tool_name in _DECISION_TOOLS:
            self._decision(turn, inv, text, tur, ts, rejected, title)
        if rejected:
            plan = inv.tool_name == dec.PLAN_TOOL
            self._stop = self._event(turn, "feedback", ts, {
                "kind": "plan_rejected" if plan else "tool_rejected", "tool_name": inv.tool_name,
                "tool_use_id": inv.tool_use_id,
                "target": title if plan else (inv.command or inv.file_path or inv.description),
                "reason": dec.rejection_reason(text)})
        elif inv.is_error and dec.is_cancellation(text):
            if self._stop is not None:  # a parallel call stopped with the one the user refused
                self._stop.data["cancelled"] = self._stop.data.get("cancelled", 0) + 1
        elif inv.is_error and dec.is_interruption(text):
            self._stop = self._event(turn, "feedback", ts, {
                "kind": "interrupted", "tool_name": inv.tool_name, "tool_use_id": inv.tool_use_id})

    def _decision(self, turn: Turn, inv: Invocation, text: str, tur: Any, ts: Any, rejected: bool,
                  title: str | None) -> None:
        name, tid = inv.tool_name, inv.tool_use_id
        if name == dec.QUESTION_TOOL:
            asked = self.asks.pop(tid, None)
            if not inv.is_error:
                for decision in dec.question_decisions(asked, tur, text):
                    decision["tool_use_id"] = tid
                    self._event(turn, "decision", ts, decision)
        elif name == dec.PLAN_TOOL or name == dec.ENTER_PLAN_TOOL:
            if inv.is_error and not rejected:
                return  # failed, not refused: nothing was decided
            if name == dec.PLAN_TOOL:
                d: dict[str, Any] = {"kind": "plan", "outcome": "rejected" if rejected else "approved", "title": title}
                if rejected:
                    d["reason"] = dec.rejection_reason(text)
            else:
                d = {"kind": "plan_mode", "outcome": "rejected" if rejected else "entered"}
            d["tool_use_id"] = tid
            self._event(turn, "decision", ts, d)
        elif name == dec.TODO_TOOL:
            after = self.todo_calls.pop(tid, None)
            if inv.is_error or after is None:
                return
            replan = dec.todo_replan(self.last_todos, after)
            self.last_todos = after
            self._dirty.append(self)
            if replan:
                replan["tool_use_id"] = tid
                self._event(turn, "decision", ts, replan)

    def _stash(self, name: str, tid: str, inp: dict[str, Any]) -> None:
        """What a decision tool proposes, until its result says what was chosen. Questions are
        redacted now (rare, and nested); plan titles and todo items by the next `finalize`, before
        the builder's state is stored."""
        if name == dec.QUESTION_TOOL:
            self.asks[tid] = redact_obj(inp.get("questions")) if isinstance(inp.get("questions"), list) else None
        elif name == dec.PLAN_TOOL:
            self.plan_titles[tid] = dec.plan_title(inp.get("plan"))
            self._dirty.append(self)  # redacted with the rest, by `finalize`
        elif name == dec.TODO_TOOL:
            self.todo_calls[tid] = dec.todo_items(inp.get("todos"))
            self._dirty.append(self)

    # ------------------------------------------------------------------ assistant lines
    def _assistant(self, rec: dict[str, Any]) -> None:
        msg = rec.get("message")
        if msg.__class__ is not dict:
            msg = _message(rec)
        ts = rec.get("timestamp")
        if ts.__class__ is not str:
            ts = None
        if self.cur is None:
            self._start_turn(None, ts, False, started_by=None)
        turn = self.cur
        assert turn is not None
        self._stop = None  # the agent went on: a later interruption is a new act
        mid = msg.get("id")
        if mid.__class__ is not str:
            mid = str(rec.get("requestId") or rec.get("uuid") or "")
        model = msg.get("model")
        if model != "<synthetic>":
            if model.__class__ is str and model not in turn.models:
                turn.models.append(model)
                if model not in self.models:
                    self.models.append(model)
            # One record per API response, kept in the turn of its first line: tokens count once.
            call = self.llm_by_id.get(mid)
            if call is None:
                call = LlmCall(message_id=mid, model=model if model.__class__ is str else None, timestamp=ts)
                self.llm_by_id[mid] = call
                turn.llm_calls.append(call)
            usage = msg.get("usage")
            if usage.__class__ is dict:  # the last line of a response carries the final usage
                (call.input_tokens, call.output_tokens, call.cache_read_tokens,
                 call.cache_creation_tokens) = _usage_counts(usage)
                call.cache_creation_1h_tokens = _one_hour_writes(usage, call.cache_creation_tokens)
                call.has_usage = True
        content = msg.get("content")
        for b in (content if content.__class__ is list else _blocks(content)):
            if b.__class__ is not dict:
                continue
            bt = b.get("type")
            if bt == "tool_use":
                self._tool_use(turn, b, mid, ts)
            elif bt == "text":
                text = b.get("text")
                if text.__class__ is str and text.strip():
                    add_raw(turn, text)
                    text = text[:MAX_TEXT_CHARS]
                    turn.assistant_text = text
                    self.last_assistant_text = text
                    self._dirty.append(turn)
                    self._dirty.append(self)

    def _tool_use(self, turn: Turn, b: dict[str, Any], mid: str, ts: str | None) -> None:
        if mid not in self.cur_msg_seq:
            self.cur_msg_seq[mid] = len(self.cur_msg_seq)
            self.cur_msg_calls[mid] = 0
        self.cur_msg_calls[mid] += 1
        call = self.llm_by_id.get(mid)
        if call is not None:
            call.tool_calls += 1
        name = str(b.get("name") or "?")
        inp = given if isinstance(given := b.get("input"), dict) else {}
        add_raw(turn, inp)
        self._dirty.append(turn)
        inv = Invocation(tool_name=name, tool_use_id=str(b.get("id") or ""), sequence=self.cur_msg_seq[mid],
                         position=self.cur_msg_calls[mid], message_id=mid, timestamp=ts,
                         input_brief=brief_input(inp))
        fp = inp.get("file_path") or inp.get("notebook_path")
        if isinstance(fp, str):
            inv.file_path = fp
        if name == "Bash" and isinstance(inp.get("command"), str):
            inv.command = inp["command"]
        if isinstance(inp.get("description"), str):
            inv.description = short(inp["description"], 300)
        if name in AGENT_TOOLS:
            if isinstance(inp.get("subagent_type"), str):
                inv.subagent_type = inp["subagent_type"]
            if isinstance(inp.get("prompt"), str):
                inv.prompt_key = prompt_hash(inp["prompt"])
            # a lead spawning a teammate names its team and the member
            for attr, key in (("team_name", "team_name"), ("member_name", "name")):
                value = inp.get(key)
                if isinstance(value, str) and value.strip():
                    setattr(inv, attr, value.strip())
        if name == "ExitPlanMode" and isinstance(inp.get("plan"), str) and inp["plan"].strip():
            self.exit_plan = inp["plan"][:MAX_TEXT_CHARS]
            self._dirty.append(self)
        if name in _DECISION_TOOLS and inv.tool_use_id and not self.is_subagent_file:
            self._stash(name, inv.tool_use_id, inp)
        self._dirty.append(inv)
        turn.invocations.append(inv)
        if inv.tool_use_id:
            self.pending[inv.tool_use_id] = inv

    # ------------------------------------------------------------------ system lines
    def _system(self, rec: dict[str, Any]) -> None:
        sub = rec.get("subtype")
        ts = given if isinstance(given := rec.get("timestamp"), str) else None
        if sub == "turn_duration":
            d = rec.get("durationMs")
            if self.cur is not None and isinstance(d, (int, float)):
                self.cur.duration_ms = int(d)
                self.cur.duration_source = "turn_duration"
        elif sub == "compact_boundary":
            if self.cur is not None:
                self.cur.compacted = True
                meta = given if isinstance(given := rec.get("compactMetadata"), dict) else {}
                data = {"trigger": meta.get("trigger") if isinstance(meta.get("trigger"), str) else None,
                        "pre_tokens": meta.get("preTokens") if isinstance(meta.get("preTokens"), int) else None}
                self.cur.events.append(TurnEvent("compaction", ts, data))
        elif sub == "away_summary":
            text = rec.get("content")
            if isinstance(text, str) and text.strip():
                self._add_text(TextUnit("recap", text, ts, self._turn_index()))

    # ------------------------------------------------------------------ inline subagents (1.0.x)
    def _feed_inline(self, rec: dict[str, Any], rtype: str) -> None:
        root_prompt = None
        if rtype == "user" and rec.get("parentUuid") is None:
            starts, root_prompt, _ = is_human_prompt({}, _message(rec).get("content"))
            root_prompt = root_prompt if starts else None
        if root_prompt is not None or self.inline_cur is None:
            sub_builder = FileBuilder(self.rel_path, is_subagent_file=True)
            # Parallel sidechains are written in completion order: the call is the one whose
            # prompt this sidechain starts with; position is only the fallback.
            task = (self._agent_call_with_prompt(prompt_hash(root_prompt)) if root_prompt is not None else None) \
                or self._unlinked_agent_call()
            # type and description are filled in when linking, from the (redacted) call
            sub = Subagent(agent_id=None, layout="inline", file=self.rel_path,
                           tool_use_id=task.tool_use_id if task else None, turn_index=self._turn_index())
            self.inline.append((sub_builder, sub))
            self.inline_cur = sub_builder
        self.inline_cur.feed(rec)

    def _agent_call_with_prompt(self, key: str) -> Invocation | None:
        """The newest Task/Agent call, not yet linked, whose `input.prompt` hashes to `key`."""
        linked = {s.tool_use_id for _, s in self.inline}
        for turn in reversed(self.turns):
            for inv in reversed(turn.invocations):
                if inv.prompt_key == key and inv.tool_use_id not in linked:
                    return inv
        return None

    def _unlinked_agent_call(self) -> Invocation | None:
        """The oldest Task/Agent call of this turn that has no subagent and no result yet."""
        if self.cur is None:
            return None
        linked = {s.tool_use_id for _, s in self.inline}
        for inv in self.cur.invocations:
            if inv.tool_name in AGENT_TOOLS and not inv.has_result and inv.tool_use_id not in linked:
                return inv
        return None

    # ------------------------------------------------------------------ results
    def finalize(self) -> list[Turn]:
        """Redact, then settle usage, parallel groups and metrics of every turn.

        Safe to call repeatedly; feeding may go on afterwards (a grown file).
        """
        self._redact_pending()
        for sub_builder, _ in self.inline:
            sub_builder.finalize()
        model = None
        for turn in self.turns:
            compute_metrics(turn)
            for e in turn.events:
                if e.type == "snapshot":
                    # the model the turn ran with, and the files backed up as it started or changed them
                    e.data["model"] = turn.models[0] if turn.models else model
                    paths = list(dict.fromkeys(b.path for b in turn.backups))
                    e.data["files_backed_up"] = paths[:dec.MAX_ITEMS]
                    e.data["backups"] = len(turn.backups)
                    break
            model = turn.models[-1] if turn.models else model
            if turn.duration_source != "turn_duration":
                turn.duration_ms = elapsed_ms(turn.started_at, turn.ended_at)
                turn.duration_source = "timestamps" if turn.duration_ms is not None else None
        return self.turns

    def subagent_record(self, layout: str, meta: dict[str, Any] | None = None) -> Subagent:
        """This (subagent) file as a Subagent: prompt, final report, its own tool use."""
        self.finalize()
        meta = meta or {}
        first = next((t for t in self.turns if t.index >= 1), None)
        sub = Subagent(agent_id=self.agent_id, layout=layout, file=self.rel_path,
                       agent_type=meta.get("agentType") if isinstance(meta.get("agentType"), str) else None,
                       description=meta.get("description") if isinstance(meta.get("description"), str) else None,
                       prompt=first.prompt if first else None, summary_text=self.last_assistant_text,
                       started_at=self.started_at, ended_at=self.ended_at, turns=self.turns)
        fill_subagent_counts(sub)
        sub.is_warmup = (first is not None and (first.prompt or "").strip() == "Warmup")
        return sub


def _renumber_calls(turn: Turn) -> None:
    """`sequence` and `position` of a turn's calls from their responses, in file order (for a
    turn that absorbed another's calls)."""
    seq: dict[str, int] = {}
    calls: dict[str, int] = {}
    for inv in turn.invocations:
        seq.setdefault(inv.message_id, len(seq))
        calls[inv.message_id] = calls.get(inv.message_id, 0) + 1
        inv.sequence, inv.position = seq[inv.message_id], calls[inv.message_id]


# The text attributes of each object a builder lists for redaction.
EVENT_TEXT_KEYS = ("summary", "output") + dec.TEXT_KEYS
_LIST_EVENTS = frozenset({"decision"})  # events with lists of texts (dec.LIST_KEYS)
_DECISION_TOOLS = frozenset({dec.QUESTION_TOOL, dec.PLAN_TOOL, dec.ENTER_PLAN_TOOL, dec.TODO_TOOL})
# Events a turn gets because it started (its snapshot, a correction by its prompt): a queued turn
# folded back into the one before it does not bring them along.
_START_FEEDBACK = "correction"
_TEXT_FIELDS: dict[type, tuple[str, ...]] = {
    Invocation: ("input_brief", "file_path", "command", "description", "result_brief", "diff", "team_name",
                 "member_name"),
    Turn: ("prompt", "assistant_text", "raw_text"),
    TextUnit: ("text",),
    FileBackup: ("path",),
    FileBuilder: ("last_assistant_text", "exit_plan", "team_name", "member_name"),
}
