"""How far a rule over the recall hook's own signals could lift its hit rate: the ceiling, measured.

    python scripts/prompt_recall_ceiling.py --home DIR [--dump FILE] [prompt_recall_eval.py's other options]

Runs every label of `prompt_recall_eval.py` through the hook as that script does, keeping what the
hook saw: its in-repo search (as the index stood then) and the repo's recent sessions. For each
label, the search's best session other than the current one gives the signals a new cue could read:
its grade by words and meaning alone (`words_confidence`), its lead over the second session's score,
how many hours before the prompt it ended, its place among the repo's recent sessions (0: the
latest), and the prompt's length in words. A rule is a conjunction of thresholds on them; where it
fires the hook would also name that session. Scored like the eval: a follow-up is hit if the hook hit
it or the rule fires and the session is one it follows up; a prompt that follows up nothing is a false
injection if the hook injected or the rule fires.

Prints the hook's figures, the most any rule of the grid reaches with 0, 1, 2 or 3 false injections
more, overall and on the parts the shipped cues were chosen on (aug12, aug19, the real and written
Claude Code prompts) against the others, the rule chosen on those parts run on the others, and the
upper bound: follow-ups whose best session is right. `--dump FILE`: every label's outcome and signals
as JSON Lines.
"""
from __future__ import annotations

import itertools
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import prompt_recall_eval  # a script beside this one

CHOSEN_PARTS = {"aug12", "aug19", "real", "written"}
GRADES = [("high",), ("high", "medium"), ("high", "medium", "low")]
LATEST_RANKS = [0, 1, 2, 5, 10, None]  # None: any, or not among the recent sessions
HOURS = [0.25, 0.5, 1, 3, 8, 24, None]
LEADS = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]
MAX_WORDS = [8, 15, 30, None]


def _ts(value: Any) -> datetime | None:
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")) if value else None


def capture() -> list[dict[str, Any]]:
    """Patch the hook to record what it saw; returns the list it fills."""
    import jacked.query.prompt_recall as hook

    seen: list[dict[str, Any]] = []
    plain = hook.prompt_recall

    def recording(prompt: str, repo: str | None, search: Any, *, recent: Any = None, **kw: Any) -> dict[str, Any]:
        rec: dict[str, Any] = {"found": [], "works": [], "session_id": kw.get("session_id"), "until": kw.get("until")}

        def searching(query: str, where: str | None) -> list[dict[str, Any]]:
            out = search(query, where)
            if where and not rec["found"]:
                rec["found"] = [{k: r.get(k) for k in ("session_id", "score", "words_confidence", "confidence",
                                                        "timestamp", "started_at", "also")} for r in out]
            return out

        def recently(*args: Any) -> list[dict[str, Any]]:
            out = recent(*args)
            rec["works"] = [w["session_id"] for w in out]
            return out

        said = plain(prompt, repo, searching, recent=recently if recent else None, **kw)
        rec["words"] = len(prompt.split())
        seen.append(rec)
        return said

    hook.prompt_recall = recording  # the service looks it up at call time
    return seen


def signals(rec: dict[str, Any]) -> dict[str, Any]:
    sid, until = rec["session_id"], rec["until"]
    found = [r for r in rec["found"] if r["session_id"] != sid and not (until and str(r.get("started_at") or "") > until)]
    works = [w for w in rec["works"] if w != sid]
    if not found:
        return {"best": None}
    best = found[0]
    ended, at = _ts(best.get("timestamp")), _ts(until)
    return {"best": best["session_id"], "grade": best.get("words_confidence") or best.get("confidence"),
            "lead": (best["score"] or 0) - (found[1]["score"] or 0 if len(found) > 1 else 0),
            "hours": (at - ended).total_seconds() / 3600 if ended and at else None,
            "latest_rank": works.index(best["session_id"]) if best["session_id"] in works else None,
            "words": rec["words"]}


