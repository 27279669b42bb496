"""`Jacked(settings)`: the one object the surfaces (CLI, MCP, web view, hooks) talk to.

It owns the catalog connection, brings it up to date before answering (incrementally, at most
every `rescan_seconds`), keeps the model and the index open across calls, and returns plain
data; surfaces only parse their input and format these answers. Problems the user can fix
raise `jacked.errors.JackedError` subclasses with a one-line message; warnings that do not
stop an answer (a skipped transcript, an archive problem) go to the `warn` callback.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from jacked.catalog import Catalog
from jacked.config import Settings
from jacked.errors import JackedError

if TYPE_CHECKING:  # the answers' published shapes (jacked.schema, docs/schema.md); never imported at run time
    from jacked.schema.answers import (ExportRow, FileChange, SearchAnswer, SessionRow, StatsAnswer, StatusAnswer,
                                       TimelineEvent, TurnsAnswer, UsageAnswer)

Progress = Callable[[str, int, int], None]
SearchFn = Callable[[str, str], list[str]]


class Jacked:
    """jacked for one user and one Claude directory."""

    def __init__(self, settings: Settings, scan: bool = True, rescan_seconds: float = 30.0,
                 warn: Callable[[str], None] | None = None, keep_index_open: bool = False) -> None:
        """`scan`: bring the catalog up to date before answering (False: answer from it as it is).
        `warn`: where one-line warnings go (the CLI: stderr); None drops them. `keep_index_open`:
        open the index at its first use and keep it, with its lock, until `close()` (the daemon, the
        one process that owns it); otherwise each call opens and closes it."""
        self.settings = settings
        self.keep_index_open = keep_index_open
        self.scan_enabled = scan
        self.rescan_seconds = rescan_seconds
        self.warn = warn
        self._catalog: Catalog | None = None
        self._indexer: Any = None
        self._scanned_at: float | None = None
        self._prices: Any = None

    # ------------------------------------------------------------------ plumbing
    @property
    def catalog(self) -> Catalog:
        """The catalog as it is (no scan)."""
        if self._catalog is None:
            self.settings.make_home()
            self._catalog = Catalog(self.settings.catalog_path)
        return self._catalog

    @property
    def indexer(self) -> Any:
        """The indexer (model and store), loaded once and kept."""
        if self._indexer is None:
            from jacked.index.indexer import Indexer

            self._indexer = Indexer(self.settings, self.catalog, keep_store_open=self.keep_index_open)
        return self._indexer

    def close(self) -> None:
        """Close the catalog connection and a kept index (the next call opens them again)."""
        self._close_index()
        if self._catalog is not None:
            self._catalog.close()
            self._catalog = self._indexer = None

    @property
    def optimizing(self) -> dict[str, Any] | None:
        """The kept index's optimisation running now in a child process ({"pid", "started"}), else
        None. Safe from any thread."""
        return getattr(self._kept_store(), "optimizing", None)

    def stop_optimizing(self) -> None:
        """Kill the kept index's optimiser child, if any, and start no other (the daemon is
        stopping: the index stays as it was, optimised later). Safe from any thread."""
        store = self._kept_store()
        if hasattr(store, "stop_optimizer"):
            store.stop_optimizer()

    def _kept_store(self) -> Any:
        indexer = self._indexer
        return indexer.kept_store if indexer is not None else None

    def _close_index(self) -> None:
        """Close the kept index, if open: before work that opens the index on its own."""
        if self._indexer is not None:
            self._indexer.close_store()

    def _say(self, message: str) -> None:
        if self.warn is not None:
            self.warn(message)

    def scannable(self) -> bool:
        """Whether there is anything to scan: the Claude directory's projects folder or history.jsonl,
        or another agent's folder."""
        from jacked.ingest.agents import source_roots

        return (self.settings.projects_dir.is_dir() or (self.settings.claude_dir / "history.jsonl").is_file()
                or bool(source_roots(self.settings.disabled_sources)))

    def fresh(self) -> Catalog:
        """The catalog, re-scanned (incrementally) when the last scan is older than `rescan_seconds`."""
        now = time.monotonic()
        if self.scan_enabled and (self._scanned_at is None or now - self._scanned_at > self.rescan_seconds):
            if self.catalog.read_only:
                if self._scanned_at is None:
                    self._say(f"jacked: {self.settings.home} is read-only: new transcripts are not indexed")
            elif self.scannable():
                for err in self.unsaid(self.scan().errors)[:5]:
                    self._say(f"jacked: skipped {err}")
            self._scanned_at = now
        return self.catalog

    def rescan_before_next_call(self) -> None:
        """Have the next call that reads the catalog scan first, however recent the last scan (the
        daemon's service lives across commands: each sees the transcripts as they are now, as in
        its own process)."""
        self._scanned_at = None

    def unsaid(self, problems: list[str]) -> list[str]:
        """Those of a scan's `problems` not shown to the user before (a broken link is said once,
        not on every command; a report's `errors` still lists them all)."""
        from jacked.catalog.scan_state import unsaid

        return unsaid(self.catalog, problems)

    def session_id(self, ref: str) -> str:
        """A full session id from an id, a unique prefix or a transcript path."""
        from jacked.query.history import resolve_session

        return resolve_session(self.fresh(), ref, self.settings.claude_dir)

    def session(self, ref: str) -> tuple[Catalog, str]:
        """(catalog, session id) for an id, a prefix or a transcript path; a transcript outside the
        Claude directory is read into an in-memory catalog of its own (the main one is not scanned)."""
        catalog, ids = self.sessions_of([ref])
        return catalog, ids[0]

    def sessions_of(self, refs: list[str]) -> tuple[Catalog, list[str]]:
        """(catalog, session ids) for ids, prefixes or transcript paths, each read as `session`
        reads one (what every command given sessions uses): transcripts outside the Claude
        directory go into one in-memory catalog of their own, so they cannot be mixed with
        cataloged sessions in one call."""
        outside = [Path(r).expanduser() for r in refs if self._outside(r)]
        if not outside:
            return self.fresh(), [self.session_id(r) for r in refs]
        if len(outside) < len(refs):
            raise JackedError("transcript files outside the Claude directory and cataloged sessions cannot be "
                              "mixed in one call: give them separately")
        from jacked.query.history import catalog_for_path

        catalog: Catalog | None = None
        ids = []
        for path in outside:
            parents = path.resolve().parents
            catalog, sid, report = catalog_for_path(path, parents[2] / "plans" if len(parents) > 2 else None, catalog)
            if report.lines_skipped:
                self._say(f"jacked: skipped {report.lines_skipped} unreadable line(s) of {path}")
            for err in report.errors[:5]:
                self._say(f"jacked: skipped {err}")
            ids.append(sid)
        assert catalog is not None
        return catalog, ids

    def _outside(self, ref: str) -> bool:
        """Whether `ref` is a transcript file outside the Claude directory's projects folder."""
        path = Path(ref).expanduser()
        return path.suffix == ".jsonl" and path.is_file() and not _inside(path, self.settings.projects_dir)

    def writable(self, command: str) -> None:
        """A one-line error when JACKED_HOME is read-only: `command` would write it."""
        from jacked.util.fs import read_only_dir

        if read_only_dir(Path(self.settings.home)):
            raise JackedError(f"{self.settings.home} is read-only: `jacked {command}` writes there; "
                              "make it writable or point JACKED_HOME at a folder you can write")

    # ------------------------------------------------------------------ ingest and index
    def scan(self, progress: Callable[[int, int], None] | None = None) -> Any:
        """Bring the catalog up to date with the Claude directory; the `ScanReport`."""
        report = self._scanner().scan(progress)
        self._scanned_at = time.monotonic()
        return report

    def _scanner(self) -> Any:
        from jacked.ingest.scan import Scanner

        from jacked.ingest.agents import source_roots
        from jacked.ingest.privacy import Privacy

        return Scanner(self.catalog, self.settings.claude_dir, source_roots(self.settings.disabled_sources),
                       archive=self.settings.archive, privacy=Privacy.from_settings(self.settings))

    def backfill(self, rebuild: bool = False, repo: str | None = None, progress: Progress | None = None) -> Any:
        """Scan, then index every session that changed; the `IndexReport`."""
        self.writable("backfill")
        report = self.indexer.backfill(rebuild=rebuild, repo=repo, progress=progress)
        self._scanned_at = time.monotonic()
        return report

    def index(self, target: str | None = None) -> Any:
        """Index one session now (an id, a prefix or a transcript path), or every changed one when
        `target` is None; the `IndexReport`."""
        self.writable("index")
        if target is None:
            return self.backfill()
        groups = self._groups_for(target)
        if groups:
            return self.indexer.index_paths(groups)
        # Another agent's session, or one whose transcript is gone: the scan cataloged it.
        return self.indexer.index_sessions([self.session_id(target)])

    def _groups_for(self, target: str) -> list[Any]:
        """The Claude session files a target names: a transcript path, or a session id or prefix
        (after a scan, which also catalogs sessions of the other agents: those are indexed below)."""
        from jacked.query.history import resolve_session, session_files_for_path

        path = Path(target).expanduser()
        if path.suffix == ".jsonl" and path.is_file():
            return [session_files_for_path(path)]
        self.scan()
        sid = resolve_session(self.catalog, target, self.settings.claude_dir)
        row = self.catalog.get_session_row(sid) or {}
        if row.get("file") and Path(row["file"]).is_file() and (row.get("agent") or "claude") == "claude":
            return [session_files_for_path(Path(row["file"]))]
        return []  # the transcript is gone, or another agent's: the scan above cataloged it

    def forget(self, refs: list[str] | None = None, repo: str | None = None, before: str | None = None) -> Any:
        """Forget sessions — named (ids, prefixes, transcript paths), or of `repo` and/or last active
        before `before` (a date or an age: `3m`) — in the catalog, the index and the archive, with a
        tombstone so no later scan brings them back, then compact (jacked.index.forget); the
        `ForgetReport`. Nothing chosen is an error; a chosen set that is empty is not."""
        self.writable("forget")
        from jacked.catalog import forget_queries
        from jacked.index.forget import forget_sessions, select_sessions

        if refs and (repo or before):
            raise JackedError("give either sessions or --repo / --before, not both")
        catalog = self.fresh()
        if refs:
            gone = forget_queries.forgotten_ids(catalog)
            ids = []
            for r in refs:
                earlier = [g for g in gone if g.startswith(r.strip())] if r.strip() else []
                ids.append(earlier[0] if len(earlier) == 1 and not catalog.find_session_ids(r.strip())
                           else self.session_id(r))
        else:
            ids = select_sessions(catalog, repo, before)
        self._close_index()  # the forgetting opens the index itself
        report = forget_sessions(self.settings, catalog, ids)
        self._indexer = None  # its store and caches may describe what is gone
        return report

    def forgotten(self) -> list[dict[str, Any]]:
        """Every tombstone: {session_id, reason, forgotten_at, slug}, oldest first (no scan)."""
        from jacked.catalog import forget_queries

        return forget_queries.forgotten_rows(self.catalog)

    def purge(self) -> dict[str, Any]:
        """Remove JACKED_HOME and everything in it (catalog, index, archive, logs, models); refuses a
        folder that is not jacked's own or whose removal would take other data with it. Returns
        {home, removed_bytes}."""
        self.writable("purge")
        import shutil

        home = purge_target(self.settings)
        real = home.resolve()
        self.close()
        size = sum(p.stat().st_size for p in real.rglob("*") if p.is_file() and not p.is_symlink())
        lock = real / "index" / "index.lock"
        if lock.exists():  # an index run still going (a hook's child): wait for it, as any writer would
            from jacked.util.flock import FileLock, LockTimeout

            try:
                with FileLock(lock, timeout=max(self.settings.lock_timeout_s, 0.0)):
                    shutil.rmtree(real)
            except LockTimeout:
                raise JackedError(f"{home}: another jacked process holds the index; try again when it ends") from None
        else:
            shutil.rmtree(real)
        if home.is_symlink():
            home.unlink()
        return {"home": str(home), "removed_bytes": size}

    def cleardb(self) -> int:
        """Delete this user's points and index state; how many points went."""
        self.writable("cleardb")
        return int(self.indexer.cleardb())

    def status(self) -> StatusAnswer:
        """What the index and the catalog hold (the `status --json` object; no scan)."""
        from jacked.query.status import status

        # The query layer builds plain dicts; jacked.schema names their shape (tests/test_schema.py validates it).
        return cast("StatusAnswer", status(self.settings, self._indexer.kept_store if self._indexer is not None else None))

    def archive(self) -> dict[str, Any]:
        """What jacked's archive keeps (the `archive --json` object), after a scan archived what is new."""
        from jacked.ingest.archive import archive_listing

        if self.settings.projects_dir.is_dir() and not self.catalog.read_only:
            scanner = self._scanner()
            scanner.scan()
            self._scanned_at = time.monotonic()
            for e in (scanner.archive.errors if scanner.archive is not None else [])[:5]:
                self._say(f"jacked: archive: {e}")
        return archive_listing(self.settings.home, self.settings.claude_dir)

    def summary_status(self) -> dict[str, Any]:
        """How many turns and sessions have a current summary, and by which summarizer."""
        from jacked.index.summarize import summary_status

        return summary_status(self.fresh())

    def summarize(self, refs: list[str] | None = None, force: bool = False, llm: str | None = None,
                  model: str | None = None, batch: int = 8) -> Any:
        """Store turn and session summaries (of `refs`, or every session); the `SummarizeReport`.
        `llm`: api or claude (a model summarizes), None: the offline extractive summarizer."""
        self.writable("summarize")
        from jacked.index.summarize import LlmSummarizer, default_transport, summarize

        ids = [self.session_id(r) for r in refs] if refs else None
        summarizer = None
        if llm:
            try:
                summarizer = LlmSummarizer(default_transport(llm, model, self.settings.anthropic_api_key),
                                           batch_size=batch)
            except ValueError as e:
                raise JackedError(str(e)) from e
        return summarize(self.fresh(), ids, force=force, llm=summarizer)

    # ------------------------------------------------------------------ query
    def search(self, query: str, opts: Any) -> SearchAnswer:
        """The `search --json` object for one query (`opts`: a `SearchOptions`)."""
        return self.search_many([query], opts)[0]

    def search_many(self, queries: list[str], opts: Any) -> list[SearchAnswer]:
        """One answer per query, with one model load and one store open."""
        from jacked.query.search import search_many

        self.fresh()
        return cast("list[SearchAnswer]", search_many(self.settings, queries, opts, indexer=self.indexer))

    def retrieve(self, refs: list[str], mode: str = "smart", budget: int | None = None,
                 check_git: bool = True) -> Any:
        """Context from sessions (ids, prefixes or paths) fitted into `budget` tokens; a `RetrieveResult`."""
        from jacked.query.retrieve import retrieve

        catalog, ids = self.sessions_of(refs)
        return retrieve(catalog, ids, mode=mode,
                        budget=budget if budget is not None else self.settings.default_max_tokens,
                        margin=self.settings.token_safety_margin, check_git=check_git, warn=self.warn,
                        prices=self.prices())

    def recall(self, cwd: str, max_tokens: int = 1500, search: bool = True) -> dict[str, Any]:
        """A short brief of the past sessions of the repo at `cwd` (`search`: rank them with the index too)."""
        from jacked.query.retrieve import recall_brief

        return recall_brief(self.fresh(), cwd, self._recall_search() if search else None, max_tokens)

    def prompt_recall(self, prompt: str, cwd: str, session_id: str | None = None,
                      max_tokens: int | None = None, until: str | None = None) -> dict[str, Any]:
        """What the UserPromptSubmit hook adds to `prompt` typed at `cwd`: past sessions it refers to
        or strongly matches, or nothing (`text` ""). `#nomem` in the prompt and `exclude` silence it."""
        from jacked.ingest.privacy import Privacy, has_nomem
        from jacked.query.prompt_recall import PROMPT_RECALL_MAX_TOKENS, SEARCH_RESULTS, prompt_recall
        from jacked.query.options import current_repo_name
        from jacked.util.time import parse_ts

        silent = {"text": "", "sessions": [], "tokens": 0}
        if has_nomem([prompt]):
            return {**silent, "reason": "#nomem"}
        repo = current_repo_name(Path(cwd)) if cwd else None
        if Privacy.from_settings(self.settings).where_excluded(None, cwd, repo):
            return {**silent, "reason": "excluded"}
        if self._recall_search() is None:
            return {**silent, "reason": "no index"}

        def search(query: str, in_repo: str | None) -> list[Any]:
            from jacked.query.options import SearchOptions

            # Replaying a history (`until`): sessions started later are dropped after the search, so
            # ask for more lest they crowd out the ones that were there.
            limit = 20 if until else SEARCH_RESULTS
            # A prompt's time words cue a follow-up, they are no date range: "the bug we fixed
            # yesterday" typed on a Monday means Friday's session, and a window that misses it
            # hides the one session the prompt is about.
            # The index as it stood then: neither later sessions nor the current one's later turns
            # (which hold the very prompt) take part, nor set the scale the scores are read on.
            then = parse_ts(until) if until else None
            opts = SearchOptions(repo=in_repo, limit=limit, current_repo=repo, time_words=False, now=then, as_of=then)
            return self.search(query, opts)["results"]

        def opens_session() -> bool:
            """No earlier prompt of the current session: the prompt opens it."""
            from jacked.catalog.retrieve_queries import prompted_before

            return bool(session_id) and not prompted_before(self.fresh(), str(session_id), until)

        def recent(in_repo: str, since: str, limit: int) -> list[dict[str, Any]]:
            from jacked.catalog.retrieve_queries import recent_work

            return recent_work(self.fresh(), in_repo, since, until, limit)

        return prompt_recall(prompt, repo, search, recent=recent, opens=opens_session, session_id=session_id, until=until,
                             max_tokens=max_tokens or PROMPT_RECALL_MAX_TOKENS,
                             margin=self.settings.token_safety_margin)

    def _recall_search(self) -> SearchFn | None:
        """`search(query, repo) -> [session ids]` over the index, or None when there is no index."""
        from jacked.index.indexer import configured_store, store_exists

        try:
            if self.settings.backend != "edge" or not store_exists(configured_store(self.settings)):
                return None
        except Exception:
            return None

        def search(query: str, repo: str) -> list[str]:
            from jacked.query.search import SearchOptions

            found = self.search(query, SearchOptions(repo=repo, limit=5, current_repo=repo))
            return [r["session_id"] for r in found["results"]]

        return search

    def restore(self, ref: str, budget: int | None = None) -> Any:
        """A brief to pick a session up where it stopped; a `Brief`."""
        from jacked.query.restore import DEFAULT_MAX_TOKENS, restore_brief

        catalog, sid = self.session(ref)
        return restore_brief(catalog, sid, budget if budget is not None else DEFAULT_MAX_TOKENS,
                             margin=self.settings.token_safety_margin)

    def sessions(self, repo: str | None = None, limit: int | None = None, offset: int = 0,
                 since: str | None = None, until: str | None = None) -> list[SessionRow]:
        """Sessions, newest first (the `sessions --json` rows; `limit` of them from `offset`);
        `since` / `until`: `7d`, `2w`, a date or a date-time (a bare `until` date includes that day)."""
        from jacked.query.history import list_sessions

        return cast("list[SessionRow]", list_sessions(self.fresh(), repo, limit, offset, self.prices(),
                                                   **_bounds(since, until)))

    def session_count(self, repo: str | None = None, since: str | None = None, until: str | None = None) -> int:
        """How many sessions `sessions` lists in all."""
        return self.fresh().count_sessions(repo, **_bounds(since, until))

    def turns(self, ref: str) -> TurnsAnswer:
        """A session's turns with invocations and metrics (the `turns --json` object)."""
        from jacked.query.history import turns_json

        catalog, sid = self.session(ref)
        return cast("TurnsAnswer", turns_json(catalog, sid, self.prices()))

    def session_view(self, ref: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """(session row, turns object) of one session: what `jacked show` prints."""
        from jacked.query.history import turns_json

        catalog, sid = self.session(ref)
        return catalog.get_session_row(sid) or {}, turns_json(catalog, sid, self.prices())

    def export(self, refs: list[str] | None = None) -> list[ExportRow]:
        """One object per session (of `refs`, or all): the `sessions` fields plus its turns."""
        return list(self.export_iter(refs))

    def export_iter(self, refs: list[str] | None = None) -> Iterator[ExportRow]:
        """`export`, one session at a time (refs are resolved first: a bad one fails before any output)."""
        from jacked.query.history import iter_export_rows

        if not refs:
            return cast("Iterator[ExportRow]", iter_export_rows(self.fresh(), None, self.prices()))
        return cast("Iterator[ExportRow]", iter_export_rows(*self.sessions_of(refs), self.prices()))

    def timeline(self, query: Any, session: str | None = None) -> Iterator[TimelineEvent]:
        """Events of a session or a repo (`query`: a `TimelineQuery`), read as they are consumed.
        `session`: an id, prefix or transcript path to resolve into the query; otherwise its
        `session_id` is used as it is."""
        from jacked.query.timeline import iter_timeline

        if session is None:
            return cast("Iterator[TimelineEvent]", iter_timeline(self.fresh(), query, self.settings.claude_dir))
        catalog, sid = self.session(session)
        return cast("Iterator[TimelineEvent]",
                    iter_timeline(catalog, dataclasses.replace(query, session_id=sid), self.settings.claude_dir))

    def file_history(self, path: str, repo: str | None = None) -> list[FileChange]:
        """What happened to one file, across sessions."""
        from jacked.query.timeline import file_history

        return cast("list[FileChange]", file_history(self.fresh(), path, self.settings.claude_dir, repo))

    def stats(self, query: Any, session: str | None = None) -> StatsAnswer:
        """Tool use, errors, files and commands (`query`: a `StatsQuery`; `session`: an id, prefix or
        path to resolve into it)."""
        from jacked.query.stats import compute_stats

        if session is None:
            return cast("StatsAnswer", compute_stats(self.fresh(), query, self.prices()))
        catalog, sid = self.session(session)
        return cast("StatsAnswer", compute_stats(catalog, dataclasses.replace(query, session_id=sid), self.prices()))

    def usage(self, query: Any, session: str | None = None) -> UsageAnswer:
        """Tokens and cost by day, week, month, session, model, agent, role or repo (`query`: a
        `UsageQuery`; `session`: an id, prefix or path to resolve into it)."""
        from jacked.query.usage import usage_report

        if session is None:
            return cast("UsageAnswer", usage_report(self.fresh(), query, self.prices()))
        catalog, sid = self.session(session)
        return cast("UsageAnswer", usage_report(catalog, dataclasses.replace(query, session_id=sid), self.prices()))

    def prices(self) -> Any:
        """The price table: the shipped one with `prices` from jacked.json (a `PriceTable`)."""
        if self._prices is None:
            from jacked.query.prices import PriceTable

            self._prices = PriceTable.with_overrides(self.settings.prices)
        return self._prices

    def summaries(self, ref: str) -> tuple[str, dict[int, dict[str, Any]], dict[str, Any] | None]:
        """(session id, turn index → turn summary, session summary), brought up to date."""
        from jacked.index.summarize import ensure_summaries, summaries_for

        sid = self.session_id(ref)
        if not self.catalog.read_only:  # a read-only home shows the summaries it has
            ensure_summaries(self.catalog, sid)
        by_turn, session = summaries_for(self.catalog, sid)
        return sid, by_turn, session


# Entries a JACKED_HOME may hold: a folder holding none of them is not jacked's, and is never purged.
_HOME_MARKS = ("catalog.db", "index", "archive")


def purge_target(settings: Settings) -> Path:
    """The JACKED_HOME `purge` would remove, or a `JackedError` when removing it would be wrong:
    `/`, the home folder or a folder above it, the Claude directory or a folder above it, or a folder
    that holds no jacked data (no catalog.db, index/ or archive/)."""
    assert settings.home is not None
    home = Path(settings.home).expanduser()
    if not home.exists():
        raise JackedError(f"{home} does not exist: nothing to purge")
    real = home.resolve()
    claude = Path(settings.claude_dir).expanduser().resolve()
    user_home = Path.home().resolve()
    if real == Path(real.anchor) or real == user_home or real in user_home.parents:
        raise JackedError(f"refusing to purge {home}: JACKED_HOME is {real}, which holds more than jacked's data")
    if real == claude or real in claude.parents:
        raise JackedError(f"refusing to purge {home}: it is (or holds) the Claude directory {claude}")
    if not real.is_dir() or not any((real / m).exists() for m in _HOME_MARKS):
        raise JackedError(f"refusing to purge {home}: it holds no jacked data (no catalog.db, index/ or archive/)")
    return home


def _inside(path: Path, folder: Path) -> bool:
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except OSError:
        return False


def _bounds(since: str | None, until: str | None) -> dict[str, str | None]:
    """`sessions`' time bounds as the catalog compares them; an unreadable one is a one-line error."""
    from jacked.util.time import time_bound

    return {"since": time_bound(since, "--since") if since else None,
            "until": time_bound(until, "--until", end_of_day=True) if until else None}
