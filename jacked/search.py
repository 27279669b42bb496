"""Search: dense and BM25 candidates fused per session, exact phrases first, then weighted.

Each leg (dense cosine, BM25) returns its best `CANDIDATES` points with their raw scores.
A session's score on a leg is built from its best three matches on that leg (one strong
match counts most, corroborating ones break ties); the two legs are normalised by the best
session of the query and mixed (`LEXICAL_SHARE`). Fusing sessions rather than points lets a
session that matches on both legs, or on several points, rise above one that matches once;
scoring by value rather than rank lets a clearly better lexical match win over a middling
semantic one (equal-weight RRF over points let the weaker dense leg pull good BM25 ranks
down). A session holding the query verbatim — a quoted phrase, an error line, a path — is
ranked above every session that does not.

The relevance is then weighted for whose session it is (own 1.0, teammate
`teammate_weight`), where it was (current repo 1.0, other `other_repo_weight`) and when
(`0.5 ** (age_weeks / time_decay_halflife_weeks)`). Forks and resumes whose best match is
the very same text are shown once. Every answer says how sure it is (`confidence`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from jacked.config import Settings
from jacked.extract import CONTENT_TYPES
from jacked.timeutil import age_days, now_utc, parse_since, relative_age

MAX_QUERY_CHARS = 2000
CANDIDATES = 150  # points each leg (dense, BM25) brings to the session fusion
# The payload a search reads (the rest — cwd, machine, model… — is not needed to rank or show).
HIT_FIELDS = ["session_id", "content_type", "text", "content_hash", "repo_name", "user_name", "timestamp",
              "session_started_at", "session_ended_at", "turn_index", "title"]
MATCHES_SHOWN = 3
SNIPPET_CHARS = 400
# Weights of a session's 1st, 2nd and 3rd best matches in its score on a leg: one strong
# match counts most, corroborating matches break ties between similar sessions.
MATCH_WEIGHTS = (1.0, 0.35, 0.15)
# The lexical leg's share of the fused relevance (the dense leg has the rest): measured on
# the real dev set and the generated bank (scripts/search_eval.py), 0.4–0.5 is a plateau.
LEXICAL_SHARE = 0.5
# Age decays only this part of a session's weight: recency orders sessions that are about
# equally relevant, it must not bury the one session that holds the answer.
RECENCY_FLOOR = 0.8

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class SearchError(ValueError):
    """A query or filter the user must fix."""


def sanitize_query(query: str) -> str:
    """Control characters stripped, whitespace folded, at most 2,000 characters."""
    q = " ".join(_CONTROL.sub(" ", query or "").split())
    if not q:
        raise SearchError("empty query: give some words to search for")
    return q[:MAX_QUERY_CHARS]


# `--scope`: which layer of the memory to search (the content types of each layer).
SCOPES: dict[str, tuple[str, ...] | None] = {
    "sessions": ("session_summary", "plan", "title", "summary_label", "compact_summary", "recap",
                 "subagent_summary"),
    "turns": ("turn_summary", "user_message", "assistant_response"),
    "messages": ("user_message", "assistant_response", "chunk"),
    "all": None,
}


@dataclass
class SearchOptions:
    """Filters and weighting of a search."""

    types: list[str] | None = None
    scope: str | None = None  # sessions | turns | messages | all; narrows `types` to that layer
    agent_type: str | None = None
    repo: str | None = None
    user: str | None = None
    mine: bool = False
    since: str | None = None
    limit: int = 10
    current_repo: str | None = None
    now: datetime | None = None
    weights: dict[str, float] = field(default_factory=dict)

    def content_types(self) -> list[str] | None:
        """The content types to search: `types`, within the `scope`'s layer when both are given."""
        layer = SCOPES.get(self.scope or "all")
        if layer is None:
            return self.types
        if not self.types:
            return list(layer)
        return [t for t in self.types if t in layer]

    def validate(self) -> None:
        if self.scope is not None and self.scope not in SCOPES:
            raise SearchError(f"unknown scope {self.scope!r}: use one of {', '.join(SCOPES)}")
        if self.scope and self.types and not self.content_types():
            raise SearchError(f"none of the --type values is in scope {self.scope!r}")
        for t in self.types or []:
            if t not in CONTENT_TYPES:
                raise SearchError(f"unknown content type {t!r}: use one of {', '.join(CONTENT_TYPES)}")
        if self.limit < 1:
            raise SearchError("-n must be at least 1")


