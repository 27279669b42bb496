"""Search: hybrid (dense + BM25, fused with RRF in Qdrant), grouped per session, weighted.

A session's score comes from its best matches; it is then weighted for whose it is (own
1.0, teammate `teammate_weight`), where it was (current repo 1.0, other `other_repo_weight`)
and when (`0.5 ** (age_weeks / time_decay_halflife_weeks)`). Forks and resumes whose best
match is the very same text are shown once.
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
HITS_PER_QUERY = 120
PREFETCH = 300
MATCHES_SHOWN = 3
SNIPPET_CHARS = 400
# Weights of a session's 1st, 2nd and 3rd best matches in its score: one strong match
# counts most, corroborating matches break ties between similar sessions.
MATCH_WEIGHTS = (1.0, 0.35, 0.15)

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
        dense_vec = self.dense.embed_query(q)
        sparse_vec = self.sparse.embed_query(q)
        hits = self.store.search(dense_vec, sparse_vec if not sparse_vec.is_empty else None, flt,
                                 limit=HITS_PER_QUERY, prefetch=PREFETCH)
        return {"query": q, "results": self._rank(hits, opts, now)}

    def _rank(self, hits: list[Any], opts: SearchOptions, now: datetime) -> list[dict[str, Any]]:
        w = self.settings
        teammate = opts.weights.get("teammate_weight", getattr(w, "teammate_weight", 0.8))
        other_repo = opts.weights.get("other_repo_weight", getattr(w, "other_repo_weight", 0.7))
        halflife = opts.weights.get("time_decay_halflife_weeks", getattr(w, "time_decay_halflife_weeks", 35))
        sessions: dict[str, dict[str, Any]] = {}
        for h in hits:
            p = h.payload
            sid = p.get("session_id")
            if not sid:
                continue
            s = sessions.setdefault(sid, {"payload": p, "matches": [], "seen": set()})
            key = p.get("content_hash") or p.get("text")
            if key in s["seen"]:
                continue
            s["seen"].add(key)
            s["matches"].append(h)
        ranked = []
        for sid, s in sessions.items():
            p = s["payload"]
            scores = sorted((m.score for m in s["matches"]), reverse=True)
            relevance = sum(wt * sc for wt, sc in zip(MATCH_WEIGHTS, scores))
            weight = 1.0
            if p.get("user_name") and p.get("user_name") != w.user_name:
                weight *= teammate
            if opts.current_repo and p.get("repo_name") and p.get("repo_name") != opts.current_repo:
                weight *= other_repo
            ended = p.get("session_ended_at") or p.get("timestamp")
            days = age_days(ended, now)
            if days is not None and halflife:
                weight *= 0.5 ** (max(days, 0) / 7 / halflife)
            best = s["matches"][0]
            ranked.append({
                "session_id": sid, "score": round(relevance * weight, 6), "relevance": round(relevance, 6),
                "repo_name": p.get("repo_name"), "user_name": p.get("user_name"), "timestamp": ended,
                "started_at": p.get("session_started_at"), "age": relative_age(ended, now),
                "title": p.get("title"), "_dup": best.payload.get("content_hash"),
                "matches": [{"content_type": m.payload.get("content_type"), "text": _snippet(m.payload.get("text")),
                             "score": round(m.score, 6), "turn_index": m.payload.get("turn_index")}
                            for m in s["matches"][:MATCHES_SHOWN]],
            })
        ranked.sort(key=lambda r: (-r["score"], r["session_id"]))
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
