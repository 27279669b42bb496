"""`jacked mcp`: jacked's memory as an MCP server (stdio, the official `mcp` SDK).

Tools: search, retrieve, list_sessions, get_session, list_turns, get_turn, timeline,
file_history, stats, restore. Each answers with one JSON text, bounded well under Claude
Code's 25,000-token limit for a tool result: lists are paged (`offset` / `limit`, and
`next_offset` in the answer — null on the last page); a page is shortened until it fits
`MAX_RESULT_TOKENS`, and very long single texts in a page are shown up to `FIELD_CHARS`
with a marker saying how much was left out (the whole text is one `jacked turns` away).

The module is named `mcp_server` so it never shadows the SDK's top-level `mcp` package.
Everything served comes from the catalog and index, where it was stored redacted.
"""
from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

import orjson

from jacked.catalog import Catalog
from jacked.config import Settings
from jacked.util.tokens import count_tokens

MAX_RESULT_TOKENS = 12_000  # half of Claude Code's 25,000-token tool output limit
FIELD_CHARS = 4000
RESCAN_SECONDS = 30.0  # the catalog is brought up to date at most this often
# Failures that mean "the request or the setup is wrong", shown to the model as they are.
_USER_ERRORS = frozenset({"SessionNotFound", "SearchError", "StoreError", "StoreNotFound", "TimelineError",
                          "RestoreError", "RetrieveError", "TimeParseError", "EmbedError", "ConfigError"})
TOOL_NAMES = ("search", "retrieve", "list_sessions", "get_session", "list_turns", "get_turn", "timeline",
              "file_history", "stats", "restore")


def clip(obj: Any, limit: int = FIELD_CHARS) -> Any:
    """`obj` with every string longer than `limit` shortened, marked with what was left out."""
    if isinstance(obj, str):
        return obj if len(obj) <= limit else obj[:limit] + f"… [+{len(obj) - limit} chars not shown]"
    if isinstance(obj, dict):
        return {k: clip(v, limit) for k, v in obj.items()}
    if isinstance(obj, list):
        return [clip(v, limit) for v in obj]
    return obj


def dumps(obj: Any) -> str:
    return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS).decode()


def bounded(obj: dict[str, Any], max_tokens: int = MAX_RESULT_TOKENS) -> str:
    """A non-list answer as JSON within the token bound (long texts clipped harder if need be)."""
    limit = FIELD_CHARS
    text = dumps(clip(obj, limit))
    while count_tokens(text) > max_tokens and limit > 200:
        limit //= 2
        text = dumps(clip(obj, limit))
    return text