def current_repo_name(cwd: Path | None = None) -> str | None:
    """The repo the user is in: the git top-level's name, else the folder's name."""
    from jacked.transcript.discover import repo_name_of

    here = (cwd or Path.cwd()).resolve()
    for p in [here, *here.parents]:
        if (p / ".git").exists():
            return repo_name_of(str(p))
    return repo_name_of(str(here))


_WORD = re.compile(r"[a-z0-9]+")
# A word with inner punctuation: a path, a dotted or snake_case name, a flag, a version.
_IDENTIFIER = re.compile(r"[a-z0-9][_/.:\\-]+[a-z0-9_]|(?:^|\s)[_./-]+[a-z0-9]")
_QUOTED = re.compile(r'"([^"]+)"|`([^`]+)`')
PHRASE_MIN_WORDS = 3


def _fold(text: str) -> str:
    return " ".join(text.lower().split())


def exact_phrases(query: str) -> list[str]:
    """What the query asks for verbatim: its "quoted" or `backticked` parts, else the whole
    query when it reads as an exact string (three words or more, or an identifier)."""
    quoted = [_fold(a or b) for a, b in _QUOTED.findall(query) if (a or b).strip()]
    if quoted:
        return quoted
    q = _fold(query)
    if len(_WORD.findall(q)) >= PHRASE_MIN_WORDS or _IDENTIFIER.search(q):
        return [q]
    return []


def _phrase_patterns(phrases: list[str]) -> list[tuple[str, re.Pattern[str]]]:
    """(longest word, pattern) of each phrase; a phrase must not start or end inside a word
    ("ci" is not in "specific")."""
    return [(max(p.split(), key=len),
             re.compile(("(?<![a-z0-9])" if p[0].isalnum() else "") + re.escape(p)
                        + ("(?![a-z0-9])" if p[-1].isalnum() else "")))
            for p in phrases]


def _holds(text: str, patterns: list[tuple[str, re.Pattern[str]]]) -> bool:
    """Whether `text` holds every phrase; the cheap test (its longest word) goes first."""
    low = text.lower()
    if not all(probe in low for probe, _ in patterns):
        return False
    folded = " ".join(low.split())
    return all(pat.search(folded) for _, pat in patterns)


@dataclass
class _Session:
    """A session's candidate points from both legs."""

    payload: dict[str, Any]
    dense: list[float] = field(default_factory=list)
    lexical: list[float] = field(default_factory=list)
    points: dict[str, dict[str, Any]] = field(default_factory=dict)  # content key → point and its leg scores
    exact: bool = False


