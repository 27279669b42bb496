"""A mixed generated corpus (Claude Code and the thirteen other agents jacked reads) and how jacked reads
and finds each agent's sessions.

    python scripts/agents_eval.py --out /tmp/mixed [--sessions 120] [--seed 7] [--json]

Build: `scripts/gen_corpus.py` writes a Claude directory with its truth; then all but one in
len(AGENTS) + 1 sessions are rewritten, one agent each, in that agent's own format by the writers of
`tests/agents/write_<agent>.py`, from a neutral spec read straight from the generated JSONL (no
jacked code): prompts, assistant texts, tool calls (read, write, edit, shell, search) with their
parallel batches, outputs, errors and tokens. What the agents have no place for (a subagent's
report, a plan, a compaction summary) goes into the turn's assistant text, so every session keeps
the words its queries look for. The Claude files of a rewritten session are removed.

Measure: one backfill over all four folders, then per agent (a) turns exact: every session's
turn count, prompts (a planted secret reads as its redaction mark), calls and errors as the spec
says; (b) the truth's queries, as `search --agent A` asks them and in the mixed ranking:
recall@5 (of a query's relevant sessions of that agent, the share in the top 5, out of at most
5) and MRR (the first relevant session's rank), beside the Claude figures of the same run.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
GEN_CORPUS = REPO / "scripts" / "gen_corpus.py"
AGENTS = ("codex", "gemini", "opencode", "aider", "qwen", "cline", "roo", "kilo", "copilot", "cursor", "continue",
          "openhands", "goose")
KINDS = {"Read": "read", "Write": "write", "Edit": "edit", "MultiEdit": "edit", "Bash": "shell", "Grep": "search",
         "Glob": "search"}


def agent_of(session_id: str) -> str:
    """All sessions but one in len(AGENTS) + 1 go to another agent, by a hash of the id (stable across runs)."""
    n = int(hashlib.sha256(session_id.encode()).hexdigest(), 16) % (len(AGENTS) + 1)
    return "claude" if n == 0 else AGENTS[n - 1]


def agent_env(out: Path) -> dict[str, str]:
    """The variables that point each agent's source at its folder of the corpus."""
    return {"CLAUDE_CONFIG_DIR": str(out / "claude"), "CODEX_HOME": str(out / "codex"),
            "GEMINI_CLI_HOME": str(out / "gemini-home"), "XDG_DATA_HOME": str(out / "xdg-data"),
            "JACKED_AIDER_ROOT": str(out / "aider"), "QWEN_RUNTIME_DIR": str(out / "qwen"),
            **{f"JACKED_{a.upper()}_DIR": str(out / a) for a in ("cline", "roo", "kilo")}, "COPILOT_HOME": str(out / "copilot"),
            "JACKED_CURSOR_DIR": str(out / "cursor" / "User"),
            "CONTINUE_GLOBAL_DIR": str(out / "continue"),
            "JACKED_OPENHANDS_DIR": str(out / "openhands"),
            "JACKED_GOOSE_DIR": str(out / "goose"),
            "JACKED_HOME": str(out / "jacked-home")}


