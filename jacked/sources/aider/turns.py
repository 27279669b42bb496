"""Turns from one Aider session (DESIGN "Turn rules", for Aider's chat history).

* A turn starts at what the user typed (consecutive `#### ` lines are one prompt). `/command`
  and `!command` are slash commands. A model reply before any prompt is turn 0.
* A reply is the model's text up to the `> Tokens: … sent, … received.` report Aider prints
  after each request: one API call. Its numbers are rounded by Aider ("2.1k"): `sent` is
  `input_tokens`, `cache hit` / `cache write` the cache figures, `received` the output.
* Aider has no tool calls in its file; what it did is told in its notices, and each is an
  invocation of the reply before it (so the edits of one reply are a parallel batch):
  - `Applied edit to PATH`: `edit` (a *SEARCH/REPLACE* or unified-diff edit; lines counted from
    the reply's blocks for PATH), or `write` when the reply gave the file whole;
  - `## SearchReplaceNoExactMatch: … lines in PATH` and `The LLM did not conform to the edit
    format.`: a failed `edit`;
  - `Running CMD` (a shell command the model suggested, after the user approved it): `bash`,
    failed when `Error running command: …` follows (its output goes to the terminal only, so a
    non-zero exit is not known);
  - `## Running: CMD` (the linter or test command Aider ran, printed only with its errors): a
    failed `lint`;
  - `Add PATH to the chat?` / `Add file to the chat?` answered yes: `read` of PATH.
* Confirmations (`… ? [Y/n] y`, `… (Y)es/(N)o [Yes]: n`) are decisions: answered yes, a
  `decision` event (`kind: "approval"`); answered no, a `feedback` event (`tool_rejected`, the
  subject as `target`). `^C` marks the turn interrupted (one `feedback` event `interrupted`).
* `Commit abc1234 message` is added to the result of the reply's edits.
* Times: the session's start (the header, local time) for every turn, unless Aider's input
  history (`.aider.input.history`, next to the chat file) has the prompt with its own time.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, UTC

from jacked.sources.aider.history import Kind, Line
from jacked.sources.briefs import MAX_DIFF_CHARS, add_raw, brief_input, head_and_tail, short
from jacked.sources.gemini.turns import diff_counts, string_edit_counts
from jacked.sources.metrics import compute_metrics
from jacked.sources.model import Invocation, LlmCall, TextUnit, Turn, TurnEvent
from jacked.sources.textclean import strip_ansi

PARSER_VERSION = 3  # 2: each turn's raw text (Turn.raw_text); 3: raw-text pieces kept whole up to 150,000 chars
MAX_TEXT_CHARS = 200_000

_NUM = r"([\d.,]+[kKmM]?)"
TOKENS = re.compile(rf"^Tokens: {_NUM} sent(?:, {_NUM} cache write)?(?:, {_NUM} cache hit)?, {_NUM} received")
VERSION = re.compile(r"^Aider v(\S+)")
MODEL = re.compile(r"^(?:Main model|Model|Models): (\S+)")
APPLIED = re.compile(r"^Applied edit to (.+?)\s*$")
NO_MATCH = re.compile(r"^## SearchReplaceNoExactMatch: .*? lines in (.+?)\s*$")
NOT_CONFORM = "The LLM did not conform to the edit format."
RUNNING = re.compile(r"^Running (?!:)(.+?)\s*$")
LINT = re.compile(r"^## Running: (.+?)\s*$")
COMMIT = re.compile(r"^Commit ([0-9a-f]{7,40}) (.+?)\s*$")
INTERRUPT = ("^C KeyboardInterrupt", "^C again to exit")
SHELL_FAILED = "Error running command"  # aider/run_cmd.py: the command did not start
# `Question? [Y/n] answer` (Aider 0.5x on), `Question? (Y)es/(N)o/... [Yes]: answer` (before)
CONFIRM = re.compile(r"^(?P<q>.*?\?)\s*(?:\[(?P<d1>[Yy])/[Nn][^\]]*\]|\[[Yy]/(?P<n1>N)[^\]]*\]"
                     r"|\(Y\)es/\(N\)o[^\[]*\[(?P<d2>[^\]]*)\]:?)\s*(?P<a>.*?)\s*$")
ADD_FILE = re.compile(r"^Add (.+?) to the chat\?")
ERROR_LINE = re.compile(r"^(?:litellm\.)?[A-Za-z]*(?:Error|Exception)\b")

SEARCH, DIVIDER, REPLACE = "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE"


def count(text: str) -> int:
    """Aider's rounded figure ("2.1k", "5,244", "1.2M") as a number."""
    t = text.replace(",", "")
    scale = 1
    if t[-1:] in "kK":
        scale, t = 1000, t[:-1]
    elif t[-1:] in "mM":
        scale, t = 1_000_000, t[:-1]
    try:
        return int(round(float(t) * scale))
    except ValueError:
        return 0