class Searcher:
    """Answers queries against one open store; load once, ask many (for `--batch`)."""

    def __init__(self, settings: Settings, store: Any, dense: Any, sparse: Any, catalog: Any | None = None) -> None:
        self.settings = settings
        self.store = store
        self.dense = dense
        self.sparse = sparse
        self.catalog = catalog

    def search(self, query: str, opts: SearchOptions) -> dict[str, Any]:
        """The `search --json` object for one query."""
        from jacked.store import SearchFilter

        opts.validate()
        q = sanitize_query(query)
        now = opts.now or now_utc()
        since_ts = parse_since(opts.since, now).timestamp() if opts.since else None
        user = self.settings.user_name if opts.mine else opts.user
        flt = SearchFilter(content_types=opts.content_types(), agent_type=opts.agent_type, repo=opts.repo, user_name=user,
                           since_ts=since_ts)
        phrases = exact_phrases(q)
        # Quotes and backticks mark a phrase; the legs get the words alone.
        words = _QUOTED.sub(lambda m: m.group(1) or m.group(2), q) if phrases else q
        sparse_vec = self.sparse.embed_query(words)
        dense_hits, lexical_hits = self.store.search_each(self.dense.embed_query(words), sparse_vec, flt,
                                                          limit=CANDIDATES, fields=HIT_FIELDS)
        sessions = self._sessions(dense_hits, lexical_hits, _phrase_patterns(phrases))
        results = self._rank(sessions, opts, now)
        confidence = self._confidence(results, sessions, sparse_vec)
        return {"query": q, "confidence": confidence, "results": results}

    @staticmethod
    def _sessions(dense_hits: list[Any], lexical_hits: list[Any],
                  patterns: list[tuple[str, re.Pattern[str]]]) -> dict[str, _Session]:
        sessions: dict[str, _Session] = {}
        for leg, hits in (("dense", dense_hits), ("lexical", lexical_hits)):
            for h in hits:
                p = h.payload
                sid = p.get("session_id")
                if not sid:
                    continue
                s = sessions.setdefault(sid, _Session(p))
                key = p.get("content_hash") or p.get("text") or h.id
                point = s.points.get(key)
                if point is None:
                    point = s.points[key] = {"payload": p, "dense": 0.0, "lexical": 0.0}
                elif point[leg]:
                    continue  # the same text twice in a session counts once
                point[leg] = h.score
                getattr(s, leg).append(h.score)
        if patterns:
            # A verbatim match holds every word of the phrase, so it is among the lexical hits.
            for h in lexical_hits:
                s = sessions.get(h.payload.get("session_id"))
                if s is not None and _holds(h.payload.get("text") or "", patterns):
                    s.exact = True
                    s.points[h.payload.get("content_hash") or h.payload.get("text") or h.id]["exact"] = True
        return sessions

    def _rank(self, sessions: dict[str, _Session], opts: SearchOptions, now: datetime) -> list[dict[str, Any]]:
        w = self.settings
        teammate = opts.weights.get("teammate_weight", getattr(w, "teammate_weight", 0.8))
        other_repo = opts.weights.get("other_repo_weight", getattr(w, "other_repo_weight", 0.7))
        halflife = opts.weights.get("time_decay_halflife_weeks", getattr(w, "time_decay_halflife_weeks", 35))

        def leg_score(scores: list[float]) -> float:
            return sum(wt * sc for wt, sc in zip(MATCH_WEIGHTS, sorted(scores, reverse=True)))

        dense_of = {sid: leg_score(s.dense) for sid, s in sessions.items()}
        lexical_of = {sid: leg_score(s.lexical) for sid, s in sessions.items()}
        dense_top = max(dense_of.values(), default=0.0) or 1.0
        lexical_top = max(lexical_of.values(), default=0.0) or 1.0
        ranked = []
        for sid, s in sessions.items():
            p = s.payload
            relevance = LEXICAL_SHARE * lexical_of[sid] / lexical_top + (1 - LEXICAL_SHARE) * dense_of[sid] / dense_top
            weight = 1.0
            if p.get("user_name") and p.get("user_name") != w.user_name:
                weight *= teammate
            if opts.current_repo and p.get("repo_name") and p.get("repo_name") != opts.current_repo:
                weight *= other_repo
            ended = p.get("session_ended_at") or p.get("timestamp")
            days = age_days(ended, now)
            if days is not None and halflife:
                weight *= RECENCY_FLOOR + (1 - RECENCY_FLOOR) * 0.5 ** (max(days, 0) / 7 / halflife)
            # A point's own share of the relevance orders the matches shown.
            for point in s.points.values():
                point["score"] = (LEXICAL_SHARE * point["lexical"] / lexical_top
                                  + (1 - LEXICAL_SHARE) * point["dense"] / dense_top)
            matches = sorted(s.points.values(), key=lambda m: (not m.get("exact"), -m["score"]))
            ranked.append({
                "session_id": sid, "score": round(relevance * weight, 6), "relevance": round(relevance, 6),
                "exact": s.exact, "repo_name": p.get("repo_name"), "user_name": p.get("user_name"), "timestamp": ended,
                "started_at": p.get("session_started_at"), "age": relative_age(ended, now),
                "title": p.get("title"), "_dup": matches[0]["payload"].get("content_hash"),
                "_best_dense": max(s.dense, default=0.0),
                "matches": [{"content_type": m["payload"].get("content_type"), "text": _snippet(m["payload"].get("text")),
                             "score": round(m["score"], 6), "turn_index": m["payload"].get("turn_index")}
                            for m in matches[:MATCHES_SHOWN]],
                "_texts": [m["payload"].get("text") or "" for m in matches[:MATCHES_SHOWN]],
            })
        # Verbatim matches first, whatever their weights: the user asked for that string.
        ranked.sort(key=lambda r: (not r["exact"], -r["score"], r["session_id"]))
        # A fork or resume that only repeats another session's turns is that session again.
        copies = self.catalog.copies_of([r["session_id"] for r in ranked]) if self.catalog is not None else {}
        results, seen_dup = [], {}
        for r in ranked:
            keys = [k for k in (r.pop("_dup"), "session:" + copies.get(r["session_id"], r["session_id"])) if k]
            first = next((seen_dup[k] for k in keys if k in seen_dup), None)
            if first is not None:
                first.setdefault("also", []).append(r["session_id"])
                continue
            for k in keys:
                seen_dup[k] = r
            results.append(r)
            if len(results) >= opts.limit:
                break
        self._fill_titles(results)
        return results

    def _confidence(self, results: list[dict[str, Any]], sessions: dict[str, _Session], query_vec: Any) -> str:
        """How sure the best answer is: "high", "medium", "low", or "none" without results.

        From what does not depend on the rest of the corpus: a verbatim match; the share of
        the query's words (BM25 terms) that the best session's top matches hold; the best
        cosine. Each result gets its own; the answer's is its first result's.
        """
        terms = set(query_vec.indices) if query_vec is not None else set()
        for r in results:
            texts = r.pop("_texts")
            best_dense = r.pop("_best_dense")
            coverage = 0.0
            if terms:
                held: set[int] = set()
                for v in self.sparse.embed_documents(texts):
                    held.update(v.indices)
                coverage = len(terms & held) / len(terms)
            r["confidence"] = _grade(r["exact"], coverage, best_dense)
        return results[0]["confidence"] if results else "none"

    def _fill_titles(self, results: list[dict[str, Any]]) -> None:
        """Title or first prompt from the local catalog, when it knows the session."""
        if self.catalog is None:
            for r in results:
                r["source"] = None
            return
        for r in results:
            row = self.catalog.get_session_row(r["session_id"])
            if row:
                r["title"] = row.get("title") or r.get("title")
                r["first_prompt"] = _snippet(row.get("first_prompt"), 200)
            # transcript | archive (only archived) | history (prompts only); None: not in this catalog
            r["source"] = (row.get("source") or "transcript") if row else None


