"""Put jacked's token and cost totals beside ccusage's on the same Claude directory (issue 40).

An outside check, not a dependency: ccusage is run from the npm registry, on a Claude directory
you name (use a copy: neither tool writes there, but ccusage reads ~/.config too):

    npx ccusage@20.0.24 session --json --offline > session.json   (CLAUDE_CONFIG_DIR=..., TZ=UTC)
    npx ccusage@20.0.24 daily --json --offline > daily.json
    python scripts/ccusage_check.py CLAUDE_DIR session.json daily.json

It prints, per session and per day, where the four token totals and the cost agree, and for every
difference whether it is the grouping (ccusage lists a subagent file as a session of its own).
docs/usage.md has the result on the real fixtures and explains each difference.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

KINDS = (("input", "inputTokens"), ("output", "outputTokens"), ("cache_creation", "cacheCreationTokens"),
         ("cache_read", "cacheReadTokens"))


def jacked_usage(claude: Path, by: str) -> dict[str, Any]:
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(claude), "JACKED_DAEMON": "off",
           "JACKED_HOME": os.environ.get("JACKED_HOME", str(Path("/tmp") / "jacked-ccusage-check"))}
    out = subprocess.run(["jacked", "usage", "--by", by, "--json"], capture_output=True, text=True, env=env,
                         check=True).stdout
    return json.loads(out)


def compare(mine: dict[str, dict[str, Any]], theirs: dict[str, dict[str, Any]], what: str) -> dict[str, int]:
    counts = {"both": 0, "tokens_equal": 0, "cost_within_1pct": 0, "only_jacked": 0, "only_ccusage": 0}
    for key in sorted(set(mine) | set(theirs)):
        a, b = mine.get(key), theirs.get(key)
        if a is None or b is None:
            counts["only_jacked" if b is None else "only_ccusage"] += 1
            continue
        counts["both"] += 1
        ta = tuple(a["tokens"][k] for k, _ in KINDS)
        tb = tuple(b[k] for _, k in KINDS)
        cost_a, cost_b = a["cost_usd"], b["totalCost"]
        same_cost = cost_a is not None and abs(cost_a - cost_b) <= 0.01 * max(abs(cost_b), 1e-12)
        counts["tokens_equal"] += ta == tb
        counts["cost_within_1pct"] += same_cost
        if ta != tb or not same_cost:
            print(f"  {what} {key}: jacked {ta} ${cost_a}  ccusage {tb} ${cost_b:.6f}")
    return counts


def main(argv: list[str]) -> int:
    claude, session_json, daily_json = Path(argv[0]), Path(argv[1]), Path(argv[2])
    sessions = {r["session"]: r for r in jacked_usage(claude, "session")["rows"]}
    days = {r["day"]: r for r in jacked_usage(claude, "day")["rows"]}
    cc_sessions = {r["period"]: r for r in json.loads(session_json.read_text())["session"]}
    cc_days = {r["period"]: r for r in json.loads(daily_json.read_text())["daily"]}
    print("sessions:", compare(sessions, cc_sessions, "session"))
    print("days:", compare(days, cc_days, "day"))
    total = jacked_usage(claude, "model")["total"]
    cc_total = {k: sum(r[k] for r in cc_sessions.values()) for _, k in KINDS}
    print("total jacked ", tuple(total["tokens"][k] for k, _ in KINDS), total["cost_usd"])
    print("total ccusage", tuple(cc_total[k] for _, k in KINDS), round(sum(r["totalCost"] for r in cc_sessions.values()), 6))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
