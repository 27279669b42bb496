"""The vector-store interface shared by the Qdrant backends, and its data types.

Collection schema (both backends):

* named dense vector ``dense`` (cosine, the embedding model's dims) — optional per point:
  sparse-only ``chunk`` points have none;
* named sparse vector ``bm25`` with the IDF modifier (BM25's IDF is computed by Qdrant
  over the whole collection; documents carry only term-frequency weights);
* keyword payload indexes on :data:`KEYWORD_INDEXES`, a float index on ``ts``
  (epoch seconds of the unit, what :attr:`SearchFilter.since_ts` filters on).

Every store records the dense model and dims it was built with and refuses to open with
another model (:class:`ModelMismatch`), since vectors of two models are not comparable.

Point ids are UUID strings (the indexer uses UUID5 of ``{session_id}:{content_type}:{index}``);
ids come back as canonical lowercase UUID strings.
"""
from __future__ import annotations

import abc
import uuid
from datetime import datetime, UTC
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from jacked.errors import JackedError
from jacked.index.embed import SparseVector

#: Name of the dense vector in the collection.
DENSE_VECTOR = "dense"
#: Name of the sparse (BM25) vector in the collection.
SPARSE_VECTOR = "bm25"
#: Payload fields with a keyword index: those filters and deletes name (`repo_id` and
#: `content_hash` are stored, never filtered on: an index costs each shard load ~5 MB mapped).
KEYWORD_INDEXES: tuple[str, ...] = (
    "session_id",
    "content_type",
    "repo_name",
    "user_name",
    "agent_type",
    "agent",  # the coding agent of the session: claude, codex, gemini, opencode, aider
)
#: Indexes an older jacked made and this one drops (at the next optimisation).
OBSOLETE_INDEXES: tuple[str, ...] = ("repo_id", "content_hash")
#: Payload fields with a float (range) index.
FLOAT_INDEXES: tuple[str, ...] = ("ts",)
#: Payload field of the unit's time in epoch seconds (float).
TS_FIELD = "ts"
_REBUILD_HINT = "run `jacked backfill --rebuild`"


class StoreError(JackedError):
    """A vector-store problem; the message is one actionable line."""


class StoreBusy(StoreError):
    """Another process holds the index lock and did not release it within the timeout."""


class StoreNotFound(StoreError):
    """There is no index yet (raised by ``open()`` without a model, which cannot create one)."""


class ModelMismatch(StoreError):
    """The index was built with another dense model (or dims) than this run uses."""

    def __init__(self, recorded_model: str, recorded_dims: int, model: str, dims: int) -> None:
        self.recorded_model = recorded_model
        self.recorded_dims = recorded_dims
        self.model = model
        self.dims = dims
        super().__init__(
            f"index was built with model {recorded_model} ({recorded_dims} dims); "
            f"this run uses {model} ({dims} dims) — {_REBUILD_HINT}"
        )


@dataclass
class Point:
    """One indexed unit: UUID id, payload, and its vectors (either may be missing).

    ``dense`` is ``None`` for sparse-only points (e.g. ``chunk``); ``sparse`` is ``None``
    (or empty) for texts without indexable words. The payload should carry ``ts`` (epoch
    seconds, float) for time filters — derived from an ISO ``timestamp`` when missing —
    and the keyword fields in :data:`KEYWORD_INDEXES`.
    """

    id: str
    payload: dict[str, Any]
    dense: list[float] | None = None
    sparse: SparseVector | None = None