# Cosines of all-MiniLM-L6-v2 between a query and a text on its topic sit above ~0.5; an
# unrelated text scores ~0.1–0.3. Calibrated on the dev sets (scripts/search_eval.py).
HIGH_COSINE, LOW_COSINE = 0.55, 0.35


def _grade(exact: bool, coverage: float, best_cosine: float) -> str:
    if exact or (coverage >= 0.75 and best_cosine >= LOW_COSINE) or best_cosine >= HIGH_COSINE:
        return "high"
    if coverage >= 0.5 or best_cosine >= LOW_COSINE:
        return "medium"
    return "low"


def _snippet(text: str | None, limit: int = SNIPPET_CHARS) -> str:
    t = " ".join((text or "").split())
    return t if len(t) <= limit else t[:limit - 1] + "…"


def search_many(settings: Settings, queries: list[str], opts: SearchOptions,
                indexer: Any | None = None) -> list[dict[str, Any]]:
    """Answer several queries with one model load and one store open (`search --batch`)."""
    from jacked.indexer import Indexer

    opts.validate()
    for q in queries:
        sanitize_query(q)  # fail before any work on a bad line
    indexer = indexer or Indexer(settings)
    with indexer.open_store(must_exist=True) as store:
        searcher = Searcher(settings, store, indexer.dense, indexer.sparse, indexer.catalog)
        return [searcher.search(q, opts) for q in queries]
