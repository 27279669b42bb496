"""The JSON API of `jacked ui`: thin handlers over the library functions the CLI uses.

Every handler takes the query/body parameters as plain strings (or a JSON body) and returns a
JSON-ready object; a problem the user can fix raises `ApiError` with an HTTP status. There is
no data model of its own: sessions and turns come from `jacked.query.history`, search from
`jacked.query.search`, stats from `jacked.query.stats`, file diffs and compactions from `jacked.query.timeline`,
the composer's preview from `jacked.query.retrieve`.

Two thin adapters live here because no library function answers them yet:
- `list_sessions_page`: the session list with date filters and paging (history.list_sessions
  has repo + limit only) — read by `jacked.catalog.ui_queries`, shaped by
  `history.session_summary` so rows match `jacked sessions --json`.
- `over_time`: turns, sessions, tokens and tool calls per day (the stats page's time charts;
  `compute_stats` has totals only).

SQLite connections cannot cross threads, and the server runs each call on a worker thread of
its pool, so each call opens its own `Catalog` (about a millisecond; measured by the UI bench).
"""
from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from jacked import __version__ as JACKED_VERSION
from jacked.catalog import Catalog, ui_queries
from jacked.config import Settings
from jacked.errors import JackedError
from jacked.query.history import (SessionNotFound, resolve_session, session_rows, session_summary, turns_json,
                                  with_usage)
from jacked.query.ids import mark_short_ids
from jacked.query.prices import PriceTable
from jacked.service import Jacked
from jacked.util.time import TimeParseError, catalog_iso, now_utc, parse_since, parse_ts, relative_age

if TYPE_CHECKING:  # the answers' published shapes (jacked.schema)
    from jacked.schema.answers import DayActivity, StatsAnswer, TurnsAnswer

DEFAULT_PAGE = 50
MAX_PAGE = 500
MAX_SESSIONS_IN_RETRIEVE = 50
_SESSION_REF = re.compile(r"[\w.-]{1,200}")  # an id or a prefix of one: no path, no `~`, not too long