# --------------------------------------------------------------------------- the neutral spec
def _records(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return ""


def spec_of(truth: dict[str, Any], claude: Path) -> dict[str, Any]:
    """The neutral spec of a generated session, from its truth entry and its raw JSONL."""
    recs = _records(claude / truth["file"])
    calls: dict[str, dict[str, Any]] = {}
    results: dict[str, tuple[str, bool]] = {}
    texts: dict[str, list[str]] = defaultdict(list)  # prompt line uuid → the assistant texts after it
    usage: dict[str, dict[str, Any]] = {}
    msg_turn: dict[str, str] = {}
    current = None
    for r in recs:
        if r.get("isSidechain"):
            continue
        msg = r.get("message") if isinstance(r.get("message"), dict) else {}
        if r.get("type") == "user":
            content = msg.get("content")
            if isinstance(content, str) or (isinstance(content, list) and not any(
                    isinstance(b, dict) and b.get("type") == "tool_result" for b in content)):
                current = _text(content)
            for b in content if isinstance(content, list) else []:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    results[b.get("tool_use_id")] = (_text(b.get("content")), bool(b.get("is_error")))
        elif r.get("type") == "assistant":
            mid = msg.get("id") or r.get("uuid")
            if isinstance(msg.get("usage"), dict):
                usage[mid] = msg["usage"]
            msg_turn[mid] = current or ""
            for b in msg.get("content") or []:
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "text" and b.get("text"):
                    texts[current or ""].append(b["text"])
                elif b.get("type") == "tool_use":
                    calls[b.get("id")] = {"name": b.get("name"), "input": b.get("input") or {}}
    extra = [s.get("summary_text") or "" for s in truth.get("subagents") or []]
    extra += list(truth.get("compact_summaries") or []) + list(truth.get("away_summaries") or [])
    plan = (claude / truth["plan_file"]).read_text() if truth.get("plan_file") else ""
    turns = []
    for t in truth["turns"]:
        if not t.get("prompt") or t.get("is_slash_command"):
            continue
        out_calls = []
        for inv in t["invocations"]:
            kind = KINDS.get(inv["tool_name"])
            call = calls.get(inv["tool_use_id"])
            if kind is None or call is None:
                continue
            inp = call["input"]
            output, is_error = results.get(inv["tool_use_id"], ("", inv["is_error"]))
            out_calls.append({
                "batch": inv["sequence"], "kind": kind, "path": inp.get("file_path") or inp.get("path"),
                "command": inp.get("command") or (inp.get("pattern") if kind == "search" else None),
                "content": inp.get("content"), "old": inp.get("old_string"), "new": inp.get("new_string"),
                "output": output, "error": bool(inv["is_error"]),
                "exit_code": (1 if inv["is_error"] else 0) if kind == "shell" else None})
        turns.append({"prompt": t["prompt"], "at": t.get("started_at") or truth["started_at"],
                      "assistant": "\n\n".join(texts.get(t["prompt"], [])), "calls": out_calls,
                      "input_tokens": 0, "output_tokens": 0})
    for mid, u in usage.items():  # tokens of each response once, in the turn of its prompt
        for st in turns:
            if st["prompt"] == msg_turn.get(mid):
                st["input_tokens"] += int(u.get("input_tokens") or 0) + int(u.get("cache_read_input_tokens") or 0) \
                    + int(u.get("cache_creation_input_tokens") or 0)
                st["output_tokens"] += int(u.get("output_tokens") or 0)
                break
    if turns:
        tail = "\n\n".join(x for x in [plan, *extra] if x)
        if tail:
            turns[-1]["assistant"] = (turns[-1]["assistant"] + "\n\n" + tail).strip()
    return {"session_id": truth["session_id"], "cwd": truth["cwd"], "started_at": truth["started_at"],
            "model": "gpt-5-codex", "title": None, "turns": turns}


def _remove_claude_files(claude: Path, truth: dict[str, Any]) -> None:
    main = claude / truth["file"]
    sid = truth["session_id"]
    main.unlink(missing_ok=True)
    shutil.rmtree(main.parent / sid, ignore_errors=True)
    for f in main.parent.glob("agent-*.jsonl"):
        first = _records(f)[:1]
        if first and first[0].get("sessionId") == sid:
            f.unlink()


def build(out: Path, sessions: int, seed: int) -> dict[str, Any]:
    """Write the mixed corpus under `out` and its truth (`out/mixed_truth.json`)."""
    sys.path.insert(0, str(REPO / "tests"))
    from agents import (  # the writers live with the tests
        write_aider, write_cline, write_codex, write_continue, write_copilot, write_cursor, write_gemini, write_goose,
        write_opencode, write_openhands, write_qwen)

    writers = {"codex": write_codex, "gemini": write_gemini, "opencode": write_opencode, "aider": write_aider, "qwen": write_qwen,
               "cline": write_cline, "roo": write_cline, "kilo": write_cline, "copilot": write_copilot, "cursor": write_cursor,
               "continue": write_continue, "openhands": write_openhands, "goose": write_goose}
    if out.exists():
        shutil.rmtree(out)
    claude = out / "claude"
    subprocess.run([sys.executable, str(GEN_CORPUS), "--out", str(claude), "--sessions",
                    str(sessions), "--seed", str(seed), "--no-edge-cases"], check=True, capture_output=True)
    truth = json.loads((claude / "truth.json").read_text())
    env = agent_env(out)
    from jacked.sources.registry import SOURCES

    mixed: dict[str, Any] = {"sessions": {}, "queries": truth["queries"]}
    renamed: dict[str, str] = {}
    for t in truth["sessions"]:
        agent = agent_of(t["session_id"])
        if agent == "claude":
            turns = [{"prompt": x["prompt"], "calls": x["tool_call_count"], "errors": x["tool_error_count"]}
                     for x in t["turns"] if x.get("prompt") is not None]
            mixed["sessions"][t["session_id"]] = {"agent": "claude", "turns": turns, "secrets": t.get("secrets") or []}
            continue
        spec = spec_of(t, claude)
        if not spec["turns"]:
            continue  # nothing a human typed: no session for the other agents
        written = writers[agent].write_session(SOURCES[agent].default_root(env), spec)
        # an agent that names its sessions itself (Aider) says under which id jacked finds it
        sid = written if isinstance(written, str) else t["session_id"]
        renamed[t["session_id"]] = sid
        # what the agent's files can tell of each turn (Aider has no search tool, ...)
        expected = getattr(writers[agent], "expected_calls", None)
        _remove_claude_files(claude, t)
        mixed["sessions"][sid] = {"agent": agent, "turns": [
            {"prompt": x["prompt"], **dict(zip(("calls", "errors"), expected(x) if expected else
                                               (len(x["calls"]), sum(c["error"] for c in x["calls"]))))}
            for x in spec["turns"]], "secrets": t.get("secrets") or []}
    for q in mixed["queries"]:
        q["relevant_session_ids"] = [renamed.get(s, s) for s in q["relevant_session_ids"]]
    (out / "mixed_truth.json").write_text(json.dumps(mixed, indent=1))
    return mixed


# --------------------------------------------------------------------------- measuring
def evaluate(out: Path) -> dict[str, Any]:
    """Backfill the corpus, then turns exact and search figures per agent."""
    mixed = json.loads((out / "mixed_truth.json").read_text())
    os.environ.update(agent_env(out))
    from jacked.config import Settings
    from jacked.query.search import SearchOptions
    from jacked.service import Jacked

    jk = Jacked(Settings(claude_dir=out / "claude", home=out / "jacked-home", user_name="eval"))
    jk.backfill()
    per: dict[str, dict[str, Any]] = defaultdict(lambda: {"sessions": 0, "turns_exact": 0, "mismatches": []})
    for sid, want in mixed["sessions"].items():
        a = per[want["agent"]]
        a["sessions"] += 1
        try:
            got = jk.turns(sid)["turns"]
        except Exception as e:
            a["mismatches"].append(f"{sid[:8]}: {e}")
            continue
        got = [t for t in got if t.get("prompt") is not None and t.get("turn_index", t.get("index", 1)) >= 1]
        seen = [{"prompt": t["prompt"], "calls": t["metrics"]["tool_call_count"],
                 "errors": t["metrics"]["tool_error_count"]} for t in got]
        if len(seen) == len(want["turns"]) and all(
                s["calls"] == w["calls"] and s["errors"] == w["errors"]
                and _same_prompt(w["prompt"], s["prompt"], want.get("secrets") or [])
                for s, w in zip(seen, want["turns"])):
            a["turns_exact"] += 1
        elif len(a["mismatches"]) < 5:
            a["mismatches"].append(f"{sid[:8]}: {len(seen)} turns vs {len(want['turns'])}")
    queries = [q["query"] for q in mixed["queries"]]
    mixed_answers = jk.search_many(queries, SearchOptions(limit=10))
    for agent, a in per.items():
        # As a user asks for one agent's sessions (`search --agent A`), and in the mixed ranking
        # where every agent's sessions compete.
        own = jk.search_many(queries, SearchOptions(limit=10, filters={"agent": agent}))
        for label, answers in (("", own), ("mixed_", mixed_answers)):
            a.update(_ranked(mixed, answers, agent, label))
    # Every query in the mixed ranking with all its relevant sessions, whatever their agent: the
    # per-agent mixed rows share one top 5, so one agent's gain there is often another's loss.
    per["all"] = {"sessions": len(mixed["sessions"]), "turns_exact": sum(a["turns_exact"] for a in per.values()),
                  "mismatches": [], "mrr": None, "recall@5": None, **_ranked(mixed, mixed_answers, None, "mixed_")}
    return dict(per)


def _ranked(mixed: dict[str, Any], answers: list[Any], agent: str | None, label: str) -> dict[str, Any]:
    """MRR and recall@5 of the queries with relevant sessions of `agent` (None: of any agent)."""
    ranks, hits = [], []
    for q, ans in zip(mixed["queries"], answers):
        order = [r["session_id"] for r in ans["results"]]
        relevant = [s for s in q["relevant_session_ids"]
                    if agent is None or mixed["sessions"].get(s, {}).get("agent") == agent]
        if not relevant:
            continue
        first = next((i for i, s in enumerate(order) if s in relevant), None)
        ranks.append(0.0 if first is None else 1.0 / (first + 1))
        # of the relevant sessions, those in the top 5 (at most 5 can be)
        hits.append(sum(s in order[:5] for s in relevant) / min(5, len(relevant)))
    return {f"{label}mrr": round(sum(ranks) / len(ranks), 3) if ranks else None,
            f"{label}recall@5": round(sum(hits) / len(hits), 3) if hits else None, "queries": len(ranks)}


def _as_typed(line: str) -> str:
    """A Claude slash-command line as the user typed it ("/name args"): the generated truth keeps
    the markup Claude Code writes, jacked shows what was typed."""
    name = re.search(r"<command-name>(.*?)</command-name>", line, re.S)
    if name is None:
        return line
    args = re.search(r"<command-args>(.*?)</command-args>", line, re.S)
    command = "/" + name.group(1).strip().lstrip("/")
    return f"{command} {args.group(1).strip()}".strip() if args else command


def _same_prompt(want: str, seen: str, secrets: list[str]) -> bool:
    """The prompt as typed, but for planted secrets: where one stood, jacked shows a redaction mark
    (maybe with part of it, e.g. a URL around its password) — the one difference allowed."""
    want = _as_typed(want)
    if want == seen:
        return True
    pattern, rest = "", want
    for s in secrets:
        if s in rest:
            before, _, rest = rest.partition(s)
            pattern += re.escape(before) + r".*?\[REDACTED:[a-z_]+\].*?"
    return bool(pattern) and re.fullmatch(pattern + re.escape(rest), seen, re.S) is not None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--sessions", type=int, default=120)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--reuse", action="store_true", help="measure the corpus already in --out")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not args.reuse:
        build(args.out, args.sessions, args.seed)
        shutil.rmtree(args.out / "jacked-home", ignore_errors=True)
    figures = evaluate(args.out)
    if args.json:
        print(json.dumps(figures, indent=1))
        return
    print(f"{'agent':10} {'sessions':>8} {'turns exact':>12} {'queries':>8} {'recall@5':>9} {'MRR':>6}   "
          f"mixed: {'recall@5':>9} {'MRR':>6}")
    for agent in ("claude", *AGENTS, "all"):
        a = figures.get(agent)
        if a:
            print(f"{agent:10} {a['sessions']:8d} {a['turns_exact']:12d} {a['queries']:8d} {a['recall@5']!s:>9} "
                  f"{a['mrr']!s:>6}          {a['mixed_recall@5']!s:>9} {a['mixed_mrr']!s:>6}")
            for m in a["mismatches"]:
                print(f"    {m}")


if __name__ == "__main__":
    main()
