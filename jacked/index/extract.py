"""Extraction: a cataloged session → the documents jacked indexes, one per content type unit.

Distilled units (plans, decisions, subagent reports, labels, compaction summaries, recaps, titles,
user prompts, final assistant texts) get dense and sparse vectors; `chunk` units — windows
of the whole transcript: tool calls, commands, file paths, results and errors — are
sparse-only, so a detail seen once in a tool output still finds its session while the
cost of a backfill stays governed by the distilled units.

Texts longer than the embedding window are split at line, then sentence, then word
boundaries into numbered chunks of one document: nothing is cut off.
"""
from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from jacked.catalog import Catalog, timeline_queries
from jacked.index.labels import CHUNK_PROMPT
from jacked.sources.decisions import SEARCHABLE_DECISIONS, decision_text
from jacked.sources.model import prompt_text

# Bump when what is extracted or how it is split changes: every content hash changes with it.
EXTRACT_VERSION = 5  # 3: jacked's labels left out of what BM25 embeds (labels.py); 4: turns' raw text in chunks; 5: briefs the raw text lacks kept
# How much of a result's brief (its head) is looked for in the turn's raw text.
RAW_PROBE_CHARS = 80

MIN_SUBAGENT_SUMMARY = 200
CHUNK_CHARS = 3000  # a sparse window: BM25 has no model window, but snippets should stay readable
POINT_NAMESPACE = uuid.UUID("6f2b8e0a-3c1d-5e7f-9a4b-2d6c8e0f1a3b")

TokenCounter = Callable[[str], int]
BatchTokenCounter = Callable[[list[str]], list[int]]


@dataclass(slots=True)
class Document:
    """One indexed unit (after splitting): becomes one Qdrant point."""

    session_id: str
    content_type: str
    index: str  # "<unit>.<chunk>" within (session, content_type)
    text: str
    dense: bool
    chunk_index: int = 0
    timestamp: str | None = None
    turn_index: int | None = None
    agent_id: str | None = None
    agent_type: str | None = None
    leaf_uuid: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def point_id(self) -> str:
        return str(uuid.uuid5(POINT_NAMESPACE, f"{self.session_id}:{self.content_type}:{self.index}"))

    def content_hash(self, model: str) -> str:
        """Covers the text, the model and the extraction/chunking version."""
        h = hashlib.blake2b(digest_size=16)
        h.update(f"{EXTRACT_VERSION}\0{model if self.dense else 'sparse'}\0{self.content_type}\0".encode())
        h.update(self.text.encode("utf-8", "surrogatepass"))
        return h.hexdigest()


def approx_tokens(text: str) -> int:
    """A conservative word-piece estimate when no tokenizer is at hand."""
    return len(text) // 3 + 1


_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def split_to_window(text: str, count: TokenCounter, window: int) -> list[str]:
    """Pieces of `text`, each within `window` tokens, split at the gentlest boundary that fits."""
    text = text.strip()
    if not text:
        return []
    if _fits(text, count, window):
        return [text]
    splitters: tuple[Callable[[str], list[str]], ...] = (lambda t: t.split("\n"), _SENTENCE.split, lambda t: t.split(" "))
    for level, splitter in enumerate(splitters):  # noqa: B007  # read after the break
        parts = [p for p in splitter(text) if p.strip()]
        if len(parts) > 1:
            break
    else:
        # One unbroken run (a hash, base64): cut by characters, keeping every character.
        step = max(16, window * 2)
        return [text[i:i + step] for i in range(0, len(text), step)]
    joiner = "\n" if level == 0 else " "
    # Parts are packed by the sum of their own counts: each part is tokenized once, not the growing
    # piece once per part added (quadratic; most of a backfill's lexical pass on long plans). With a
    # word-piece tokenizer the sum is the joined text's count (no token spans whitespace); any other
    # tokenizer's pieces are checked below and halved if the sum was short (`_fit_group`).
    groups: list[list[str]] = []
    current: list[str] = []
    used = 0
    for part in parts:
        tokens = count(part)
        if current and used + tokens > window:
            groups.append(current)
            current, used = [], 0
        current.append(part)
        used += tokens
    if current:
        groups.append(current)
    return [piece for group in groups for piece in _fit_group(group, joiner, count, window)]


def _fit_group(parts: list[str], joiner: str, count: TokenCounter, window: int) -> list[str]:
    """`parts` joined, or, if that is over the window, each half fitted alone. A part alone is split
    at a finer boundary. Halving, not splitting the joined text again: a SentencePiece tokenizer
    counts a line break as a token of its own, so parts that sum within the window may join past
    it, and splitting the joined text would give back the same parts and packing without end."""
    text = joiner.join(parts)
    if _fits(text, count, window):
        return [text]
    if len(parts) == 1:
        return split_to_window(parts[0], count, window)
    half = len(parts) // 2
    return _fit_group(parts[:half], joiner, count, window) + _fit_group(parts[half:], joiner, count, window)


