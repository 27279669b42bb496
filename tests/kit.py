"""Small builders of Claude Code transcript records for focused tests.

They write the shapes real files use (one content block per assistant line, lines of one
API response sharing `message.id`), so each turn rule can be tested with a case of its own.
"""
from __future__ import annotations

import itertools
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

from jacked.catalog import Catalog
from jacked.query.history import turns_json
from jacked.ingest.scan import Scanner, ScanReport
from jacked.sources.claude.discover import SessionFiles

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "claude-code"
REAL = FIXTURES / "real"
GEN_CORPUS = Path(__file__).resolve().parents[1] / "scripts" / "gen_corpus.py"
DEEP = "a7da6a22-facc-4fcd-8bab-f83c87862004"  # 2.0.55: plan mode, plan file, file-history snapshots
SID = "11111111-2222-4333-8444-555555555555"
_counter = itertools.count(1)


def uid() -> str:
    return f"00000000-0000-4000-8000-{next(_counter):012d}"


def ts(sec: int) -> str:
    return f"2026-03-01T10:{sec // 60:02d}:{sec % 60:02d}.000Z"


def base(t: int = 0, **extra: Any) -> dict[str, Any]:
    rec = {"sessionId": SID, "cwd": "/home/dev/projects/demo", "version": "2.1.42", "gitBranch": "main",
           "isSidechain": False, "userType": "external", "timestamp": ts(t), "uuid": uid()}
    rec.update(extra)
    return rec


def prompt(text: Any, t: int = 0, **extra: Any) -> dict[str, Any]:
    return base(t, type="user", message={"role": "user", "content": text}, **extra)


def assistant(msg_id: str, block: dict[str, Any], t: int = 0, usage: dict[str, int] | None = None,
              **extra: Any) -> dict[str, Any]:
    msg = {"id": msg_id, "type": "message", "role": "assistant", "model": "claude-test", "content": [block]}
    if usage is not None:
        msg["usage"] = usage
    return base(t, type="assistant", requestId="req_" + msg_id, message=msg, **extra)


def text(s: str) -> dict[str, Any]:
    return {"type": "text", "text": s}


def tool_use(tool_id: str, name: str, **inp: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": inp}


def result(tool_id: str, content: Any = "ok", is_error: bool | None = None, t: int = 0,
           tur: Any = None, **extra: Any) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_id, "content": content}
    if is_error is not None:
        block["is_error"] = is_error
    rec = base(t, type="user", message={"role": "user", "content": [block]}, **extra)
    if tur is not None:
        rec["toolUseResult"] = tur
    return rec


def system(subtype: str, t: int = 0, **extra: Any) -> dict[str, Any]:
    return base(t, type="system", subtype=subtype, **extra)


