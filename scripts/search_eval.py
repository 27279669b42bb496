#!/usr/bin/env python3
"""Search quality against plain BM25 over each session's raw text, measured in the same run.

    python scripts/search_eval.py real       [--queries FILE] [--claude-dir DIR] [--home DIR] [--misses]
    python scripts/search_eval.py generated  [--sessions 60] [--seed 1] [--home DIR] [--misses]

real       the hand-written dev set `scripts/search_dev/real_queries.jsonl` over the real
           fixtures (kinds: keyword, paraphrase, exact_error, identifier, vague);
generated  the public generated bank of `scripts/gen_corpus.py` (kinds kw, para, detail),
           the queries its truth.json lists.

Prints recall@1, recall@5 and MRR (first relevant session within the top 10) per kind for
jacked and for the baseline (and SQLite FTS5 over messages, as the public benchmark has it), the rank-1 rate of exact strings that occur in exactly one session,
and the search p50 in this process. The baseline is Okapi BM25 (k1 1.2, b 0.75) over every
string of a session's files (the session file, its subagent files and plan: prompts, answers,
tool inputs and outputs), written here without any jacked code. `--home` keeps the index
between runs (a re-run backfills only what changed); `--misses` lists the queries jacked does
not rank first. `--json` prints the figures as one object. Queries with no relevant session
(kind "absent": words or topics no session has) are left out of the ranking table; they
count how often the answer's `confidence` says "low" or "none", as it should.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
REAL = ROOT / "tests" / "fixtures" / "claude-code" / "real"
GEN_CORPUS = ROOT / "scripts" / "gen_corpus.py"
DEV_SET = ROOT / "scripts" / "search_dev" / "real_queries.jsonl"
EXACT_KINDS = ("exact_error", "identifier", "detail")

# ------------------------------------------------------------------ the baseline (no jacked code)
TOKEN = re.compile(r"[a-z0-9]+")
STOP = set("the a an and or of to in on for with from by at as is are was were be it this that we you i not "
           "but if then so".split())
SKIP_KEYS = {"signature", "data", "uuid", "parentUuid", "sessionId", "leafUuid", "requestId", "id", "tool_use_id"}


def strings_in(obj: Any) -> list[str]:
    """Every string a person could grep in a parsed line (ids and signatures left out)."""
    out: list[str] = []
    stack = [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, str):
            if len(o) > 3:
                out.append(o)
        elif isinstance(o, dict):
            stack.extend(v for k, v in o.items() if k not in SKIP_KEYS)
        elif isinstance(o, list):
            stack.extend(o)
    return out


def record_strings(path: Path) -> list[list[str]]:
    """Each JSON line's strings (`strings_in`), one list per line; bad lines skipped."""
    records: list[list[str]] = []
    with path.open("rb") as fh:
        for line in fh:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            msg = rec.get("message") if isinstance(rec, dict) else None
            if isinstance(msg, str):  # some lines write `message` as a JSON string
                try:
                    rec["message"] = json.loads(msg)
                except ValueError:
                    pass
            records.append(strings_in(rec))
    return records


def file_text(path: Path) -> str:
    if path.suffix == ".md":
        return path.read_text(errors="replace")
    return "\n".join(t for texts in record_strings(path) for t in texts)


def real_session_files(claude_dir: Path, session_id: str) -> list[Path]:
    """A session's file, its subagent files (nested or flat, by sessionId) and its plan."""
    main = next((claude_dir / "projects").glob(f"*/{session_id}.jsonl"))
    files = [main, *sorted(main.parent.glob(f"{session_id}/subagents/agent-*.jsonl"))]
    for agent in sorted(main.parent.glob("agent-*.jsonl")):
        with agent.open("rb") as fh:
            first = fh.readline()
        try:
            if json.loads(first).get("sessionId") == session_id:
                files.append(agent)
        except (ValueError, AttributeError):
            continue
    slugs = set(re.findall(rb'"slug":"([a-z0-9-]+)"', main.read_bytes()))
    files += [claude_dir / "plans" / f"{s.decode()}.md" for s in sorted(slugs)
              if (claude_dir / "plans" / f"{s.decode()}.md").exists()]
    return files


