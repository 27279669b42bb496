"""`jacked status`: what the index and the catalog hold, and how far a backfill is.

`backfill` (when one ever ran here): its phase, whether it is running, and per pass what is
done of how much with an ETA from its pace so far — the glance (sessions findable by their
prompts, jacked.index.glance), the lexical pass (sessions whose points are
written, findable by their words) and the dense pass (points given their dense vector). The
counts `sessions_lexical`, `sessions_indexed` (complete) and `points_pending_dense` come from the
catalog, so they are right after a backfill was stopped too (the next one resumes there).
"""
from __future__ import annotations

from typing import Any

from jacked.config import Settings


def status(settings: Settings, open_store: Any = None) -> dict[str, Any]:
    """Backend, model, point counts by type and user, session counts. `open_store`: the index, when
    the caller keeps it open (a second open in the same process would wait for its lock)."""
    from jacked.catalog import Catalog
    from jacked.catalog import index_state
    from jacked.index.indexer import Indexer, backfill_state, configured_store, store_exists

    settings.make_home()
    catalog = Catalog(settings.catalog_path)
    indexer = Indexer(settings, catalog)
    backend = getattr(settings, "backend", "edge") or "edge"
    out: dict[str, Any] = {"backend": backend, "embedding_model": indexer.model_name, "points": 0,
                           "points_by_type": {}, "points_by_user": {}, "home": str(settings.home)}
    store = configured_store(settings)
    if open_store is not None:
        _count_points(open_store, out)
    elif store_exists(store):
        with store.open(None, None) as st:
            _count_points(st, out)
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
    counts = index_state.index_counts(catalog, settings.user_name)
    out["sessions_lexical"] = counts["lexical"]
    out["points_pending_dense"] = counts["points_pending_dense"]
    state = backfill_state(settings.home)
    if state is not None:
        lex, dense, glance = state.get("lexical") or {}, state.get("dense") or {}, state.get("glance") or {}
        out["backfill"] = {
            "running": state["running"], "phase": state.get("phase"), "pid": state.get("pid"),
            "started_at": state.get("started_at"), "updated_at": state.get("updated_at"),
            "glance": {"sessions_done": glance.get("sessions_done", 0),
                       "sessions_total": glance.get("sessions_total", 0), "eta_seconds": glance.get("eta_seconds")},
            "lexical": {"sessions_done": lex.get("sessions_done", 0), "sessions_total": lex.get("sessions_total", 0),
                        "eta_seconds": lex.get("eta_seconds")},
            "dense": {"points_done": dense.get("points_done", 0), "points_total": dense.get("points_total", 0),
                      "texts_embedded": dense.get("texts_embedded", 0), "eta_seconds": dense.get("eta_seconds")},
        }
    return out


def _count_points(store: Any, out: dict[str, Any]) -> None:
    out["embedding_model"] = store.dense_model
    out["points"] = store.count()
    out["points_by_type"] = store.count_by("content_type")
    out["points_by_user"] = store.count_by("user_name")
