"""Session ids as lists show them."""
from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from jacked.catalog import Catalog

SHORT_ID = 8  # the fewest characters of a session id a list shows


def mark_short_ids(catalog: Catalog | None, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Set each row's `short_id` (rows of sessions: lists, search results); without a catalog (a
    teammate's hit on a shared server) the first `SHORT_ID` characters."""
    shown = short_ids(catalog, [r["session_id"] for r in rows]) if catalog is not None else {}
    for r in rows:
        r["short_id"] = shown.get(r["session_id"]) or r["session_id"][:SHORT_ID]
    return rows


def short_ids(catalog: Catalog, session_ids: Iterable[str]) -> dict[str, str]:
    """Each id as a list shows it: its first `SHORT_ID` characters, or as many more as it takes to
    tell it from every other session's id, so that the id copied from a list names one session
    (`resolve_session` takes a unique prefix). Aider's ids, `aider-` and a hash, keep only two
    characters of the hash in eight: two sessions in 256 share them."""
    out: dict[str, str] = {}
    for sid in session_ids:
        if sid not in out:
            common = max((len(os.path.commonprefix([sid, o])) for o in catalog.neighbour_session_ids(sid)), default=0)
            out[sid] = sid[:max(SHORT_ID, common + 1)]
    return out