def bm25_rank(docs: dict[str, str], queries: list[str], k1: float = 1.2, b: float = 0.75) -> list[list[str]]:
    toks = {d: [t for t in TOKEN.findall(text.lower()) if t not in STOP] for d, text in docs.items()}
    df: Counter[str] = Counter()
    for ts in toks.values():
        df.update(set(ts))
    n = len(toks)
    avg = sum(len(t) for t in toks.values()) / max(n, 1)
    tf = {d: Counter(ts) for d, ts in toks.items()}
    ranked = []
    for q in queries:
        qt = [t for t in TOKEN.findall(q.lower()) if t not in STOP]
        scores: dict[str, float] = {}
        for d, c in tf.items():
            dl = len(toks[d])
            sc = 0.0
            for t in qt:
                if t in c:
                    idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                    sc += idf * c[t] * (k1 + 1) / (c[t] + k1 * (1 - b + b * dl / avg))
            if sc:
                scores[d] = sc
        ranked.append(sorted(scores, key=lambda d: (-scores[d], d)))
    return ranked


# ------------------------------------------------------------------ data sets
def real_set(args: argparse.Namespace) -> tuple[Path, list[dict[str, Any]], dict[str, str]]:
    claude_dir = Path(args.claude_dir or REAL)
    queries = [json.loads(line) for line in Path(args.queries).read_text().splitlines() if line.strip()]
    ids = sorted({s for q in queries for s in q["relevant"]} | set(listed_sessions(claude_dir)))
    docs = {sid: "\n".join(file_text(f) for f in real_session_files(claude_dir, sid)) for sid in ids}
    return claude_dir, queries, docs


