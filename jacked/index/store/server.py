"""The server backend: a Qdrant server, cluster or Qdrant Cloud through ``qdrant-client``.

Same schema and payload as the Edge backend (see :mod:`jacked.index.store.base`). The model
record lives in the collection's own **metadata** (``jacked_dense_model``, ``jacked_dims``,
``jacked_schema``; Qdrant >= 1.16 stores collection metadata). A collection without that
metadata (older server, or made by hand) is adopted when its ``dense`` size matches, and
the metadata is written if the server accepts it.

Tests exercise the same query code against qdrant-client's in-process mode
(``QdrantClient(":memory:")`` or ``path=``) by passing ``client=``.
"""
from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from typing import Any

from jacked.index.embed import SparseVector
from jacked.index.store.base import (
    DENSE_VECTOR,
    FLOAT_INDEXES,
    KEYWORD_INDEXES,
    SPARSE_VECTOR,
    Hit,
    ModelMismatch,
    Point,
    SearchFilter,
    StoreError,
    StoreNotFound,
    VectorStore,
    as_list,
    canonical_id,
    check_model,
    count_values,
    point_vectors,
    prepare_payload,
    where_conditions,
)

_SCHEMA = 1
_META_MODEL = "jacked_dense_model"
_META_DIMS = "jacked_dims"
_META_SCHEMA = "jacked_schema"
_UPSERT_BATCH = 256
_SCROLL_PAGE = 512
_FACET_LIMIT = 100_000


