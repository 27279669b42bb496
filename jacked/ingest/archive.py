"""The archive: a compressed copy of every transcript, subagent file and plan jacked has seen.

Claude Code deletes transcripts after `cleanupPeriodDays` (30 by default); the catalog and
the index are derived data, so without a copy a rebuild would lose those sessions. The
archive lives in `JACKED_HOME/archive/` (directories 0700, files 0600: transcripts may hold
secrets, which is also why it is the one place outside the redacted world):

* `archive/<path relative to the Claude dir>.gz` — gzip; a file that grows gets its new
  bytes appended as one more gzip member (gzip readers concatenate members), so archiving
  after each turn costs only the new bytes; a file that shrank or whose earlier bytes
  changed is rewritten whole (atomically: temp file + rename).
* `archive/manifest.db` — SQLite: per original file its archived size, mtime, probe hashes
  of its first bytes and of the bytes before the archived end (to tell "grew" from
  "changed"), the compressed size (a crash after an append but before the manifest update
  is undone by truncating to it), kind and session.

The scanner calls `capture` whenever it looks at a file (a no-op when size and mtime are
unchanged) and `restore_missing` after a scan: a session whose original is gone is read
back from the archive when the catalog lacks it (a reset or rebuilt catalog), and is kept
in the scan's session list either way, so `backfill --rebuild` indexes it again.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import tempfile
import time
import types
import weakref
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jacked.catalog import archive_queries, forget_queries, scan_state
from jacked.ingest.reading import ScanReport, SessionReader
from jacked.util.fs import atomic_output, read_only_dir
from jacked.util.lookup import Lookup

if TYPE_CHECKING:
    from jacked.catalog import Catalog

__all__ = ["Archive", "for_catalog", "ARCHIVE_DIR", "archive_listing"]

ARCHIVE_DIR = "archive"
PROBE_BYTES = 4096
CHUNK = 1 << 20
LEVEL = 1  # fastest deflate: the archive is written on every scan; level 1 keeps most of the gain

_deflate: types.ModuleType
try:  # ISA-L's deflate: the same gzip format, five times faster than zlib's at level 1
    from isal import isal_zlib as _deflate
except ImportError:  # no wheel for this platform
    _deflate = zlib
LOCK_TIMEOUT_S = 60.0


def for_catalog(catalog: Catalog, claude_dir: Path) -> Archive | None:
    """The archive next to an on-disk catalog (`JACKED_HOME/archive`); None for an in-memory catalog."""
    path = Path(str(catalog.path))
    if str(catalog.path) == ":memory:" or path.name == ":memory:":
        return None
    return Archive(path.parent, claude_dir)


def _mkdir_private(path: Path) -> None:
    """Create `path` and missing parents with mode 0700 (whatever the umask)."""
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=0o700)
        except FileExistsError:
            pass
        os.chmod(d, 0o700)


def _probe(fh: Any, size: int) -> tuple[str, str]:
    """Hashes of the first bytes and of the bytes just before `size` of an open binary file."""
    fh.seek(0)
    head = fh.read(min(PROBE_BYTES, size))
    start = max(0, size - PROBE_BYTES)
    fh.seek(start)
    tail = fh.read(size - start)
    return hashlib.blake2b(head, digest_size=8).hexdigest(), hashlib.blake2b(tail, digest_size=8).hexdigest()


def _gzip_member(src: Any, start: int, end: int, out: Any) -> int:
    """Compress bytes [start, end) of `src` as one gzip member onto `out`; returns bytes written."""
    co = _deflate.compressobj(LEVEL, _deflate.DEFLATED, 31)  # wbits 31: gzip header and trailer
    src.seek(start)
    left = end - start
    written = 0
    while left > 0:
        chunk = src.read(min(CHUNK, left))
        if not chunk:
            break  # the file shrank under us: what was read is what is archived
        left -= len(chunk)
        data = co.compress(chunk)
        out.write(data)
        written += len(data)
    data = co.flush()
    out.write(data)
    return written + len(data)


@dataclass
class Entry:
    source: str
    claude_dir: str
    rel: str
    kind: str
    session_id: str | None
    size: int
    mtime_ns: int
    head_hash: str
    tail_hash: str
    gz_size: int
    members: int
    archived_at: float


class Archive:
    """Compressed copies of a Claude directory's files under `home/archive`."""

    def __init__(self, home: Path, claude_dir: Path) -> None:
        self.root = Path(home) / ARCHIVE_DIR
        self.claude_dir = Path(claude_dir).absolute()
        self._db: sqlite3.Connection | None = None
        # source -> (size, mtime_ns) archived: read as sources are looked up (a hook looks up a few).
        # Read through a weak reference: a lookup holding the archive would make a cycle that kept a
        # scan's archive, manifest and all, alive after it (14 MB in `jacked mcp` at 10,000 sessions).
        this = weakref.ref(self)

        def archived(sources: Sequence[str] | None = None) -> dict[str, tuple[int, int]]:
            archive = this()
            return archive._archived(sources) if archive is not None else {}

        self._seen: Lookup[str, tuple[int, int]] = Lookup(archived, archived)
        self._held = 0  # depth of `_locked()` in this process
        self.errors: list[str] = []

    # ------------------------------------------------------------------ storage
    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            path = self.root / "manifest.db"
            if path.exists() and read_only_dir(self.root):
                self._db = archive_queries.open_manifest(path, read_only=True)
                return self._db
            _mkdir_private(self.root)
            fresh = not path.exists()
            self._db = archive_queries.open_manifest(path)
            if fresh:
                for p in self.root.glob("manifest.db*"):
                    os.chmod(p, 0o600)
        return self._db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _entry(self, source: str) -> Entry | None:
        row = archive_queries.entry(self.db, source)
        return Entry(**row) if row else None

    def entries(self) -> list[Entry]:
        return [Entry(**r) for r in archive_queries.entries(self.db)]

    def rel_of(self, path: Path) -> str:
        """Where a file is kept: its path under the Claude dir, else under `external/`."""
        p = path.absolute()
        try:
            return p.relative_to(self.claude_dir).as_posix()
        except ValueError:
            digest = hashlib.blake2b(str(p.parent).encode(), digest_size=6).hexdigest()
            return f"external/{digest}/{p.name}"

    def gz_path(self, rel: str) -> Path:
        return Path(self.gz_file(rel))

    def gz_file(self, rel: str) -> str:
        """Where the copy `rel` is kept, as a string (a scan stats every copy: building a Path for
        each took more time than the stat)."""
        return f"{self.root}/{rel}.gz"

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """The archive lock and one manifest transaction; re-entrant, so a batch of captures
        (a session's files, the plans) pays for them once instead of once per file."""
        if self._held:
            self._held += 1
            try:
                yield
            finally:
                self._held -= 1
            return
        from jacked.util.flock import FileLock

        _mkdir_private(self.root)
        lock = FileLock(self.root / ".lock", timeout=LOCK_TIMEOUT_S)
        with lock:
            self._held = 1
            try:
                with archive_queries.manifest_transaction(self.db):
                    yield
            finally:
                self._held = 0

    # ------------------------------------------------------------------ capture
    def capture(self, path: Path, kind: str, session_id: str | None = None) -> bool:
        """Bring the copy of `path` up to date; True when bytes were written. Never raises:
        archiving must not stop a scan (problems are kept in `errors`)."""
        try:
            return self._capture(Path(path), kind, session_id)
        except Exception as e:
            self.errors.append(f"{path}: {type(e).__name__}: {e}")
            return False

    def _capture(self, path: Path, kind: str, session_id: str | None) -> bool:
        source = str(path.absolute())
        try:
            st = path.stat()
        except FileNotFoundError:
            return False
        if self._seen.get(source) == (st.st_size, st.st_mtime_ns):
            return False
        with self._locked():
            entry = self._entry(source)  # again, under the lock: another process may have done it
            if entry and (entry.size, entry.mtime_ns) == (st.st_size, st.st_mtime_ns):
                self._seen[source] = (entry.size, entry.mtime_ns)
                return False
            rel = entry.rel if entry else self.rel_of(path)
            gz = self.gz_path(rel)
            _mkdir_private(gz.parent)
            with open(path, "rb") as src:
                size = st.st_size
                appended = False
                if entry and 0 <= entry.size <= size and gz.exists() and gz.stat().st_size >= entry.gz_size:
                    if _probe(src, entry.size) == (entry.head_hash, entry.tail_hash):
                        appended = True
                        if size > entry.size:
                            fd = os.open(gz, os.O_WRONLY)
                            with os.fdopen(fd, "r+b") as out:
                                out.truncate(entry.gz_size)  # undo a half-recorded append
                                out.seek(entry.gz_size)
                                n = _gzip_member(src, entry.size, size, out)
                                out.flush()
                            gz_size, members = entry.gz_size + n, entry.members + 1
                        else:
                            gz_size, members = entry.gz_size, entry.members  # touched, not grown
                if not appended:
                    # No fsync (it doubled the cost of a backfill): the original is still on disk
                    # now, and a copy a crash left short is caught by its size (see _archived).
                    with atomic_output(gz, 0o600) as out:
                        gz_size = _gzip_member(src, 0, size, out)
                    members = 1
                os.chmod(gz, 0o600)
                head, tail = _probe(src, size)
            archive_queries.put_entry(
                self.db, (source, str(self.claude_dir), rel, kind, session_id, size, st.st_mtime_ns, head, tail,
                          gz_size, members, time.time()))
            self._seen[source] = (size, st.st_mtime_ns)
        return True

    def _archived(self, sources: Sequence[str] | None = None) -> dict[str, tuple[int, int]]:
        """Archived (size, mtime) per original (of `sources`, or all), leaving out copies whose
        compressed size is not what the manifest says (cut short by a crash): those are rewritten
        on the next capture."""
        seen = {}
        short = []
        for source, size, mtime_ns, rel, gz_size in archive_queries.archived_sizes(self.db, sources):
            try:
                ok = os.stat(self.gz_file(rel)).st_size == gz_size
            except OSError:
                ok = False
            if ok:
                seen[source] = (size, mtime_ns)
            else:
                short.append(source)
        if short:
            archive_queries.forget_sizes(self.db, short)
        return seen

    def _changed(self, paths: list[Path], stats: dict[Path, os.stat_result] | None = None) -> bool:
        """Whether any of `paths` differs from its archived copy (cheap: stat only; `stats`
        may hold some of them already)."""
        sources = [str(p.absolute()) for p in paths]
        self._seen.fetch(sources)  # one read for the group
        for p, source in zip(paths, sources):
            st = stats.get(p) if stats else None
            if st is None:
                try:
                    st = p.stat()
                except OSError:
                    continue
            if self._seen.get(source) != (st.st_size, st.st_mtime_ns):
                return True
        return False

    def capture_group(self, group: Any, stats: dict[Path, os.stat_result] | None = None) -> None:
        """Every file of a discovered session (main, subagents and compactions with their
        .meta.json, workflow journals, the tool outputs moved to tool-results/); `stats` are the
        transcripts' stats when the caller has them."""
        files = ([(group.main, "main")] if group.main is not None else []) + \
            [(f, k) for sf in group.subagents + group.compactions
             for f, k in ((sf.path, "subagent"), (sf.meta_path, "meta"), (sf.journal_path, "journal")) if f] + \
            [(p, "tool_result") for p in group.tool_results]
        files = list(dict.fromkeys(files))  # a run's journal is named by each of its agents
        if not self._changed([f for f, _ in files], stats):
            return
        try:
            with self._locked():
                for f, kind in files:
                    self.capture(f, kind, group.session_id)
        except Exception as e:
            self.errors.append(f"{group.session_id}: {type(e).__name__}: {e}")

    def capture_plans(self, plans_dir: Path, skip: set[str] | frozenset[str] = frozenset()) -> None:
        """Copy every plan in `plans_dir` but those whose slug is in `skip` (plans of forgotten sessions)."""
        if not plans_dir.is_dir():
            return
        plans = sorted(p for p in plans_dir.glob("*.md") if p.stem not in skip)
        if not self._changed(plans):
            return
        try:
            with self._locked():
                for p in plans:
                    self.capture(p, "plan")
        except Exception as e:
            self.errors.append(f"{plans_dir}: {type(e).__name__}: {e}")

    # ------------------------------------------------------------------ forgetting
    def drop_sessions(self, session_ids: list[str], plan_slugs: set[str] | frozenset[str] = frozenset()) -> dict[str, int]:
        """Delete what the archive keeps of forgotten sessions — every copy of theirs and the plans
        named by `plan_slugs` — then compact the manifest so no old row stays on disk. Returns
        {files, bytes} (compressed bytes removed). Never raises (problems go to `errors`)."""
        try:
            return self._drop(session_ids, plan_slugs)
        except Exception as e:
            self.errors.append(f"forget: {type(e).__name__}: {e}")
            return {"files": 0, "bytes": 0}

    def _drop(self, session_ids: list[str], plan_slugs: set[str] | frozenset[str]) -> dict[str, int]:
        if not (self.root / "manifest.db").exists() or not (session_ids or plan_slugs):
            return {"files": 0, "bytes": 0}
        removed = 0
        with self._locked():
            rows = archive_queries.session_entries(self.db, session_ids)
            rows += archive_queries.plan_entries(self.db, sorted(f"{slug}.md" for slug in plan_slugs))
            for r in rows:
                gz = self.gz_path(r["rel"])
                try:
                    removed += gz.stat().st_size
                    gz.unlink()
                except FileNotFoundError:
                    pass
                _prune_empty(gz.parent, self.root)
                self._seen.pop(r["source"], None)
            archive_queries.delete_entries(self.db, [r["source"] for r in rows])
        if rows:
            self.compact()
        return {"files": len(rows), "bytes": removed}

    def compact(self) -> dict[str, Any]:
        """Rewrite the manifest without free pages and empty its write-ahead log (not inside a
        manifest transaction: then nothing is done)."""
        if self._held:
            return {}
        return forget_queries.compact_db(self.db, self.root / "manifest.db")

    # ------------------------------------------------------------------ reading back
    def read_bytes(self, entry: Entry) -> bytes:
        """The archived content of one file (all gzip members, concatenated)."""
        import gzip

        with gzip.open(self.gz_path(entry.rel), "rb") as fh:
            return fh.read()

    def extract_to(self, entry: Entry, dest: Path) -> Path:
        """Decompress one archived file to `dest` (mode 0600); returns `dest`."""
        import gzip

        dest.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out, gzip.open(self.gz_path(entry.rel), "rb") as src:
            shutil.copyfileobj(src, out, CHUNK)
        return dest

    # ------------------------------------------------------------------ restore
    def restore_missing(self, scanner: SessionReader, report: ScanReport, discovered: set[str]) -> list[str]:
        """Sessions of this Claude dir whose main transcript is gone: keep them in the scan.

        When the catalog lacks such a session (it was reset or rebuilt), it is read back
        from the archive into the catalog, under its original paths. Returns the ids read
        back. Never raises (problems go to `errors`).
        """
        try:
            return self._restore_missing(scanner, report, discovered)
        except Exception as e:
            self.errors.append(f"restore: {type(e).__name__}: {e}")
            return []

    def _restore_missing(self, scanner: SessionReader, report: ScanReport, discovered: set[str]) -> list[str]:
        rows = archive_queries.main_entries(self.db, str(self.claude_dir))
        gone = [Entry(**r) for r in rows if r["source"] not in discovered and _gone(r["source"])]
        if not gone:
            return []
        seen = set(report.session_ids) | forget_queries.forgotten_ids(scanner.catalog)  # forgotten: never back
        restored: list[str] = []
        todo: list[Entry] = []
        only_here: list[str] = []
        for e in gone:
            if not e.session_id or e.session_id in seen:
                continue
            row = scanner.catalog.get_session_row(e.session_id)
            if row and row.get("has_main") and row.get("source") != "history":
                report.session_ids.append(e.session_id)  # still cataloged: index it with the rest
                seen.add(e.session_id)
                if row.get("source") != "archive":
                    only_here.append(e.session_id)
            else:
                todo.append(e)
        if only_here:  # its transcript is gone: from now on only the archive has it
            scan_state.set_source(scanner.catalog, only_here, "archive")
        if not todo:
            return []
        with tempfile.TemporaryDirectory(prefix="jacked-restore-") as tmp:
            base = Path(tmp)
            os.chmod(base, 0o700)
            plans = base / "plans"
            plans.mkdir()
            self._plans_into(plans, scanner.plans_dir)
            for e in todo:
                sid = self._restore_one(scanner, report, e, base, plans)
                if sid:
                    restored.append(sid)
                    seen.add(sid)
        return restored

    def _plans_into(self, dest: Path, plans_dir: Path) -> None:
        """Every plan, original if present else archived, into `dest` (so slugs still link)."""
        for e in self.entries():
            if e.kind != "plan":
                continue
            name = Path(e.rel).name
            if os.path.exists(e.source):
                try:
                    os.symlink(e.source, dest / name)
                except OSError:
                    shutil.copyfile(e.source, dest / name)
            else:
                self.extract_to(e, dest / name)
        if plans_dir.is_dir():
            for p in plans_dir.glob("*.md"):
                if not (dest / p.name).exists():
                    os.symlink(p.absolute(), dest / p.name)

    def _restore_one(self, scanner: SessionReader, report: ScanReport, main: Entry, base: Path, plans: Path) -> str | None:
        from jacked.sources.claude.discover import JOURNAL_NAME, SessionFiles, classify_agent_file

        sid = main.session_id
        assert sid is not None
        parts = Path(main.rel).parts
        project = parts[1] if len(parts) >= 3 and parts[0] == "projects" else "archived"
        mapping: dict[str, str] = {}

        def local(e: Entry) -> Path:
            if os.path.exists(e.source):
                return Path(e.source)
            dest = self.extract_to(e, base / e.rel)
            mapping[str(dest.absolute())] = e.source
            return dest

        group = SessionFiles(session_id=sid, project_dir=project, main=local(main))
        subs = [Entry(**r) for r in archive_queries.session_file_entries(self.db, sid)]
        metas = {e.source: e for e in subs if e.kind in ("meta", "journal")}
        for e in subs:
            if e.kind == "tool_result":  # beside the restored transcript, where its references lead
                group.tool_results.append(self.extract_to(e, base / e.rel))
                continue
            if e.kind != "subagent":
                continue
            meta_src = e.source[: -len(".jsonl")] + ".meta.json"
            meta = local(metas[meta_src]) if meta_src in metas else None
            journal_src = str(Path(e.source).parent / JOURNAL_NAME)
            journal = local(metas[journal_src]) if journal_src in metas else None
            sf = classify_agent_file(local(e), meta, journal)
            (group.compactions if sf.layout == "acompact" else group.subagents).append(sf)
        _Restorer(scanner, mapping, plans).scan_group(group, report)
        if sid not in report.session_ids:
            report.session_ids.append(sid)
        return sid