def listed_sessions(claude_dir: Path) -> list[str]:
    """Session files with at least one human prompt (the sessions a search can return)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from independent_count import count_dir  # the stdlib-only second reading of a Claude dir

    return [sid for sid, s in count_dir(claude_dir)["sessions"].items() if s["prompts"]]


def generated_set(args: argparse.Namespace, work: Path) -> tuple[Path, list[dict[str, Any]], dict[str, str]]:
    claude_dir = work / f"generated-{args.sessions}-{args.seed}"
    if not (claude_dir / "truth.json").exists():
        subprocess.run([sys.executable, str(GEN_CORPUS), "--out", str(claude_dir),
                        "--sessions", str(args.sessions), "--seed", str(args.seed), "--bank", "public"],
                       check=True, capture_output=True)
    truth = json.loads((claude_dir / "truth.json").read_text())
    queries = [{"id": f"{q['kind']}-{i}", "kind": q["kind"], "query": " ".join(str(q["query"]).split()),
                "relevant": q["relevant_session_ids"]} for i, q in enumerate(truth["queries"])]
    docs = {}
    for s in truth["sessions"]:
        if not s.get("turns"):
            continue
        files = [claude_dir / s["file"]] + [claude_dir / a["file"] for a in s.get("subagents", []) if a.get("file")]
        if s.get("plan_file"):
            files.append(claude_dir / s["plan_file"])
        docs[s["session_id"]] = "\n".join(file_text(f) for f in files if f.exists())
    return claude_dir, queries, docs


# ------------------------------------------------------------------ measuring
def first_rank(ranked: list[str], relevant: set[str], depth: int = 10) -> int | None:
    return next((i + 1 for i, sid in enumerate(ranked[:depth]) if sid in relevant), None)


def table(queries: list[dict[str, Any]], ranks: list[int | None]) -> dict[str, dict[str, float]]:
    by_kind: dict[str, list[int | None]] = {}
    for q, r in zip(queries, ranks):
        by_kind.setdefault(q["kind"], []).append(r)
        by_kind.setdefault("all", []).append(r)
    return {kind: {"n": len(rs), "r1": sum(r == 1 for r in rs) / len(rs),
                   "r5": sum(r is not None and r <= 5 for r in rs) / len(rs),
                   "mrr": sum(1 / r for r in rs if r) / len(rs)} for kind, rs in by_kind.items()}


def index_mb(home: Path) -> float:
    """Disk used by the index and the catalog under a JACKED_HOME (allocated blocks: the shard's
    files are sparse)."""
    files = [f for f in (home / "index").rglob("*") if f.is_file()] + [home / "catalog.db"]
    return round(sum(f.stat().st_blocks * 512 for f in files) / 1e6, 1)


def run_jacked(claude_dir: Path, home: Path, queries: list[dict[str, Any]]) -> tuple[list[list[str]], list[float], dict[str, Any]]:
    from jacked.config import Settings
    from jacked.query.search import Searcher, SearchOptions
    from jacked.index.indexer import Indexer

    settings = Settings(claude_dir=claude_dir, home=home, user_name="eval-user")
    indexer = Indexer(settings)
    t0 = time.perf_counter()
    report = indexer.backfill().to_json()
    report["wall_s"] = round(time.perf_counter() - t0, 2)
    ranked, times, answers = [], [], []
    with indexer.open_store(must_exist=True) as store:
        searcher = Searcher(settings, store, indexer.dense, indexer.sparse, indexer.catalog)
        searcher.search("warm up", SearchOptions(limit=10))
        for q in queries:
            t = time.perf_counter()
            out = searcher.search(q["query"], SearchOptions(limit=10))
            times.append(time.perf_counter() - t)
            ranked.append([r["session_id"] for r in out["results"]])
            answers.append(out)
        # Each leg alone on the same index (1.0: lexical, 0.0: dense): the fusion must beat both.
        legs = {leg: [[r["session_id"] for r in searcher.search(q["query"], SearchOptions(
            limit=10, weights={"lexical_share": share}))["results"]] for q in queries]
            for leg, share in (("lexical", 1.0), ("dense", 0.0))}
    report["index_mb"] = index_mb(home)
    return ranked, times, {"backfill": report, "answers": answers, "legs": legs}


def fts5_baseline(claude_dir: Path, queries: list[dict[str, Any]]) -> list[list[str]]:
    """The public benchmark's second baseline on this set: SQLite FTS5 over each record of the
    session's files, a session ranked by its best message (`memory_bench.fts5_rank`)."""
    from memory_bench import claude_sessions, fts5_rank  # it imports this module: read when needed

    ranked = fts5_rank(claude_sessions(claude_dir), [q["query"] for q in queries])
    return [[key.removeprefix("claude:") for key in r] for r in ranked]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("set", choices=["real", "generated"])
    ap.add_argument("--queries", default=str(DEV_SET))
    ap.add_argument("--claude-dir")
    ap.add_argument("--sessions", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--home", help="JACKED_HOME to use and keep (default: a temp folder)")
    ap.add_argument("--misses", action="store_true", help="list the queries jacked does not rank first")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    work = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="jacked-search-eval-"))
    work.mkdir(parents=True, exist_ok=True)
    claude_dir, queries, docs = real_set(args) if args.set == "real" else generated_set(args, work)
    ours, times, extra = run_jacked(claude_dir, work / "home", queries)
    # Queries with no answer ("absent") measure honesty, not ranking.
    absent = [(q, a) for q, a in zip(queries, extra["answers"]) if not q["relevant"]]
    kept = [i for i, q in enumerate(queries) if q["relevant"]]
    queries, ours, times = [queries[i] for i in kept], [ours[i] for i in kept], [times[i] for i in kept]
    extra["answers"] = [extra["answers"][i] for i in kept]
    base = bm25_rank(docs, [q["query"] for q in queries])
    our_ranks = [first_rank(r, set(q["relevant"])) for q, r in zip(queries, ours)]
    base_ranks = [first_rank(r, set(q["relevant"])) for q, r in zip(queries, base)]
    t_ours, t_base = table(queries, our_ranks), table(queries, base_ranks)
    t_fts5 = table(queries, [first_rank(r, set(q["relevant"])) for q, r in zip(queries, fts5_baseline(claude_dir, queries))])
    t_legs = {leg: table(queries, [first_rank(ranks[i], set(queries[n]["relevant"])) for n, i in enumerate(kept)])
              for leg, ranks in extra["legs"].items()}
    # Exact strings found in exactly one session must come first.
    unique_exact = []
    for q, r in zip(queries, our_ranks):
        if q["kind"] in EXACT_KINDS:
            holders = [sid for sid, text in docs.items() if q["query"].lower() in text.lower()]
            if len(holders) == 1:
                unique_exact.append((q, r))
    confidence: dict[str, Counter[str]] = {"first_right": Counter(), "first_wrong": Counter(), "absent": Counter()}
    for r, out in zip(our_ranks, extra["answers"]):
        confidence["first_right" if r == 1 else "first_wrong"][out.get("confidence", "?")] += 1
    for _, out in absent:
        confidence["absent"][out.get("confidence", "?")] += 1
    figures = {"set": args.set, "confidence": {k: dict(v) for k, v in confidence.items()}, "queries": len(queries), "sessions": len(docs), "jacked": t_ours, "bm25": t_base, "fts5": t_fts5, "legs": t_legs,
               "unique_exact": {"n": len(unique_exact), "rank1": sum(r == 1 for _, r in unique_exact)},
               "search_p50_ms": round(statistics.median(times) * 1000, 1),
               "backfill": {k: extra["backfill"].get(k) for k in ("texts_embedded", "points_written", "wall_s", "index_mb")}}
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(f"{args.set}: {len(queries)} queries over {len(docs)} sessions; backfill {figures['backfill']}")
        print(f"  {'kind':12s} {'n':>3s} | {'r@1':>5s} {'r@5':>5s} {'MRR':>5s} | {'bm25 r@1':>8s} {'r@5':>5s} "
              f"{'MRR':>5s} | {'ΔMRR':>6s}")
        for kind in sorted(t_ours, key=lambda k: (k == "all", k)):
            o, b = t_ours[kind], t_base[kind]
            print(f"  {kind:12s} {o['n']:3d} | {o['r1']:5.3f} {o['r5']:5.3f} {o['mrr']:5.3f} | {b['r1']:8.3f} "
                  f"{b['r5']:5.3f} {b['mrr']:5.3f} | {o['mrr'] - b['mrr']:+6.3f}")
        print("  SQLite FTS5 over messages, MRR: " + " ".join(f"{k} {v['mrr']:.3f}" for k, v in t_fts5.items()))
        for leg, t in t_legs.items():
            print(f"  jacked's {leg} leg alone, MRR: " + " ".join(f"{k} {v['mrr']:.3f}" for k, v in t.items()))
        ue = figures["unique_exact"]
        print(f"  exact strings in exactly one session: {ue['rank1']}/{ue['n']} at rank 1")
        print(f"  search p50 {figures['search_p50_ms']} ms (in process, {len(times)} queries)")
        print("  confidence of the answer: " + "; ".join(
            f"{k} {dict(sorted(v.items()))}" for k, v in confidence.items() if v))
    if args.misses:
        for q, r, br, out in zip(queries, our_ranks, base_ranks, extra["answers"]):
            if r != 1:
                top = [(x["session_id"][:8], round(x["score"], 3), x["matches"][0]["content_type"])
                       for x in out["results"][:3]]
                print(f"MISS {q['id']:14s} rank {r} (bm25 {br}) want {[s[:8] for s in q['relevant']]} "
                      f"{q['query'][:70]!r}\n     top {top}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
