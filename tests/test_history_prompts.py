"""Prompt-only sessions from `<claude dir>/history.jsonl` (issue 10): built for sessions whose
transcript Claude Code deleted before jacked saw it, marked everywhere, read incrementally,
redacted, and replaced by the real transcript when it turns up."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from kit import REAL

from jacked.ingest import prompt_history
from jacked.catalog import Catalog
from jacked.ingest.prompt_history import epoch_ms_to_iso, source_counts
from jacked.ingest.scan import Scanner

GONE = "aaaaaaaa-1111-4111-8111-000000000001"  # only in history.jsonl
GONE2 = "bbbbbbbb-2222-4222-8222-000000000002"
REAL_SID = "5ed31c36-bca8-40fd-8d24-f1a1f0af7901"  # a small real transcript (2.0.x, one prompt)
SECRET = "ghp_" + "Ab1" * 12  # a GitHub token shape: ghp_ + 36 alphanumerics
T0 = 1735689600000  # 2025-01-01T00:00:00Z in epoch milliseconds


def line(display: Any, sid: str | None, t: int, project: str = "/home/dev/src/webapp", **extra: Any) -> dict:
    rec: dict[str, Any] = {"display": display, "pastedContents": {}, "timestamp": t, "project": project}
    if sid is not None:
        rec["sessionId"] = sid
    rec.update(extra)
    return rec


def write_history(claude: Path, records: list[Any], mode: str = "w") -> Path:
    """history.jsonl lines; a str item is written as a raw (malformed) line."""
    claude.mkdir(parents=True, exist_ok=True)
    path = claude / "history.jsonl"
    with path.open(mode) as fh:
        for r in records:
            fh.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    return path


def copy_real(claude: Path, sid: str = REAL_SID) -> Path:
    src = next(REAL.glob(f"projects/*/{sid}.jsonl"))
    dest = claude / src.relative_to(REAL)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    return dest


def scan(claude: Path, home: Path) -> tuple[Catalog, Any]:
    catalog = Catalog(home / "catalog.db")
    return catalog, Scanner(catalog, claude).scan()


def run_cli(args: list[str], home: Path, claude: Path):  # type: ignore[no-untyped-def]
    from test_cli_history import run

    return run(args, home, claude=claude)


# --------------------------------------------------------------------------- building and marking
def test_epoch_milliseconds_become_utc_iso_with_z() -> None:
    assert epoch_ms_to_iso(T0) == "2025-01-01T00:00:00.000Z"
    assert epoch_ms_to_iso(T0 + 61_234) == "2025-01-01T00:01:01.234Z"
    assert epoch_ms_to_iso("2025-01-01T00:00:00.000Z") == "2025-01-01T00:00:00.000Z"
    assert epoch_ms_to_iso(None) is None and epoch_ms_to_iso(True) is None and epoch_ms_to_iso("soon") is None


def test_prompt_only_session_is_built_and_marked(tmp_path: Path) -> None:
    claude, home = tmp_path / "claude", tmp_path / "home"
    write_history(claude, [
        line("fix the flaky login test in auth_spec.rb", GONE, T0),
        line("/compact keep the auth notes", GONE, T0 + 30_000),
        line("now make the retry loop back off", GONE, T0 + 60_500),
        line("what does the deploy script do?", GONE2, T0 + 3_600_000, project="C:\\Users\\dev\\infra"),
    ])
    catalog, report = scan(claude, home)
    assert not report.errors
    assert report.history["sessions_built"] == 2 and report.history["prompts"] == 4
    assert {GONE, GONE2} <= set(report.session_ids)  # so that backfill indexes them
    row = catalog.get_session_row(GONE)
    assert row["source"] == "history" and row["has_main"] == 1 and not row["file"]
    assert (row["cwd"], row["repo_name"]) == ("/home/dev/src/webapp", "webapp")
    assert (row["started_at"], row["ended_at"]) == ("2025-01-01T00:00:00.000Z", "2025-01-01T00:01:00.500Z")
    assert row["turn_count"] == 3 and row["first_prompt"] == "fix the flaky login test in auth_spec.rb"
    turns = catalog.turn_rows(GONE)
    assert [(t["turn_index"], t["prompt"], t["started_at"]) for t in turns] == [
        (1, "fix the flaky login test in auth_spec.rb", "2025-01-01T00:00:00.000Z"),
        (2, "/compact keep the auth notes", "2025-01-01T00:00:30.000Z"),
        (3, "now make the retry loop back off", "2025-01-01T00:01:00.500Z")]
    assert turns[1]["is_slash_command"] == 1 and all(t["tool_call_count"] == 0 for t in turns)
    assert not catalog.invocation_rows(GONE)
    assert catalog.get_session_row(GONE2)["repo_name"] == "infra"  # the scanner's repo name (Windows path too)
    assert source_counts(catalog) == {"transcript": 0, "archive": 0, "history": 2}
    # what gets indexed: the prompts as user_message documents (a slash command by its arguments)
    from jacked.index.extract import Extractor

    docs = [(d.content_type, d.text) for d in Extractor(catalog).documents(GONE) if d.content_type == "user_message"]
    assert docs == [("user_message", "fix the flaky login test in auth_spec.rb"),
                    ("user_message", "/compact keep the auth notes"),
                    ("user_message", "now make the retry loop back off")]

    # the CLI marks them: sessions (text and --json), show, status (text and --json)
    p = run_cli(["sessions", "--json"], home, claude)
    assert p.returncode == 0, p.stderr
    by_id = {r["session_id"]: r for r in json.loads(p.stdout)}
    assert by_id[GONE]["source"] == "history" and by_id[GONE]["file"] is None and by_id[GONE]["turn_count"] == 3
    p = run_cli(["sessions"], home, claude)
    assert p.returncode == 0 and p.stdout.count("[prompts only]") == 2, p.stdout
    p = run_cli(["show", GONE[:8]], home, claude)
    assert p.returncode == 0, p.stderr
    assert "prompt-only" in p.stdout and "history.jsonl" in p.stdout and "now make the retry loop" in p.stdout
    p = run_cli(["status", "--json"], home, claude)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["sessions_by_source"] == {"transcript": 0, "archive": 0, "history": 2} and data["sessions"] == 2
    assert data["history_file"]["lines"] == 4 and data["history_file"]["present"]
    p = run_cli(["status"], home, claude)
    assert p.returncode == 0 and "0 full, 0 archived-only" in p.stdout and "2 prompt-only" in p.stdout, p.stdout


def test_a_session_with_a_transcript_is_not_duplicated(tmp_path: Path) -> None:
    claude, home = tmp_path / "claude", tmp_path / "home"
    copy_real(claude)
    write_history(claude, [line("how can I disable markdownlint MD034?", REAL_SID, T0),
                           line("a prompt of a deleted session", GONE, T0)])
    catalog, report = scan(claude, home)
    row = catalog.get_session_row(REAL_SID)
    assert row["source"] == "transcript" and row["turn_count"] == 1 and row["file"].endswith(f"{REAL_SID}.jsonl")
    assert "markdownlint MD034?" not in [t["prompt"] for t in catalog.turn_rows(REAL_SID)]
    assert report.history["sessions_built"] == 1 and catalog.get_session_row(GONE)["source"] == "history"
    assert source_counts(catalog) == {"transcript": 1, "archive": 0, "history": 1}
    assert report.session_ids.count(REAL_SID) == 1 and report.session_ids.count(GONE) == 1


def test_a_transcript_that_turns_up_later_replaces_the_prompt_only_session(tmp_path: Path) -> None:
    claude, home = tmp_path / "claude", tmp_path / "home"
    write_history(claude, [line("how can I disable markdownlint MD034?", REAL_SID, T0),
                           line("and for MD013?", REAL_SID, T0 + 1000)])
    catalog, _ = scan(claude, home)
    assert catalog.get_session_row(REAL_SID)["source"] == "history"
    assert catalog.get_session_row(REAL_SID)["turn_count"] == 2
    copy_real(claude)  # e.g. restored from a backup
    catalog, report = scan(claude, home)
    row = catalog.get_session_row(REAL_SID)
    assert row["source"] == "transcript" and row["turn_count"] == 1 and row["repo_name"] == "danieldemmel.me-next"
    assert [t["prompt"] for t in catalog.turn_rows(REAL_SID)] != ["how can I disable markdownlint MD034?",
                                                                   "and for MD013?"]
    assert catalog.db.execute("SELECT COUNT(*) FROM sessions WHERE session_id = ?", (REAL_SID,)).fetchone()[0] == 1
    # a later prompt of that session in history.jsonl does not bring the prompt-only copy back
    write_history(claude, [line("one more", REAL_SID, T0 + 2000)], mode="a")
    catalog, report = scan(claude, home)
    assert catalog.get_session_row(REAL_SID)["source"] == "transcript" and report.history["sessions_built"] == 0


def test_archived_only_sessions_are_counted_and_not_rebuilt_from_history(tmp_path: Path) -> None:
    claude, home = tmp_path / "claude", tmp_path / "home"
    main = copy_real(claude)
    write_history(claude, [line("how can I disable markdownlint MD034?", REAL_SID, T0)])
    catalog, _ = scan(claude, home)
    assert source_counts(catalog) == {"transcript": 1, "archive": 0, "history": 0}
    main.unlink()  # Claude Code's 30-day sweep; the archive kept a copy
    catalog, report = scan(claude, home)
    assert REAL_SID in report.session_ids and not report.errors
    assert catalog.get_session_row(REAL_SID)["source"] == "archive"
    assert catalog.get_session_row(REAL_SID)["turn_count"] == 1
    # a fresh catalog: the session is read back from the archive, marked so, not built from history
    for p in home.glob("catalog.db*"):
        p.unlink()
    catalog, report = scan(claude, home)
    assert source_counts(catalog) == {"transcript": 0, "archive": 1, "history": 0}
    assert report.history["sessions_built"] == 0
    p = run_cli(["sessions"], home, claude)
    assert p.returncode == 0 and "[archived]" in p.stdout, p.stdout
    p = run_cli(["status", "--json"], home, claude)
    assert json.loads(p.stdout)["sessions_by_source"] == {"transcript": 0, "archive": 1, "history": 0}
    # the transcript comes back (same bytes): on disk again
    copy_real(claude)
    catalog, _ = scan(claude, home)
    assert catalog.get_session_row(REAL_SID)["source"] == "transcript"


# --------------------------------------------------------------------------- bad lines, incremental reads
def test_malformed_lines_are_skipped_and_counted_exit_0(tmp_path: Path) -> None:
    claude, home = tmp_path / "claude", tmp_path / "home"
    (claude / "projects").mkdir(parents=True)
    write_history(claude, [
        line("a good prompt", GONE, T0),
        "{not json at all",
        line("an old-version prompt without a session id", None, T0),
        "[1, 2, 3]",
        line(None, GONE, T0 + 1),  # no prompt text
        "",
        line("another good prompt", GONE, T0 + 2),
    ])
    p = run_cli(["scan", "--json"], home, claude)
    assert p.returncode == 0, p.stderr
    h = json.loads(p.stdout)["history"]
    assert (h["lines_read"], h["lines_malformed"], h["lines_without_session"]) == (6, 3, 1)
    assert (h["sessions_built"], h["prompts"]) == (1, 2)
    catalog = Catalog(home / "catalog.db")
    assert [t["prompt"] for t in catalog.turn_rows(GONE)] == ["a good prompt", "another good prompt"]
    p = run_cli(["status", "--json"], home, claude)
    hf = json.loads(p.stdout)["history_file"]
    assert (hf["lines_malformed"], hf["lines_without_session"]) == (3, 1)
    # a last line still being written is left for the next read, not counted as malformed
    with (claude / "history.jsonl").open("a") as fh:
        fh.write('{"display": "half a li')
    p = run_cli(["scan", "--json"], home, claude)
    assert p.returncode == 0 and json.loads(p.stdout)["history"]["lines_malformed"] == 0


def test_unchanged_history_is_not_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    claude, home = tmp_path / "claude", tmp_path / "home"
    write_history(claude, [line("first prompt", GONE, T0), line("second prompt", GONE2, T0 + 5)])
    catalog, first = scan(claude, home)
    assert first.history["bytes_read"] == (claude / "history.jsonl").stat().st_size
    seq = catalog.get_session_row(GONE)["content_seq"]

    def no_reading(*a: Any, **k: Any) -> Any:
        raise AssertionError("history.jsonl was read again")

    monkeypatch.setattr(prompt_history, "iter_records", no_reading)
    catalog, again = scan(claude, home)
    assert again.history["bytes_read"] == 0 and again.history["sessions_built"] == 0 and not again.errors
    assert {GONE, GONE2} <= set(again.session_ids)  # still handed to the indexer (it finds them up to date)
    assert catalog.get_session_row(GONE)["content_seq"] == seq  # not rewritten: nothing to re-embed


def test_a_grown_file_is_read_from_where_it_stopped(tmp_path: Path) -> None:
    claude, home = tmp_path / "claude", tmp_path / "home"
    path = write_history(claude, [line("first prompt", GONE, T0), line("second prompt", GONE, T0 + 1000)])
    size = path.stat().st_size
    catalog, _ = scan(claude, home)
    added = write_history(claude, [line("third prompt", GONE, T0 + 2000), line("elsewhere", GONE2, T0 + 3000)],
                          mode="a").stat().st_size - size
    catalog, report = scan(claude, home)
    h = report.history
    assert (h["resumed_at"], h["bytes_read"], h["lines_read"]) == (size, added, 2)
    assert h["sessions_built"] == 2 and h["prompts"] == 2
    assert [(t["turn_index"], t["prompt"]) for t in catalog.turn_rows(GONE)] == [
        (1, "first prompt"), (2, "second prompt"), (3, "third prompt")]
    assert catalog.get_session_row(GONE)["ended_at"] == "2025-01-01T00:00:02.000Z"
    assert catalog.get_session_row(GONE2)["turn_count"] == 1
    # rewritten with other bytes at the start (e.g. trimmed): read whole, prompts not duplicated
    text = path.read_text()
    path.write_text(text.replace("first prompt", "first prompt".upper()))
    os.utime(path, ns=(1, 1))
    catalog, report = scan(claude, home)
    assert report.history["resumed_at"] == 0
    # (a line read again replaces its earlier reading: one prompt per moment)
    assert [t["prompt"] for t in catalog.turn_rows(GONE)] == ["FIRST PROMPT", "second prompt", "third prompt"]
    assert report.history["prompts"] == 0 and report.history["sessions_built"] == 1


def test_a_secret_in_a_prompt_is_redacted_in_the_catalog(tmp_path: Path) -> None:
    claude, home = tmp_path / "claude", tmp_path / "home"
    write_history(claude, [line(f"push with token {SECRET} please", GONE, T0),
                           line(f"\x1b[31m{SECRET}\x1b[0m", GONE2, T0 + 1)])
    catalog, _ = scan(claude, home)
    prompts = [t["prompt"] for sid in (GONE, GONE2) for t in catalog.turn_rows(sid)]
    assert all(SECRET not in p and "[REDACTED" in p for p in prompts), prompts
    assert SECRET not in (catalog.get_session_row(GONE)["first_prompt"] or "")
    catalog.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    catalog.close()
    for f in home.rglob("*"):  # not in any byte jacked keeps
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f
    p = run_cli(["show", GONE], home, claude)
    assert p.returncode == 0 and SECRET not in p.stdout and "[REDACTED" in p.stdout


# --------------------------------------------------------------------------- search
def test_prompt_only_sessions_are_searchable_and_marked(tmp_path: Path, dense_embedder,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from jacked.config import Settings
    from jacked.index.indexer import Indexer
    from jacked.query.search import SearchOptions, search_many

    claude, home = tmp_path / "claude", tmp_path / "home"
    copy_real(claude)
    write_history(claude, [line("the websocket reconnect storm after the proxy restart", GONE, T0),
                           line("add jitter to the reconnect backoff", GONE, T0 + 1000)])
    s = Settings(claude_dir=claude, home=home, user_name="tester")
    report = Indexer(s).backfill()
    assert report.sessions_indexed == 2 and not report.errors
    (res,) = search_many(s, ["websocket reconnect storm jitter"], SearchOptions(limit=3, types=["user_message"]))
    top = res["results"][0]
    assert top["session_id"] == GONE and top["source"] == "history"
    assert {m["content_type"] for m in top["matches"]} == {"user_message"}
    assert all("source" in r for r in res["results"])
    (res,) = search_many(s, ["markdownlint bare URL MD034"], SearchOptions(limit=3))
    assert res["results"][0]["session_id"] == REAL_SID and res["results"][0]["source"] == "transcript"
    again = Indexer(s).backfill()  # nothing changed: nothing rewritten
    assert again.points_written == 0 and again.sessions_unchanged == 2
    # the text output marks it (printed here: a `jacked search` process would load the model again)
    from jacked.surfaces.cli.search import _print_human

    (res,) = search_many(s, ["websocket reconnect storm"], SearchOptions(limit=1))
    _print_human(res)
    assert "[prompts only]" in capsys.readouterr().out
