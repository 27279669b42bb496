"""jacked's own labels ("prompt: ", "Asked: ", "Plan approved: ") are not searched as if the user wrote
them (issue 39): the lexical leg and the verbatim match see the text without them, the shown text keeps
them. Real model, real Edge shard, transcripts in the real 2.1 shape."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from kit import assistant, prompt, result, text, tool_use, write_jsonl

from jacked.config import load_settings
from jacked.index.extract import EXTRACT_VERSION
from jacked.index.indexer import Indexer
from jacked.index.labels import searchable
from jacked.index.summarize import extractive_session_summary, extractive_turn_summary
from jacked.query.search import SearchOptions, Searcher
from jacked.sources.decisions import decision_text

ERROR_SID = "39393939-0000-4000-8000-000000000001"
# Claude Code's answer to a Task call without its `prompt` argument, as real transcripts hold it.
MISSING = ("<tool_use_error>InputValidationError: Task failed due to the following issue:\n"
           "The required parameter `prompt` is missing</tool_use_error>")
# Ordinary sessions, each chunk opening with the `prompt: ` label: some say one of the error's words in
# a short prompt (that its summary repeats), some are near it in meaning, some are one-letter answers.
ORDINARY = {f"39393939-0000-4000-8000-0000000001{i:02d}": [p] for i, p in enumerate([
    "A", "B", "ok", "make the retry timeout configurable", "add a --verbose flag to the export command",
    "which arguments does the deploy function take?", "make the name argument mandatory in the CLI",
    "is the --config flag necessary or optional?", "list the mandatory fields of the API request",
    "which parameter sets the retry timeout?", "is a region required for the deploy?", "rename that parameter",
    "required fields for the API request"])}
WORDS = re.compile(r"[a-z0-9]+")


def _session(claude: Path, sid: str, records: list[dict[str, Any]]) -> None:
    for r in records:
        r["sessionId"] = sid
    write_jsonl(claude / "projects" / "-home-dev-projects-demo" / f"{sid}.jsonl", records)


def _ordinary(sid: str, prompts: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, p in enumerate(prompts):
        t = i * 10
        out += [prompt(p, t=t),
                assistant(f"{sid[-2:]}m{i}", tool_use(f"{sid[-2:]}t{i}", "Bash", command="git status"), t=t + 1),
                result(f"{sid[-2:]}t{i}", "On branch main\nnothing to commit", t=t + 2),
                assistant(f"{sid[-2:]}n{i}", text("Done."), t=t + 3)]
    return out


def _error_session() -> list[dict[str, Any]]:
    """A one-letter answer ("A"), a long listing, then the Task call that lacked its `prompt`."""
    listing = "\n".join(f"src/module_{i}.py: {i * 7} lines, class Handler{i}, def run_{i}()" for i in range(60))
    return [
        prompt("A", t=0),
        assistant("eb0", tool_use("eb0t", "Bash", command="ls -R src"), t=1),
        result("eb0t", listing, t=2),
        assistant("em1", tool_use("et1", "Task", description="Survey layout", subagent_type="Explore"), t=3),
        result("et1", MISSING, is_error=True, t=4),
        assistant("em2", tool_use("et2", "Task", description="Survey layout", subagent_type="Explore",
                                  prompt="List the top-level folders and what each holds."), t=5),
        result("et2", [{"type": "text", "text": "src holds the code, tests the tests."}], t=6),
        assistant("em3", text("Option A it is: src holds the code, tests the tests."), t=7),
    ]


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory, dense_embedder: Any) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("labels")
    claude = root / "claude"
    _session(claude, ERROR_SID, _error_session())
    for sid, prompts in ORDINARY.items():
        _session(claude, sid, _ordinary(sid, prompts))
    settings = load_settings(claude, jacked_home=str(root / "home"), user_name="ada")
    indexer = Indexer(settings)
    assert indexer.backfill().errors == []
    from jacked.index.store import SearchFilter

    queries = ["required parameter", "The required parameter `prompt` is missing", "`prompt`", '"prompt"']
    lexical_only = ["prompt", "asked", "outcome", "subagent", "goal", "session", "turns"]
    with indexer.open_store(must_exist=True) as store:
        searcher = Searcher(settings, store, indexer.dense, indexer.sparse, indexer.catalog)
        answers = {q: searcher.search(q, SearchOptions(limit=5)) for q in queries}
        lexical = {w: store.search_each(None, indexer.sparse.embed_query(w), SearchFilter(), limit=10, fields=[])[1]
                   for w in lexical_only}
        # The shown texts keep their labels: a chunk still opens on `prompt: `.
        chunks = list(store.scroll(SearchFilter(content_types=["chunk"]), fields=["text"]))
    return {"answers": answers, "lexical": lexical, "chunks": chunks}


def test_an_error_held_by_one_session_ranks_it_first(searched: dict[str, Any]) -> None:
    first = searched["answers"]["required parameter"]["results"][0]
    assert first["session_id"] == ERROR_SID and first["exact"]
    assert "required parameter" in first["matches"][0]["text"].lower()  # the snippet shows the error
    verbatim = searched["answers"]["The required parameter `prompt` is missing"]["results"]
    assert verbatim[0]["session_id"] == ERROR_SID and verbatim[0]["exact"]


def test_a_word_only_in_labels_makes_no_session_exact(searched: dict[str, Any]) -> None:
    for q in ("The required parameter `prompt` is missing", "`prompt`", '"prompt"'):
        exact = {r["session_id"] for r in searched["answers"][q]["results"] if r["exact"]}
        assert exact == {ERROR_SID}, q  # the one session whose text, not label, holds `prompt`


def test_a_word_only_in_labels_matches_nothing_lexically(searched: dict[str, Any]) -> None:
    # "prompt" is the error's word too: that session's points only; the rest are label words alone.
    assert searched["lexical"]["prompt"]
    for word, hits in searched["lexical"].items():
        if word != "prompt":
            assert hits == [], word


def test_shown_texts_keep_their_labels(searched: dict[str, Any]) -> None:
    texts = [h.payload["text"] for h in searched["chunks"]]
    assert sum(t.startswith("prompt: ") for t in texts) == 1 + sum(len(p) for p in ORDINARY.values())


def test_each_writer_s_labels_are_left_out() -> None:
    """What is left of a summary or decision holds only words of the facts it was made from."""
    facts = {"index": 2, "prompt": "tidy wibble module", "is_slash_command": False,
             "assistant_text": "Wobble sorted.", "tool_usage": {"Bash": 3, "Edit": 1}, "tool_call_count": 4,
             "tool_error_count": 1, "read": ["zed.py", "qux.py", "a.py", "b.py", "c.py"], "edited": ["zed.py"],
             "created": ["new.py"], "lines_added": 3, "lines_removed": 1,
             "commands": ["pytest", "make", "tox", "nox", "ruff"],
             "errors": [{"tool_name": "Bash", "target": "pytest", "message": "E assert 1 == 2", "resolved": True},
                        {"tool_name": "Bash", "target": "tox", "message": "boom", "resolved": False}],
             "interrupted": True, "started_at": None}
    row = {"repo_name": "demo", "git_branch": "main", "title": "Tidy", "started_at": "2026-03-01",
           "ended_at": "2026-03-02"}
    given = set(WORDS.findall(repr(facts).lower()) + WORDS.findall(repr(row).lower()))
    for kind, made in (("turn_summary", extractive_turn_summary(facts)),
                       ("turn_summary", extractive_turn_summary(dict(facts, prompt="", index=0, tool_usage={},
                                                                     errors=[], commands=[], read=[], edited=[],
                                                                     created=[], assistant_text=""))),
                       ("session_summary", extractive_session_summary(row, [facts] * 8))):
        left = set(WORDS.findall(searchable(kind, made).lower()))
        assert left <= given, (kind, left - given)
    decisions = [{"kind": "question", "header": "Store", "question": "Which store", "answer": "Qdrant",
                  "options": ["Qdrant", "Lance"], "descriptions": ["fast", "new"]},
                 {"kind": "plan", "title": "Plan: shard wibble", "outcome": "rejected", "reason": "too wide"},
                 {"kind": "plan", "title": "shard wibble", "outcome": "approved"},
                 {"kind": "plan_mode", "outcome": "entered"}, {"kind": "plan_mode", "outcome": "declined"},
                 {"kind": "todos", "added": ["wire wibble"], "removed": ["drop wobble"]}]
    for d in decisions:
        left = set(WORDS.findall(searchable("decision", decision_text(d) or "").lower()))
        given = {w for k, v in d.items() if k not in ("kind", "outcome") for w in WORDS.findall(repr(v).lower())}
        assert left <= given, (d, left - given)
    chunk = "prompt: tidy wibble\nBash (error): pytest -x\nE assert 1 == 2"
    assert WORDS.findall(searchable("chunk", chunk).lower()) == ["tidy", "wibble", "bash", "pytest", "x", "e",
                                                                   "assert", "1", "2"]
    assert searchable("chunk", "subagent Explore: survey\nlist folders") == "Explore survey\nlist folders"
    assert searchable("user_message", "prompt: as typed") == "prompt: as typed"  # the user's own text
    # What the sources write for what they leave out: a shortened output, an image, a tool reference.
    cut = "Bash: make\nstarting… [+120 chars]\nfirst\n… [900 chars] …\nlast\n[image]\n[tool_reference WebSearch]"
    assert WORDS.findall(searchable("chunk", cut).lower()) == ["bash", "make", "starting", "first", "last",
                                                                 "websearch"]
    assert searchable("user_message", "look at this [image]").strip() == "look at this"


def test_an_index_written_with_labels_is_rewritten_without_them(tmp_path: Path, dense_embedder: Any,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """An index of the version before (labels in its BM25 vectors) is upgraded by the next backfill."""
    import jacked.index.extract as extract
    import jacked.index.indexer as indexer_module
    from jacked.index.store import SearchFilter

    claude = tmp_path / "claude"
    _session(claude, ERROR_SID, _error_session())
    settings = load_settings(claude, jacked_home=str(tmp_path / "home"), user_name="ada")

    def asked_hits() -> int:
        indexer = Indexer(settings)
        with indexer.open_store(must_exist=True) as store:
            return len(store.search_each(None, indexer.sparse.embed_query("asked outcome"), SearchFilter(), limit=10,
                                         fields=[])[1])

    with monkeypatch.context() as old:
        old.setattr(extract, "EXTRACT_VERSION", EXTRACT_VERSION - 1)
        old.setattr(indexer_module, "searchable", lambda _type, text: text)
        assert Indexer(settings).backfill().errors == []
    assert asked_hits() > 0  # the summary's "Asked:" and "Outcome:" were embedded
    report = Indexer(settings).backfill()
    assert report.errors == [] and report.points_written > 0
    assert asked_hits() == 0
