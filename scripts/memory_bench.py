#!/usr/bin/env python3
"""A public retrieval benchmark for coding-agent memory: real sessions of five agents, queries
whose answers are checked by grep of the raw files, jacked beside four baselines in one run.

    python scripts/memory_bench.py sessions                 # the sessions and their raw sizes
    python scripts/memory_bench.py check                    # every query's relevant set, by grep
    python scripts/memory_bench.py run [--part dev|heldout|both] [--work DIR] [--json] [--misses]

Data (benchmarks/memory/README.md): the real fixtures of tests/fixtures (Claude Code, Codex CLI,
Gemini CLI, opencode) and two excerpts of Aider's own public chat history kept under
benchmarks/memory/aider. A session's *raw text* is every string a person could grep in its files
(JSON decoded, ids left out: `search_eval.file_text`); an Aider session is its block of the
chat-history file, from its `# aider chat started at` header to the next.

Queries: benchmarks/memory/queries_dev.jsonl and queries_heldout.jsonl (the split was committed
before jacked was run on them; the held-out file's SHA-256 is in the README and
tests/test_memory_bench.py). Each query holds its `evidence`: strings; its relevant sessions are
exactly those whose raw text holds every evidence string (case-insensitive), recorded as
`relevant` and checked by `check`. Kind "absent" has no relevant session.

`run` copies the data to a temp folder, points every agent's source at it (CLAUDE_CONFIG_DIR,
CODEX_HOME, GEMINI_CLI_HOME, XDG_DATA_HOME, JACKED_AIDER_ROOT) with a temp JACKED_HOME, backfills
through jacked's service and asks each query as `jacked search` does. Baselines, no jacked code:
BM25 over each session's raw text (`search_eval.bm25_rank`), SQLite FTS5 (bm25) over messages,
dense only (the offline MiniLM model over messages, a session's best message) and the RRF of
the BM25 and dense rankings (k 60). Reported: recall@1, recall@5 and MRR (first relevant session
within the top 10) per kind and per agent, on both parts; for absent queries, the confidence
jacked gives.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from search_eval import bm25_rank, file_text, index_mb, first_rank, real_session_files, record_strings, strings_in, table  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
BENCH = ROOT / "benchmarks" / "memory"
PARTS = ("dev", "heldout")
KINDS = ("keyword", "paraphrase", "exact_error", "identifier", "vague", "absent")
AIDER_HEADER = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)", re.M)
# Where each agent's data lives, and where `run` lays it out (relative to its work folder).
LAYOUT = {
    "claude": (FIXTURES / "claude-code" / "real", "claude"),
    "codex": (FIXTURES / "codex" / "real", "codex"),
    "gemini": (FIXTURES / "gemini" / "real", "gemini-home"),
    "opencode": (FIXTURES / "opencode" / "real", "xdg/opencode"),
    "opencode2": (FIXTURES / "opencode" / "real2", "xdg2/opencode"),
    "aider": (BENCH / "aider", "aider"),
}


@dataclass(frozen=True)
class Session:
    key: str  # "<agent>:<the agent's own session id>" or, for Aider, "aider:<folder>@<header time>"
    agent: str
    messages: tuple[str, ...]  # one per record (a JSONL line, a stored message or part, an Aider prompt or reply)

    @cached_property
    def text(self) -> str:
        """The raw text grep sees (the same as `search_eval.file_text` over the session's files)."""
        return "\n".join(self.messages)

    @cached_property
    def folded(self) -> str:
        return self.text.lower()


# --------------------------------------------------------------------------- the sessions
def file_messages(path: Path) -> list[str]:
    """A file's records: each JSONL line's strings (as `search_eval.file_text` reads them), or a
    Markdown file whole."""
    if path.suffix == ".md":
        return [file_text(path)]
    return ["\n".join(texts) for texts in record_strings(path) if texts]


def claude_sessions(claude_dir: Path) -> list[Session]:
    sys.path.insert(0, str(ROOT / "tests"))
    from independent_count import count_dir  # the stdlib-only second reading of a Claude dir

    ids = sorted(sid for sid, s in count_dir(claude_dir)["sessions"].items() if s["prompts"])
    return [Session(f"claude:{sid}", "claude", tuple(m for f in real_session_files(claude_dir, sid)
                                                    for m in file_messages(f))) for sid in ids]


def codex_sessions(codex_home: Path) -> list[Session]:
    out = []
    for path in sorted(codex_home.rglob("rollout-*.jsonl")):
        sid = re.search(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$", path.name)
        out.append(Session(f"codex:{sid.group(1) if sid else path.stem}", "codex", tuple(file_messages(path))))
    return out


def gemini_sessions(gemini_home: Path) -> list[Session]:
    out = []
    for path in sorted(gemini_home.rglob("chats/session-*.json")):
        chat = json.loads(path.read_text(encoding="utf-8"))
        head = {k: v for k, v in chat.items() if k != "messages"}
        messages = [strings_in(head), *(strings_in(m) for m in chat.get("messages", []))]
        out.append(Session(f"gemini:{chat['sessionId']}", "gemini", tuple("\n".join(m) for m in messages if m)))
    return out


def opencode_sessions(data_dir: Path) -> list[Session]:
    """The JSON store (session, message and part files) and the 2.x database (`session_message`
    rows); a subagent's child session is read with its parent, as Claude Code's subagents are."""
    found: dict[str, list[str]] = {}
    parent: dict[str, str] = {}
    storage = data_dir / "storage"
    for info_file in sorted(storage.glob("session/*/*.json")):
        sid = info_file.stem
        info = json.loads(info_file.read_text(encoding="utf-8"))
        if info.get("parentID"):
            parent[sid] = info["parentID"]
        files = [info_file, *sorted(storage.glob(f"message/{sid}/*.json"))]
        files += [p for m in files[1:] for p in sorted(storage.glob(f"part/{m.stem}/*.json"))]
        found[sid] = ["\n".join(strings_in(json.loads(f.read_text(encoding="utf-8")))) for f in files]
    db = data_dir / "opencode.db"
    if db.exists():
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            for sid, parent_id in con.execute("SELECT id, parent_id FROM session_v2 ORDER BY id"):
                rows = con.execute("SELECT data FROM session_message WHERE session_id = ? ORDER BY seq", (sid,))
                found[sid] = ["\n".join(strings_in(json.loads(data))) for (data,) in rows]
                if parent_id:
                    parent[sid] = parent_id
        finally:
            con.close()
    for child, top in parent.items():
        if top in found and child in found:
            found[top] += found.pop(child)
    return [Session(f"opencode:{sid}", "opencode", tuple(m for m in ms if m)) for sid, ms in sorted(found.items())
            if any(ms)]


def aider_blocks(chat_file: Path) -> list[tuple[str, list[str]]]:
    """(header time, records) of each session of a chat history that typed a prompt; a record is
    a run of `#### ` prompt lines or the text up to the next prompt."""
    text = chat_file.read_text(encoding="utf-8", errors="replace")
    starts = [m.start() for m in AIDER_HEADER.finditer(text)] + [len(text)]
    blocks = []
    for a, b in zip(starts, starts[1:]):
        block = text[a:b]
        if re.search(r"^#### ", block, re.M):  # a run that typed nothing is no session
            pieces = re.split(r"((?:^#### .*\n?)+)", block, flags=re.M)
            blocks.append((AIDER_HEADER.match(block).group(1), [p for p in pieces if p]))
    return blocks


def aider_sessions(root: Path) -> list[Session]:
    return [Session(f"aider:{f.parent.name}@{when}", "aider", tuple(records))
            for f in sorted(root.glob("*/.aider.chat.history.md")) for when, records in aider_blocks(f)]


def all_sessions() -> list[Session]:
    return (claude_sessions(LAYOUT["claude"][0]) + codex_sessions(LAYOUT["codex"][0])
            + gemini_sessions(LAYOUT["gemini"][0]) + opencode_sessions(LAYOUT["opencode"][0])
            + opencode_sessions(LAYOUT["opencode2"][0]) + aider_sessions(LAYOUT["aider"][0]))


# --------------------------------------------------------------------------- the queries
def load_queries(part: str) -> list[dict[str, Any]]:
    path = BENCH / f"queries_{part}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def holders(evidence: list[str], sessions: list[Session]) -> list[str]:
    """The sessions whose raw text holds every evidence string (case-insensitive grep)."""
    wanted = [e.lower() for e in evidence]
    return sorted(s.key for s in sessions if all(w in s.folded for w in wanted))


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check() -> list[str]:
    """Every query's recorded relevant set against a fresh grep, and its part: the problems found."""
    sessions = all_sessions()
    problems = []
    for part in PARTS:
        for q in load_queries(part):
            got = holders(q["evidence"], sessions)
            if got != sorted(q["relevant"]):
                problems.append(f"{part} {q['id']}: relevant {q['relevant']} but grep finds {got}")
            if (q["kind"] == "absent") != (not got):
                problems.append(f"{part} {q['id']}: kind {q['kind']} with {len(got)} relevant sessions")
    return problems


# --------------------------------------------------------------------------- the baselines
def fts5_rank(sessions: list[Session], queries: list[str], depth: int = 10) -> list[list[str]]:
    """SQLite FTS5 over messages (its own tokenizer and bm25()), any query word matching; a session
    ranks by its best message, as a peer's plain FTS5 memory answers."""
    con = sqlite3.connect(":memory:")
    con.execute("CREATE VIRTUAL TABLE m USING fts5(session UNINDEXED, body)")
    con.executemany("INSERT INTO m VALUES (?, ?)", ((s.key, msg) for s in sessions for msg in s.messages))
    ranked = []
    for q in queries:
        words = re.findall(r"\w+", q)
        if not words:
            ranked.append([])
            continue
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        # bm25() cannot be aggregated in SQL: the best messages first, the first of each session kept
        order: list[str] = []
        for (sid,) in con.execute("SELECT session FROM m WHERE m MATCH ? ORDER BY bm25(m) LIMIT 5000", (match,)):
            if sid not in order:
                order.append(sid)
                if len(order) == depth:
                    break
        ranked.append(order)
    con.close()
    return ranked


def dense_rank(sessions: list[Session], queries: list[str], depth: int = 10,
               cache: Path | None = None) -> list[list[str]]:
    """The offline MiniLM model alone: cosine of the query with each message (its first window),
    a session scored by its best message. `cache`: a .npy file keeping the message vectors."""
    import numpy as np
    from jacked.index.embed import get_dense_embedder

    embedder = get_dense_embedder()
    owners = [s.key for s in sessions for _ in s.messages]
    if cache and cache.exists() and len(np.load(cache)) == len(owners):
        vectors = np.load(cache)
    else:
        # The model reads one window (256 tokens); 1,000 characters fill it and keep tokenizing cheap.
        vectors = np.asarray(embedder.embed_documents([m[:1000] for s in sessions for m in s.messages]),
                             dtype=np.float32)
        if cache:
            np.save(cache, vectors)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-9
    ranked = []
    for q in queries:
        qv = np.asarray(embedder.embed_query(q), dtype=np.float32)
        sims = vectors @ (qv / (np.linalg.norm(qv) + 1e-9))
        best: dict[str, float] = {}
        for owner, sim in zip(owners, sims.tolist()):
            if sim > best.get(owner, -2.0):
                best[owner] = sim
        ranked.append(sorted(best, key=lambda k: (-best[k], k))[:depth])
    return ranked


def rrf(*rankings: list[list[str]], k: int = 60, depth: int = 10) -> list[list[str]]:
    fused = []
    for lists in zip(*rankings):
        score: Counter[str] = Counter()
        for ranked in lists:
            for i, key in enumerate(ranked):
                score[key] += 1 / (k + i + 1)
        fused.append(sorted(score, key=lambda key: (-score[key], key))[:depth])
    return fused


# --------------------------------------------------------------------------- jacked
def lay_out(work: Path) -> dict[str, str]:
    """Copy the data where each agent's source looks (tests copy what they write to, never the
    fixtures) and return the environment that points jacked there."""
    for name, (src, dst) in LAYOUT.items():
        target = work / dst.replace("xdg2", "xdg")  # both opencode stores in one data folder
        if name == "opencode2":
            for f in src.glob("opencode.db"):
                target.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, target / f.name)
        elif not target.exists():
            shutil.copytree(src, target)
    return {"CLAUDE_CONFIG_DIR": str(work / "claude"), "CODEX_HOME": str(work / "codex"),
            "GEMINI_CLI_HOME": str(work / "gemini-home"), "XDG_DATA_HOME": str(work / "xdg"),
            "JACKED_AIDER_ROOT": str(work / "aider"), "JACKED_HOME": str(work / "home")}


def result_key(result: dict[str, Any]) -> str:
    """The benchmark's key of a session jacked returns (Aider's ids hash the file's path, so an
    Aider session is named by its folder and header time instead)."""
    if result.get("agent") == "aider":
        return f"aider:{result.get('repo_name')}@{str(result.get('started_at') or '')[:19].replace('T', ' ')}"
    return f"{result.get('agent')}:{result['session_id']}"


def run_jacked(work: Path, queries: list[str]) -> tuple[list[list[str]], list[dict[str, Any]], dict[str, Any]]:
    env = lay_out(work)
    os.environ.update(env)
    from jacked.config import Settings
    from jacked.query.search import Searcher, SearchOptions
    from jacked.service import Jacked

    jk = Jacked(Settings(claude_dir=Path(env["CLAUDE_CONFIG_DIR"]), home=Path(env["JACKED_HOME"]),
                         user_name="bench-user"))
    t0 = time.perf_counter()
    report = jk.backfill()
    backfill = {"wall_s": round(time.perf_counter() - t0, 1), "report": str(report)}
    times, answers = [], []
    # One store open for every query, as the daemon holds it: `jk.search` alone would open and close
    # the shard around each query (~110 ms of ~170), and the p50 would measure that.
    jk.fresh()
    with jk.indexer.reading_store() as store:
        searcher = Searcher(jk.settings, store, jk.indexer.dense, jk.indexer.sparse, jk.indexer.catalog)
        searcher.search("warm up", SearchOptions(limit=10))
        for q in queries:
            t = time.perf_counter()
            answers.append(searcher.search(q, SearchOptions(limit=10)))
            times.append(time.perf_counter() - t)
        # Each of jacked's legs alone, on the same index: the fusion must beat both.
        backfill["legs"] = {leg: [[result_key(r) for r in searcher.search(
            q, SearchOptions(limit=10, weights={"lexical_share": share}))["results"]] for q in queries]
            for leg, share in LEGS.items()}
    backfill["search_p50_ms"] = round(statistics.median(times) * 1000, 1)
    backfill["index_mb"] = index_mb(work / "home")
    return [[result_key(r) for r in a["results"]] for a in answers], answers, backfill


# --------------------------------------------------------------------------- measuring
LEGS = {"jacked_lexical": 1.0, "jacked_dense": 0.0}
SYSTEMS = ("jacked", *LEGS, "bm25_raw", "fts5_messages", "dense", "rrf_bm25_dense")


def agent_of(query: dict[str, Any]) -> str:
    return query["agents"][0] if len(query["agents"]) == 1 else "mixed"


def figures(queries: list[dict[str, Any]], ranked: dict[str, list[list[str]]],
            answers: list[dict[str, Any]], sessions: list[Session]) -> dict[str, Any]:
    """Per part: each system's table per kind and per agent; jacked's confidence; exact strings."""
    out: dict[str, Any] = {}
    for part in (*PARTS, "all"):
        idx = [i for i, q in enumerate(queries) if part in ("all", q["part"])]
        answered = [i for i in idx if queries[i]["relevant"]]
        qs = [queries[i] for i in answered]
        part_out: dict[str, Any] = {"queries": len(idx), "answerable": len(answered)}
        for system in SYSTEMS:
            ranks = [first_rank(ranked[system][i], set(queries[i]["relevant"])) for i in answered]
            by_agent = table([{**q, "kind": agent_of(q)} for q in qs], ranks)
            part_out[system] = {"kind": table(qs, ranks), "agent": by_agent}
            if system == "jacked":
                unique = [r for q, r in zip(qs, ranks) if q["kind"] in ("exact_error", "identifier")
                          and len(holders([q["query"]], sessions)) == 1]
                part_out["unique_exact"] = {"n": len(unique), "rank1": sum(r == 1 for r in unique)}
                confidence: dict[str, Counter[str]] = {"first_right": Counter(), "first_wrong": Counter(),
                                                       "absent": Counter()}
                for i, r in zip(answered, ranks):
                    confidence["first_right" if r == 1 else "first_wrong"][answers[i].get("confidence", "?")] += 1
                for i in idx:
                    if not queries[i]["relevant"]:
                        confidence["absent"][answers[i].get("confidence", "?")] += 1
                part_out["confidence"] = {k: dict(sorted(v.items())) for k, v in confidence.items()}
        out[part] = part_out
    return out


def print_figures(fig: dict[str, Any]) -> None:
    names = {"jacked": "jacked", "jacked_lexical": "jacked lexical", "jacked_dense": "jacked dense", "bm25_raw": "BM25 raw", "fts5_messages": "FTS5 msgs", "dense": "dense",
             "rrf_bm25_dense": "RRF"}
    for part in (*PARTS, "all"):
        p = fig[part]
        print(f"\n== {part}: {p['queries']} queries ({p['answerable']} answerable); MRR / recall@1 / recall@5")
        for group in ("kind", "agent"):
            rows = sorted(p["jacked"][group], key=lambda k: (k == "all", k))
            print(f"  {group:12s} {'n':>4s} " + " ".join(f"{names[s]:>17s}" for s in SYSTEMS))
            for row in rows:
                cells = " ".join(f"{p[s][group][row]['mrr']:.3f}/{p[s][group][row]['r1']:.2f}/{p[s][group][row]['r5']:.2f}"
                                 .rjust(17) for s in SYSTEMS)
                print(f"  {row:12s} {p['jacked'][group][row]['n']:4d} {cells}")
        ue = p["unique_exact"]
        print(f"  exact strings held by one session: {ue['rank1']}/{ue['n']} at rank 1 (jacked)")
        print("  jacked's confidence: " + "; ".join(f"{k} {v}" for k, v in p["confidence"].items() if v))


def run(args: argparse.Namespace) -> int:
    queries = [{**q, "part": part} for part in PARTS for q in load_queries(part)
               if args.part in ("both", part)]
    sessions = all_sessions()
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="jacked-memory-bench-"))
    texts = [q["query"] for q in queries]
    ranked: dict[str, list[list[str]]] = {}
    saved = work / "jacked_answers.json"
    if args.reuse and saved.exists():  # measuring the baselines again on jacked's answers of a run
        ranked["jacked"], answers, costs = json.loads(saved.read_text())
        assert len(answers) == len(texts), "--reuse: the saved answers are of other queries"
    else:
        ranked["jacked"], answers, costs = run_jacked(work, texts)
        saved.write_text(json.dumps([ranked["jacked"], answers, costs]))
    ranked.update(costs.pop("legs"))
    ranked["bm25_raw"] = bm25_rank({s.key: s.text for s in sessions}, texts)
    ranked["fts5_messages"] = fts5_rank(sessions, texts)
    ranked["dense"] = dense_rank(sessions, texts, cache=work / "dense_messages.npy")
    ranked["rrf_bm25_dense"] = rrf([r[:10] for r in ranked["bm25_raw"]], ranked["dense"])
    known = {s.key for s in sessions}
    strays = sorted({k for r in ranked["jacked"] for k in r} - known)
    fig = {"sessions": len(sessions), "agents": dict(Counter(s.agent for s in sessions)), "costs": costs,
           "unmatched_results": strays[:10], **figures(queries, ranked, answers, sessions)}
    if args.json:
        print(json.dumps(fig, indent=1))
    else:
        print(f"{len(sessions)} sessions {fig['agents']}; jacked backfill {costs['wall_s']} s, "
              f"search p50 {costs['search_p50_ms']} ms, index {costs['index_mb']} MB")
        if strays:
            print(f"  results jacked returned that name no benchmark session: {strays[:5]}")
        print_figures(fig)
    if args.misses:
        for i, q in enumerate(queries):
            r = first_rank(ranked["jacked"][i], set(q["relevant"]))
            if q["relevant"] and r != 1:
                print(f"MISS {q['part']:7s} {q['id']:10s} rank {r} (bm25 {first_rank(ranked['bm25_raw'][i], set(q['relevant']))})"
                      f" {q['query'][:60]!r} top {[k[:24] for k in ranked['jacked'][i][:3]]}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("sessions", help="the sessions and their raw sizes")
    sub.add_parser("check", help="every query's relevant set, by grep")
    r = sub.add_parser("run", help="jacked and the baselines on the queries")
    r.add_argument("--part", choices=[*PARTS, "both"], default="both")
    r.add_argument("--work", help="folder for the data copy and JACKED_HOME (default: a temp folder)")
    r.add_argument("--reuse", action="store_true", help="jacked's answers saved in --work by a run before")
    r.add_argument("--json", action="store_true")
    r.add_argument("--misses", action="store_true", help="list the queries jacked does not rank first")
    args = ap.parse_args(argv)
    if args.cmd == "sessions":
        for s in all_sessions():
            print(f"{s.key}\t{len(s.messages)}\t{len(s.text)}")
        return 0
    if args.cmd == "check":
        problems = check()
        print("\n".join(problems) or "every query's relevant set is what grep finds")
        return 1 if problems else 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
