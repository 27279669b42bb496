"""Decision and feedback events on the generated bank: every planted one found, none invented.

    python scripts/decisions_bank_eval.py [--sessions 60] [--seed 1] [--out DIR]

Runs scripts/gen_corpus.py in this process with its session builder watched, so what it
plants is known exactly: plan approvals (an ExitPlanMode call it approves), tool rejections (an
Edit it refuses with "The user doesn't want to proceed…", followed by "[Request interrupted by
user for tool use]") and interruptions ("[Request interrupted by user]"). truth.json lists the
same calls among each turn's invocations (approved plans as ExitPlanMode calls, refused edits as
failed Edit calls) but does not mark interruptions or refusals as such: the watch does.

Then scans the corpus with jacked and compares, per (session, turn, kind, tool_use_id):
- plan approval  → a `decision` of kind plan, outcome approved;
- rejection      → a `feedback` of kind tool_rejected (the interruption line after it is the
                   same act: `stopped_turn`, no second event);
- interruption   → a `feedback` of kind interrupted.
Every other decision or feedback event found is reported (the generator plants no questions,
corrections or re-planned todo lists).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
GEN = ROOT / "scripts" / "gen_corpus.py"

Key = tuple[str, int, str, Any]  # (session id, turn index, kind, tool_use_id)


def _load_generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_corpus_watched", GEN)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def generate(out: Path, sessions: int, seed: int) -> tuple[dict[str, Any], list[Key]]:
    """Write a corpus and return (truth.json, what was planted)."""
    gen = _load_generator()
    planted: list[Key] = []
    builder = gen.Builder
    interrupt, result = builder.interrupt, builder.result

    def watched_interrupt(self: Any, for_tool: bool = False) -> Any:
        if not for_tool and not self.sidechain and self.cur:  # (for tool use: part of a rejection)
            planted.append((self.sid, self.cur["index"], "interrupted", None))
        return interrupt(self, for_tool)

    def watched_result(self: Any, t: dict[str, Any], content: Any, tur: Any = gen._MISSING, is_error: bool = False) -> Any:
        if not self.sidechain and self.cur:
            if is_error and content == gen.REJECT:
                planted.append((self.sid, self.cur["index"], "tool_rejected", t["tid"]))
            elif t["name"] == "ExitPlanMode" and not is_error:
                planted.append((self.sid, self.cur["index"], "plan_approved", t["tid"]))
        return result(self, t, content, tur, is_error)

    builder.interrupt, builder.result = watched_interrupt, watched_result
    try:
        truth = gen.generate(str(out), sessions, seed, "public", True)
    finally:
        builder.interrupt, builder.result = interrupt, result
    return truth, planted


def found_events(claude_dir: Path) -> tuple[list[Key], list[dict[str, Any]]]:
    """(the events comparable with what is planted, every other decision or feedback event)."""
    from jacked.catalog import Catalog
    from jacked.ingest.scan import Scanner
    from jacked.query.timeline import TimelineQuery, timeline

    with tempfile.TemporaryDirectory() as tmp:
        cat = Catalog(Path(tmp) / "catalog.db")
        Scanner(cat, claude_dir, archive=False).scan()
        events = timeline(cat, TimelineQuery(types=["decision", "feedback"]))
        cat.close()
    keys: list[Key] = []
    other = []
    for e in events:
        kind = e.get("kind")
        if e["type"] == "decision" and kind == "plan" and e.get("outcome") == "approved":
            keys.append((e["session_id"], e["turn_index"], "plan_approved", e.get("tool_use_id")))
        elif e["type"] == "feedback" and kind == "tool_rejected":
            keys.append((e["session_id"], e["turn_index"], "tool_rejected", e.get("tool_use_id")))
        elif e["type"] == "feedback" and kind == "interrupted":
            keys.append((e["session_id"], e["turn_index"], "interrupted", e.get("tool_use_id")))
        else:
            other.append(e)
    return keys, other


def in_truth(truth: dict[str, Any], planted: list[Key]) -> list[Key]:
    """Planted calls that truth.json does not list as such (an approved ExitPlanMode call, a failed Edit)."""
    calls = {(s["session_id"], t["index"], i["tool_use_id"]): i for s in truth["sessions"] for t in s["turns"]
             for i in t["invocations"]}
    missing = []
    for sid, turn, kind, tid in planted:
        if kind == "interrupted":
            continue
        inv = calls.get((sid, turn, tid))
        want = ("ExitPlanMode", False) if kind == "plan_approved" else ("Edit", True)
        if inv is None or (inv["tool_name"], inv["is_error"]) != want:
            missing.append((sid, turn, kind, tid))
    return missing


def compare(planted: list[Key], found: list[Key]) -> dict[str, Any]:
    p, f = Counter(planted), Counter(found)
    by_kind = {}
    for kind in ("plan_approved", "tool_rejected", "interrupted"):
        pk = Counter({k: v for k, v in p.items() if k[2] == kind})
        fk = Counter({k: v for k, v in f.items() if k[2] == kind})
        by_kind[kind] = {"planted": sum(pk.values()), "found": sum((pk & fk).values()),
                         "missed": sorted((pk - fk).elements()), "invented": sorted((fk - pk).elements())}
    return by_kind


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, help="where the corpus goes (default: a temporary folder)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = a.out or Path(tmp) / "bank"
        truth, planted = generate(out, a.sessions, a.seed)
        found, other = found_events(out)
    result = compare(planted, found)
    print(f"{a.sessions} sessions, seed {a.seed}: {len(planted)} planted")
    ok = True
    for kind, r in result.items():
        ok &= not r["missed"] and not r["invented"]
        print(f"  {kind:<14} planted {r['planted']:>3}  found {r['found']:>3}  missed {len(r['missed'])}  "
              f"invented {len(r['invented'])}")
        for k in r["missed"] + r["invented"]:
            print(f"      {k}")
    absent = in_truth(truth, planted)
    print(f"  planted calls listed in truth.json as such: {len(planted) - len(absent) - sum(k[2] == 'interrupted' for k in planted)}"
          f" of {sum(k[2] != 'interrupted' for k in planted)}")
    kinds = Counter((e["type"], e.get("kind")) for e in other)
    print(f"  other decision/feedback events: {dict(kinds) or 'none'}")
    for e in other[:10]:
        print("      " + json.dumps({k: e.get(k) for k in ("session_id", "turn_index", "type", "kind", "text")})[:200])
    print("PASS" if ok and not absent else "FAIL")


if __name__ == "__main__":
    main()
