#!/usr/bin/env python3
"""Where an in-process search's time goes: the timeline of one search, and its two floors.

    JACKED_HOME=... python scripts/search_timeline.py TRUTH_JSON [--rounds 3]

Runs the queries of a generated corpus's `truth.json` (`scripts/gen_corpus.py`) against
the index in JACKED_HOME, once to warm up, then `--rounds` times, and prints medians in ms:

- the timeline of a search: when the model's run begins and ends on its thread, when the main
  thread (the lexical leg and its catalog rows done) asks for the query's vector and gets it,
  and when the search ends — what comes after "gets it" is the work that needs the vector;
- the query's embedding alone (nothing beside it): the floor of a search that embeds;
- the search with each query's vector given (no model): the floor of the rest.

The machine's speed moves by ±20 % from one minute to the next here, so compare the parts of
one run with each other, not runs with runs.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import Future
from datetime import datetime, UTC
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jacked.config import load_settings
from jacked.index.indexer import Indexer
from jacked.query.search import SearchOptions, Searcher

NOW = datetime(2026, 12, 1, tzinfo=UTC)  # fixed, so that every round ranks alike


class _TimedSession:
    """An ONNX Runtime session whose runs are timed (start and end, on the model's thread)."""

    def __init__(self, inner: Any, marks: dict[str, float]) -> None:
        self.inner, self.marks = inner, marks

    def run(self, *args: Any, **kwargs: Any) -> Any:
        self.marks["model run begins"] = time.perf_counter()
        out = self.inner.run(*args, **kwargs)
        self.marks["model run ends"] = time.perf_counter()
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _GivenVectors:
    """A stand-in for the model that hands back each query's vector, embedded beforehand."""

    is_loaded = True

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def embed_query(self, text: str, running: Any = None) -> list[float]:
        if running is not None:
            running.set()
        return self.vectors[text]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("truth", type=Path, help="truth.json of the generated corpus the index holds")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    queries = [q["query"] for q in json.loads(args.truth.read_text())["queries"] if q.get("relevant_session_ids")]
    settings = load_settings(None)
    indexer = Indexer(settings)
    store = indexer.open_store(must_exist=True)
    searcher = Searcher(settings, store, indexer.dense, indexer.sparse, indexer.catalog)

    def opts() -> SearchOptions:
        return SearchOptions(limit=10, now=NOW)

    searcher.search("warm up the model", opts())
    model = indexer.dense._model  # the default model's runner (`_MeanPooledOnnx`)
    if not hasattr(model, "_sessions"):
        raise SystemExit(f"search_timeline.py times the default model's runs only, not {indexer.dense.model_name}")
    marks: dict[str, float] = {}
    model._sessions[model.threads] = _TimedSession(model.session(), marks)
    result = Future.result

    def timed_result(self: Future, timeout: float | None = None) -> Any:
        marks["main thread asks for the vector"] = time.perf_counter()
        out = result(self, timeout)
        marks["main thread gets it"] = time.perf_counter()
        return out

    Future.result = timed_result  # type: ignore[method-assign]
    rows: list[dict[str, float]] = []
    try:
        for q in queries:
            searcher.search(q, opts())
        for _ in range(args.rounds):
            for q in queries:
                marks.clear()
                start = time.perf_counter()
                searcher.search(q, opts())
                marks["search ends"] = time.perf_counter()
                rows.append({k: (v - start) * 1000 for k, v in marks.items()})
    finally:
        Future.result = result  # type: ignore[method-assign]
    print(f"{len(queries)} queries × {args.rounds} rounds, medians in ms from the search's start:")
    for name in ("model run begins", "model run ends", "main thread asks for the vector", "main thread gets it",
                 "search ends"):
        print(f"  {name:34s} {statistics.median(r[name] for r in rows):6.2f}")
    alone, vectors = [], {}
    for _ in range(args.rounds):
        for q in queries:
            t = time.perf_counter()
            vectors[q] = indexer.dense.embed_query(q)
            alone.append((time.perf_counter() - t) * 1000)
    given = Searcher(settings, store, _GivenVectors(vectors), indexer.sparse, indexer.catalog)
    without = []
    for rnd in range(args.rounds + 1):
        for q in queries:
            t = time.perf_counter()
            given.search(q, opts())
            if rnd:
                without.append((time.perf_counter() - t) * 1000)
    print(f"  the query's embedding alone        {statistics.median(alone):6.2f}")
    print(f"  the search with the vector given   {statistics.median(without):6.2f}")
    store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
