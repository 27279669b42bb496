"""Qdrant vector stores: the embedded Edge shard (default) and a Qdrant server.

``open_store`` picks the backend; the backends' heavy imports (qdrant_edge, qdrant_client)
happen only when a store is opened, so importing this package is cheap.
"""
from __future__ import annotations

from pathlib import Path

from jacked.index.store.base import (
    DENSE_VECTOR,
    FLOAT_INDEXES,
    KEYWORD_INDEXES,
    SPARSE_VECTOR,
    TS_FIELD,
    Hit,
    ModelMismatch,
    Point,
    SearchFilter,
    StoreBusy,
    StoreError,
    StoreNotFound,
    VectorStore,
)

BACKENDS = ("edge", "server")


def open_store(
    backend: str,
    home: Path,
    qdrant_url: str | None = None,
    qdrant_api_key: str | None = None,
    lock_timeout: float = 60,
    collection: str = "jacked",
    *,
    max_segment_kb: int | None = None,
    optimize_in_child: bool = False,
) -> VectorStore:
    """A (not yet opened) store for ``backend``; call ``.open(model, dims)`` on it.

    * ``"edge"`` (default): an Edge shard in ``home / "index"``; ``lock_timeout`` bounds the
      wait for another jacked process holding it; ``max_segment_kb`` bounds its segments and
      ``optimize_in_child`` runs its optimisations in a child process (see `EdgeStore`).
    * ``"server"``: the collection ``collection`` on ``qdrant_url`` (with ``qdrant_api_key``).
    """
    if backend == "edge":
        from jacked.index.store.edge import EdgeStore

        from jacked.index.store.edge import MAX_SEGMENT_KB

        return EdgeStore(Path(home) / "index", lock_timeout=lock_timeout, optimize_in_child=optimize_in_child,
                         max_segment_kb=MAX_SEGMENT_KB if max_segment_kb is None else max_segment_kb)
    if backend == "server":
        if not qdrant_url:
            raise StoreError("backend 'server' needs a Qdrant URL (qdrant_url in the config, or --qdrant-url)")
        from jacked.index.store.server import ServerStore

        return ServerStore(url=qdrant_url, api_key=qdrant_api_key, collection=collection)
    raise StoreError(f"unknown backend {backend!r}: use one of {', '.join(BACKENDS)}")


__all__ = [
    "BACKENDS",
    "DENSE_VECTOR",
    "FLOAT_INDEXES",
    "KEYWORD_INDEXES",
    "SPARSE_VECTOR",
    "TS_FIELD",
    "Hit",
    "ModelMismatch",
    "Point",
    "SearchFilter",
    "StoreBusy",
    "StoreError",
    "StoreNotFound",
    "VectorStore",
    "open_store",
]