@dataclass
class Hit:
    """A point returned by search / scroll / retrieve.

    ``score`` is the raw cosine or BM25 score of a search leg, and 0.0 for scroll / retrieve.
    """

    id: str
    score: float
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass
class SearchFilter:
    """Payload filters; every field set narrows the result (they are ANDed).

    ``None`` means "no constraint". An *empty list* (``content_types=[]``,
    ``session_ids=[]``) matches nothing, as "any of no values" should.
    """

    content_types: list[str] | None = None
    agent_type: str | None = None
    repo: str | None = None  # matches payload repo_name
    user_name: str | None = None
    session_ids: list[str] | None = None
    since_ts: float | None = None  # payload ts >= since_ts (epoch seconds)
    extra: list[tuple[str, str, Any]] = field(default_factory=list)  # more ("value"|"any"|"gte"|"lt"|"set", key, operand)

    def matches_nothing(self) -> bool:
        """True when an empty value list makes the filter unsatisfiable."""
        return self.content_types == [] or self.session_ids == []

    def conditions(self) -> list[tuple[str, str, Any]]:
        """Backend-neutral conditions: ``("value"|"any"|"gte"|"lt"|"set", field, operand)``."""
        out: list[tuple[str, str, Any]] = []
        if self.content_types is not None:
            out.append(("any", "content_type", list(self.content_types)))
        if self.agent_type is not None:
            out.append(("value", "agent_type", self.agent_type))
        if self.repo is not None:
            out.append(("value", "repo_name", self.repo))
        if self.user_name is not None:
            out.append(("value", "user_name", self.user_name))
        if self.session_ids is not None:
            out.append(("any", "session_id", list(self.session_ids)))
        if self.since_ts is not None:
            out.append(("gte", TS_FIELD, float(self.since_ts)))
        return out + list(self.extra)


def check_model(recorded_model: str, recorded_dims: int, model: str, dims: int) -> None:
    """Raise :class:`ModelMismatch` unless the recorded model and dims are the ones asked for."""
    if recorded_model != model or int(recorded_dims) != int(dims):
        raise ModelMismatch(recorded_model, int(recorded_dims), model, int(dims))


_HEX = frozenset("0123456789abcdef-")


def canonical_id(point_id: str) -> str:
    """The canonical (lowercase, hyphenated) form of a UUID id, as the backends return it."""
    if len(point_id) == 36 and point_id[8] == point_id[13] == point_id[18] == point_id[23] == "-" \
            and _HEX.issuperset(point_id):
        return point_id  # already canonical (ids the store gave back): no parsing per id
    try:
        return str(uuid.UUID(str(point_id)))
    except ValueError:
        return str(point_id)


