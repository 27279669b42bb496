"""Summaries: an extractive summary for every turn of the fixtures, stored and indexed; `--scope
turns` finds a turn from a paraphrase (real model, real Edge shard); the LLM summarizer's own
batching and retry logic with a scripted transport (no network here)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from kit import DEEP, REAL, scanned_real

from jacked.catalog import Catalog
from jacked.config import load_settings
from jacked.ingest.scan import Scanner
from jacked.query.search import SearchError, SearchOptions, search_many
from jacked.index.summarize import (
    EXTRACTIVE,
    LlmSummarizer,
    TransientError,
    ensure_summaries,
    parse_batch_answer,
    summaries_for,
    summarize,
    summary_status,
)



@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    return scanned_real(tmp_path_factory.mktemp("sum-real"))


def test_every_fixture_turn_gets_a_summary(real: Catalog) -> None:
    report = summarize(real)
    status = summary_status(real)
    assert status["turns"] == 99 and status["turns_summarized"] == 99 and status["turns_missing"] == 0
    assert status["sessions_summarized"] == status["sessions"]
    assert report.turn_summaries_written == 99
    for sid in real.session_ids():
        turns, session = summaries_for(real, sid)
        assert session is not None and session["text"]
        for t in real.turn_rows(sid):
            assert turns[t["turn_index"]]["text"].strip()
    # deterministic and incremental: a second run keeps everything
    again = summarize(real)
    assert again.turn_summaries_written == 0 and again.turn_summaries_kept == 99


def test_turn_summary_content(real: Catalog) -> None:
    turns, session = summaries_for(real, DEEP)
    t6 = turns[6]["text"]
    assert t6.startswith("Asked: New feature: we support .zip")
    assert "Edited deep_manifest/deep_manifest.py" in t6 and "+763/-31 lines" in t6
    assert "Outcome:" in t6 and turns[6]["summarizer"] == EXTRACTIVE
    assert turns[1]["text"].startswith("Asked: /context")
    assert session["text"].startswith("Session in deep-manifest (branch master), 9 turns")


def test_changed_turn_gets_a_fresh_summary_and_llm_summary_survives_rescan(real: Catalog) -> None:
    with real.transaction():
        real.db.execute("UPDATE summaries SET text = 'from a model', summarizer = 'llm', model = 'm' "
                        "WHERE session_id = ? AND kind = 'turn' AND turn_index = 3", (DEEP,))
    ensure_summaries(real, DEEP)
    assert summaries_for(real, DEEP)[0][3]["text"] == "from a model"  # unchanged turn: kept
    with real.transaction():
        real.db.execute("UPDATE turns SET assistant_text = 'Committed everything.' WHERE session_id = ? "
                        "AND turn_index = 3", (DEEP,))
    ensure_summaries(real, DEEP)
    row = summaries_for(real, DEEP)[0][3]
    assert row["summarizer"] == EXTRACTIVE and "Outcome: Committed everything." in row["text"]


# ---------------------------------------------------------------------------- LLM logic
class ScriptedTransport:
    """Plays back answers (or failures) in order and records each prompt: our own test double
    for the summarizer's batching and retry logic, not a stand-in for any jacked component."""

    model = "scripted"

    def __init__(self, answers: list[Any]) -> None:
        self.answers, self.prompts = list(answers), []

    def complete(self, prompt: str) -> str:
        self.prompts.append(prompt)
        a = self.answers.pop(0)
        if isinstance(a, Exception):
            raise a
        return a


def _answer(turns: list[int]) -> str:
    return "Here you go:\n" + json.dumps([{"turn": t, "summary": f"summary {t}"} for t in turns])


def test_llm_batches_are_5_to_10_turns() -> None:
    s = LlmSummarizer(ScriptedTransport([]), batch_size=8)
    for n in (1, 5, 8, 9, 11, 17, 23, 40):
        sizes = [len(b) for b in s.batches([(i, "x") for i in range(n)])]
        assert sum(sizes) == n and max(sizes) <= 8
        if n >= 10:
            assert min(sizes) >= 5
    with pytest.raises(ValueError):
        LlmSummarizer(ScriptedTransport([]), batch_size=12)


def test_llm_retries_with_backoff_then_succeeds() -> None:
    sleeps: list[float] = []
    t = ScriptedTransport([TransientError("429"), "no json at all", _answer([1, 2, 3, 4, 5])])
    s = LlmSummarizer(t, batch_size=5, max_retries=3, backoff_s=1.5, sleep=sleeps.append)
    out, calls, errors = s.summarize([(i, f"facts {i}") for i in range(1, 6)])
    assert out == {i: f"summary {i}" for i in range(1, 6)} and calls == 1 and errors == []
    assert sleeps == [1.5, 3.0] and len(t.prompts) == 3
    assert "### Turn 1" in t.prompts[0] and "### Turn 5" in t.prompts[0]


