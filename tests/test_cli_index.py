"""`backfill`, `status`, `search`, `index --hook`, `cleardb` through the real CLI, JSON shapes as in
DESIGN.md's contract; forks that repeat the same content are shown once."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kit import GEN_CORPUS, copy_home
from test_cli_history import run


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    root = tmp_path_factory.mktemp("cli-index")
    claude = root / "claude"
    subprocess.run([sys.executable, str(GEN_CORPUS), "--out", str(claude), "--sessions", "6", "--seed", "4",
                    "--no-edge-cases"], check=True, capture_output=True)
    truth = json.loads((claude / "truth.json").read_text())
    # A fork: the same transcript under another session id (as `claude --fork-session` leaves it).
    src = next(s for s in truth["sessions"] if s.get("turns"))
    fork_id = "f0f0f0f0-0000-4000-8000-000000000001"
    text = (claude / src["file"]).read_text().replace(src["session_id"], fork_id)
    (claude / src["file"]).with_name(f"{fork_id}.jsonl").write_text(text)
    home = root / "home"
    p = run(["backfill", "--json"], home, claude)
    assert p.returncode == 0, p.stderr
    return claude, home, {"truth": truth, "backfill": json.loads(p.stdout), "src": src, "fork": fork_id}


def test_backfill_json_contract(corpus: tuple[Path, Path, dict]) -> None:
    report = corpus[2]["backfill"]
    for key in ("sessions_indexed", "sessions_unchanged", "points_written", "points_unchanged", "points_deleted",
                "texts_embedded", "lines_skipped", "errors", "seconds"):
        assert key in report
    assert report["sessions_indexed"] == 7 and report["errors"] == []


def test_status_json_contract(corpus: tuple[Path, Path, dict]) -> None:
    claude, home, info = corpus
    st = json.loads(run(["status", "--json"], home, claude).stdout)
    assert st["backend"] == "edge" and st["embedding_model"]
    assert st["points"] == info["backfill"]["points_written"] == sum(st["points_by_type"].values())
    assert st["points_by_user"] == {"tester": st["points"]} and st["sessions"] == 7


def test_search_json_and_fork_shown_once(corpus: tuple[Path, Path, dict]) -> None:
    claude, home, info = corpus
    src = info["src"]
    p = run(["search", src["turns"][0]["prompt"], "--json", "-n", "5"], home, claude)
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    assert res["query"] and res["results"]
    ids = [r["session_id"] for r in res["results"]]
    assert len({src["session_id"], info["fork"]} & set(ids)) == 1  # the fork is collapsed into one result
    top = res["results"][0]
    assert set(top["also"]) & {src["session_id"], info["fork"]}
    for key in ("session_id", "score", "repo_name", "timestamp", "age", "matches"):
        assert key in top


def test_search_batch_is_json_lines_in_order(corpus: tuple[Path, Path, dict], tmp_path: Path) -> None:
    claude, home, info = corpus
    queries = [q["query"] for q in info["truth"]["queries"][:4]]
    f = tmp_path / "q.txt"
    f.write_text("\n".join(queries) + "\n")
    p = run(["search", "--batch", str(f), "--json"], home, claude)
    rows = [json.loads(x) for x in p.stdout.splitlines()]
    assert [r["query"] for r in rows] == queries


def test_human_search_output(corpus: tuple[Path, Path, dict]) -> None:
    claude, home, info = corpus
    p = run(["search", info["truth"]["queries"][0]["query"], "-n", "2"], home, claude)
    assert p.stdout.startswith(" 1. ") and "ago" in p.stdout and "[" in p.stdout


def test_hook_never_fails(corpus: tuple[Path, Path, dict]) -> None:
    claude, home, _ = corpus
    for stdin in ("not json", "{}", json.dumps({"transcript_path": "/no/such/file.jsonl"}), "[1,2]"):
        p = run(["index", "--hook"], home, claude, stdin=stdin)
        assert p.returncode == 0 and p.stdout == ""
    log = (home / "logs" / "hook.log").read_text()
    assert "not found" in log and "hook failed" in log


def test_search_errors_are_one_line(corpus: tuple[Path, Path, dict], tmp_path: Path) -> None:
    claude, home, _ = corpus
    for args in (["search", ""], ["search", "x", "--type", "nope"], ["search", "x", "--since", "someday"],
                 ["search", "x", "--user", "a", "--mine"], ["search", "--batch", str(tmp_path / "missing.txt")]):
        p = run(args, home, claude)
        assert p.returncode == 1 and "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, args
    empty_home = tmp_path / "empty-home"
    p = run(["search", "anything"], empty_home, claude)
    assert p.returncode == 1 and "jacked backfill" in p.stderr


def test_cleardb_needs_confirmation(corpus: tuple[Path, Path, dict], tmp_path: Path) -> None:
    claude, home, _ = corpus
    scratch = tmp_path / "home"
    copy_home(home, scratch, skip=("queue",))
    p = run(["cleardb"], scratch, claude, stdin="")
    assert p.returncode == 1 and "--yes" in p.stderr
    p = run(["cleardb", "--yes"], scratch, claude)
    assert p.returncode == 0
    st = json.loads(run(["status", "--json"], scratch, claude).stdout)
    assert st["points"] == 0


def test_progress_bar_starts_no_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cold scan forks workers only from a single-threaded process: the terminal progress
    bar must not run rich's refresh thread."""
    import threading

    from jacked.surfaces.cli.common import progress_bar

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    before = threading.active_count()
    with progress_bar(True) as bar:
        assert bar is not None
        bar("scan", 1, 2)  # type: ignore[operator]
        assert threading.active_count() == before


def test_without_a_daemon_the_hook_has_indexed_the_new_turn_when_it_returns(
        corpus: tuple[Path, Path, dict], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With JACKED_DAEMON=off the hook indexes in its own process: once it returns, the new turn is
    in the index and nothing holds the index any more (whatever mode the suite runs in)."""
    import uuid

    from jacked.index.store.edge import EdgeStore

    monkeypatch.setenv("JACKED_DAEMON", "off")
    claude, home = tmp_path / "claude", tmp_path / "home"
    shutil.copytree(corpus[0], claude)
    copy_home(corpus[1], home)
    transcript = claude / corpus[2]["src"]["file"]
    lines = [json.loads(x) for x in transcript.read_text().splitlines() if x.strip()]
    prompt = next(x for x in reversed(lines) if x.get("type") == "user" and isinstance(x["message"]["content"], str))
    last = next(x for x in reversed(lines) if x.get("uuid"))
    phrase = "quokka ledger reconciliation by moonlight"
    turn = dict(prompt, uuid=str(uuid.uuid4()), parentUuid=last["uuid"], timestamp="2030-01-01T00:00:00.000Z",
                message=dict(prompt["message"], content=f"Please plan the {phrase} now."))
    with transcript.open("a") as fh:
        fh.write(json.dumps(turn) + "\n")
    p = run(["index", "--hook"], home, claude, stdin=json.dumps({"transcript_path": str(transcript)}))
    assert p.returncode == 0 and p.stdout == ""
    store = EdgeStore(home / "index", lock_timeout=0).open(None, None)  # StoreBusy if anything still held it
    try:
        texts = [h.payload.get("text") or "" for h in store.scroll(fields=["text"])]
    finally:
        store.close()
    assert sum(phrase in t for t in texts) >= 1
