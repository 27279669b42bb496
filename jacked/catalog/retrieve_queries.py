"""The catalog reads behind `jacked recall` (jacked.query.retrieve.recall_brief)."""
from __future__ import annotations

from typing import Any

from jacked.catalog import Catalog


def sessions_in_folder(catalog: Catalog, folder: str, repo_name: str | None) -> list[dict[str, Any]]:
    """Listed sessions run in `folder` or below it, or in a repo named `repo_name`; newest first."""
    below = folder.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/%"
    return [dict(r) for r in catalog.db.execute(
        "SELECT * FROM sessions WHERE has_main = 1 AND (cwd = ? OR cwd LIKE ? ESCAPE '\\' OR repo_name = ?) "
        "ORDER BY COALESCE(ended_at, started_at, '') DESC", (folder, below, repo_name))]