def utc_of_local(local: str | None) -> str | None:
    """Aider's local time ("2024-08-05 19:33:02") in UTC, as this machine's zone reads it."""
    if not local:
        return None
    try:
        dt = datetime.fromisoformat(local)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.astimezone()  # a naive time is this machine's local time
    return dt.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(slots=True)
class Edits:
    """What a reply's text proposes, by file: (old, new) search/replace pairs, whole files, diffs."""

    pairs: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    whole: dict[str, str] = field(default_factory=dict)
    diffs: dict[str, str] = field(default_factory=dict)


def _clean_name(line: str) -> str:
    return line.strip().strip("`*:").strip()


def _blocks(lines: list[str], name: str | None, out: Edits) -> str | None:
    """The SEARCH/REPLACE blocks of `lines` into `out`; a path line before a block names its
    file, and the name carries on to the next block. Returns the last name."""
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if stripped == SEARCH:
            old: list[str] = []
            new: list[str] = []
            j = i + 1
            while j < len(lines) and lines[j].strip() != DIVIDER:
                old.append(lines[j])
                j += 1
            j += 1
            while j < len(lines) and lines[j].strip() != REPLACE:
                new.append(lines[j])
                j += 1
            if name:
                out.pairs.setdefault(name, []).append(("\n".join(old), "\n".join(new)))
            i = j + 1
            continue
        if stripped and not stripped.startswith(FENCES):
            name = _clean_name(stripped)
        i += 1
    return name


FENCES = ("```", "<source>", "</source>")


def reply_edits(text: str) -> Edits:
    """The edit blocks of a reply: `path` then a fence holding SEARCH/=======/REPLACE blocks
    (several per fence, the path carried on; Aider's fenced format puts the path inside the
    fence), a fence holding a whole file, or a unified diff."""
    out = Edits()
    lines = text.splitlines()
    name: str | None = None
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if stripped.startswith(("```", "<source>")):
            body: list[str] = []
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith(("```", "</source>")):
                body.append(lines[j])
                j += 1
            if any(b.strip() == SEARCH for b in body):
                name = _blocks(body, name, out)
            elif len(body) > 1 and body[0].startswith("--- ") and body[1].startswith("+++ "):
                target = _clean_name(body[1][4:])
                target = target[2:] if target.startswith("b/") else target
                out.diffs[target] = out.diffs.get(target, "") + "\n".join(body) + "\n"
            elif name and not stripped.startswith(("```bash", "```sh", "```shell", "```console")):
                out.whole[name] = "\n".join(body)
            i = j + 1
            continue
        if stripped == SEARCH:  # a block outside any fence
            j = i
            while j < len(lines) and lines[j].strip() != REPLACE:
                j += 1
            name = _blocks(lines[i:j + 1], name, out)
            i = j + 1
            continue
        if stripped:
            name = _clean_name(stripped)
        i += 1
    return out


@dataclass(slots=True)
class Built:
    turns: list[Turn] = field(default_factory=list)
    texts: list[TextUnit] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)
    message_lines: int = 0
    unknown: int = 0


