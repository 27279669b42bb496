"""The child program of `jacked.index.store.optimizer`: ``python -m jacked.index.store.optimizer_main
SHARD --dims N --segments N --max-segment-kb N --parent PID`` loads the (closed) shard with that
configuration, runs Qdrant's optimizers, flushes, closes, and prints {optimized, seconds,
peak_rss_mb} as one JSON line. It dies with the thread that started it."""
from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import sys
import time
from pathlib import Path

_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """Be killed when the thread that started this process ends (Linux), and stop now if it is
    gone already (its death came before the request)."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        raise SystemExit(3)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jacked.index.store.optimizer_main", description=__doc__)
    parser.add_argument("shard", type=Path)
    parser.add_argument("--dims", type=int, required=True)
    parser.add_argument("--segments", type=int, required=True)
    parser.add_argument("--max-segment-kb", type=int, required=True)
    parser.add_argument("--parent", type=int, required=True)
    args = parser.parse_args(argv)
    _die_with_parent(args.parent)

    import qdrant_edge as qe

    from jacked.index.store.edge import _edge_config, load_shard

    t0 = time.perf_counter()
    shard = load_shard(args.shard, _edge_config(qe, args.dims, args.segments, max_segment_kb=args.max_segment_kb))
    try:
        optimized = bool(shard.optimize())
        shard.flush()
    finally:
        shard.close()
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KB on Linux
    print(json.dumps({"optimized": optimized, "seconds": round(time.perf_counter() - t0, 3),
                      "peak_rss_mb": round(peak_kb / 1024, 1)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
