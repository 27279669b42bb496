"""The glance: every session findable by the words of its prompts within seconds of a backfill's start.

A backfill's lexical pass reads each session whole (~20 ms a session: turns, archive, catalog,
extraction), so at 10,000 sessions the oldest is findable only after minutes. Before it, the
glance reads the main transcript of every session this user has no index record of yet (a cold
start, or new sessions), newest file first, keeping only the prompts a person typed
(`jacked.sources.claude.glance`), and writes one BM25-only point per prompt.

Glance points: id UUID5 of `{session}:glance:{n}`, content type `user_message`, payload
`glance: true`, content hash `PENDING` + a hash of the text (search ranks a waiting session by its
words alone, and collapses only sessions whose best match is the very same text). The catalog
never records them, so the dense pass never sees them. The lexical pass replaces them: once it has
written a session's points, that session's glance points go (`drop`); whatever is left when it ends
(sessions it skipped or could not read) goes then (`finish`). A catalog flag, set before the first
glance point is written and cleared once none is left, tells the next run that a stopped one may
have left some: they are swept before anything else, so a backfill killed at any moment and run
again ends with the points of a clean run.

Privacy is the scan's: forgotten sessions (tombstones) are not read, nor those the `exclude`
globs catch (file, any working directory, repo or project folder); a `#nomem` in any prompt keeps
the whole session out (every prompt is looked at, past the bound too); texts are redacted
(secrets, `<private>` spans) before they are embedded or stored.

Only Claude Code's sessions are glanced at for now: the other agents' are read whole by the scan
(their sources could offer a glance later).
"""
from __future__ import annotations

import hashlib
import os
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jacked.catalog import Catalog, forget_queries, index_state
from jacked.index.extract import POINT_NAMESPACE
from jacked.index.labels import searchable
from jacked.ingest.privacy import Privacy, has_nomem
from jacked.sources.claude.discover import main_files, repo_name_of
from jacked.sources.claude.glance import Glimpse, glance
from jacked.sources.redact import redact_many
from jacked.util.time import epoch

BATCH_POINTS = 1024  # points embedded and written per store round trip
CONTENT_TYPE = "user_message"
MARK = "glance"  # the payload field (true) of glance points


def glance_point_id(session_id: str, n: int) -> str:
    return str(uuid.uuid5(POINT_NAMESPACE, f"{session_id}:glance:{n}"))


def _hash(text: str) -> str:
    return index_state.PENDING + hashlib.blake2b(f"glance\0{text}".encode("utf-8", "surrogatepass"),
                                                 digest_size=16).hexdigest()


@dataclass
class GlanceReport:
    sessions: int = 0  # sessions given glance points
    points: int = 0
    kept_out: int = 0  # sessions not glanced at for privacy (`exclude`, `#nomem`, forgotten)
    swept: int = 0  # glance points a stopped run had left, deleted first
    seconds: float = 0.0


