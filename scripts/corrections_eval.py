"""How well the correction rule (jacked.sources.decisions) finds prompts that correct the turn before.

    python scripts/corrections_eval.py [--labels FILE] [--claude-dir DIR] [--bank DIR]

Reads the hand labels (tests/fixtures/corrections_labels.jsonl: one line per prompt of the real
fixtures, `session_id`, `turn`, `label` correction|not, `why`), scans the Claude directory they
come from (the real fixtures by default) into a throwaway catalog, and prints precision and
recall of:

- every cue group together (none dropped);
- each cue group alone (true / false positives), which decides `DROPPED_CUES`;
- the rule as jacked runs it: the `correction` feedback events the scan emitted (kept groups only).

With `--bank DIR` (repeatable; corpora of scripts/gen_corpus.py, whose prompts correct
nothing) every firing there is a false positive: per cue group, and of the events emitted.
Precision is shown with its 95% Wilson lower bound: the labelled positives are few.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from jacked.catalog import Catalog  # noqa: E402  # after the sys.path entry for the checkout
from jacked.ingest.scan import Scanner  # noqa: E402  # after the sys.path entry for the checkout
from jacked.sources.decisions import CUE_GROUPS, DROPPED_CUES, correction_cues  # noqa: E402  # after the sys.path entry for the checkout

REAL = ROOT / "tests" / "fixtures" / "claude-code" / "real"
LABELS = ROOT / "tests" / "fixtures" / "corrections_labels.jsonl"


def wilson_low(k: int, n: int, z: float = 1.96) -> float:
    if n == 0:
        return 0.0
    p = k / n
    return (p + z * z / (2 * n) - z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))) / (1 + z * z / n)


def scan(claude_dir: Path, home: Path) -> Catalog:
    cat = Catalog(home / "catalog.db")
    Scanner(cat, claude_dir, archive=False).scan()
    return cat


def prompts(cat: Catalog) -> dict[tuple[str, int], dict[str, Any]]:
    """(session, turn) → the prompt, whether the rule may look at it (a typed prompt after a turn
    in which the agent did something) and whether jacked emitted a correction for it."""
    emitted = {(r["session_id"], r["turn_index"]) for r in cat.db.execute(
        "SELECT session_id, turn_index, data FROM turn_events WHERE type = 'feedback'")
        if json.loads(r["data"]).get("kind") == "correction"}
    out = {}
    for s in cat.list_sessions():
        turns = cat.turn_rows(s["session_id"])
        for i, t in enumerate(turns):
            if t["prompt"] is None or t["turn_index"] < 1:
                continue
            prev = turns[i - 1] if i else None
            eligible = (not t["is_slash_command"] and prev is not None
                        and bool(prev["assistant_text"] or prev["tool_call_count"]))
            key = (s["session_id"], t["turn_index"])
            out[key] = {"prompt": t["prompt"], "eligible": eligible, "emitted": key in emitted}
    return out


def score(pred: set[Any], gold: set[Any]) -> str:
    tp, fp, fn = len(pred & gold), len(pred - gold), len(gold - pred)
    p = tp / (tp + fp) if tp + fp else float("nan")
    r = tp / (tp + fn) if tp + fn else float("nan")
    return (f"precision {p:.3f} ({tp}/{tp + fp}, 95% lower bound {wilson_low(tp, tp + fp):.2f})  "
            f"recall {r:.3f} ({tp}/{tp + fn})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--labels", type=Path, default=LABELS)
    ap.add_argument("--claude-dir", type=Path, default=REAL)
    ap.add_argument("--bank", type=Path, action="append", default=[],
                    help="a gen_corpus.py corpus: every correction found there is false (repeatable)")
    a = ap.parse_args()
    labels = [json.loads(line) for line in a.labels.read_text().splitlines() if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        found = prompts(scan(a.claude_dir, Path(tmp)))
    missing = [(x["session_id"], x["turn"]) for x in labels if (x["session_id"], x["turn"]) not in found]
    if missing:
        sys.exit(f"labelled prompts not found in {a.claude_dir}: {missing[:5]}")
    gold = {(x["session_id"], x["turn"]) for x in labels if x["label"] == "correction"}
    keys = [(x["session_id"], x["turn"]) for x in labels]
    print(f"{len(keys)} labelled prompts, {len(gold)} corrections "
          f"({sum(found[k]['eligible'] for k in keys)} follow a turn in which the agent worked)")
    every: set[Any] = set()
    by_group: dict[str, set[Any]] = {name: set() for name, _ in CUE_GROUPS}
    for k in keys:
        if not found[k]["eligible"]:
            continue
        for name, _ in correction_cues(found[k]["prompt"], dropped=set()):
            by_group[name].add(k)
            every.add(k)
    banks = []
    for bank_dir in a.bank:
        with tempfile.TemporaryDirectory() as tmp:
            banks.append((bank_dir, prompts(scan(bank_dir, Path(tmp)))))
    bank_fp = {name: 0 for name, _ in CUE_GROUPS}
    for _, bank in banks:
        for v in bank.values():
            if v["eligible"]:
                for name, _ in correction_cues(v["prompt"], dropped=set()):
                    bank_fp[name] += 1
    print(f"\nevery cue group together ({len(CUE_GROUPS)}, none dropped):  {score(every, gold)}")
    print("\nper cue group: labels true / false positives" + (", generated bank false positives" if banks else ""))
    for name, _ in CUE_GROUPS:
        hits = by_group[name]
        mark = "dropped" if name in DROPPED_CUES else "kept"
        print(f"  {name:<18} {len(hits & gold):>3} / {len(hits - gold):<3}" + (f" {bank_fp[name]:>5}" if banks else "")
              + f"   {mark}")
    emitted = {k for k in keys if found[k]["emitted"]}
    print(f"\nrule as jacked runs it (kept groups; `correction` feedback events):  {score(emitted, gold)}")
    for k in sorted(emitted - gold):
        print(f"  false positive {k[0][:8]} #{k[1]}: {' '.join(found[k]['prompt'].split())[:100]}")
    for k in sorted(gold - emitted):
        print(f"  missed         {k[0][:8]} #{k[1]}: {' '.join(found[k]['prompt'].split())[:100]}")
    for bank_dir, bank in banks:
        fps = [k for k, v in bank.items() if v["emitted"]]
        print(f"\ngenerated bank {bank_dir}: {sum(v['eligible'] for v in bank.values())} prompts after agent work, "
              f"{len(fps)} corrections emitted (all false)")
        for k in fps[:10]:
            print(f"  false positive {k[0][:8]} #{k[1]}: {' '.join(bank[k]['prompt'].split())[:100]}")


if __name__ == "__main__":
    main()