def page(items: list[Any], offset: int, limit: int, max_tokens: int = MAX_RESULT_TOKENS,
         extra: dict[str, Any] | None = None) -> str:
    """One page of `items` as JSON: {items, total, offset, next_offset, ...extra}, within the bound."""
    offset = max(0, offset)
    limit = max(1, min(limit, 200))
    chunk = [clip(x) for x in items[offset:offset + limit]]
    while True:
        nxt = offset + len(chunk)
        body = {**(extra or {}), "items": chunk, "total": len(items), "offset": offset,
                "next_offset": nxt if nxt < len(items) else None}
        text = dumps(body)
        if len(chunk) <= 1 or count_tokens(text) <= max_tokens:
            break
        chunk = chunk[:max(1, len(chunk) * 2 // 3)]  # fewer items per page; the rest is on the next
    if count_tokens(text) > max_tokens:  # one huge item: clip its texts harder
        return bounded(body, max_tokens)
    return text


class JackedService:
    """The work behind the MCP tools: plain methods returning JSON text (tests call them directly)."""

    def __init__(self, settings: Settings, scan: bool = True) -> None:
        self.settings = settings
        self.catalog = Catalog(settings.catalog_path)
        self.scan_enabled = scan
        self._scanned_at = 0.0
        self._indexer: Any = None

    # ------------------------------------------------------------------ plumbing
    def fresh(self) -> Catalog:
        """The catalog, re-scanned (incrementally) when the last scan is older than RESCAN_SECONDS."""
        if self.scan_enabled and time.monotonic() - self._scanned_at > RESCAN_SECONDS:
            from jacked.ingest.scan import scan

            if self.settings.projects_dir.is_dir():
                scan(self.catalog, self.settings.claude_dir)
            self._scanned_at = time.monotonic()
        return self.catalog

    def sid(self, ref: str) -> str:
        from jacked.query.history import resolve_session

        return resolve_session(self.fresh(), ref, self.settings.claude_dir)

    # ------------------------------------------------------------------ tools
    def search(self, query: str, scope: str = "all", repo: str | None = None, since: str | None = None,
               limit: int = 5) -> str:
        from jacked.index.indexer import Indexer
        from jacked.query.search import SearchOptions, Searcher

        self.fresh()
        if self._indexer is None:
            self._indexer = Indexer(self.settings, self.catalog)
        opts = SearchOptions(scope=scope, repo=repo, since=since, limit=max(1, min(limit, 20)))
        opts.validate()
        with self._indexer.open_store(must_exist=True) as store:
            result = Searcher(self.settings, store, self._indexer.dense, self._indexer.sparse,
                              self.catalog).search(query, opts)
        return bounded(result)

    def retrieve(self, session_ids: list[str], mode: str = "smart", max_tokens: int = 8000) -> str:
        try:
            from jacked.query.retrieve import retrieve
        except ImportError:
            return dumps({"error": "retrieve is not available in this version of jacked"})
        ids = [self.sid(s) for s in session_ids]
        # The context block itself must stay under the tool-output bound.
        budget = max(100, min(max_tokens, MAX_RESULT_TOKENS - 1000))  # retrieve needs >= 100
        result = retrieve(self.catalog, ids, mode=mode, budget=budget, margin=self.settings.token_safety_margin)
        return bounded({"mode": result.mode, "budget": result.budget, "used": result.used,
                        "dropped_sessions": result.dropped_sessions, "omitted": result.omitted,
                        "context": result.text})

    def list_sessions(self, repo: str | None = None, offset: int = 0, limit: int = 20) -> str:
        from jacked.query.history import list_sessions

        rows = list_sessions(self.fresh(), repo)
        return page(rows, offset, limit)

    def get_session(self, session_id: str) -> str:
        from jacked.query.history import session_summary
        from jacked.index.summarize import ensure_summaries, summaries_for

        sid = self.sid(session_id)
        cat = self.catalog
        ensure_summaries(cat, sid)
        turn_sums, sess = summaries_for(cat, sid)
        row = cat.get_session_row(sid) or {}
        out = session_summary(row)
        out.update({"plan": row.get("plan"), "summary": sess["text"] if sess else None,
                    "subagents": [{"agent_id": a["agent_id"], "agent_type": a["agent_type"],
                                   "description": a["description"], "turn_index": a["turn_index"]}
                                  for a in cat.subagent_rows(sid) if not a["is_warmup"]],
                    "turns": [{"index": t["turn_index"], "summary": (turn_sums.get(t["turn_index"]) or {}).get("text")}
                              for t in cat.turn_rows(sid)][:50]})
        return bounded(out)

    def list_turns(self, session_id: str, offset: int = 0, limit: int = 20) -> str:
        from jacked.index.summarize import ensure_summaries, summaries_for

        sid = self.sid(session_id)
        ensure_summaries(self.catalog, sid)
        sums, _ = summaries_for(self.catalog, sid)
        turns = []
        for t in self.catalog.turn_rows(sid):
            m = orjson.loads(t["metrics"]) if t["metrics"] else {}
            turns.append({"index": t["turn_index"], "started_at": t["started_at"], "duration_ms": t["duration_ms"],
                          "prompt": clip(t["prompt"], 500), "summary": (sums.get(t["turn_index"]) or {}).get("text"),
                          "tool_call_count": m.get("tool_call_count", 0), "tool_error_count": m.get("tool_error_count", 0),
                          "tool_usage": m.get("tool_usage", {}), "files_modified": m.get("files_modified", []),
                          "files_written": m.get("files_written", []), "interrupted": bool(t["interrupted"])})
        return page(turns, offset, limit, extra={"session_id": sid})

    def get_turn(self, session_id: str, turn_index: int, offset: int = 0, limit: int = 50) -> str:
        from jacked.query.history import turns_json
        from jacked.index.summarize import summaries_for

        sid = self.sid(session_id)
        data = turns_json(self.catalog, sid)
        turn = next((t for t in data["turns"] if t["index"] == turn_index), None)
        if turn is None:
            raise ValueError(f"session {sid[:8]} has no turn {turn_index} (it has {len(data['turns'])} turns)")
        sums, _ = summaries_for(self.catalog, sid)
        invocations = turn.pop("invocations")
        turn["summary"] = (sums.get(turn_index) or {}).get("text")
        return page(invocations, offset, limit, extra={"session_id": sid, "turn": clip(turn)})

    def timeline(self, session_id: str | None = None, types: list[str] | None = None, repo: str | None = None,
                 file: str | None = None, offset: int = 0, limit: int = 50) -> str:
        from jacked.query.timeline import TimelineQuery, timeline

        sid = self.sid(session_id) if session_id else None
        events = timeline(self.fresh(), TimelineQuery(session_id=sid, types=types or None, repo=repo, file=file),
                          self.settings.claude_dir)
        return page(events, offset, limit)

    def file_history(self, path: str, repo: str | None = None, offset: int = 0, limit: int = 20) -> str:
        from jacked.query.timeline import file_history

        return page(file_history(self.fresh(), path, self.settings.claude_dir, repo), offset, limit,
                    extra={"path": path})

    def stats(self, repo: str | None = None, since: str | None = None, session_id: str | None = None,
              tool: str | None = None, top: int = 10) -> str:
        from jacked.query.stats import StatsQuery, compute_stats

        sid = self.sid(session_id) if session_id else None
        return bounded(compute_stats(self.fresh(), StatsQuery(repo=repo, since=since, session_id=sid, tool=tool,
                                                              top=max(1, min(top, 50)))))

    def restore(self, session_id: str, max_tokens: int = 4000) -> str:
        from jacked.query.restore import restore_brief

        sid = self.sid(session_id)
        brief = restore_brief(self.catalog, sid, max(1, min(max_tokens, MAX_RESULT_TOKENS - 1000)),
                              margin=self.settings.token_safety_margin)
        return dumps({"session_id": sid, "budget": brief.budget, "used": brief.used, "omitted": brief.omitted,
                      "brief": brief.text})


def build_server(settings: Settings, scan: bool = True) -> Any:
    """The MCP server with jacked's tools registered."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    svc = JackedService(settings, scan=scan)
    server = MCPServer(
        "jacked",
        instructions=("Long-term memory of past Claude Code sessions: search them, read their turns, "
                      "timelines, file histories and tool statistics, retrieve context, restore a brief. "
                      "Lists are paged: pass next_offset back as offset."),
    )

    def tool(fn: Callable[..., Any], description: str) -> None:
        """Register `fn`; a problem the caller can fix reaches the model as a one-line tool error."""
        @functools.wraps(fn)
        async def wrapper(*args: Any, **kwargs: Any) -> str:
            try:
                return await fn(*args, **kwargs)
            except (ValueError, LookupError) as e:  # SessionNotFound, SearchError, StoreNotFound, …
                raise ToolError(str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__) from e
            except Exception as e:
                if type(e).__name__ in _USER_ERRORS:
                    raise ToolError(str(e).strip().splitlines()[0]) from e
                raise

        server.tool(name=fn.__name__, description=description, structured_output=False)(wrapper)

    # Tools are async so they run on the server's one thread: the catalog's SQLite
    # connection belongs to the thread that opened it.
    async def search(query: str, scope: str = "all", repo: str | None = None, since: str | None = None,
                     limit: int = 5) -> str:
        return svc.search(query, scope, repo, since, limit)

    async def retrieve(session_ids: list[str], mode: str = "smart", max_tokens: int = 8000) -> str:
        return svc.retrieve(session_ids, mode, max_tokens)

    async def list_sessions(repo: str | None = None, offset: int = 0, limit: int = 20) -> str:
        return svc.list_sessions(repo, offset, limit)

    async def get_session(session_id: str) -> str:
        return svc.get_session(session_id)

    async def list_turns(session_id: str, offset: int = 0, limit: int = 20) -> str:
        return svc.list_turns(session_id, offset, limit)

    async def get_turn(session_id: str, turn_index: int, offset: int = 0, limit: int = 50) -> str:
        return svc.get_turn(session_id, turn_index, offset, limit)

    async def timeline(session_id: str | None = None, types: list[str] | None = None, repo: str | None = None,
                       file: str | None = None, offset: int = 0, limit: int = 50) -> str:
        return svc.timeline(session_id, types, repo, file, offset, limit)

    async def file_history(path: str, repo: str | None = None, offset: int = 0, limit: int = 20) -> str:
        return svc.file_history(path, repo, offset, limit)

    async def stats(repo: str | None = None, since: str | None = None, session_id: str | None = None,
                    tool: str | None = None, top: int = 10) -> str:
        return svc.stats(repo, since, session_id, tool, top)

    async def restore(session_id: str, max_tokens: int = 4000) -> str:
        return svc.restore(session_id, max_tokens)

    tool(search, "Hybrid semantic + keyword search over past sessions. scope: sessions | turns | messages | all. "
                 "Returns sessions with their best matching texts (and turn_index), and a confidence "
                 "(high | medium | low | none): when it is low or none, no past session matched well — "
                 "say so, do not present a result as the one meant. Quote a phrase (\"...\") to find it verbatim.")
    tool(retrieve, "Context from chosen sessions (ids or unique prefixes) fitted into max_tokens, ready to use. "
                   "mode: smart | plan | labels | agents | full.")
    tool(list_sessions, "Sessions, newest first: id, repo, cwd, times, turn count, title. Paged.")
    tool(get_session, "One session: its fields, plan, summary, subagents and a summary of each turn.")
    tool(list_turns, "The turns of a session: prompt, summary, tool counts, files changed. Paged.")
    tool(get_turn, "One turn: prompt, final answer, metrics, summary; its tool calls paged as items.")
    tool(timeline, "Typed events (intent, action, file, error, llm, compaction, subagent) of a session, or across "
                   "sessions of a repo; filter by types and file. Paged.")
    tool(file_history, "Every recorded change to a file across sessions, oldest first, with diffs. Paged.")
    tool(stats, "Tool usage and error rates, files most read/edited, bash commands, tokens, tool sequences, "
                "parallel batches; give tool for its position and neighbours.")
    tool(restore, "A brief for continuing an interrupted session: goal, state after each turn, where it stopped.")
    return server


def serve(settings: Settings) -> None:
    """Run the server on stdin/stdout until the client closes it."""
    build_server(settings).run("stdio")