def test_llm_gives_up_on_a_batch_and_goes_on() -> None:
    t = ScriptedTransport([TransientError("503")] * 3 + [_answer(list(range(6, 11)))])
    s = LlmSummarizer(t, batch_size=5, max_retries=2, backoff_s=0, sleep=lambda _: None)
    out, calls, errors = s.summarize([(i, "f") for i in range(1, 11)])
    assert sorted(out) == [6, 7, 8, 9, 10] and calls == 2 and len(errors) == 1 and "503" in errors[0]


def test_parse_batch_answer_ignores_unknown_turns() -> None:
    assert parse_batch_answer('[{"turn": 2, "summary": " a  b "}, {"turn": 9, "summary": "x"}]', {1, 2}) == {2: "a b"}
    with pytest.raises(TransientError):
        parse_batch_answer('[{"turn": 9, "summary": "x"}]', {1, 2})


def test_llm_summaries_are_stored_with_model_and_prompt_version(tmp_path: Path) -> None:
    cat = Catalog(tmp_path / "catalog.db")
    Scanner(cat, REAL).scan()
    n = len(cat.turn_rows(DEEP))
    t = ScriptedTransport([_answer(list(range(1, 6))), _answer(list(range(6, 10)))])
    report = summarize(cat, [DEEP], llm=LlmSummarizer(t, batch_size=5, sleep=lambda _: None))
    assert n == 9 and report.llm_batches == 2 and report.llm_failed_turns == 0
    turns, _ = summaries_for(cat, DEEP)
    assert {r["summarizer"] for r in turns.values()} == {"llm"}
    assert turns[4]["text"] == "summary 4" and turns[4]["model"] == "scripted" and turns[4]["prompt_version"]
    assert summary_status(cat)["by_summarizer"]["llm:scripted"] == 9


# ---------------------------------------------------------------------------- search scope
@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, dense_embedder: Any) -> Any:
    from jacked.index.indexer import Indexer

    claude = tmp_path_factory.mktemp("sum-claude")
    for sid in (DEEP, "fe869ecb-c176-478f-9734-7e4b8ef12cff", "cb2e607c-c758-415a-8b45-c49e4631906a"):
        src = next(REAL.rglob(f"{sid}.jsonl"))
        dst = claude / "projects" / src.parent.name / src.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, dst)
    shutil.copytree(REAL / "plans", claude / "plans")
    settings = load_settings(claude, jacked_home=str(tmp_path_factory.mktemp("sum-home")), user_name="ada")
    report = Indexer(settings).backfill()
    assert report.errors == []
    return settings


def test_scope_turns_finds_a_turn_from_a_paraphrase(indexed: Any) -> None:
    # Turn 6 of deep-manifest added .tar/.tar.gz support; the query shares no file name with it.
    query = "teach the checksum listing tool to descend into tarballs found inside zip files"
    res = search_many(indexed, [query], SearchOptions(scope="turns", limit=3))[0]["results"]
    assert res[0]["session_id"] == DEEP
    assert 6 in {m["turn_index"] for m in res[0]["matches"]}
    # the turns layer: prompts, answers, turn summaries, and the decisions taken in a turn
    assert {m["content_type"] for r in res for m in r["matches"]} <= {"turn_summary", "user_message",
                                                                       "assistant_response", "decision"}
    only = search_many(indexed, [query], SearchOptions(scope="turns", types=["turn_summary"], limit=3))[0]
    assert only["results"][0]["session_id"] == DEEP and only["results"][0]["matches"][0]["turn_index"] == 6


def test_scope_sessions_uses_session_summaries(indexed: Any) -> None:
    res = search_many(indexed, ["github actions workflow running tests and lint with act"],
                      SearchOptions(scope="sessions", limit=3))[0]["results"]
    # (fe869ecb's labels once matched here; their leaves are in no known session, so they are dropped)
    assert res and any(m["content_type"] == "session_summary" for m in res[0]["matches"])
    types = {m["content_type"] for r in res for m in r["matches"]}
    assert "session_summary" in types and not types & {"user_message", "chunk", "turn_summary"}
    with pytest.raises(SearchError):
        SearchOptions(scope="everything").validate()
