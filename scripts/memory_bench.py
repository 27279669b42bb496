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
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from search_eval import bm25_rank, file_text, first_rank, real_session_files, strings_in, table  # noqa: E402

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

    @property
    def text(self) -> str:
        """The raw text grep sees (the same as `search_eval.file_text` over the session's files)."""
        return "\n".join(self.messages)


# --------------------------------------------------------------------------- the sessions
def file_messages(path: Path) -> list[str]:
    """A file's records: each JSONL line's strings (as `search_eval.file_text` reads them), or a
    Markdown file whole."""
    if path.suffix == ".md":
        return [file_text(path)]
    out = []
    with path.open("rb") as fh:
        for line in fh:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and isinstance(rec.get("message"), str):
                try:  # some lines write `message` as a JSON string
                    rec["message"] = json.loads(rec["message"])
                except ValueError:
                    pass
            texts = strings_in(rec)
            if texts:
                out.append("\n".join(texts))
    return out


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
    return sorted(s.key for s in sessions if all(w in s.text.lower() for w in wanted))


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