class Glance:
    """One backfill's glance points for one user: written by `run`, replaced by `drop`, swept by `finish`."""

    def __init__(self, catalog: Catalog, user: str, machine: str, sparse: Any, privacy: Privacy | None,
                 projects_dir: Path, repo: str | None = None) -> None:
        self.catalog = catalog
        self.user = user
        self.machine = machine
        self.sparse = sparse
        self.privacy = privacy or Privacy()
        self.projects_dir = projects_dir
        self.repo = repo
        self.written: dict[str, int] = {}  # session id → its glance points now in the store
        self.report = GlanceReport()

    @property
    def live(self) -> bool:
        """Whether glance points of this user may be in the store now."""
        return bool(self.written) or index_state.glance_pending(self.catalog, self.user)

    # ------------------------------------------------------------------ writing
    def run(self, store: Any, progress: Callable[[int, int], None] | None = None) -> GlanceReport:
        """Glance at every Claude session this user has no index record of yet, newest file first."""
        t0 = time.perf_counter()
        rep = self.report
        if index_state.glance_pending(self.catalog, self.user):
            rep.swept = self._sweep(store)  # a stopped run's: their sessions may be indexed now
        known = index_state.indexed_session_ids(self.catalog, self.user)
        forgotten = forget_queries.forgotten_ids(self.catalog)
        todo: list[tuple[float, str, str, Path]] = []
        for sid, project, path in main_files(self.projects_dir):
            if sid in known:
                continue
            if sid in forgotten:
                rep.kept_out += 1
                continue
            try:
                todo.append((os.stat(path).st_mtime, sid, project, path))
            except OSError:
                continue  # gone since it was listed
        todo.sort(reverse=True)
        if not todo:  # every session is indexed already: nothing to show either
            rep.seconds = time.perf_counter() - t0
            return rep
        if progress is not None:
            progress(0, len(todo))
        index_state.set_glance_pending(self.catalog, self.user, True)  # before any point is written
        keep_out = _nomem if self.privacy.nomem else None
        pending: list[Glimpse] = []
        npoints = 0
        for i, (_, sid, project, path) in enumerate(todo):
            if sid not in forgotten:
                g = self._read(path, sid, project, keep_out)
                if g is not None and g.prompts:
                    pending.append(g)
                    npoints += len(g.prompts)
            if npoints >= BATCH_POINTS:
                self._write(store, pending)
                pending, npoints = [], 0
            if progress is not None:
                progress(i + 1, len(todo))
        if pending:
            self._write(store, pending)
        rep.seconds = time.perf_counter() - t0
        return rep

    def _read(self, path: Path, sid: str, project: str, keep_out: Callable[[str], bool] | None) -> Glimpse | None:
        """The session's glimpse, or None when it is not to be kept (or cannot be read)."""
        privacy = self.privacy
        if privacy.exclude and privacy.path_excluded(str(path.absolute())):
            self.report.kept_out += 1
            return None
        try:
            g = glance(path, sid, keep_out)
        except OSError:
            return None  # the scan reports it
        if g is None:
            self.report.kept_out += 1
            return None
        # Every working directory the records name, not only the first (the scan's): stricter, never laxer.
        cwds: list[str | None] = [*g.cwds] or [None]
        if privacy.exclude and any(privacy.where_excluded(str(path.absolute()), cwd, repo_name_of(cwd), project)
                                   for cwd in cwds):
            self.report.kept_out += 1
            return None
        if self.repo is not None and repo_name_of(g.cwd) != self.repo:
            return None
        return g

    def _write(self, store: Any, batch: list[Glimpse]) -> None:
        """Redact, embed (BM25) and write the prompts of these sessions."""
        from jacked.index.store import Point

        raw: list[str] = []
        for g in batch:
            raw += [g.cwd or "", g.git_branch or ""]
            raw += [t for t, _ in g.prompts]
        clean = iter(redact_many(raw))
        units: list[tuple[str, str, dict[str, Any]]] = []  # (point id, text, payload)
        for g in batch:
            cwd, branch = next(clean) or None, next(clean) or None
            base = {"session_id": g.session_id, "content_type": CONTENT_TYPE, "repo_name": repo_name_of(cwd),
                    "cwd": cwd, "git_branch": branch, "user_name": self.user, "machine": self.machine,
                    "session_started_at": g.started_at, "session_ended_at": g.ended_at, "slug": None,
                    "agent_id": None, "agent_type": None, "turn_index": None, "chunk_index": 0, "leaf_uuid": None,
                    "embedding_model": None, "title": None, "agent": "claude", MARK: True}
            n = self.written.get(g.session_id, 0)
            for (_, ts), text in zip(g.prompts, [next(clean) for _ in g.prompts]):
                if not text.strip():
                    continue
                stamp = ts or g.started_at
                payload = dict(base, text=text, content_hash=_hash(text), timestamp=stamp, ts=epoch(stamp) or 0.0)
                units.append((glance_point_id(g.session_id, n), text, payload))
                n += 1
            if n:
                if g.session_id not in self.written:
                    self.report.sessions += 1
                self.written[g.session_id] = n
        vectors = self.sparse.embed_documents([searchable(CONTENT_TYPE, text) for _, text, _ in units])
        store.upsert([Point(id=pid, payload=payload, dense=None, sparse=sv)
                      for (pid, _, payload), sv in zip(units, vectors)])
        self.report.points += len(units)

    # ------------------------------------------------------------------ replacing
    def drop(self, store: Any, session_ids: Sequence[str]) -> None:
        """The lexical pass wrote these sessions' points (or passed them over): their glance points go."""
        ids = [glance_point_id(sid, n) for sid in session_ids for n in range(self.written.pop(sid, 0))]
        if ids:
            store.delete_points(ids)

    def finish(self, store: Any) -> int:
        """After the lexical pass: every glance point left goes; how many there were."""
        if not self.live:
            return 0
        left = sum(self.written.values())
        self.drop(store, list(self.written))
        left += self._sweep(store)  # none, unless another run of this user glanced meanwhile
        index_state.set_glance_pending(self.catalog, self.user, False)
        return left

    def _sweep(self, store: Any) -> int:
        from jacked.index.store import SearchFilter

        # `content_type` and `user_name` are indexed: only the user's prompts are looked at.
        return int(store.delete_marked(MARK, SearchFilter(content_types=[CONTENT_TYPE], user_name=self.user)))

    def count(self, store: Any) -> int:
        """Glance points of this user in the store."""
        from jacked.index.store import SearchFilter

        return int(store.count(SearchFilter(content_types=[CONTENT_TYPE], user_name=self.user,
                                            extra=[("set", MARK, None)])))


def _nomem(prompt: str) -> bool:
    return has_nomem((prompt,))
