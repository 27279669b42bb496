"""Where a cold `jacked backfill`'s CPU goes, second by second, and what of two cores sits idle.

    JACKED_HOME=/tmp/h CLAUDE_CONFIG_DIR=/tmp/corpus python scripts/cpu_timeline.py [--out rows.jsonl]

Runs the backfill (JACKED_HOME should be empty but may hold `models/`), reads every second from
/proc the CPU time of each thread of the backfill process and of its children, and prints per
phase (from the progress file) the average use of: the main thread, the process's other threads
(the model's, Qdrant's), children; and the idle rest of
the machine's cores. Linux only.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

GROUPS = ("main thread", "other threads", "children")


def _ticks(pid: int) -> dict[int, int]:
    """CPU clock ticks (user + system) of each thread of `pid`."""
    out = {}
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            out[int(tid)] = int(fields[11]) + int(fields[12])
    except OSError:
        pass  # ended meanwhile
    return out


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            kids += [int(x) for x in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]
    except OSError:
        pass
    return kids


def _processes(root: int) -> list[tuple[int, str]]:
    """The backfill and its descendants, each with its group."""
    found = [(root, "main")]
    todo = [(c, "children") for c in _children(root)]
    while todo:
        pid, kind = todo.pop()
        found.append((pid, kind))
        todo += [(c, kind) for c in _children(pid)]
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="write the per-second rows here (JSON lines)")
    args = ap.parse_args(argv)
    home = os.environ.get("JACKED_HOME")
    if not home or not sys.platform.startswith("linux"):
        print("set JACKED_HOME (a fresh folder) and run on Linux", file=sys.stderr)
        return 1
    hz, cores = os.sysconf("SC_CLK_TCK"), os.cpu_count() or 1
    proc = subprocess.Popen([sys.executable, "-m", "jacked.surfaces.cli.entry", "backfill", "--json"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen: dict[tuple[int, int], int] = {}
    rows = []
    t0 = time.monotonic()
    while proc.poll() is None:
        time.sleep(1.0)
        used: dict[str, float] = defaultdict(float)
        for pid, kind in _processes(proc.pid):
            for tid, ticks in _ticks(pid).items():
                spent = (ticks - seen.get((pid, tid), 0)) / hz
                seen[(pid, tid)] = ticks
                group = ("main thread" if tid == pid else "other threads") if kind == "main" else kind
                used[group] += spent
        try:
            phase = json.loads((Path(home) / "backfill.json").read_text()).get("phase")
        except (OSError, ValueError):
            phase = None
        rows.append({"t": round(time.monotonic() - t0, 1), "phase": phase, **used})
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    seconds: dict[str, int] = defaultdict(int)
    totals: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for r in rows:
        seconds[r["phase"]] += 1
        for g in GROUPS:
            totals[r["phase"]][g] += r.get(g, 0.0)
    print(f"{'phase':10s} {'seconds':>8s}" + "".join(f"{g:>16s}" for g in GROUPS) + f"{'idle of ' + str(cores):>14s}")
    for phase, n in seconds.items():
        shares = [totals[phase][g] / n * 100 for g in GROUPS]
        print(f"{str(phase):10s} {n:8d}" + "".join(f"{x:15.0f}%" for x in shares) + f"{max(0.0, cores * 100 - sum(shares)):13.0f}%")
    print(f"backfill: {time.monotonic() - t0:.1f} s, exit {proc.returncode}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
