"""Redaction cost on the real transcript fixtures: the committed redactor against the working one.

    .venv/bin/python scripts/redact_bench.py [--old REV] [--reps N] [--fixtures DIR]

Every JSONL file under the fixtures folder (default: tests/fixtures/claude-code) is read
once; each line's strings (dict keys and values, as `redact_obj` collects them; a line that is
not JSON counts as one string) are gathered per file. Then `redact_many(strings of one file)`
runs over every file, N times for each redactor, alternating old and new so both see the same
machine state; the median of the N totals (CPU time of this process) is reported as MB/s of input text, with the ratio
new/old. The old redactor is `REV:jacked/sources/redact.py` (default HEAD) loaded from
`git show` into a temporary module; the new one is the working tree's.

Acceptance (issue 14): new time <= 1.5 x old time. Exit status 1 when it is not.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FIXTURES = ROOT / "tests" / "fixtures" / "claude-code"
MAX_RATIO = 1.5


def _strings(obj: Any, acc: list[str]) -> None:
    if isinstance(obj, str):
        acc.append(obj)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(k, str):
                acc.append(k)
            _strings(v, acc)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _strings(v, acc)


def load_fixture_strings(folder: Path) -> list[list[str]]:
    """The strings of every JSONL file under `folder`, one list per file."""
    batches = []
    for p in sorted(folder.rglob("*.jsonl")):
        acc: list[str] = []
        for line in p.read_text(encoding="utf-8", errors="surrogateescape").splitlines():
            if not line.strip():
                continue
            try:
                _strings(json.loads(line), acc)
            except ValueError:
                acc.append(line)
        if acc:
            batches.append(acc)
    return batches


def load_old(rev: str) -> ModuleType:
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:jacked/sources/redact.py"],
                         check=True, capture_output=True, text=True).stdout
    tmp = Path(tempfile.mkdtemp(prefix="redact_old_")) / "redact_old.py"
    tmp.write_text(src)
    spec = importlib.util.spec_from_file_location("redact_old", tmp)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["redact_old"] = mod
    spec.loader.exec_module(mod)
    return mod


def load_new() -> ModuleType:
    sys.path.insert(0, str(ROOT))
    from jacked.sources import redact

    return redact


def fresh(batches: list[list[str]]) -> list[list[str]]:
    """New string objects with the same values: as a reader hands them over, with no cached
    hash (a redactor that hashes its input pays for it in every run)."""
    return [[(s + ".")[:-1] for s in b] for b in batches]


def one_run(mod: ModuleType, batches: list[list[str]]) -> float:
    redact_many = mod.redact_many
    batches = fresh(batches)
    t0 = time.process_time()  # CPU time: other work on the machine does not count
    for b in batches:
        redact_many(b)
    return time.process_time() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", default="HEAD", help="git revision of the old redactor (default HEAD)")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--fixtures", type=Path, default=DEFAULT_FIXTURES)
    a = ap.parse_args()

    batches = load_fixture_strings(a.fixtures)
    n_str = sum(len(b) for b in batches)
    n_bytes = sum(len(s.encode("utf-8", "surrogatepass")) for b in batches for s in b)
    old, new = load_old(a.old), load_new()
    changed_old = changed_new = 0
    for b in batches:  # warm-up (lru caches, automaton) and a count of what each changes
        changed_old += sum(x != y for x, y in zip(b, old.redact_many(b)))
        changed_new += sum(x != y for x, y in zip(b, new.redact_many(b)))
    t_old: list[float] = []
    t_new: list[float] = []
    for _ in range(a.reps):
        t_old.append(one_run(old, batches))
        t_new.append(one_run(new, batches))
    mo, mn = statistics.median(t_old), statistics.median(t_new)
    mb = n_bytes / 1e6
    ratio = mn / mo
    print(f"fixtures: {len(batches)} files, {n_str} strings, {mb:.1f} MB; {a.reps} runs each, median")
    print(f"old ({a.old}): {mo * 1000:.0f} ms  {mb / mo:.1f} MB/s  strings changed {changed_old}")
    print(f"new (work tree): {mn * 1000:.0f} ms  {mb / mn:.1f} MB/s  strings changed {changed_new}")
    print(f"ratio new/old: {ratio:.2f} (limit {MAX_RATIO})")
    return 0 if ratio <= MAX_RATIO else 1


if __name__ == "__main__":
    raise SystemExit(main())
