"""Turn and session summaries: stored in the catalog, indexed as `turn_summary` / `session_summary`.

The default summarizer is offline and deterministic (extractive): what was asked, which tools
did what to which files, which commands ran and failed, and the outcome from the turn's final
assistant text. A session summary is built from its turns the same way.

An LLM summarizer is optional (`LlmSummarizer`): turns go 5–10 per call to a `Transport`
(the Anthropic Messages API when `ANTHROPIC_API_KEY` is set, or `claude -p`), with retry and
exponential backoff on transient failures; every stored row records its summarizer, model and
prompt version, and the hash of what it summarised. A turn whose content changes gets a fresh
extractive summary (its LLM summary is stale), so summaries are always regenerable.

Texts sent to a model come from the catalog, which holds them redacted; the model's answer is
redacted again before it is stored.
"""
from __future__ import annotations

import hashlib
import json
import re
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from jacked.catalog import Catalog, summary_queries
from jacked.sources.model import prompt_text
from jacked.sources.redact import redact_many
from jacked.sources.attempts import command_key, resolutions

EXTRACTIVE = "extractive-v1"
PROMPT_VERSION = "turn-batch-v1"
SESSION_TURN = -1  # the turn_index of a session summary row (a NULL would defeat the primary key)
# Summaries are embedded (dense) for every turn with tool calls: their length is backfill time.
TURN_SUMMARY_CHARS = 700
SESSION_SUMMARY_CHARS = 1000
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


# ---------------------------------------------------------------------------- extractive
def first_sentences(text: str | None, limit: int) -> str:
    """Whole leading sentences of `text` within `limit` characters (at least a cut first one)."""
    t = " ".join((text or "").split())
    if len(t) <= limit:
        return t
    out = ""
    for s in _SENTENCE_END.split(t):
        if len(out) + len(s) + 1 > limit:
            break
        out = f"{out} {s}".strip()
    return out or t[:limit - 1].rstrip() + "…"


def short_path(path: str, cwd: str | None) -> str:
    """A path relative to the session's cwd when inside it: shorter, and what people say."""
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1:]
    return path


def _list(items: list[str], n: int) -> str:
    shown = ", ".join(items[:n])
    return shown + (f" (+{len(items) - n} more)" if len(items) > n else "")


def turn_source_hash(turn: dict[str, Any], invs: list[dict[str, Any]]) -> str:
    """What a turn summary depends on: a changed turn gets a new summary."""
    h = hashlib.blake2b(digest_size=12)
    for part in (turn.get("prompt"), turn.get("assistant_text"), turn.get("metrics"), str(turn.get("interrupted"))):
        h.update((part or "").encode("utf-8", "surrogatepass") + b"\0")
    for r in invs:
        h.update(f"{r['tool_name']}|{r['is_error']}|{r['file_path']}|{r['command']}\0".encode("utf-8", "surrogatepass"))
    return h.hexdigest()


_COMMAND_NAME = re.compile(r"<command-name>\s*/?(.*?)\s*</command-name>", re.S)


def _prompt(turn: dict[str, Any]) -> str:
    """A turn's prompt as people read it: a slash command as `/name args`."""
    raw = turn.get("prompt") or ""
    if not turn.get("is_slash_command"):
        return raw
    m = _COMMAND_NAME.search(raw)
    if not m:
        return raw
    args = prompt_text(raw, True)
    name = "/" + m.group(1).strip()
    return args if args.startswith(name) else f"{name} {args}".strip()


def turn_facts(turn: dict[str, Any], invs: list[dict[str, Any]], cwd: str | None) -> dict[str, Any]:
    """The facts of a turn that summaries and restore briefs are made of."""
    metrics = orjson.loads(turn["metrics"]) if turn.get("metrics") else {}
    solved = resolutions(invs)
    created = [r["file_path"] for r in invs if r["file_created"] and not r["is_error"] and r["file_path"]]
    errors = []
    for r in invs:
        if r["is_error"]:
            msg = next((ln.strip() for ln in (r["result_brief"] or "").splitlines() if ln.strip()), "")
            errors.append({"tool_name": r["tool_name"], "target": r["command"] or r["file_path"] or "",
                           "message": msg, "resolved": (r["turn_index"], r["ord"]) in solved})
    commands = list(dict.fromkeys(command_key(c) for c in metrics.get("bash_commands", []) if c))
    return {
        "index": turn["turn_index"],
        "prompt": _prompt(turn),
        "is_slash_command": bool(turn.get("is_slash_command")),
        "assistant_text": turn.get("assistant_text") or "",
        "tool_usage": metrics.get("tool_usage", {}),
        "tool_call_count": metrics.get("tool_call_count", 0),
        "tool_error_count": metrics.get("tool_error_count", 0),
        "read": [short_path(p, cwd) for p in metrics.get("files_read", [])],
        "edited": [short_path(p, cwd) for p in metrics.get("files_modified", [])
                   + [w for w in metrics.get("files_written", []) if w not in created]],
        "created": [short_path(p, cwd) for p in dict.fromkeys(created)],
        "lines_added": metrics.get("lines_added", 0),
        "lines_removed": metrics.get("lines_removed", 0),
        "commands": commands,
        "errors": errors,
        "interrupted": bool(turn.get("interrupted")),
        "started_at": turn.get("started_at"),
    }


