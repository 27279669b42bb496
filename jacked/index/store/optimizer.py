"""The segment optimisation of an Edge shard in a process of its own (the child program is
`jacked.index.store.optimizer_main`), for the process that keeps the shard open (the daemon).

Qdrant Edge's ``optimize()`` keeps the interpreter lock for its whole run (tens of seconds to
minutes on a large index), so a process running it answers nothing meanwhile. The shard allows
one process at a time, so the owner closes it (keeping ``index.lock``), runs this child, waits
for it with the lock released, and loads the shard again:

- the child dies with the thread that started it (``PR_SET_PDEATHSIG``): a daemon killed with
  ``kill -9`` leaves no optimiser behind;
- a child killed mid-run leaves the shard as it was (Qdrant builds new segments beside the old
  ones and swaps them in; its write-ahead log is untouched), so the owner just loads it again
  and the optimisation is retried later.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class OptimizerRun:
    """How a child optimisation ended: `ok` with what it did, or why not (`error`)."""

    ok: bool
    optimized: bool = False
    seconds: float = 0.0
    peak_rss_mb: float | None = None
    error: str = ""


def optimize_in_child(shard_path: Path, dims: int, segments: int, max_segment_kb: int,
                      started: Callable[[subprocess.Popen[bytes]], None] | None = None) -> OptimizerRun:
    """Optimise the (closed) shard at `shard_path` in a child process and wait for it; `started`
    hears of the child as soon as it runs (so that it can be shown, or killed)."""
    package_root = str(Path(__file__).resolve().parents[3])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    command = [sys.executable, "-m", "jacked.index.store.optimizer_main", str(shard_path), "--dims", str(dims),
               "--segments", str(segments), "--max-segment-kb", str(max_segment_kb), "--parent", str(os.getpid())]
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, close_fds=True)
    if started is not None:
        started(proc)
    out, err = proc.communicate()  # waits without the interpreter lock: the owner's other threads answer
    if proc.returncode != 0:
        how = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit code {proc.returncode}"
        last = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        return OptimizerRun(ok=False, error=f"optimiser {how}" + (f": {last[0]}" if last[0] else ""))
    try:
        report = json.loads(out.decode("utf-8").strip().splitlines()[-1])
        return OptimizerRun(ok=True, optimized=bool(report["optimized"]), seconds=float(report["seconds"]),
                            peak_rss_mb=report.get("peak_rss_mb"))
    except (ValueError, IndexError, KeyError, TypeError) as e:
        return OptimizerRun(ok=False, error=f"optimiser said nothing readable ({e})")
