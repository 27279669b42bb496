"""`jacked status`: what the index and the catalog hold."""
from __future__ import annotations

from typing import Any

from jacked.config import Settings


def status(settings: Settings) -> dict[str, Any]:
    """Backend, model, point counts by type and user, session counts."""
    from jacked.catalog import Catalog
    from jacked.index.indexer import Indexer, configured_store, store_exists

    catalog = Catalog(settings.catalog_path)
    indexer = Indexer(settings, catalog)
    backend = getattr(settings, "backend", "edge") or "edge"
    out: dict[str, Any] = {"backend": backend, "embedding_model": indexer.model_name, "points": 0,
                           "points_by_type": {}, "points_by_user": {}, "home": str(settings.home)}
    store = configured_store(settings)
    if store_exists(store):
        with store.open(None, None) as st:
            out["embedding_model"] = st.dense_model
            out["points"] = st.count()
            out["points_by_type"] = st.count_by("content_type")
            out["points_by_user"] = st.count_by("user_name")
    totals = catalog.totals()
    out["sessions"] = totals["sessions"]
    from jacked.ingest.prompt_history import history_file_state, source_counts

    # full (transcript on disk), archived-only (Claude Code deleted it), prompt-only (history.jsonl)
    out["sessions_by_source"] = source_counts(catalog)
    out["history_file"] = history_file_state(catalog, settings.claude_dir)
    from jacked.ingest.agents import source_status

    out["sources"] = source_status(catalog, settings.claude_dir, settings.disabled_sources)
    out["turns"] = totals["turns"]
    out["sessions_indexed"] = catalog.indexed_session_count(settings.user_name)
    return out