def _prune_empty(folder: Path, root: Path) -> None:
    """Remove `folder` and its parents up to (not including) `root` while they are empty (a
    folder's name is a project's encoded path: it goes with the last copy in it)."""
    folder, root = folder.absolute(), root.absolute()
    while folder != root and folder.is_relative_to(root):
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def _gone(path: str) -> bool:
    """Whether a transcript is gone for sure: not when it is only out of reach (a folder that
    cannot be listed: its sessions stay as they were cataloged, not taken for deleted)."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False
    return False


class _Restorer(SessionReader):
    """A scanner that reads decompressed copies but records them under their original paths,
    so the catalog looks as if the originals had been read (and the temp paths leave no trace)."""

    source = "archive"  # `sessions.source`: the transcript is only in the archive

    def __init__(self, parent: SessionReader, mapping: dict[str, str], plans_dir: Path) -> None:
        # The parent's catalog and in-memory file states; never archive the temp copies.
        super().__init__(parent.catalog, parent.claude_dir, archive=None, known=parent.known,
                         privacy=parent.privacy)
        self.plans_dir = plans_dir
        self._mapping = mapping

    def rel(self, path: Path) -> str:
        p = str(path.absolute())
        return self._mapping.get(p, p)


# --------------------------------------------------------------------------- listing
def archive_listing(home: Path, claude_dir: Path) -> dict[str, Any]:
    """`jacked archive --json`: every kept file, its sizes, and whether the original is still there."""
    arch = Archive(home, claude_dir)
    files = []
    totals = {"files": 0, "bytes": 0, "stored_bytes": 0, "originals_gone": 0, "sessions_only_in_archive": 0}
    if (arch.root / "manifest.db").exists():
        for e in arch.entries():
            present = os.path.exists(e.source)
            files.append({"path": e.source, "archived_as": str(arch.gz_path(e.rel)), "kind": e.kind,
                          "session_id": e.session_id, "bytes": e.size, "stored_bytes": e.gz_size,
                          "members": e.members, "original_present": present,
                          "archived_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(e.archived_at))})
            totals["files"] += 1
            totals["bytes"] += e.size
            totals["stored_bytes"] += e.gz_size
            if not present:
                totals["originals_gone"] += 1
                if e.kind == "main":
                    totals["sessions_only_in_archive"] += 1
        arch.close()
    return {"archive_dir": str(arch.root), "totals": totals, "files": files}
