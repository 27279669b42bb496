"""Which sessions jacked must not keep: the `exclude` setting and the `#nomem` marker.

* `exclude`: globs (fnmatch; `~` expanded). A glob with a `/` matches a session's working
  directory (`cwd`) or its transcript path, and everything below a matched folder; a glob
  without one matches the project's (repo's) name, e.g. `"client-*"`. A file that names no working
  directory (an old summary-only file) is matched by its project folder, the folder name Claude
  Code encodes from the working directory (every character but letters and digits becomes `-`).
* `#nomem`, typed anywhere in any prompt of a session (a word of its own, any case), keeps the
  whole session out of jacked's memory.

A session either catches is forgotten as it is scanned, before its rows are written: it gets a
tombstone (reason `excluded` or `nomem`, see jacked.catalog.forget_queries) and whatever an
earlier scan kept of it goes — its catalog rows now, its archived copies with them, its points
at the next index run. The scanner gets a `Privacy` from the settings (`Privacy.from_settings`);
without one it keeps everything.
"""
from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jacked.catalog import Catalog, forget_queries
from jacked.sources.model import Session

__all__ = ["NOMEM", "NOMEM_MARKER", "Privacy", "has_nomem"]

NOMEM_MARKER = "#nomem"
# A word of its own: not `x#nomem`, `##nomem` or `#nomemory`.
NOMEM = re.compile(r"(?<![\w#])#nomem(?![\w-])", re.IGNORECASE)


def has_nomem(texts: Iterable[str | None]) -> bool:
    """Whether any of `texts` holds the `#nomem` marker."""
    return any(t and NOMEM.search(t) for t in texts)


def _norm(path: str) -> str:
    return path.replace("\\", "/").rstrip("/") or "/"


def _encode(glob: str) -> str:
    """A glob of paths as a glob of Claude Code's project folder names (lossy: `-` for the rest)."""
    return re.sub(r"[^A-Za-z0-9*?\[\]!]", "-", glob)


@dataclass(frozen=True)
class Privacy:
    """The exclusion rules of one scan: `exclude` globs (as configured) and whether `#nomem` counts."""

    exclude: tuple[str, ...] = ()
    nomem: bool = True

    @classmethod
    def from_settings(cls, settings: Any) -> Privacy:
        return cls(tuple(getattr(settings, "exclude", None) or ()))

    @property
    def _paths(self) -> tuple[str, ...]:
        return tuple(_norm(os.path.expanduser(g)) for g in self.exclude if "/" in g.replace("\\", "/"))

    @property
    def _names(self) -> tuple[str, ...]:
        return tuple(g for g in self.exclude if "/" not in g.replace("\\", "/") and g.strip())

    def path_excluded(self, path: str | Path | None) -> bool:
        """Whether a folder or file is under an `exclude` path glob."""
        if not path or not self.exclude:
            return False
        p = _norm(str(path))
        return any(fnmatch.fnmatch(p, g) or fnmatch.fnmatch(p, g + "/*") for g in self._paths)

    def name_excluded(self, name: str | None) -> bool:
        """Whether a project (repo) name matches an `exclude` name glob."""
        return bool(name) and any(fnmatch.fnmatch(str(name), g) for g in self._names)

    def where_excluded(self, file: str | None, cwd: str | None, repo_name: str | None,
                       project_dir: str | None = None) -> bool:
        """Whether a session at `cwd` (transcript `file`, repo `repo_name`) is excluded by a glob;
        without a `cwd`, its `project_dir` (Claude Code's encoded folder name) is matched."""
        if not self.exclude:
            return False
        base = _norm(cwd).rsplit("/", 1)[-1] if cwd else None
        if (self.path_excluded(cwd) or self.path_excluded(file) or self.name_excluded(repo_name)
                or self.name_excluded(base)):
            return True
        if cwd or not project_dir:
            return False
        return (any(fnmatch.fnmatch(project_dir, _encode(g)) or fnmatch.fnmatch(project_dir, _encode(g) + "-*")
                    for g in self._paths)
                or any(fnmatch.fnmatch(project_dir, "*-" + _encode(g)) for g in self._names))

    def reason(self, session: Session) -> str | None:
        """Why `session` must not be kept ("excluded", "nomem"), or None."""
        if self.where_excluded(session.file, session.cwd, session.repo_name, session.project_dir):
            return "excluded"
        if self.nomem and has_nomem(t.prompt for t in session.turns):
            return "nomem"
        return None

    def screen(self, catalog: Catalog, sessions: Sequence[Session]) -> dict[str, str]:
        """Forget (tombstone, inside the caller's transaction) those of `sessions` that must not be
        kept; returns {session id: reason} of them."""
        out = {s.session_id: r for s in sessions if (r := self.reason(s))}
        if out:
            slugs = {s.session_id: s.slug for s in sessions}
            forget_queries.tombstone(catalog, [(sid, r, slugs.get(sid)) for sid, r in out.items()])
        return out

    def sweep(self, catalog: Catalog) -> dict[str, str]:
        """Forget cataloged sessions the rules catch now although they were kept before: a glob added
        since, or (once) a `#nomem` typed before jacked knew the marker. Runs its own transaction."""
        found: dict[str, str] = {}
        if self.exclude:
            for r in forget_queries.exclusion_candidates(catalog):
                if self.where_excluded(r["file"], r["cwd"], r["repo_name"], r["project_dir"]):
                    found[r["session_id"]] = "excluded"
        swept = forget_queries.meta_flag(catalog, forget_queries.NOMEM_SWEPT_KEY)
        if self.nomem and not swept:
            for sid, prompts in forget_queries.prompts_with(catalog, NOMEM_MARKER).items():
                if sid not in found and has_nomem(prompts):
                    found[sid] = "nomem"
        if found or (self.nomem and not swept):
            with catalog.transaction():
                if found:
                    forget_queries.tombstone(catalog, [(sid, r, None) for sid, r in found.items()])
                if self.nomem:
                    forget_queries.set_meta_flag(catalog, forget_queries.NOMEM_SWEPT_KEY, 1)
        return found