class ApiError(JackedError):
    """A request the user must fix: `status` is the HTTP status, the message is shown as is."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _int(params: Mapping[str, Any], name: str, default: int, lo: int, hi: int) -> int:
    raw = params.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(str(raw))
    except ValueError:
        raise ApiError(400, f"{name} must be a whole number, not {raw!r}") from None
    if not lo <= value <= hi:
        raise ApiError(400, f"{name} must be between {lo} and {hi}")
    return value


# Parameters every endpoint takes: the server's own (the access token may come in the URL).
SERVER_PARAMS = ("token",)


def _only_known(params: dict[str, Any], endpoint: str, names: list[str]) -> None:
    """An unknown parameter is a 400 naming the known ones: a typo must not answer as if it was not given."""
    unknown = [k for k in params if k not in names and k not in SERVER_PARAMS]
    if unknown:
        raise ApiError(400, f"unknown parameter {unknown[0]!r}: {endpoint} takes {', '.join(names)}")


def _bool(params: dict[str, Any], name: str, default: bool) -> bool:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    if isinstance(raw, bool):
        return raw
    return str(raw).strip().lower() in ("1", "true", "yes", "on")


def _list(raw: Any) -> list[str]:
    """`a,b` or a JSON list → a list of non-empty strings."""
    if raw is None:
        return []
    items = raw if isinstance(raw, list) else str(raw).split(",")
    return [str(x).strip() for x in items if str(x).strip()]


def _date_bound(value: str | None, name: str, end_of_day: bool = False) -> str | None:
    """`7d`, `2w`, a date or a date-time → an ISO bound; a bare `until` date includes that day.

    A value the user can fix is a 400 with one line: unreadable, or out of the calendar's range
    (`99999y` reaches before year 1: `parse_since` raises OverflowError for it).
    """
    if not value:
        return None
    v = value.strip()
    try:
        dt = parse_since(v)
        if end_of_day and len(v) == 10:  # a bare date: the whole day is in
            dt = dt.replace(hour=23, minute=59, second=59, microsecond=999000)
        return catalog_iso(dt)
    except TimeParseError as e:
        raise ApiError(400, f"{name}: {e}") from None
    except (OverflowError, ValueError):
        raise ApiError(400, f"{name}: {value!r} is out of range (years 1 to 9999)") from None


class UiApi:
    """The API's state: settings, and the thread that answers searches.

    Without a daemon, searches run one at a time on that thread, through a service that keeps the
    model loaded between them (the index is opened for each, so other processes get it between
    searches). The service's catalog connection stays on that thread, as SQLite wants.
    """

    def __init__(self, settings: Settings, remote: Callable[[Any], Any] | None = None) -> None:
        """`remote(warn)`: the daemon's service (`jacked.surfaces.daemon.client.RemoteService`) for
        what needs the model or the index (search, retrieve, scan); None: this process's own."""
        self.settings = settings
        self.remote = remote
        self._searches = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jacked-ui-search")
        self._search_service: Jacked | None = None

    def close(self) -> None:
        """Close the searches' service (the next search makes it again)."""
        self._searches.submit(self._close_search_service).result()

    def _close_search_service(self) -> None:
        if self._search_service is not None:
            self._search_service.close()
            self._search_service = None

    def _search(self, query: str, opts: Any) -> dict[str, Any]:
        if self.remote is not None:
            return dict(self.remote(None).search(query, opts))
        if self._search_service is None:
            self._search_service = Jacked(self.settings, scan=False)
        return dict(self._search_service.search(query, opts))

    # ------------------------------------------------------------------ plumbing
    @contextmanager
    def service(self, warn: Any = None) -> Iterator[Jacked]:
        """The service for this request's thread (its own catalog connection, closed after; no scan:
        `POST /api/scan` brings the catalog up to date)."""
        jk = Jacked(self.settings, scan=False, warn=warn)
        try:
            yield jk
        finally:
            jk.close()

    @contextmanager
    def writer(self, warn: Any = None) -> Iterator[Any]:
        """The service for what needs the model or the index: the daemon's when there is one."""
        if self.remote is not None:
            yield self.remote(warn)
            return
        with self.service(warn) as jk:
            yield jk

    @contextmanager
    def catalog(self) -> Iterator[Catalog]:
        """The catalog, through the service, for the page's own listings."""
        with self.service() as jk:
            yield jk.catalog

    def index_exists(self) -> bool:
        """Whether there is a vector index to search (an edge shard on disk, or a server)."""
        from jacked.index.indexer import configured_store, store_exists

        try:
            return bool(store_exists(configured_store(self.settings)))
        except Exception:
            return False

    # ------------------------------------------------------------------ endpoints
    def health(self, params: dict[str, str]) -> dict[str, Any]:
        """`GET /api/health`: version, catalog totals, whether search has an index."""
        from jacked.index.content_types import CONTENT_TYPES
        from jacked.query.retrieve import MODES

        from jacked.catalog.scan_state import agent_counts
        from jacked.sources.registry import SOURCES

        with self.catalog() as cat:
            totals = cat.totals()
            by_agent = agent_counts(cat)
        agents = [{"name": n, "label": s.label, "sessions": by_agent.get(n, 0)} for n, s in SOURCES.items()]
        return {"ok": True, "agents": agents, "version": JACKED_VERSION, "claude_dir": str(self.settings.claude_dir),
                "index": self.index_exists(), "backend": getattr(self.settings, "backend", "edge"),
                "content_types": list(CONTENT_TYPES), "retrieve_modes": list(MODES),
                "default_max_tokens": self.settings.default_max_tokens,
                "token_safety_margin": self.settings.token_safety_margin, **totals}

    def repos(self, params: dict[str, str]) -> dict[str, Any]:
        """`GET /api/repos`: repos with their session counts, most sessions first."""
        with self.catalog() as cat:
            rows = ui_queries.repo_counts(cat)
        return {"repos": [{"repo_name": r[0], "sessions": r[1], "last_started_at": r[2]} for r in rows]}

    def sessions(self, params: dict[str, str]) -> dict[str, Any]:
        """`GET /api/sessions`: the list, filtered by repo, date and text, newest (or best) first."""
        _only_known(params, "/api/sessions", ["q", "types", "repo", "agent", "since", "until", "limit", "offset"])
        limit = _int(params, "limit", DEFAULT_PAGE, 1, MAX_PAGE)
        offset = _int(params, "offset", 0, 0, 10**9)
        repo = (params.get("repo") or "").strip() or None
        since = _date_bound(params.get("since"), "since")
        until = _date_bound(params.get("until"), "until", end_of_day=True)
        q = (params.get("q") or "").strip()
        types = _list(params.get("types"))
        agent = (params.get("agent") or "").strip() or None
        if q:
            return self._text_search(q, types, repo, since, until, limit, offset, agent)
        with self.catalog() as cat:
            total, rows = list_sessions_page(cat, repo, since, until, limit, offset, agent=agent)
            with_usage(cat, rows, PriceTable.with_overrides(self.settings.prices))
        return {"total": total, "offset": offset, "limit": limit, "sessions": rows,
                "search": None}

    def _text_search(self, q: str, types: list[str], repo: str | None, since: str | None, until: str | None,
                     limit: int, offset: int, agent: str | None = None) -> dict[str, Any]:
        """Hybrid search when an index exists; else a plain substring match, said so."""
        if not self.index_exists():
            with self.catalog() as cat:
                total, rows = list_sessions_page(cat, repo, since, until, limit, offset, text=q, agent=agent)
            return {"total": total, "offset": offset, "limit": limit, "sessions": rows,
                    "search": {"mode": "substring", "query": q, "types": types,
                               "note": "no search index yet: matched titles and first prompts only "
                                       "(run `jacked backfill` for hybrid search)"}}
        result = self.search({"q": q, "types": ",".join(types), "repo": repo or "", "since": since or "",
                              "agent": agent or "", "limit": str(MAX_PAGE)})  # ranking costs the same: fetch all, page here
        hits = result["results"]
        by_id: dict[str, dict[str, Any]] = {}
        with self.catalog() as cat:
            for r in ui_queries.list_rows(cat, [h["session_id"] for h in hits]):
                by_id[r["session_id"]] = _list_row(r)
            with_usage(cat, list(by_id.values()), PriceTable.with_overrides(self.settings.prices))
        rows = []
        for h in hits:
            row = by_id.get(h["session_id"]) or search_only_row(h)
            if until and (row.get("started_at") or "") > until:
                continue
            # the search named each hit as lists do (`short_id`): not asked of the catalog again
            row.update({"short_id": h["short_id"], "score": h["score"], "matches": h["matches"],
                        "confidence": h.get("confidence")})
            rows.append(row)
        # The answer's confidence is its best result's, of the rows still listed (`until` may drop some).
        confidence = rows[0]["confidence"] if rows else "none"
        return {"total": len(rows), "offset": offset, "limit": limit, "sessions": rows[offset:offset + limit],
                "search": {"mode": "hybrid", "query": result["query"], "types": types, "note": None,
                           "confidence": confidence}}

    def search(self, params: dict[str, str]) -> dict[str, Any]:
        """`GET /api/search`: exactly `jacked search --json` (hybrid, grouped per session)."""
        from jacked.query.search import SearchError, SearchOptions
        from jacked.index.store import StoreError

        from jacked.query.filters import FILTERS

        _only_known(params, "/api/search", ["q", "scope", "mine", "limit", *(f.name for f in FILTERS)])
        q = (params.get("q") or "").strip()
        if not q:
            raise ApiError(400, "q is required: give some words to search for")
        _date_bound(params.get("since"), "since")  # checked here: a bad value is a 400, never a 500
        opts = SearchOptions(scope=params.get("scope") or None,
                             mine=_bool(params, "mine", False), limit=_int(params, "limit", 10, 1, MAX_PAGE),
                             filters={f.name: params[f.name] for f in FILTERS if params.get(f.name)})
        try:
            opts.validate()  # a bad filter value says so even before there is an index
        except SearchError as e:
            raise ApiError(400, str(e)) from None
        if not self.index_exists():
            raise ApiError(409, f"no index in {self.settings.home} yet: run `jacked backfill` first")
        try:
            return self._searches.submit(self._search, q, opts).result()
        except (SearchError, TimeParseError) as e:
            raise ApiError(400, str(e)) from None
        except StoreError as e:
            raise ApiError(503, str(e)) from None

    def session(self, ref: str, params: dict[str, str]) -> dict[str, Any]:
        """`GET /api/sessions/{id}`: everything the session page shows, in one answer."""
        with self.catalog() as cat:
            sid = self._resolve(cat, ref)
            return session_detail(cat, sid, self.settings)

    def turns(self, ref: str, params: dict[str, str]) -> TurnsAnswer:
        """`GET /api/sessions/{id}/turns`: exactly `jacked turns --json`."""
        with self.service() as jk:
            return jk.turns(self._resolve(jk.catalog, ref))

    def stats(self, params: dict[str, str]) -> StatsAnswer:
        """`GET /api/stats`: `jacked stats --json`, plus per-day series for the time charts."""
        from jacked.query.stats import StatsQuery
        from jacked.query.usage import UsageQuery

        _date_bound(params.get("since"), "since")  # checked here: a bad value is a 400, never a 500
        q = StatsQuery(repo=(params.get("repo") or None), since=(params.get("since") or None),
                       tool=(params.get("tool") or None), include_subagents=_bool(params, "subagents", False),
                       top=_int(params, "top", 10, 1, 100))
        with self.service() as jk:
            if params.get("session"):
                q.session_id = self._resolve(jk.catalog, params["session"])
            try:
                data = jk.stats(q)
            except TimeParseError as e:
                raise ApiError(400, str(e)) from None
            data["over_time"] = over_time(jk.catalog, q)
            data["cost_over_time"] = jk.usage(UsageQuery(by="day", since=q.since, repo=q.repo,
                                                         session_id=q.session_id))["rows"]
        return data

    def retrieve(self, body: dict[str, Any]) -> dict[str, Any]:
        """`POST /api/retrieve`: `jacked retrieve --json` for the chosen sessions, plus its text."""
        from jacked.query.retrieve import MODES, RetrieveError

        ids = _list(body.get("session_ids"))
        if not ids:
            raise ApiError(400, "session_ids is required: pick at least one session")
        if len(ids) > MAX_SESSIONS_IN_RETRIEVE:
            raise ApiError(400, f"at most {MAX_SESSIONS_IN_RETRIEVE} sessions at once")
        mode = str(body.get("mode") or "smart").strip().lower()
        if mode not in MODES:
            raise ApiError(400, f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
        budget = _int({"budget": body.get("budget")}, "budget", self.settings.default_max_tokens, 1, 10**7)
        warnings: list[str] = []
        with self.catalog() as cat:
            sids = [self._resolve(cat, ref) for ref in ids]
        with self.writer(warn=warnings.append) as jk:
            try:
                result = jk.retrieve(sids, mode=mode, budget=budget, check_git=_bool(body, "git", True))
            except RetrieveError as e:
                raise ApiError(400, str(e)) from None
        out = result.to_json()
        out["text"] = result.text
        out["warnings"] = warnings
        # Why each unit was left out: `retrieve` leaves out whole units by priority when the
        # budget is short, and whole sessions when none of their units fit.
        for o in out["omitted"]:
            o["reason"] = (f"did not fit in the budget ({o['tokens']:,} tokens; "
                           f"higher-priority units went in first)")
        out["dropped"] = [{"session_id": d, "reason": f"none of its units fit in {budget:,} tokens"}
                          for d in out["dropped_sessions"]]
        return out

    def scan(self, body: dict[str, Any]) -> dict[str, Any]:
        """`POST /api/scan`: bring the catalog up to date with the transcripts (`jacked scan --json`)."""
        with self.writer() as jk:
            if not jk.scannable():
                raise ApiError(409, f"nothing to scan: no projects folder in {self.settings.claude_dir} "
                                    f"and no other agent's folder")
            return jk.scan().to_json()

    # ------------------------------------------------------------------ helpers
    def _resolve(self, cat: Catalog, ref: str) -> str:
        # Only ids and prefixes: a path on the server's disk is not a web view's business (and a
        # 5,000-character "id" must not reach the file system as a name: ENAMETOOLONG).
        if not _SESSION_REF.fullmatch(ref):
            raise ApiError(400, "give a session id or a unique prefix")
        try:
            return resolve_session(cat, ref)
        except SessionNotFound as e:
            raise ApiError(404, str(e)) from None


# --------------------------------------------------------------------------- adapters
def _list_row(row: dict[str, Any], now: Any = None) -> dict[str, Any]:
    """A list row: the `sessions --json` fields (the first prompt in brief, as there) and the age."""
    out = session_summary(row)
    out["age"] = relative_age(row.get("ended_at") or row.get("started_at"), now)
    return out


def list_sessions_page(cat: Catalog, repo: str | None, since: str | None, until: str | None, limit: int,
                       offset: int, text: str | None = None, agent: str | None = None) -> tuple[int, list[dict[str, Any]]]:
    """(total matching, one page of rows), newest first — `history.list_sessions` plus dates and paging.

    `text` is the fallback when there is no index: a case-insensitive substring of the title or
    the first prompt.
    """
    total, rows = ui_queries.sessions_page(cat, repo, since, until, limit, offset, text, agent)
    now = now_utc()
    return total, mark_short_ids(cat, [_list_row(r, now) for r in rows])


def _ms_between(a: str | None, b: str | None) -> int | None:
    da, db = parse_ts(a), parse_ts(b)
    if da is None or db is None:
        return None
    ms = int((db - da).total_seconds() * 1000)
    return ms if ms >= 0 else None


def session_detail(cat: Catalog, sid: str, settings: Settings) -> dict[str, Any]:
    """The session page: `turns --json` plus what the page places among the turns.

    Adds, from the same catalog: call durations (call → result time), whether a failed call was
    fixed later and each file change with its diff (`jacked.query.timeline`), compaction boundaries,
    the subagents' own calls (for the expandable subagent boxes), and the turn the plan was
    approved in (its ExitPlanMode call), so the plan sits in its place.
    """
    from jacked.query.timeline import session_events

    prices = PriceTable.with_overrides(settings.prices)
    data = turns_json(cat, sid, prices)
    row = cat.get_session_row(sid) or {"session_id": sid}
    session = session_rows(cat, [session_summary(row)], prices)[0]
    session["age"] = relative_age(row.get("ended_at") or row.get("started_at"))
    session["version_last"] = row.get("version_last")
    data["session"] = session

    timing = {use_id: _ms_between(at, result_at) for use_id, at, result_at in ui_queries.call_times(cat, sid)}
    plan_turn = None
    for t in data["turns"]:
        for inv in t["invocations"]:
            inv["duration_ms"] = timing.get(inv["tool_use_id"])
            if plan_turn is None and inv["tool_name"] == "ExitPlanMode":
                plan_turn = t["index"]
    data["plan_turn"] = plan_turn

    events = session_events(cat, sid, {"file", "error", "compaction"}, settings.claude_dir)
    data["files"] = [{k: e.get(k) for k in ("turn_index", "timestamp", "path", "tool_name", "tool_use_id",
                                            "operation", "lines_added", "lines_removed", "diff")}
                     for e in events if e["type"] == "file"]
    data["errors"] = [{k: e.get(k) for k in ("turn_index", "tool_use_id", "tool_name", "message", "resolved")}
                      for e in events if e["type"] == "error"]
    data["compactions"] = [{k: v for k, v in e.items() if k not in ("type", "session_id")}
                           for e in events if e["type"] == "compaction" and e.get("kind") == "boundary"]
    for a in data["subagents"]:
        owner = a["agent_id"]
        a["invocations"] = [{
            "tool_name": r["tool_name"], "sequence": r["sequence"], "is_error": bool(r["is_error"]),
            "target": r["command"] or r["file_path"] or r["description"], "turn_index": r["turn_index"],
        } for r in cat.invocation_rows(sid, owner)] if owner else []
    return data


def over_time(cat: Catalog, q: Any) -> list[DayActivity]:
    """Per day (UTC, by turn start): turns, sessions, tokens in / out, tool calls and errors."""
    from jacked.query.stats import iso_since

    since = iso_since(q.since, q.now)
    try:
        return cast("list[DayActivity]", ui_queries.turns_per_day(cat, q.repo, q.session_id, since))
    except sqlite3.DatabaseError as e:  # pragma: no cover - a catalog mid-migration
        raise ApiError(503, f"catalog busy: {e}") from None


def search_only_row(hit: dict[str, Any]) -> dict[str, Any]:
    """The list row of a search hit the local catalog does not hold (a teammate's session on a
    shared server): what the search knows of it (`SearchOnlyRow`)."""
    return {"session_id": hit["session_id"], "short_id": hit["short_id"], "repo_name": hit.get("repo_name"),
            "title": hit.get("title"),
            "started_at": hit.get("started_at"), "ended_at": hit.get("timestamp"), "age": hit.get("age"),
            "in_catalog": False, "score": hit["score"], "matches": hit["matches"], "confidence": hit.get("confidence")}
