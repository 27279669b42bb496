"""The same benchmarks on two revisions, in one run: did a change keep the figures?

    python scripts/bench_revs.py BASE [HEAD] [--only scan,backfill,search,hook]

Each revision is checked out in a temporary git worktree and its own `scripts/bench.py` runs
with that worktree first on `PYTHONPATH` (this venv's dependencies, that revision's code), one
after the other, alternating twice, so both see the same machine. Prints each run's output.
Every figure `bench.py` prints is already a ratio to a baseline measured in the same run.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def worktree(rev: str, parent: Path) -> Path:
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", rev], capture_output=True, text=True,
                         check=True).stdout.strip()
    path = parent / f"jacked-{sha}"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(path), sha], check=True,
                   capture_output=True)
    _legacy_shared(parent / "shared")
    return path


def _legacy_shared(folder: Path) -> None:
    """Revisions from before the fixtures and the corpus generator moved into the repo read them from a
    folder `shared` beside the checkout: beside their worktrees, it links to this checkout's copies."""
    if folder.exists():
        return
    (folder / "fixtures").mkdir(parents=True)
    (folder / "tools").mkdir()
    (folder / "fixtures" / "claude-code").symlink_to(REPO / "tests" / "fixtures" / "claude-code")
    (folder / "tools" / "gen_corpus.py").symlink_to(REPO / "scripts" / "gen_corpus.py")


def run(tree: Path, only: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run([sys.executable, str(tree / "scripts" / "bench.py"), "--only", only], cwd=tree, env=env,
                          capture_output=True, text=True)
    return done.stdout + (f"\n[exit {done.returncode}] {done.stderr[-2000:]}" if done.returncode else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base")
    ap.add_argument("head", nargs="?", default="HEAD")
    ap.add_argument("--only", default="scan,backfill,search,hook")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="jacked-revs-") as tmp:
        trees = {rev: worktree(rev, Path(tmp)) for rev in (args.base, args.head)}
        try:
            for i in range(args.rounds):
                for rev, tree in trees.items():
                    print(f"===== {rev} (round {i + 1}) =====", flush=True)
                    print(run(tree, args.only), flush=True)
        finally:
            for tree in trees.values():
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)],
                               capture_output=True)


if __name__ == "__main__":
    main()
