"""Indexing and search end to end: real offline model, real Qdrant (Edge shard, and the server
backend's query code on qdrant-client's in-process mode), a generated corpus with known
answers and the real fixtures. No mocks."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from kit import REAL, generated_corpus

from jacked.config import load_settings
from jacked.index.content_types import DENSE_TYPES
from jacked.index.indexer import Indexer
from jacked.query.search import SearchError, SearchOptions, search_many
from jacked.index.store import ModelMismatch, SearchFilter

BACKENDS = ["edge", "server"]


def _make_indexer(settings: Any, backend: str, catalog: Any = None) -> Indexer:
    if backend == "server":
        return Indexer(settings, catalog, store=_server_store(settings))
    return Indexer(settings, catalog)


_SERVER_STORES: dict[str, Any] = {}


def _server_store(settings: Any) -> Any:
    """One in-process qdrant-client collection per JACKED_HOME (it plays the team server)."""
    from qdrant_client import QdrantClient

    from jacked.index.store.server import ServerStore

    key = str(settings.home)
    if key not in _SERVER_STORES:
        _SERVER_STORES[key] = QdrantClient(":memory:")
    return ServerStore(client=_SERVER_STORES[key])


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("corpus") / "claude"
    return out, generated_corpus(out, 12, 11)


@pytest.fixture(scope="module", params=BACKENDS)
def indexed(request: pytest.FixtureRequest, corpus: tuple[Path, dict[str, Any]], dense_embedder: Any,
            tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    claude, truth = corpus
    home = tmp_path_factory.mktemp(f"home-{request.param}")
    settings = load_settings(claude, jacked_home=str(home), user_name="ada")
    indexer = _make_indexer(settings, request.param)
    first = indexer.backfill()
    return {"backend": request.param, "settings": settings, "indexer": indexer, "first": first, "truth": truth,
            "claude": claude}


def _search(ix: dict[str, Any], query: str, **kw: Any) -> list[dict[str, Any]]:
    opts = SearchOptions(**{"limit": 5, **kw})
    return search_many(ix["settings"], [query], opts, indexer=ix["indexer"])[0]["results"]


def test_backfill_indexes_typed_points(indexed: dict[str, Any]) -> None:
    first = indexed["first"]
    # Listed sessions only: an empty or summary-only file is no session, and gets no points.
    listed = [s for s in indexed["truth"]["sessions"] if s.get("turns")]
    assert first.sessions_indexed == len(listed) == 10
    assert first.points_written > 0 and first.texts_embedded > 0
    with indexed["indexer"].open_store() as store:
        by_type = store.count_by("content_type")
        assert store.count() == first.points_written
        dense_texts = {h.payload["text"] for h in store.scroll(SearchFilter(content_types=list(DENSE_TYPES)),
                                                             ["text", "embedding_model"])
                       if h.payload.get("embedding_model")}
    for ctype in ("plan", "subagent_summary", "user_message", "assistant_response", "chunk"):
        assert by_type.get(ctype, 0) > 0, (ctype, by_type)
    # Every distinct text embedded once: during the lexical pass (ahead) or in the dense pass.
    assert first.texts_embedded == len(dense_texts) > 0


def test_rerun_embeds_nothing(indexed: dict[str, Any]) -> None:
    again = indexed["indexer"].backfill()
    assert (again.points_written, again.texts_embedded, again.points_deleted) == (0, 0, 0)
    # every file of the corpus passed over: its sessions unchanged, the files that hold none said apart
    assert again.sessions_unchanged >= 10 and again.sessions_unchanged + again.files_without_session >= 12


def test_search_finds_the_right_sessions_for_every_query_kind(indexed: dict[str, Any]) -> None:
    hits = {"kw": [], "para": [], "detail": []}
    for q in indexed["truth"]["queries"]:
        top = [r["session_id"] for r in _search(indexed, q["query"])]
        hits[q["kind"]].append(bool(set(top) & set(q["relevant_session_ids"])))
    for kind, found in hits.items():
        assert found and sum(found) / len(found) >= 0.8, (kind, found)


def test_results_shape_and_relative_age(indexed: dict[str, Any]) -> None:
    q = indexed["truth"]["queries"][0]["query"]
    res = _search(indexed, q)
    r = res[0]
    for key in ("session_id", "score", "repo_name", "timestamp", "age", "matches"):
        assert key in r
    assert r["age"].endswith("ago")
    assert {"content_type", "text", "score"} <= set(r["matches"][0])
    assert [x["score"] for x in res] == sorted((x["score"] for x in res), reverse=True)


def test_filters_narrow_results(indexed: dict[str, Any]) -> None:
    q = indexed["truth"]["queries"][0]
    plans = _search(indexed, q["query"], types=["plan"])
    assert plans and all(m["content_type"] == "plan" for r in plans for m in r["matches"])
    repo = next(s["repo_name"] for s in indexed["truth"]["sessions"] if s["session_id"] in q["relevant_session_ids"])
    in_repo = _search(indexed, q["query"], repo=repo, limit=20)
    assert in_repo and all(r["repo_name"] == repo for r in in_repo)
    assert _search(indexed, q["query"], user="somebody-else") == []
    assert _search(indexed, q["query"], mine=True)
    assert _search(indexed, q["query"], since="2999-01-01") == []
    agents = _search(indexed, "explore the code", types=["subagent_summary"], limit=20)
    some_type = agents[0]["matches"][0]
    assert some_type["content_type"] == "subagent_summary"


def test_agent_type_filter(indexed: dict[str, Any]) -> None:
    types = {a["agent_type"] for s in indexed["truth"]["sessions"] for a in s.get("subagents", [])}
    atype = sorted(t for t in types if t)[0]
    res = _search(indexed, "report of findings", agent_type=atype, limit=20)
    assert res
    with indexed["indexer"].open_store() as store:
        from jacked.index.store import SearchFilter

        assert all(h.payload["agent_type"] == atype for h in store.scroll(SearchFilter(agent_type=atype)))


def test_bad_queries_are_clean_errors(indexed: dict[str, Any]) -> None:
    with pytest.raises(SearchError):
        _search(indexed, "  \x00\x07 ")
    with pytest.raises(SearchError):
        _search(indexed, "x", types=["nonsense"])
    long = _search(indexed, "cache " * 1000)  # sanitised to 2,000 characters, still answers
    assert isinstance(long, list)


def test_no_planted_secret_reaches_index_or_results(indexed: dict[str, Any]) -> None:
    secrets = [sec for s in indexed["truth"]["sessions"] for sec in s.get("secrets", [])]
    assert secrets, "the corpus should plant secrets"
    with indexed["indexer"].open_store() as store:
        texts = "\n".join(h.payload.get("text", "") for h in store.scroll(None, fields=["text"]))
    for sec in secrets:
        assert sec not in texts
        for r in _search(indexed, sec[:60], limit=3):
            assert sec not in json.dumps(r)
    if indexed["backend"] == "edge":
        home = Path(indexed["settings"].home)
        blobs = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file() and "models" not in p.parts)
        assert not any(sec.encode() in blobs for sec in secrets)


def test_model_mismatch_names_rebuild(indexed: dict[str, Any]) -> None:
    from jacked.index.indexer import configured_store

    settings = indexed["settings"]
    fresh = _server_store(settings) if indexed["backend"] == "server" else configured_store(settings)
    with pytest.raises(ModelMismatch, match="jacked backfill --rebuild"):
        fresh.open("some/other-model", 384)
    fresh.close()


def test_hook_style_append_is_found(indexed: dict[str, Any]) -> None:
    from jacked.query.history import session_files_for_path

    s = next(x for x in indexed["truth"]["sessions"] if len(x.get("turns") or []) >= 2 and not x["malformed_lines"])
    path = indexed["claude"] / s["file"]
    before = path.read_bytes()
    try:
        line = {"type": "user", "uuid": "abcdef00-0000-4000-8000-000000000001", "sessionId": s["session_id"],
                "cwd": s["cwd"], "timestamp": "2026-06-01T00:00:00.000Z",
                "message": {"role": "user", "content": "wire the zanzibar quokka telemetry exporter"}}
        with path.open("a") as fh:
            fh.write(json.dumps(line) + "\n")
        report = indexed["indexer"].index_paths([session_files_for_path(path)])
        assert report.sessions_indexed == 1 and 0 < report.texts_embedded <= 3
        top = _search(indexed, "zanzibar quokka telemetry exporter", limit=1)
        assert top[0]["session_id"] == s["session_id"]
    finally:
        path.write_bytes(before)
        indexed["indexer"].index_paths([session_files_for_path(path)])


def test_cleardb_touches_only_the_current_user(corpus: tuple[Path, dict[str, Any]], dense_embedder: Any,
                                               tmp_path: Path) -> None:
    claude, _ = corpus
    other = tmp_path / "other-claude"
    shutil.copytree(REAL / "projects" / "-src-experiments-claude_p", other / "projects" / "-src-experiments-claude_p")
    home = tmp_path / "home"
    ada = load_settings(claude, jacked_home=str(home), user_name="ada")
    bob = load_settings(other, jacked_home=str(home), user_name="bob")
    Indexer(ada).backfill()
    Indexer(bob).backfill()
    with Indexer(ada).open_store() as store:
        before = store.count_by("user_name")
    assert before.get("ada", 0) > 0 and before.get("bob", 0) > 0
    Indexer(bob).cleardb()
    with Indexer(ada).open_store() as store:
        after = store.count_by("user_name")
    assert after.get("ada") == before["ada"] and not after.get("bob")
    assert Indexer(bob).backfill().points_written == before["bob"]  # the next backfill re-indexes


def test_real_fixture_sessions_are_found(dense_embedder: Any, tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    for project in ("-experiments-worktrees", "-src-experiments-claude_p"):
        shutil.copytree(REAL / "projects" / project, claude / "projects" / project)
    settings = load_settings(claude, jacked_home=str(tmp_path / "home"), user_name="ada")
    Indexer(settings).backfill()
    res = search_many(settings, ["teammates researching in separate git worktrees"], SearchOptions(limit=3))[0]
    assert res["results"][0]["session_id"].startswith("ef958aa1")
    hybrid_detail = search_many(settings, ["WebSearch"], SearchOptions(limit=3))[0]["results"]
    assert any(r["session_id"].startswith("2b4ed4c0") for r in hybrid_detail)


def test_raw_text_phrase_search_around_its_word_finds_what_a_full_scan_finds() -> None:
    """The verbatim check over raw text looks for a phrase only around its longest word: the same
    first match as a regex scan of the whole text, lookarounds judged on the whole text."""
    import re

    from jacked.query.search import _phrase_patterns, _search_around

    (word, pattern), = _phrase_patterns(["error: cannot find module"])
    loose = re.compile(pattern.pattern.replace(re.escape(" "), r"\s+"))
    texts = [
        "x" * 50_000 + "\nerror: cannot  find\n module 'a'" + "y" * 50_000,  # whitespace as written
        "error: cannot find modules\n" * 3 + "error: cannot find module",  # only the last is whole
        "preerror: cannot find module",  # inside a word: no match
        "nothing here",
    ]
    for text in texts:
        slow, fast = loose.search(text), _search_around(text, word, loose)
        assert (slow and (slow.start(), slow.end())) == (fast and (fast.start(), fast.end())), text[-60:]
    # Its limit: a run of whitespace longer than the reach is layout, not a phrase typed again.
    gap = "error: cannot find" + " " * 2000 + "module"
    assert loose.search(gap) is not None and _search_around(gap, word, loose) is None
    assert _search_around(texts[1], word, loose).start() == len("error: cannot find modules\n") * 3  # type: ignore[union-attr]
