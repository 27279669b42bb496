"""Taking forgotten sessions' points out of the index, and compacting (jacked.index.forget explains
forgetting; every index run calls `purge_forgotten`, which costs two small queries when there is
nothing to do)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from jacked.catalog import Catalog, forget_queries


def purge_forgotten(catalog: Catalog, store: Any, user_name: str, vec_key: Callable[[str, str], str],
                    also: Sequence[str] = (), compact_catalog: bool = True) -> tuple[int, dict[str, Any]]:
    """Take the points of forgotten sessions out of an open store (on the Edge shard every user's,
    on a server `user_name`'s only): those the index bookkeeping records, and `also` these (a
    forget looks for them whatever the bookkeeping says). Their cached vectors go too
    (`vec_key(model, text)` is the embedding cache's key), and their bookkeeping. The store and
    the catalog (unless not `compact_catalog`: the caller does it) are compacted when points went
    or a scan left them to compact. Returns (points deleted, {"index": ..., "catalog": ...}
    compactions done)."""
    edge = store.backend == "edge"
    pending = sorted(set(forget_queries.pending_index_sessions(catalog, None if edge else user_name)) | set(also))
    flagged = bool(forget_queries.meta_flag(catalog, forget_queries.COMPACT_KEY))
    if not pending and not flagged:
        return 0, {}
    from jacked.index.store import SearchFilter

    deleted = 0
    keys: set[str] = set()
    for i in range(0, len(pending), 100):
        part = pending[i:i + 100]
        flt = SearchFilter(session_ids=part, user_name=None if edge else user_name)
        for hit in store.scroll(flt, fields=["text", "embedding_model"]):
            if hit.payload.get("embedding_model") and isinstance(hit.payload.get("text"), str):
                keys.add(vec_key(hit.payload["embedding_model"], hit.payload["text"]))
        for sid in part:
            deleted += store.delete_where(user_name=None if edge else user_name, session_id=sid)
    forget_queries.forget_index_rows(catalog, pending, None if edge else user_name)
    forget_queries.forget_vectors(catalog, sorted(keys))
    compaction: dict[str, Any] = {}
    if deleted or flagged:
        compaction["index"] = store.compact()
        if compact_catalog:
            compaction["catalog"] = forget_queries.compact(catalog)
    return deleted, compaction