class ServerStore(VectorStore):
    """jacked's index as a collection on a Qdrant server.

    Args:
        url: Server URL (e.g. ``http://localhost:6333`` or a Qdrant Cloud URL).
        api_key: API key, if the server needs one.
        collection: Collection name.
        client: A ready ``QdrantClient`` (tests pass ``QdrantClient(":memory:")``); it is
            not closed by :meth:`close`.
        timeout: Request timeout in seconds for a client made here.
    """

    backend = "server"

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        collection: str = "jacked",
        client: Any = None,
        timeout: int = 30,
    ) -> None:
        super().__init__()
        self.url = url
        self.api_key = api_key
        self.collection = collection
        self.timeout = timeout
        self._client = client
        self._owns_client = client is None
        self._open = False

    # -- lifecycle ---------------------------------------------------------

    def open(self, dense_model: str | None, dims: int | None, *, recreate: bool = False) -> ServerStore:
        """Connect and open the collection, creating it for ``dense_model``/``dims`` if missing.

        See :meth:`VectorStore.open`.
        """
        if self._open:
            raise StoreError(f"collection {self.collection} is already open in this store")
        if (dense_model is None) != (dims is None):
            raise ValueError("give both dense_model and dims, or neither")
        if recreate and dense_model is None:
            raise ValueError("recreate needs the dense model and dims of the new index")
        if self._client is None:
            if not self.url:
                raise StoreError("the server backend needs qdrant_url (config key or --qdrant-url)")
            from qdrant_client import QdrantClient

            self._client = QdrantClient(url=self.url, api_key=self.api_key, timeout=self.timeout)
        client = self._client
        with self._errors("open"):
            exists = client.collection_exists(self.collection)
            if exists and recreate:
                client.delete_collection(self.collection)
                exists = False
            if not exists:
                if dense_model is None or dims is None:
                    raise StoreNotFound(f"no collection {self.collection!r} on {self._where()} yet: run `jacked backfill` first")
                try:
                    self._create(dense_model, int(dims))
                except Exception:
                    # Another process may have created it between our check and create.
                    if not client.collection_exists(self.collection):
                        raise
            rec_model, rec_dims = self._recorded(dense_model, dims)
            if dense_model is not None and dims is not None:
                check_model(rec_model, rec_dims, dense_model, int(dims))
            self._ensure_indexes()
        self._dense_model, self._dims = rec_model, rec_dims
        self._open = True
        return self

    def close(self) -> None:
        """Forget the collection; close the client if this store made it. Idempotent."""
        self._open = False
        self._dense_model = self._dims = None
        if self._owns_client and self._client is not None:
            client, self._client = self._client, None
            try:
                client.close()
            except Exception:
                pass

    # -- schema / model record --------------------------------------------

    def _create(self, dense_model: str, dims: int) -> None:
        from qdrant_client import models

        self._client.create_collection(
            self.collection,
            vectors_config={DENSE_VECTOR: models.VectorParams(size=dims, distance=models.Distance.COSINE)},
            sparse_vectors_config={SPARSE_VECTOR: models.SparseVectorParams(modifier=models.Modifier.IDF)},
            metadata={_META_MODEL: dense_model, _META_DIMS: dims, _META_SCHEMA: _SCHEMA},
        )

    def _recorded(self, dense_model: str | None, dims: int | None) -> tuple[str, int]:
        """The (model, dims) the collection records; adopts an unrecorded compatible one."""
        info = self._client.get_collection(self.collection)
        params = info.config.params
        vectors = params.vectors if isinstance(params.vectors, dict) else {}
        sparse = params.sparse_vectors or {}
        if DENSE_VECTOR not in vectors or SPARSE_VECTOR not in sparse:
            raise StoreError(
                f"collection {self.collection!r} on {self._where()} was not made by jacked "
                f"(needs vectors {DENSE_VECTOR!r} and {SPARSE_VECTOR!r}): choose another collection"
            )
        size = int(vectors[DENSE_VECTOR].size)
        meta = getattr(info.config, "metadata", None) or {}
        if meta.get(_META_MODEL):
            return str(meta[_META_MODEL]), int(meta.get(_META_DIMS) or size)
        if dense_model is None or dims is None:
            return "unknown", size
        if size != int(dims):
            raise ModelMismatch("unknown", size, dense_model, int(dims))
        try:  # record it now; servers before 1.16 ignore or refuse metadata
            self._client.update_collection(
                self.collection, metadata={_META_MODEL: dense_model, _META_DIMS: size, _META_SCHEMA: _SCHEMA}
            )
        except Exception:
            pass
        return dense_model, size

    def _ensure_indexes(self) -> None:
        from qdrant_client import models

        have = set((self._client.get_collection(self.collection).payload_schema or {}).keys())
        # `user_name` is the tenant: Qdrant keeps each user's points together on disk, so what
        # names one user (`search --mine`, a user's backfill, forget) reads only theirs.
        tenant = models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True)
        wanted: list[tuple[str, Any]] = [
            (n, tenant if n == "user_name" else models.PayloadSchemaType.KEYWORD) for n in KEYWORD_INDEXES
        ] + [(n, models.PayloadSchemaType.FLOAT) for n in FLOAT_INDEXES]
        with warnings.catch_warnings():
            # Local mode warns that payload indexes have no effect there; harmless.
            warnings.simplefilter("ignore", UserWarning)
            for name, schema in wanted:
                if name not in have:
                    self._client.create_payload_index(self.collection, name, field_schema=schema, wait=True)

    # -- helpers -----------------------------------------------------------

    def _where(self) -> str:
        return self.url or "the given client"

    def _require(self) -> Any:
        if not self._open:
            raise StoreError("store is not open: call open(model, dims) first")
        return self._client

    def _describe(self) -> str:
        return f"Qdrant {self._where()} collection {self.collection!r}"

    def _condition(self, op: str, key: str, operand: Any) -> Any:
        from qdrant_client import models

        if op == "value":
            return models.FieldCondition(key=key, match=models.MatchValue(value=operand))
        if op == "any":
            return models.FieldCondition(key=key, match=models.MatchAny(any=operand))
        if op == "set":
            return models.FieldCondition(key=key, is_empty=False)
        if op == "lt":
            return models.FieldCondition(key=key, range=models.Range(lt=operand))
        return models.FieldCondition(key=key, range=models.Range(gte=operand))  # "gte"

    def _all_of(self, conditions: list[Any]) -> Any:
        from qdrant_client import models

        return models.Filter(must=conditions)

    # -- writes ------------------------------------------------------------

    def upsert(self, points: Sequence[Point]) -> None:
        """Insert or replace points (waits until the server applied them)."""
        from qdrant_client import models

        client = self._require()
        for start in range(0, len(points), _UPSERT_BATCH):
            batch = [models.PointStruct(id=p.id, payload=prepare_payload(p.payload),
                                        vector=point_vectors(p, lambda i, v: models.SparseVector(indices=i, values=v)))
                     for p in points[start:start + _UPSERT_BATCH]]
            with self._errors("upsert"):
                client.upsert(self.collection, points=batch, wait=True)

    def update_vectors(self, vectors: Sequence[tuple[str, list[float]]]) -> None:
        """Set the dense vector of existing points (waits until the server applied it)."""
        from qdrant_client import models

        client = self._require()
        for start in range(0, len(vectors), _UPSERT_BATCH):
            batch = [models.PointVectors(id=pid, vector={DENSE_VECTOR: as_list(vec)})
                     for pid, vec in vectors[start:start + _UPSERT_BATCH]]
            with self._errors("update vectors"):
                client.update_vectors(self.collection, points=batch, wait=True)

    def set_payload(self, ids: Sequence[str], values: dict[str, Any]) -> None:
        """Set payload fields on these points."""
        if not ids:
            return
        with self._errors("update"):
            self._require().set_payload(self.collection, payload=values, points=list(ids), wait=True)

    def delete_points(self, ids: Sequence[str]) -> None:
        """Delete points by id."""
        from qdrant_client import models

        if not ids:
            return
        with self._errors("delete"):
            self._require().delete(self.collection, points_selector=models.PointIdsList(points=list(ids)), wait=True)

    def delete_where(self, user_name: str | None = None, session_id: str | None = None) -> int:
        """Delete the points of a user and/or a session; return how many went."""
        return self._delete_filtered(self._filter(None, where_conditions(user_name, session_id)))

    def _delete_filtered(self, flt: Any) -> int:
        from qdrant_client import models

        with self._errors("delete"):
            client = self._require()
            n = client.count(self.collection, count_filter=flt, exact=True).count
            if n:
                client.delete(self.collection, points_selector=models.FilterSelector(filter=flt), wait=True)
        return int(n)

    def set_payload_where(self, values: dict[str, Any], user_name: str) -> None:
        from qdrant_client import models

        flt = self._filter(None, where_conditions(user_name, None))
        with self._errors("update"):
            self._require().set_payload(self.collection, payload=values,
                                        points=models.FilterSelector(filter=flt), wait=True)

    # -- reads -------------------------------------------------------------

    def _query_leg(self, using: str, vector: Any, flt: Any, limit: int, fields: list[str] | None) -> list[Hit]:
        from qdrant_client import models

        if isinstance(vector, SparseVector):
            vector = models.SparseVector(indices=list(vector.indices), values=list(vector.values))
        payload: Any = True if fields is None else (list(fields) if fields else False)
        with self._errors("search"):
            res = self._require().query_points(self.collection, query=vector, using=using, query_filter=flt,
                                               limit=limit, with_payload=payload, with_vectors=False)
        return [Hit(id=str(p.id), score=float(p.score), payload=dict(p.payload or {})) for p in res.points]

    def count(self, flt: SearchFilter | None = None) -> int:
        """Exact number of points matching ``flt``."""
        if flt is not None and flt.matches_nothing():
            return 0
        with self._errors("count"):
            return int(self._require().count(self.collection, count_filter=self._filter(flt), exact=True).count)

    def count_by(self, field: str) -> dict[str, int]:
        """Points per value of ``field``: exact facet on indexed fields, else a payload scroll."""
        client = self._require()
        if field in KEYWORD_INDEXES:
            try:
                res = client.facet(self.collection, key=field, limit=_FACET_LIMIT, exact=True)
                return {str(h.value): int(h.count) for h in res.hits if h.count > 0}
            except Exception:
                pass  # servers before 1.12 have no facet API: count from the payload
        return count_values(self.scroll(None, [field]), field)

    def scroll(self, flt: SearchFilter | None = None, fields: list[str] | None = None) -> Iterator[Hit]:
        """Stream points matching ``flt`` with the payload ``fields`` (all if None)."""
        if flt is not None and flt.matches_nothing():
            return
        client = self._require()
        f = self._filter(flt)
        with_payload: Any = True if fields is None else (list(fields) if fields else False)
        offset: Any = None
        while True:
            with self._errors("scroll"):
                records, offset = client.scroll(
                    self.collection, scroll_filter=f, limit=_SCROLL_PAGE, offset=offset,
                    with_payload=with_payload, with_vectors=False,
                )
            for r in records:
                yield Hit(id=str(r.id), score=0.0, payload=dict(r.payload or {}))
            if offset is None:
                return

    def retrieve(self, ids: Sequence[str], fields: list[str] | None = None) -> list[Hit]:
        """Points by id, in the order given, with the payload ``fields`` (all when None);
        unknown ids are skipped."""
        if not ids:
            return []
        with self._errors("retrieve"):
            records = self._require().retrieve(self.collection, ids=list(ids),
                                               with_payload=True if fields is None else list(fields), with_vectors=False)
        by_id = {str(r.id): r for r in records}
        out = []
        for i in ids:
            r = by_id.get(canonical_id(i))
            if r is not None:
                out.append(Hit(id=str(r.id), score=0.0, payload=dict(r.payload or {})))
        return out

    def compact(self) -> dict[str, Any]:
        """Nothing to do from here: a Qdrant server vacuums deleted points and truncates its own
        write-ahead log by itself (its optimizers run in the background), and jacked cannot
        reach its files. Deleted points are gone from every answer at once."""
        return {"points": None, "seconds": 0.0, "note": "the Qdrant server compacts its own storage"}