def _fits(text: str, count: TokenCounter, window: int) -> bool:
    """Whether `text` is within `window` tokens (see `_surely_fits`)."""
    return _surely_fits(text, window) or count(text) <= window


def _surely_fits(text: str, window: int) -> bool:
    """Whether `text` fits `window` tokens whatever the tokenizer: every token of a word-piece or
    byte-level BPE tokenizer spans at least one UTF-8 byte (SentencePiece may add one word-start
    mark), so a text of fewer bytes than the window needs no counting (a third of a backfill's
    lexical pass went into counting tokens)."""
    return len(text) < window // 4 or len(text.encode("utf-8", "surrogatepass")) < window


class Extractor:
    """Builds the documents of cataloged sessions."""

    def __init__(self, catalog: Catalog, count_tokens: TokenCounter = approx_tokens, window: int = 254,
                 count_many: BatchTokenCounter | None = None) -> None:
        self.catalog = catalog
        self.count = count_tokens
        self.count_many = count_many  # the same counts for many texts in one call
        self.window = window

    def documents(self, session_id: str) -> list[Document]:
        """Every document of one session, in a stable order."""
        row = self.catalog.get_session_row(session_id)
        if row is None or not row.get("has_main"):
            return []  # not a listed session (e.g. subagent files whose session file is gone)
        sid = session_id
        wanted: list[tuple[str, int, str, bool, dict[str, Any]]] = []

        def add(ctype: str, unit: int, text: str | None, dense: bool = True, **meta: Any) -> None:
            if text and text.strip():
                wanted.append((ctype, unit, text, dense, meta))

        self._add_all(sid, row, add)
        count = self._counter([text.strip() for _, _, text, dense, _ in wanted if dense])
        docs: list[Document] = []
        for ctype, unit, text, dense, meta in wanted:
            pieces = split_to_window(text, count, self.window) if dense else _windows(text, CHUNK_CHARS)
            for ci, piece in enumerate(pieces):
                docs.append(Document(sid, ctype, f"{unit}.{ci}", piece, dense, chunk_index=ci, **meta))
        return docs

    def _counter(self, texts: list[str]) -> TokenCounter:
        """`count`, with the texts that need counting counted first in one call (a tokenizer's
        batch call costs a fifth less per text than one call each)."""
        if self.count_many is None:
            return self.count
        need = list(dict.fromkeys(t for t in texts if not _surely_fits(t, self.window)))
        known = dict(zip(need, self.count_many(need))) if need else {}
        return lambda t: known[t] if t in known else self.count(t)

    def _add_all(self, sid: str, row: dict[str, Any], add: Callable[..., None]) -> None:
        """Call `add` for each text of the session, in order."""
        if row.get("plan"):
            add("plan", 0, row["plan"], timestamp=row.get("started_at"))
        for i, x in enumerate(self.catalog.text_rows(sid)):
            ctype = "title" if x["kind"] in ("ai_title", "custom_title") else x["kind"]
            add(ctype, i, x["text"], timestamp=x["timestamp"] or row.get("started_at"), turn_index=x["turn_index"],
                leaf_uuid=x["leaf_uuid"])
        subs = self.catalog.subagent_rows(sid)
        for a in subs:
            if a["is_warmup"] or len(a["summary_text"] or "") < MIN_SUBAGENT_SUMMARY:
                continue
            add("subagent_summary", a["ord"], a["summary_text"], timestamp=a["ended_at"], turn_index=a["turn_index"],
                agent_id=a["agent_id"], agent_type=a["agent_type"])
        # A turn a resumed or forked session repeats from an earlier one is indexed there only.
        turns = [t for t in self.catalog.turn_rows(sid) if not t.get("repeat_of")]
        for t in turns:
            if t["turn_index"] >= 1:
                add("user_message", t["turn_index"], prompt_text(t["prompt"], bool(t["is_slash_command"])),
                    timestamp=t["started_at"], turn_index=t["turn_index"])
            if t["assistant_text"]:
                add("assistant_response", t["turn_index"], t["assistant_text"], timestamp=t["ended_at"],
                    turn_index=t["turn_index"])
        self._decisions(sid, turns, row, add)
        self._summaries(sid, turns, row, add)
        self._chunks(sid, turns, subs, add)

    def _decisions(self, sid: str, turns: list[dict[str, Any]], row: dict[str, Any],
                   add: Callable[..., None]) -> None:
        """One `decision` per question answered and per plan approved or rejected, said in one line
        (question, answer and alternatives; the plan's title and the reason it was refused)."""
        kept = {t["turn_index"] for t in turns}
        unit = 0
        for e in timeline_queries.turn_event_rows(self.catalog, sid, ("decision",)):
            data = orjson.loads(e["data"] or "{}")
            if e["turn_index"] not in kept or data.get("kind") not in SEARCHABLE_DECISIONS:
                continue
            add("decision", unit, decision_text(data), timestamp=e["timestamp"] or row.get("started_at"),
                turn_index=e["turn_index"])
            unit += 1

    def _summaries(self, sid: str, turns: list[dict[str, Any]], row: dict[str, Any],
                   add: Callable[..., None]) -> None:
        """Turn and session summaries (brought up to date in the catalog first).

        A turn summary is indexed only for turns that used tools: for a question-and-answer
        turn it would repeat the `user_message` and `assistant_response` points already there.
        """
        from jacked.index.summarize import SESSION_TURN, ensure_summaries, summaries_for

        ensure_summaries(self.catalog, sid)
        by_turn, session = summaries_for(self.catalog, sid)
        for t in turns:
            s = by_turn.get(t["turn_index"])
            if s and (t["tool_call_count"] or 0) > 0:
                add("turn_summary", t["turn_index"], s["text"], timestamp=t["started_at"], turn_index=t["turn_index"])
        if session:
            add("session_summary", SESSION_TURN, session["text"], timestamp=row.get("ended_at"))

    def _chunks(self, sid: str, turns: list[dict[str, Any]], subs: list[dict[str, Any]],
                add: Callable[..., None]) -> None:
        """Sparse windows over each turn's tool work and raw text (`Turn.raw_text`: every assistant
        text, tool input and result as written), and over each subagent's work."""
        by_owner_turn: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for inv in self.catalog.work_rows(sid):
            by_owner_turn.setdefault((inv["owner"], inv["turn_index"]), []).append(inv)
        outputs = self.catalog.event_texts(sid)
        raw = self.catalog.turn_texts(sid)
        unit = 0
        for t in turns:
            lines = [f"{CHUNK_PROMPT}{t['prompt']}"] if t["prompt"] else []
            lines += outputs.get(t["turn_index"], [])
            raw_text = raw.get(t["turn_index"])
            lines += _work_lines(by_owner_turn.get(("", t["turn_index"]), []), raw_text)
            if raw_text:
                lines.append(raw_text)
            if len(lines) > 1 or (lines and t["turn_index"] == 0):
                add("chunk", unit, "\n".join(lines), dense=False, timestamp=t["started_at"],
                    turn_index=t["turn_index"])
            unit += 1
        for i, a in enumerate(subs):
            owner = a["agent_id"] or f"inline-{i}"
            # its raw text joined its starting turn's (`briefs.add_subagent_raw`): briefs it holds count once
            work = [line for (o, _), invs in by_owner_turn.items() if o == owner
                    for line in _work_lines(invs, raw.get(a["turn_index"]))]
            head = [f"subagent {a['agent_type'] or ''}: {a['description'] or ''}", a["prompt"] or "",
                    a["summary_text"] or ""]
            if work or a["summary_text"]:
                add("chunk", unit, "\n".join([h for h in head if h] + work), dense=False, timestamp=a["started_at"],
                    turn_index=a["turn_index"], agent_id=a["agent_id"], agent_type=a["agent_type"])
            unit += 1


def _work_lines(invs: list[dict[str, Any]], raw_text: str | None = None) -> list[str]:
    """A line per call, and its result's brief unless the turn's raw text already holds it (that
    would count the same words twice). A brief the raw text lacks still counts: an output Claude
    Code moved to a file (the transcript holds only its reference; jacked read its head back), or
    one past the turn's raw-text cap."""
    lines = []
    for inv in invs:
        target = inv["command"] or inv["file_path"] or inv["description"] or inv["input_brief"] or ""
        lines.append(f"{inv['tool_name']}{' (error)' if inv['is_error'] else ''}: {target}")
        brief = inv["result_brief"]
        if brief and not (raw_text and brief[:RAW_PROBE_CHARS] in raw_text):
            lines.append(brief)
    return lines


def _windows(text: str, size: int) -> list[str]:
    """Line-aligned windows of about `size` characters (a longer single line is kept whole)."""
    out: list[str] = []
    cur: list[str] = []
    n = 0
    for line in text.split("\n"):
        if cur and n + len(line) > size:
            out.append("\n".join(cur))
            cur, n = [], 0
        cur.append(line)
        n += len(line) + 1
    if cur:
        out.append("\n".join(cur))
    return [w for w in out if w.strip()]