class TurnBuilder:
    """Feeds the lines of one session, in order, into turns."""

    def __init__(self, started_at: str | None, prompt_times: list[tuple[str, str]] | None = None) -> None:
        self.started_at = started_at
        self.prompt_times = list(prompt_times or [])  # (UTC time, prompt) from the input history
        self.out = Built()
        self.cur: Turn | None = None
        self.model: str | None = None
        self.reply_no = 0
        self.reply_open = False
        self.reply_lines: list[str] = []
        self.reply_text: dict[int, str] = {}
        self.subject: list[str] = []  # Aider's lines since its last recognised notice
        self.last_shell: Invocation | None = None
        self.after_running = False  # the notice before was `Running …`
        self.positions: dict[str, int] = {}  # message id -> calls so far

    def build(self, lines: list[Line]) -> Built:
        prompt: list[str] = []
        for line in lines:
            if line.kind is Kind.USER:
                prompt.append(line.text)
                continue
            if prompt:
                self._prompt(prompt)
                prompt = []
            if line.kind is Kind.TEXT:
                self._text(line.text)
            else:
                self._tool(line.text)
        if prompt:
            self._prompt(prompt)
        self._close_reply()
        for turn in self.out.turns:
            compute_metrics(turn)
        return self.out

    # ------------------------------------------------------------------ turns and replies
    def _start(self, prompt: str | None) -> Turn:
        self._close_reply()
        index = 0 if prompt is None else (self.out.turns[-1].index + 1 if self.out.turns else 1)
        ts = self._time_of(prompt) if prompt is not None else self.started_at
        slash = prompt is not None and prompt.lstrip().startswith(("/", "!"))
        turn = Turn(index=index, prompt=prompt, started_at=ts, ended_at=ts, is_slash_command=slash,
                    started_by="prompt" if prompt is not None else None)
        self.out.turns.append(turn)
        self.cur = turn
        self.subject = []
        self.last_shell = None
        return turn

    def _time_of(self, prompt: str) -> str | None:
        want = " ".join(prompt.split())
        for i, (ts, typed) in enumerate(self.prompt_times):
            if " ".join(typed.split()) == want:
                del self.prompt_times[: i + 1]
                return ts
        return self.started_at

    def _prompt(self, lines: list[str]) -> None:
        text = "\n".join(lines).strip()
        self.out.message_lines += 1
        if not text:
            return
        self._start(strip_ansi(text[:MAX_TEXT_CHARS]))

    def _text(self, text: str) -> None:
        if not self.reply_open:
            if not text.strip():
                return
            if self.cur is None:
                self._start(None)
            self.reply_no += 1
            self.reply_open = True
            self.reply_lines = []
            self.out.message_lines += 1
        self.reply_lines.append(text)
        self.subject = []

    def _close_reply(self) -> None:
        if not self.reply_open:
            return
        text = "\n".join(self.reply_lines).strip()
        self.reply_text[self.reply_no] = text
        if self.cur is not None and text:
            add_raw(self.cur, strip_ansi(text))
            self.cur.assistant_text = strip_ansi(text[:MAX_TEXT_CHARS])
        self.reply_open = False

    def _message_id(self) -> str:
        return f"reply-{self.reply_no}"

    # ------------------------------------------------------------------ Aider's notices
    def _tool(self, text: str) -> None:
        stripped = text.strip()
        if not stripped:
            return
        m = VERSION.match(stripped)
        if m:
            if m.group(1) not in self.out.versions:
                self.out.versions.append(m.group(1))
            return
        m = MODEL.match(stripped)
        if m:
            self.model = m.group(1)
            if self.model not in self.out.models:
                self.out.models.append(self.model)
            return
        turn = self.cur
        if turn is None:
            return  # Aider's start-up notices and questions, before anything was typed
        add_raw(turn, strip_ansi(stripped))  # listings, repo maps, lint and test output: searched verbatim
        after_running, self.after_running = self.after_running, False
        m = TOKENS.match(stripped)
        if m:
            self._tokens(turn, m)
            return
        m = APPLIED.match(stripped)
        if m:
            self._edit(turn, m.group(1), failed=False, detail=stripped)
            return
        m = NO_MATCH.match(stripped)
        if m:
            self._edit(turn, m.group(1), failed=True, detail=stripped)
            return
        if stripped.startswith(NOT_CONFORM):
            self._edit(turn, None, failed=True, detail=stripped)
            return
        m = LINT.match(stripped)
        if m:
            inv = self._call(turn, "lint", {"command": m.group(1)})
            inv.command, inv.is_error, inv.has_result = m.group(1), True, True
            self.last_shell = inv
            return
        m = RUNNING.match(stripped)
        if m:
            inv = self._call(turn, "bash", {"command": m.group(1)})
            inv.command, inv.has_result = m.group(1), True
            self.last_shell = inv
            self.after_running = True
            return
        m = COMMIT.match(stripped)
        if m:
            for inv in turn.invocations:
                if inv.message_id == self._message_id() and inv.tool_name in ("edit", "write") and not inv.is_error:
                    inv.result_brief = short(f"{inv.result_brief}\n{stripped}".strip(), 2000)
            self.subject = []
            return
        if stripped.startswith(INTERRUPT):
            if not turn.interrupted:
                turn.interrupted = True
                turn.events.append(TurnEvent("feedback", turn.started_at, {"kind": "interrupted"}))
            return
        m = CONFIRM.match(stripped)
        if m:
            self._confirm(turn, m)
            return
        if stripped.startswith(SHELL_FAILED) and after_running and self.last_shell is not None:
            self.last_shell.is_error = True  # the command could not be run at all
        if ERROR_LINE.match(stripped):
            turn.events.append(TurnEvent("command_output", turn.started_at,
                                         {"output": strip_ansi(short(stripped, 1000)), "level": "error"}))
        if self.last_shell is not None:
            inv = self.last_shell
            inv.result_brief = head_and_tail(f"{inv.result_brief}\n{stripped}".strip(), 2000)
        self.subject.append(stripped)

    def _tokens(self, turn: Turn, m: re.Match[str]) -> None:
        if not self.reply_open:
            self.reply_no += 1  # a request whose reply was not written (cut short, or --no-stream)
        self._close_reply()
        sent, write, hit, received = (count(g) if g else 0 for g in m.groups())
        call = LlmCall(message_id=self._message_id(), model=self.model, timestamp=turn.started_at,
                       input_tokens=sent, output_tokens=received, cache_read_tokens=hit,
                       cache_creation_tokens=write, has_usage=True)
        turn.llm_calls.append(call)
        if self.model and self.model not in turn.models:
            turn.models.append(self.model)
        self.subject = []
        self.last_shell = None

    def _call(self, turn: Turn, name: str, args: dict[str, object]) -> Invocation:
        mid = self._message_id()
        seq = len({i.message_id for i in turn.invocations} | {mid}) - 1
        pos = self.positions.get(mid, 0) + 1
        self.positions[mid] = pos
        inv = Invocation(tool_name=name, tool_use_id=f"{mid}#{pos}", sequence=seq, position=pos, message_id=mid,
                         timestamp=turn.started_at, input_brief=brief_input(args))
        turn.invocations.append(inv)
        self.subject = []
        return inv

    def _edit(self, turn: Turn, path: str | None, failed: bool, detail: str) -> None:
        edits = reply_edits(self.reply_text.get(self.reply_no, ""))
        name = "edit"
        if path is not None and not failed and path not in edits.pairs and path not in edits.diffs \
                and path in edits.whole:
            name = "write"
        inv = self._call(turn, name, {"file_path": path} if path else {})
        inv.file_path, inv.is_error, inv.has_result = path, failed, True
        inv.result_brief = short(detail, 2000)
        if failed or path is None:
            return
        if name == "write":
            content = edits.whole[path]
            inv.lines_added = len(content.splitlines())
            inv.diff = short("\n".join("+" + ln for ln in content.splitlines()), MAX_DIFF_CHARS)
            return
        diffs: list[str] = []
        for old, new in edits.pairs.get(path, []):
            added, removed, diff = string_edit_counts(old, new)
            inv.lines_added += added
            inv.lines_removed += removed
            diffs.append(diff)
        if path in edits.diffs:
            added, removed = diff_counts(edits.diffs[path])
            inv.lines_added += added
            inv.lines_removed += removed
            diffs.append(edits.diffs[path])
        inv.diff = short("\n".join(d for d in diffs if d), MAX_DIFF_CHARS) or None

    def _confirm(self, turn: Turn, m: re.Match[str]) -> None:
        question = m.group("q").strip()
        answer = m.group("a").strip().lower()
        default_yes = bool(m.group("d1")) or (m.group("d2") or "").lower().startswith(("y", "a"))
        approved = answer.startswith(("y", "a")) if answer else default_yes
        target = "\n".join(self.subject[-5:]) or None
        added = ADD_FILE.match(question)
        if added and added.group(1).startswith(("command output", "URL", "http")):
            added = None  # output of a /run, or a web page: not a file read
        if added:  # `Add PATH to the chat?`, or (0.5x on) the path on the line before `Add file to the chat?`
            target = self.subject[-1] if added.group(1) in ("file", "files") and self.subject else added.group(1)
        data = {"kind": "approval", "question": short(question, 600), "target": target, "answer": answer or None}
        if approved:
            turn.events.append(TurnEvent("decision", turn.started_at, {**data, "outcome": "approved"}))
            if added and target:
                inv = self._call(turn, "read", {"file_path": target})
                inv.file_path, inv.has_result = target, True
        else:
            tool = ("bash" if "shell command" in question.lower() else "write" if "new file" in question.lower()
                    else "read" if added else "edit" if "edit" in question.lower() else None)
            turn.events.append(TurnEvent("feedback", turn.started_at,
                                         {"kind": "tool_rejected", "tool_name": tool, "target": target,
                                          "reason": None, "question": short(question, 600)}))
        self.subject = []


def build_turns(lines: list[Line], started_at: str | None,
                prompt_times: list[tuple[str, str]] | None = None) -> Built:
    return TurnBuilder(started_at, prompt_times).build(lines)