def extractive_turn_summary(f: dict[str, Any]) -> str:
    """A few plain sentences about one turn, from its facts."""
    parts = []
    if f["prompt"]:
        parts.append(f"Asked: {first_sentences(f['prompt'], 180)}")
    elif f["index"] == 0:
        parts.append("Work before the first prompt.")
    if f["tool_usage"]:
        used = ", ".join(f"{k} ×{v}" if v > 1 else k for k, v in
                         sorted(f["tool_usage"].items(), key=lambda kv: (-kv[1], kv[0])))
        failed = f" ({f['tool_error_count']} failed)" if f["tool_error_count"] else ""
        parts.append(f"Used {used}{failed}.")
    if f["edited"]:
        parts.append(f"Edited {_list(f['edited'], 5)} (+{f['lines_added']}/-{f['lines_removed']} lines).")
    if f["created"]:
        parts.append(f"Created {_list(f['created'], 4)}.")
    if f["read"]:
        parts.append(f"Read {_list(f['read'], 4)}.")
    if f["commands"]:
        parts.append(f"Ran {_list(f['commands'], 4)}.")
    if f["errors"]:
        e = f["errors"][0]
        more = f" (+{len(f['errors']) - 1} more errors)" if len(f["errors"]) > 1 else ""
        state = "later fixed" if e["resolved"] else "not fixed in this session"
        parts.append(f"Error in {e['tool_name']} {first_sentences(e['target'], 60)}: "
                     f"{first_sentences(e['message'], 120)} ({state}){more}.")
    if f["assistant_text"]:
        parts.append(f"Outcome: {first_sentences(f['assistant_text'], 200)}")
    if f["interrupted"]:
        parts.append("Interrupted by the user.")
    text = " ".join(parts) or "Empty turn."
    return text if len(text) <= TURN_SUMMARY_CHARS else first_sentences(text, TURN_SUMMARY_CHARS)


def extractive_session_summary(row: dict[str, Any], facts: list[dict[str, Any]]) -> str:
    """A session in a paragraph: where, when, the goal, each turn's ask, what changed, the outcome."""
    when = f"{(row.get('started_at') or '?')[:10]} to {(row.get('ended_at') or '?')[:10]}"
    head = f"Session in {row.get('repo_name') or row.get('cwd') or 'an unknown folder'}"
    if row.get("git_branch"):
        head += f" (branch {row['git_branch']})"
    parts = [f"{head}, {len(facts)} turns, {when}."]
    if row.get("title"):
        parts.append(f"Title: {first_sentences(row['title'], 120)}.")
    asks = [f for f in facts if f["prompt"] and not f["is_slash_command"]]
    if asks:
        parts.append(f"Goal: {first_sentences(asks[0]['prompt'], 200)}")
    if len(asks) > 1:
        parts.append("Then: " + "; ".join(first_sentences(f["prompt"], 70) for f in asks[1:6])
                     + (f" (+{len(asks) - 6} more turns)." if len(asks) > 6 else "."))
    changed = list(dict.fromkeys(p for f in facts for p in f["edited"] + f["created"]))
    if changed:
        parts.append(f"Changed {_list(changed, 8)}.")
    commands = list(dict.fromkeys(c for f in facts for c in f["commands"]))
    if commands:
        parts.append(f"Ran {_list(commands, 6)}.")
    errors = [e for f in facts for e in f["errors"]]
    if errors:
        parts.append(f"{len(errors)} tool errors, {sum(e['resolved'] for e in errors)} fixed later.")
    last = next((f["assistant_text"] for f in reversed(facts) if f["assistant_text"]), "")
    if last:
        parts.append(f"Last outcome: {first_sentences(last, 200)}")
    text = " ".join(parts)
    return text if len(text) <= SESSION_SUMMARY_CHARS else first_sentences(text, SESSION_SUMMARY_CHARS)


