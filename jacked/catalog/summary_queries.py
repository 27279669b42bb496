"""The `summaries` table: stored turn and session summaries (jacked.index.summarize)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jacked.catalog import Catalog


def summary_rows(catalog: Catalog, session_id: str) -> list[dict[str, Any]]:
    """Every stored summary row of a session (turn and session kinds)."""
    return [dict(r) for r in catalog.db.execute("SELECT * FROM summaries WHERE session_id = ?", (session_id,))]


def write_summaries(catalog: Catalog, rows: Sequence[tuple[Any, ...]]) -> None:
    """Store summary rows, in the table's column order, replacing any with the same key, in one transaction."""
    with catalog.transaction():
        catalog.db.executemany("INSERT OR REPLACE INTO summaries VALUES (?,?,?,?,?,?,?,?,?)", rows)


def renew_content_seq(catalog: Catalog, session_id: str) -> None:
    """Give a session a new content sequence, so that the next index run re-reads its points."""
    with catalog.transaction():
        catalog.db.execute("UPDATE sessions SET content_seq = ? WHERE session_id = ?",
                           (catalog.next_seq(), session_id))
