"""Issue 37 item 7: time words in a query are the date filter the user means (jacked.query.timephrase),
said so in `search --json`; explicit date flags win. Table tests of the phrase reader, then real
searches (offline model, Qdrant Edge and the server backend's query code) over sessions of known dates."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, UTC
from pathlib import Path
from typing import Any

import pytest
from kit import write_jsonl
from test_cli_history import run

from jacked.config import load_settings
from jacked.query.search import SearchOptions, search_many
from jacked.query.timephrase import find_time_phrase

NOW = datetime(2026, 12, 2, 10, 30, tzinfo=UTC)  # a Wednesday


def _d(text: str) -> str:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).isoformat()


@pytest.mark.parametrize("query, phrase, since, until", [
    ("the bug I fixed last week", "last week", "2026-11-23", "2026-11-30"),  # Monday to Monday
    ("yesterday", "yesterday", "2026-12-01", "2026-12-02"),
    ("what broke yesterday's deploy", "yesterday", "2026-12-01", "2026-12-02"),
    ("in March", "in March", "2026-03-01", "2026-04-01"),
    ("the migration in december", "in december", "2026-12-01", "2027-01-01"),  # this month: it has begun
    ("back in May", "back in May", "2026-05-01", "2026-06-01"),
    ("during Feb. on the api", "during Feb", "2026-02-01", "2026-03-01"),
    ("deploy script march 2025", "march 2025", "2025-03-01", "2025-04-01"),
    ("since March", "since March", "2026-03-01", "2026-12-02T10:30"),
    ("two days ago", "two days ago", "2026-11-30", "2026-12-01"),
    ("the auth fix 3 weeks ago", "3 weeks ago", "2026-11-09", "2026-11-16"),
    ("a few days ago", "a few days ago", "2026-11-29", "2026-11-30"),
    ("a month ago", "a month ago", "2026-11-01", "2026-12-01"),
    ("in the past 3 weeks", "in the past 3 weeks", "2026-11-11T10:30", "2026-12-02T10:30"),
    ("over the last month", "over the last month", "2026-11-02T10:30", "2026-12-02T10:30"),
    ("last month", "last month", "2026-11-01", "2026-12-01"),
    ("last year", "last year", "2025-01-01", "2026-01-01"),
    ("this week", "this week", "2026-11-30", "2026-12-02T10:30"),
    ("earlier today", "earlier today", "2026-12-02", "2026-12-02T10:30"),
    ("last friday", "last friday", "2026-11-27", "2026-11-28"),
    ("on Wednesday", "on Wednesday", "2026-11-25", "2026-11-26"),  # today is one: the one before
])
def test_time_phrases(query: str, phrase: str, since: str, until: str) -> None:
    found = find_time_phrase(query, NOW)
    assert found is not None
    assert (found.phrase, found.since.isoformat(), found.until.isoformat()) == (phrase, _d(since), _d(until))


@pytest.mark.parametrize("query", [
    "the march function", "march of progress", "may the tests pass", "May I rename the module",
    "fix the weekly report", "the days_ago helper", "ago", "monday.com integration", "2026 roadmap",
    'grep "last week" in the logs',  # quoted: the user's verbatim words
    "`yesterday` column", "last", "todays_total",
])
def test_words_that_are_no_time_phrase(query: str) -> None:
    assert find_time_phrase(query, NOW) is None


def test_the_rest_of_the_query() -> None:
    found = find_time_phrase("the bug I fixed last week in the parser", NOW)
    assert found is not None and found.rest("the bug I fixed last week in the parser") == "the bug I fixed in the parser"


# --- real searches ----------------------------------------------------------------------------

SESSIONS = {  # session id: (when, what was done)
    "aaaaaaaa-0000-4000-8000-000000000001": ("2026-11-25T12:00:00Z", "fixed the flaky cache test in the loader"),
    "bbbbbbbb-0000-4000-8000-000000000002": ("2026-12-01T12:00:00Z", "fixed the flaky cache test in the writer"),
    "cccccccc-0000-4000-8000-000000000003": ("2026-03-10T12:00:00Z", "fixed the flaky cache test in the reader"),
    "dddddddd-0000-4000-8000-000000000004": ("2026-10-01T12:00:00Z", "fixed the flaky cache test in the planner"),
}


def _session(claude: Path, sid: str, when: datetime, prompt: str) -> None:
    def line(dt: datetime, **rec: Any) -> dict[str, Any]:
        return {"sessionId": sid, "cwd": "/home/dev/demo", "version": "2.1.42", "isSidechain": False,
                "timestamp": dt.isoformat().replace("+00:00", "Z"), "uuid": f"{sid[:8]}-{len(rec)}-{dt.timestamp()}",
                **rec}

    write_jsonl(claude / "projects" / "-home-dev-demo" / f"{sid}.jsonl", [
        line(when, type="user", message={"role": "user", "content": prompt}),
        line(when + timedelta(seconds=5), type="assistant", requestId="r1", message={
            "id": f"m-{sid[:8]}", "role": "assistant", "model": "claude-test",
            "content": [{"type": "text", "text": "Done: " + prompt + "."}]})])


@pytest.fixture(scope="module", params=["edge", "server"])
def indexed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, dense_embedder: Any) -> Any:
    from test_index_search import _make_indexer

    root = tmp_path_factory.mktemp(f"timephrase-{request.param}")
    for sid, (when, what) in SESSIONS.items():
        _session(root / "claude", sid, datetime.fromisoformat(when.replace("Z", "+00:00")), what)
    settings = load_settings(root / "claude", jacked_home=str(root / "home"), user_name="ada")
    indexer = _make_indexer(settings, request.param)
    indexer.backfill()
    return settings, indexer


def _ask(indexed: Any, query: str, **opts: Any) -> dict[str, Any]:
    settings, indexer = indexed
    return search_many(settings, [query], SearchOptions(now=NOW, limit=10, **opts), indexer=indexer)[0]


def _found(answer: dict[str, Any]) -> set[str]:
    return {r["session_id"][:2] for r in answer["results"]}


def test_time_words_filter_the_search(indexed: Any) -> None:
    assert _found(_ask(indexed, "flaky cache test")) == {"aa", "bb", "cc", "dd"}
    last_week = _ask(indexed, "the flaky cache test I fixed last week")
    assert _found(last_week) == {"aa"}
    assert last_week["query"] == "the flaky cache test I fixed last week"
    assert last_week["time_filter"] == {"phrase": "last week", "since": _d("2026-11-23"), "until": _d("2026-11-30"),
                                        "applied": True}
    assert _found(_ask(indexed, "flaky cache test yesterday")) == {"bb"}
    assert _found(_ask(indexed, "the flaky cache test in March")) == {"cc"}
    assert _found(_ask(indexed, "flaky cache test since March")) == {"aa", "bb", "cc", "dd"}
    assert "time_filter" not in _ask(indexed, "flaky cache test")


def test_an_explicit_date_filter_wins(indexed: Any) -> None:
    answer = _ask(indexed, "the flaky cache test I fixed last week", since="2026-11-30")
    assert _found(answer) == {"bb"}
    assert answer["time_filter"]["applied"] is False and answer["time_filter"]["overridden_by"] == ["since"]


def test_search_json_says_so(tmp_path: Path) -> None:
    """Through the CLI, relative to the real clock: yesterday's session only, and the reading shown."""
    now = datetime.now(UTC).astimezone()
    yesterday_noon = (now.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(hours=12))
    claude, home = tmp_path / "claude", tmp_path / "home"
    _session(claude, "eeeeeeee-0000-4000-8000-000000000005", yesterday_noon.astimezone(UTC),
             "renamed the billing export job")
    _session(claude, "ffffffff-0000-4000-8000-000000000006", (now - timedelta(days=20)).astimezone(UTC),
             "renamed the billing import job")
    assert run(["backfill", "--json"], home, claude).returncode == 0
    p = run(["search", "what did I rename yesterday in billing", "--json"], home, claude)
    assert p.returncode == 0, p.stderr
    answer = json.loads(p.stdout)
    assert [r["session_id"][:2] for r in answer["results"]] == ["ee"]
    assert answer["time_filter"]["phrase"] == "yesterday" and answer["time_filter"]["applied"] is True
    human = run(["search", "what did I rename yesterday in billing"], home, claude)
    assert human.returncode == 0 and human.stdout.startswith('("yesterday" read as ')