# ---------------------------------------------------------------------------- storage
@dataclass
class SummarizeReport:
    """What a `summarize` run did."""

    sessions: int = 0
    turn_summaries_written: int = 0
    turn_summaries_kept: int = 0
    session_summaries_written: int = 0
    llm_batches: int = 0
    llm_failed_turns: int = 0
    summarizer: str = EXTRACTIVE
    model: str | None = None
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def _session_inputs(catalog: Catalog, sid: str) -> tuple[dict[str, Any], list[dict[str, Any]],
                                                          dict[int, list[dict[str, Any]]]]:
    row = catalog.get_session_row(sid) or {}
    invs: dict[int, list[dict[str, Any]]] = {}
    for r in catalog.invocation_rows(sid):
        invs.setdefault(r["turn_index"], []).append(r)
    return row, catalog.turn_rows(sid), invs


def stored_summaries(catalog: Catalog, sid: str) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r["kind"], r["turn_index"]): r for r in summary_queries.summary_rows(catalog, sid)}


def ensure_summaries(catalog: Catalog, sid: str, force: bool = False,
                     llm: dict[int, tuple[str, str, str]] | None = None, report: SummarizeReport | None = None) -> bool:
    """Bring one session's stored summaries up to date; True when any row was written.

    A turn keeps its summary while its source hash is unchanged (an LLM summary survives
    rescans); otherwise it gets an extractive one — or the LLM text given in `llm`
    ({turn_index: (text, model, prompt_version)}).
    """
    row, turns, invs = _session_inputs(catalog, sid)
    if not row:
        return False
    have = stored_summaries(catalog, sid)
    cwd = row.get("cwd")
    facts = []
    writes: list[tuple[str, int, str, str, str, str | None, str | None, str, float]] = []
    now = time.time()
    for t in turns:
        ti = t["turn_index"]
        ti_invs = invs.get(ti, [])
        f = turn_facts(t, ti_invs, cwd)
        facts.append(f)
        src = turn_source_hash(t, ti_invs)
        old = have.get(("turn", ti))
        if llm and ti in llm:
            text, model, pv = llm[ti]
            writes.append((sid, ti, "turn", text, "llm", model, pv, src, now))
        elif force or old is None or old["source_hash"] != src or (
                old["summarizer"] != "llm" and old["summarizer"] != EXTRACTIVE):
            writes.append((sid, ti, "turn", extractive_turn_summary(f), EXTRACTIVE, None, None, src, now))
        elif report is not None:
            report.turn_summaries_kept += 1
    session_src = hashlib.blake2b("|".join([row.get("title") or "", row.get("git_branch") or ""]
                                           + [turn_source_hash(t, invs.get(t["turn_index"], [])) for t in turns])
                                  .encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()
    old = have.get(("session", SESSION_TURN))
    if force or old is None or old["source_hash"] != session_src or old["summarizer"] != EXTRACTIVE:
        writes.append((sid, SESSION_TURN, "session", extractive_session_summary(row, facts), EXTRACTIVE, None, None,
                       session_src, now))
    if not writes:
        return False
    clean = redact_many([w[3] for w in writes])  # catalog texts are redacted; model answers may not be
    writes = [w[:3] + (c,) + w[4:] for w, c in zip(writes, clean)]
    summary_queries.write_summaries(catalog, writes)
    if report is not None:
        report.turn_summaries_written += sum(1 for w in writes if w[2] == "turn")
        report.session_summaries_written += sum(1 for w in writes if w[2] == "session")
    return True


def summaries_for(catalog: Catalog, sid: str) -> tuple[dict[int, dict[str, Any]], dict[str, Any] | None]:
    """({turn_index: turn summary row}, session summary row) of one session, as stored."""
    rows = stored_summaries(catalog, sid)
    turns = {ti: r for (kind, ti), r in rows.items() if kind == "turn"}
    return turns, rows.get(("session", SESSION_TURN))


def summarize(catalog: Catalog, session_ids: Iterable[str] | None = None, force: bool = False,
              llm: LlmSummarizer | None = None, progress: Callable[[int, int], None] | None = None) -> SummarizeReport:
    """Summarize sessions (all when `session_ids` is None): extractive, or with `llm` where it answers.

    A session whose summaries changed gets a new content sequence, so the next `jacked index`
    re-indexes its summary points.
    """
    t0 = time.perf_counter()
    report = SummarizeReport()
    ids = list(session_ids) if session_ids is not None else catalog.session_ids()
    if llm is not None:
        report.summarizer, report.model = "llm", llm.transport.model
    for i, sid in enumerate(ids):
        texts: dict[int, tuple[str, str, str]] | None = None
        if llm is not None:
            texts = _llm_texts(catalog, sid, llm, report, force)
        if ensure_summaries(catalog, sid, force=force, llm=texts, report=report):
            summary_queries.renew_content_seq(catalog, sid)
        report.sessions += 1
        if progress:
            progress(i + 1, len(ids))
    report.seconds = time.perf_counter() - t0
    return report


def summary_status(catalog: Catalog) -> dict[str, Any]:
    """How many turns and sessions have an up-to-date summary, and by which summarizer."""
    turns_total = turns_current = turns_stale = 0
    by: dict[str, int] = {}
    sessions_total = sessions_with = 0
    for sid in catalog.session_ids():
        sessions_total += 1
        row, turns, invs = _session_inputs(catalog, sid)
        have, sess = summaries_for(catalog, sid)
        sessions_with += sess is not None
        for t in turns:
            turns_total += 1
            s = have.get(t["turn_index"])
            if s is None:
                continue
            if s["source_hash"] == turn_source_hash(t, invs.get(t["turn_index"], [])):
                turns_current += 1
                name = s["summarizer"] if s["summarizer"] != "llm" else f"llm:{s['model']}"
                by[name] = by.get(name, 0) + 1
            else:
                turns_stale += 1
    return {"sessions": sessions_total, "sessions_summarized": sessions_with, "turns": turns_total,
            "turns_summarized": turns_current, "turns_stale": turns_stale,
            "turns_missing": turns_total - turns_current - turns_stale, "by_summarizer": by}


# ---------------------------------------------------------------------------- LLM (optional)
class TransientError(Exception):
    """A failure worth retrying: rate limit, overload, timeout, a garbled answer."""


class Transport(Protocol):
    """Sends one prompt to a model and returns its text answer."""

    model: str

    def complete(self, prompt: str) -> str: ...


class AnthropicTransport:
    """The Anthropic Messages API over HTTPS (standard library only); key from `ANTHROPIC_API_KEY`."""

    URL = "https://api.anthropic.com/v1/messages"

    def __init__(self, api_key: str, model: str = "claude-haiku-4-5", timeout: float = 60.0) -> None:
        self.api_key, self.model, self.timeout = api_key, model, timeout

    def complete(self, prompt: str) -> str:
        body = json.dumps({"model": self.model, "max_tokens": 2048,
                           "messages": [{"role": "user", "content": prompt}]}).encode()
        req = urllib.request.Request(self.URL, data=body, method="POST", headers={
            "x-api-key": self.api_key, "anthropic-version": "2023-06-01", "content-type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                data = json.loads(resp.read())
        except urllib.error.HTTPError as e:
            if e.code in (408, 409, 429) or e.code >= 500:
                raise TransientError(f"HTTP {e.code}") from e
            raise
        except (urllib.error.URLError, TimeoutError) as e:
            raise TransientError(str(e)) from e
        return "".join(b.get("text", "") for b in data.get("content", []) if b.get("type") == "text")


class ClaudeCliTransport:
    """`claude -p` (Claude Code's print mode): uses whatever login Claude Code has."""

    def __init__(self, model: str = "haiku", timeout: float = 300.0, binary: str = "claude") -> None:
        self.model, self.timeout, self.binary = model, timeout, binary

    def complete(self, prompt: str) -> str:
        try:
            done = subprocess.run([self.binary, "-p", "--model", self.model, "--output-format", "text"],
                                  input=prompt, capture_output=True, text=True, timeout=self.timeout, check=False)
        except subprocess.TimeoutExpired as e:
            raise TransientError("claude -p timed out") from e
        if done.returncode != 0:
            raise TransientError(f"claude -p exited {done.returncode}: {done.stderr.strip()[:200]}")
        return done.stdout


def default_transport(kind: str, model: str | None = None, api_key: str | None = None) -> Transport:
    """The transport `jacked summarize --llm api|claude` asks for (`api_key`: the `anthropic_api_key` setting)."""
    if kind == "api":
        key = api_key
        if not key:
            raise ValueError("--llm api needs ANTHROPIC_API_KEY in the environment (or use --llm claude)")
        return AnthropicTransport(key, model or "claude-haiku-4-5")
    if kind == "claude":
        return ClaudeCliTransport(model or "haiku")
    raise ValueError(f"unknown --llm {kind!r}: use api or claude")


BATCH_PROMPT = """You summarize turns of a coding session between a user and an AI coding assistant.
For each turn below, write one or two sentences (at most 60 words) saying what the user wanted
and what the assistant did, naming files, commands and errors where they matter.
Answer with a JSON array only: [{{"turn": <turn number>, "summary": "<text>"}}, ...].

{turns}"""


class LlmSummarizer:
    """Summarizes turns in batches of 5–10 per call, retrying transient failures with backoff."""

    def __init__(self, transport: Transport, batch_size: int = 8, max_retries: int = 4, backoff_s: float = 2.0,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if not 5 <= batch_size <= 10:
            raise ValueError("batch_size must be between 5 and 10")
        self.transport, self.batch_size, self.max_retries = transport, batch_size, max_retries
        self.backoff_s, self.sleep = backoff_s, sleep

    def batches(self, items: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
        """Split into batches of at most `batch_size`, none smaller than 5 when that can be helped."""
        n = len(items)
        if n <= self.batch_size:
            return [items] if items else []
        count = -(-n // self.batch_size)
        size, extra = divmod(n, count)  # even sizes: 11 turns → 6 + 5, not 10 + 1
        out, start = [], 0
        for i in range(count):
            end = start + size + (1 if i < extra else 0)
            out.append(items[start:end])
            start = end
        return out

    def summarize_batch(self, batch: list[tuple[int, str]]) -> dict[int, str]:
        """One call for a batch (retried); {turn: summary} for the turns the answer covers."""
        prompt = BATCH_PROMPT.format(turns="\n\n".join(f"### Turn {ti}\n{facts}" for ti, facts in batch))
        wanted = {ti for ti, _ in batch}
        delay = self.backoff_s
        for attempt in range(self.max_retries + 1):
            try:
                return parse_batch_answer(self.transport.complete(prompt), wanted)
            except TransientError:
                if attempt == self.max_retries:
                    raise
                self.sleep(delay)
                delay *= 2
        return {}  # unreachable: the loop returns or raises

    def summarize(self, items: list[tuple[int, str]]) -> tuple[dict[int, str], int, list[str]]:
        """({turn: summary}, calls made, errors) over all items; a failed batch is reported, not fatal."""
        out: dict[int, str] = {}
        errors: list[str] = []
        calls = 0
        for batch in self.batches(items):
            calls += 1
            try:
                out.update(self.summarize_batch(batch))
            except TransientError as e:
                errors.append(f"turns {batch[0][0]}–{batch[-1][0]}: {e}")
        return out, calls, errors


def parse_batch_answer(answer: str, wanted: set[int]) -> dict[int, str]:
    """The model's JSON array → {turn: summary}; an answer with no usable JSON is transient."""
    m = re.search(r"\[.*\]", answer, re.S)
    try:
        data = json.loads(m.group(0)) if m else None
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, list):
        raise TransientError("the answer holds no JSON array")
    out = {}
    for item in data:
        if isinstance(item, dict) and isinstance(item.get("summary"), str) and item.get("turn") in wanted:
            out[int(item["turn"])] = " ".join(item["summary"].split())
    if not out:
        raise TransientError("the answer names none of the turns")
    return out


def _llm_texts(catalog: Catalog, sid: str, llm: LlmSummarizer, report: SummarizeReport,
               force: bool) -> dict[int, tuple[str, str, str]]:
    """LLM summaries for the turns of a session that lack a current one."""
    row, turns, invs = _session_inputs(catalog, sid)
    have, _ = summaries_for(catalog, sid)
    items = []
    for t in turns:
        ti = t["turn_index"]
        old = have.get(ti)
        if not force and old and old["summarizer"] == "llm" and \
                old["source_hash"] == turn_source_hash(t, invs.get(ti, [])):
            continue
        f = turn_facts(t, invs.get(ti, []), row.get("cwd"))
        facts = {k: f[k] for k in ("prompt", "tool_usage", "edited", "created", "read", "commands", "errors",
                                   "assistant_text", "interrupted")}
        items.append((ti, json.dumps(facts, ensure_ascii=False)[:6000]))
    texts, calls, errors = llm.summarize(items)
    report.llm_batches += calls
    report.llm_failed_turns += len(items) - len(texts)
    report.errors += [f"{sid[:8]} {e}" for e in errors]
    return {ti: (text, llm.transport.model, PROMPT_VERSION) for ti, text in texts.items()}