def write_jsonl(path: Path, records: list[Any]) -> Path:
    """Records as JSONL; a str item is written as a raw line (for malformed-line cases)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        for r in records:
            fh.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    return path


def claude_dir_with(tmp: Path, records: list[Any], sid: str = SID, project: str = "-home-dev-projects-demo") -> Path:
    """A Claude directory holding one session made of `records`."""
    write_jsonl(tmp / "projects" / project / f"{sid}.jsonl", records)
    return tmp


def session_of(tmp: Path, records: list[Any]) -> dict[str, Any]:
    """`turns --json` of a one-session Claude directory built from `records`."""
    claude = claude_dir_with(tmp / "claude", records)
    catalog = Catalog(tmp / "home" / "catalog.db")
    Scanner(catalog, claude).scan()
    data = turns_json(catalog, SID)
    data["row"] = catalog.get_session_row(SID)
    return data


def scanned_real(folder: Path) -> Catalog:
    """A catalog in `folder` holding the real fixture sessions (a module's own copy: tests may write)."""
    cat = Catalog(folder / "catalog.db")
    Scanner(cat, REAL).scan()
    return cat


def scan_group(catalog: Catalog, claude: Path, group: SessionFiles) -> ScanReport:
    report = ScanReport()
    Scanner(catalog, claude).scan_group(group, report)
    return report


def inv_tuples(turn: dict[str, Any]) -> list[tuple[str, int, int, bool]]:
    return [(i["tool_name"], i["sequence"], i["parallel_group"], i["is_error"]) for i in turn["invocations"]]


def generated_corpus(out: Path, sessions: int, seed: int) -> dict[str, Any]:
    """A Claude directory of `sessions` written at `out` by the corpus generator (scripts/gen_corpus.py); its truth."""
    subprocess.run([sys.executable, str(GEN_CORPUS), "--out", str(out), "--sessions", str(sessions), "--seed", str(seed)],
                   check=True, capture_output=True)
    return json.loads((out / "truth.json").read_text())


def suite_mode() -> dict[str, str]:
    """The suite's daemon switch (tests/conftest.py), for an environment a test builds from scratch:
    such a test answers in the mode the suite runs in."""
    import os

    return {k: v for k, v in os.environ.items() if k in ("JACKED_DAEMON", "JACKED_DAEMON_IDLE_MINUTES")}


# --------------------------------------------------------------------------- the other agents' sources
def agent_module(name: str) -> Any:
    """A module of `tests/agents/` (an independent counter, a writer), loaded by path."""
    import importlib.util

    path = Path(__file__).resolve().parent / "agents" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"agents_{name}", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def assert_agrees_with_count(sessions: dict[str, Any], by_session: dict[str, dict[str, int]]) -> None:
    """jacked's sessions (`Session` by id) and an independent counter's figures, session by session."""
    assert set(sessions) == set(by_session)
    for sid, want in by_session.items():
        s = sessions[sid]
        calls = [i for t in s.turns for i in t.invocations]
        assert len([t for t in s.turns if t.index >= 1]) == want["turns"], sid
        assert (len(calls), sum(i.is_error for i in calls)) == (want["tool_calls"], want["errors"]), sid
        for key in ("input_tokens", "output_tokens", "cache_read_tokens"):
            assert sum(getattr(t.metrics, key) for t in s.turns) == want[key], (sid, key)
        if "rejected" in want:  # the counters that count the user's refusals and interruptions
            assert feedback_counts(s) == (want["rejected"], want["interrupted"]), sid
        if "approved" in want:
            assert sum(e.data["kind"] == "approval" for t in s.turns for e in t.events if e.type == "decision") \
                == want["approved"], sid


def read_each(source: Any, root: Path) -> tuple[dict[str, Any], list[str]]:
    """Every session a source finds under `root` that reads (`Session` by id), and an error line
    (`<location>: <error>`) for each folder or file it could not use."""
    errors: list[str] = []
    out = {}
    for found in source.discover(root, errors):
        try:
            out[found.session_id] = source.read(found)
        except ValueError as e:
            errors.append(f"{found.location}: {e}")
    return out, errors


def feedback_counts(session: Any) -> tuple[int, int]:
    """(calls the user refused, interruptions) of a session, from its `feedback` events."""
    kinds = [e.data["kind"] for t in session.turns for e in t.events if e.type == "feedback"]
    return kinds.count("tool_rejected"), kinds.count("interrupted")


def file_snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under `root` with its bytes and mtime: another agent's files must stay as they were."""
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(root.rglob("*")) if p.is_file()}
def copy_home(src: Path, dst: Path, skip: tuple[str, ...] = ()) -> None:
    """A copy of a JACKED_HOME, also one whose daemon runs (JACKED_TEST_DAEMON=on): without the
    daemon's socket, which cannot be copied, and its locks and pid file, which belong to the running
    one; `skip`: more names to leave out."""
    def live(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if n.endswith((".lock", ".pid")) or n in skip
                or stat.S_ISSOCK(os.lstat(os.path.join(folder, n)).st_mode)]

    shutil.copytree(src, dst, ignore=live)