def count_values(hits: Iterable[Hit], field: str) -> dict[str, int]:
    """Count payload values of ``field`` over hits (list values count once per element)."""
    counts: dict[str, int] = {}
    for hit in hits:
        value = hit.payload.get(field)
        for v in value if isinstance(value, list) else [value]:
            if v is not None:
                counts[str(v)] = counts.get(str(v), 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def prepare_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload as stored: ``ts`` (float epoch seconds) filled in from an ISO
    ``timestamp`` when the caller gave none, so time filters always have a number."""
    ts = payload.get(TS_FIELD)
    if isinstance(ts, float):
        return payload
    if isinstance(ts, int) and not isinstance(ts, bool):
        return {**payload, TS_FIELD: float(ts)}
    stamp = payload.get("timestamp")
    if ts is None and isinstance(stamp, str) and stamp:
        try:
            parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            return payload
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)  # transcripts write UTC
        return {**payload, TS_FIELD: parsed.timestamp()}
    return payload


def where_conditions(user_name: str | None, session_id: str | None) -> list[tuple[str, str, Any]]:
    """Conditions for ``delete_where``; refuses an empty filter (it would delete everything)."""
    if user_name is None and session_id is None:
        raise ValueError("delete_where needs user_name and/or session_id (refusing to delete every point)")
    out: list[tuple[str, str, Any]] = []
    if user_name is not None:
        out.append(("value", "user_name", user_name))
    if session_id is not None:
        out.append(("value", "session_id", session_id))
    return out


class VectorStore(abc.ABC):
    """A Qdrant collection of jacked points (embedded Edge shard or a Qdrant server).

    Usage::

        with open_store("edge", home).open(embedder.model_name, embedder.dims) as store:
            store.upsert(points)
            dense_hits, bm25_hits = store.search_each(dense, sparse, SearchFilter(user_name="ada"), limit=20)

    Construction is cheap and touches nothing; :meth:`open` connects / locks / creates.
    """

    #: "edge" or "server".
    backend: str = ""

    def __init__(self) -> None:
        self._dense_model: str | None = None
        self._dims: int | None = None

    # -- lifecycle ---------------------------------------------------------

    @abc.abstractmethod
    def open(self, dense_model: str | None, dims: int | None, *, recreate: bool = False) -> VectorStore:
        """Open (creating if missing) the index for ``dense_model`` / ``dims``; return self.

        Raises :class:`ModelMismatch` if the index was built with another model. With
        ``recreate=True`` an existing index is dropped and rebuilt empty for this model
        (``jacked backfill --rebuild``). With ``dense_model=None`` the index is opened with
        whatever model it records (for status / stats / deletes that embed nothing);
        :class:`StoreNotFound` if there is none.
        """

    @abc.abstractmethod
    def close(self) -> None:
        """Make writes durable and release the index (and its lock). Idempotent."""

    def __enter__(self) -> VectorStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def dense_model(self) -> str:
        """The dense model the open index records."""
        if self._dense_model is None:
            raise StoreError("store is not open")
        return self._dense_model

    @property
    def dims(self) -> int:
        """The dense vector size the open index records."""
        if self._dims is None:
            raise StoreError("store is not open")
        return self._dims

    def optimize(self) -> None:  # noqa: B027  # a hook: backends with nothing to optimise inherit this no-op
        """Build indexes / merge segments now if the backend needs it (default: nothing)."""

    def upkeep(self) -> bool:
        """For a writer between batches: optimise when enough was written since the last time
        (default: nothing; a server optimises by itself). True if it ran (see `optimize`)."""
        return False

    def upkeep_due(self) -> bool:
        """Whether `upkeep` would optimise now (default: never)."""
        return False

    @contextmanager
    def bulk(self) -> Iterator[VectorStore]:
        """A bulk load (a backfill) runs inside: a backend may optimise differently meanwhile
        (default: nothing changes)."""
        yield self

    @abc.abstractmethod
    def compact(self) -> dict[str, Any]:
        """Make deleted points' data unrecoverable from the index's files (after `jacked forget`):
        a backend that keeps deleted payloads in segments or a log rewrites itself without them.
        Returns what was done ({"points": kept, "seconds": ...}, backend specific)."""

    # -- writes ------------------------------------------------------------

    @abc.abstractmethod
    def upsert(self, points: Sequence[Point]) -> None:
        """Insert or replace points (by id)."""

    @abc.abstractmethod
    def update_vectors(self, vectors: Sequence[tuple[str, list[float]]]) -> None:
        """Set the dense vector of existing points by id (their bm25 vector and payload stay):
        the second pass of a backfill fills in what its first, lexical pass left out."""

    @abc.abstractmethod
    def set_payload(self, ids: Sequence[str], values: dict[str, Any]) -> None:
        """Set payload fields on these points (their other fields stay)."""

    @abc.abstractmethod
    def delete_points(self, ids: Sequence[str]) -> None:
        """Delete points by id (missing ids are ignored)."""

    @abc.abstractmethod
    def delete_where(self, user_name: str | None = None, session_id: str | None = None) -> int:
        """Delete points matching every given field; return how many were deleted."""

    def delete_marked(self, field: str, flt: SearchFilter | None = None) -> int:
        """Delete the points whose payload has `field` set (a marker, such as a backfill's glance
        points' `glance`), of those `flt` passes (indexed fields narrow the search); how many went."""
        return self._delete_filtered(self._filter(flt, [("set", field, None)]))

    @abc.abstractmethod
    def _delete_filtered(self, flt: Any) -> int:
        """Delete the points a backend filter matches; how many went."""

    @abc.abstractmethod
    def set_payload_where(self, values: dict[str, Any], user_name: str) -> None:
        """Set payload fields on every point of a user (an upgrade giving old points a new field)."""

    # -- reads -------------------------------------------------------------

    def search_each(self, dense: list[float] | None, sparse: SparseVector | None, flt: SearchFilter | None = None,
                    limit: int = 50, fields: list[str] | None = None) -> tuple[list[Hit], list[Hit]]:
        """The best ``limit`` points by the dense vector and, separately, by ``bm25``, each
        with its raw score (cosine; BM25) and the payload ``fields`` (all when None, none when
        empty: on an Edge shard reading payloads is most of a query's cost): for a caller
        that fuses at the session level rather than per point. A missing or empty
        vector gives an empty list."""
        if (flt is not None and flt.matches_nothing()) or limit <= 0:
            return [], []
        if sparse is not None and sparse.is_empty:
            sparse = None
        if dense is None and sparse is None:
            return [], []
        f = self._filter(flt)
        dense_hits = self._query_leg(DENSE_VECTOR, as_list(dense), f, limit, fields) if dense is not None else []
        sparse_hits = self._query_leg(SPARSE_VECTOR, sparse, f, limit, fields) if sparse is not None else []
        return dense_hits, sparse_hits

    @abc.abstractmethod
    def _query_leg(self, using: str, vector: Any, flt: Any, limit: int, fields: list[str] | None) -> list[Hit]:
        """One plain query on the vector `using` (a dense list or a SparseVector), filter `flt`
        already in the backend's terms; payload `fields` (all when None, none when empty)."""

    @abc.abstractmethod
    def count(self, flt: SearchFilter | None = None) -> int:
        """Exact number of points (matching ``flt``)."""

    @abc.abstractmethod
    def count_by(self, field: str) -> dict[str, int]:
        """Points per value of a payload field (e.g. ``content_type``, ``user_name``)."""

    @abc.abstractmethod
    def scroll(self, flt: SearchFilter | None = None, fields: list[str] | None = None) -> Iterator[Hit]:
        """Every point matching ``flt`` (score 0.0), with only ``fields`` of the payload
        (all fields when ``None``). Streams in pages."""

    @abc.abstractmethod
    def retrieve(self, ids: Sequence[str], fields: list[str] | None = None) -> list[Hit]:
        """Points by id, in the order asked, skipping ids that do not exist, with the payload
        ``fields`` (all when None)."""

    # -- what the backends spell in their own client's terms ---------------

    @abc.abstractmethod
    def _describe(self) -> str:
        """The index, for error messages (`edge index PATH`, `Qdrant URL collection 'x'`)."""

    @abc.abstractmethod
    def _condition(self, op: str, key: str, operand: Any) -> Any:
        """One filter condition: `op` is "value" (equals), "any" (one of), "gte" / "lt" (float range) or "set"
        (the field has a value; `operand` unused: Qdrant Edge's binding reads a bool as an int, so a
        marker is matched by its presence)."""

    @abc.abstractmethod
    def _all_of(self, conditions: list[Any]) -> Any:
        """A filter that every one of `conditions` must pass."""

    def _filter(self, flt: SearchFilter | None, extra: list[tuple[str, str, Any]] | None = None) -> Any:
        """`flt` (and `extra` conditions) as the backend's filter; None when nothing is filtered."""
        conds = (flt.conditions() if flt is not None else []) + (extra or [])
        if not conds:
            return None
        return self._all_of([self._condition(op, key, operand) for op, key, operand in conds])

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        """Whatever the client raises (bare ``Exception`` from qdrant_edge, HTTP/gRPC/value
        errors from qdrant-client) becomes a one-line StoreError naming the index."""
        try:
            yield
        except StoreError:
            raise
        except Exception as exc:
            text = str(exc).strip()
            msg = text.splitlines()[0] if text else type(exc).__name__
            raise StoreError(f"{self._describe()}: {action} failed: {msg}") from exc


def as_list(vec: Any) -> list[float]:
    """Vectors may come as numpy arrays; the client bindings want plain lists."""
    return vec.tolist() if hasattr(vec, "tolist") else list(vec)


def point_vectors(p: Point, sparse_vector: Callable[[list[int], list[float]], Any]) -> dict[str, Any]:
    """A point's named vectors: dense as a list, sparse (when not empty) built by the backend."""
    vector: dict[str, Any] = {}
    if p.dense is not None:
        vector[DENSE_VECTOR] = as_list(p.dense)
    if p.sparse is not None and not p.sparse.is_empty:
        vector[SPARSE_VECTOR] = sparse_vector(list(p.sparse.indices), list(p.sparse.values))
    return vector