def fires(s: dict[str, Any], grades: tuple[str, ...], rank: int | None, hours: float | None, lead: float,
          words: int | None) -> bool:
    return bool(s["best"]) and s["grade"] in grades and s["lead"] >= lead \
        and (rank is None or (s["latest_rank"] is not None and s["latest_rank"] <= rank)) \
        and (hours is None or (s["hours"] is not None and s["hours"] <= hours)) \
        and (words is None or s["words"] <= words)


def score(rows: list[dict[str, Any]], rule: tuple[Any, ...] | None) -> tuple[int, int]:
    hits = false = 0
    for r in rows:
        on = rule is not None and fires(r["signals"], *rule)
        if r["expect"]:
            hits += r["hit"] or (on and (r["signals"]["best"] or "")[:8] in r["expect"])
        else:
            false += bool(r["injected"]) or on
    return hits, false


def main() -> None:
    dump = None
    if "--dump" in sys.argv:
        at = sys.argv.index("--dump")
        dump = Path(sys.argv[at + 1])
        del sys.argv[at:at + 2]
    seen = capture()
    sys.argv[0] = "prompt_recall_eval.py"
    if "--json" not in sys.argv:
        sys.argv.append("--json")
    if "--verbose" not in sys.argv:
        sys.argv.append("--verbose")
    from contextlib import redirect_stdout
    from io import StringIO

    with redirect_stdout(StringIO()) as printed:
        prompt_recall_eval.main()
    outcomes = json.loads(printed.getvalue())["outcomes"]
    assert len(outcomes) == len(seen), (len(outcomes), len(seen))
    rows = [{**o, "signals": signals(rec), "part": o["history"] or o["source"]} for o, rec in zip(outcomes, seen, strict=True)]
    if dump:
        dump.write_text("".join(json.dumps(r) + "\n" for r in rows))
    parts = {"all": rows, "chosen on": [r for r in rows if r["part"] in CHOSEN_PARTS],
             "others": [r for r in rows if r["part"] not in CHOSEN_PARTS]}
    follow = sum(bool(r["expect"]) for r in rows)
    base = score(rows, None)
    bound = sum(1 for r in rows if r["expect"] and (r["hit"] or (r["signals"]["best"] or "")[:8] in r["expect"]))
    print(f"labels {len(rows)}: follow-ups {follow}, others {len(rows) - follow}")
    print(f"the hook: hits {base[0]}/{follow}, false {base[1]}/{len(rows) - follow}")
    print(f"upper bound (a rule that fires exactly on follow-ups whose best session is right): {bound}/{follow}")
    grid = list(itertools.product(GRADES, LATEST_RANKS, HOURS, LEADS, MAX_WORDS))
    print(f"{len(grid)} rules: grade x place among recent sessions x hours since it ended x lead x prompt words")
    best_on: dict[tuple[str, int], tuple[Any, ...] | None] = {}
    for name, members in parts.items():
        b = score(members, None)
        scored = [(score(members, rule), rule) for rule in grid]
        for extra in range(4):
            (h, f), rule = max(((hf, rule) for hf, rule in scored if hf[1] <= b[1] + extra), key=lambda x: x[0][0])
            best_on[name, extra] = rule if h > b[0] else None
            print(f"  {name:9s} +{extra} false: hits {h - b[0]:+d} ({h}/{sum(bool(r['expect']) for r in members)}, "
                  f"false {f}/{sum(not r['expect'] for r in members)})  best rule: {_said(best_on[name, extra])}")
    # The honest estimate: a rule chosen on the parts the cues were chosen on, then run on the others.
    others, b = parts["others"], score(parts["others"], None)
    for extra in range(4):
        rule = best_on["chosen on", extra]
        h, f = score(others, rule)
        print(f"  the rule chosen on those parts at +{extra}, on the others: hits {h - b[0]:+d}, false {f - b[1]:+d}"
              f"  ({_said(rule)})")


def _said(rule: tuple[Any, ...] | None) -> str:
    return "none" if rule is None else "grade %s, place <= %s, hours <= %s, lead >= %s, words <= %s" % rule


if __name__ == "__main__":
    main()
