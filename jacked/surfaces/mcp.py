"""`jacked mcp`: jacked's memory as an MCP server (stdio, the official `mcp` SDK).

Tools: search, retrieve, list_sessions, get_session, list_turns, get_turn, timeline,
file_history, stats, restore. Each answers with one JSON text, bounded well under Claude
Code's 25,000-token limit for a tool result: lists are paged (`offset` / `limit`, and
`next_offset` in the answer — null on the last page); a page is shortened until it fits
`MAX_RESULT_TOKENS`, and very long single texts in a page are shown up to `FIELD_CHARS`
with a marker saying how much was left out (the whole text is one `jacked turns` away).
The context of `retrieve` and the brief of `restore` are never clipped: their token budget
bounds them, so `used` counts exactly the text returned.

The work is `jacked.service.Jacked`'s; this module only shapes arguments and answers.
Everything served comes from the catalog and index, where it was stored redacted.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
import re
from collections.abc import Callable, Mapping
from itertools import islice
from typing import Annotated, Any

import orjson
from pydantic import BaseModel, Field, ValidationError

from jacked import schema
from jacked.catalog import Catalog
from jacked.config import Settings
from jacked.errors import JackedError
from jacked.query.budget import Fitted, fit, settle
from jacked.query import filters as search_filters
from jacked.query.search import SearchOptions
from jacked.service import Jacked
from jacked.util.tokens import count_tokens

MAX_RESULT_TOKENS = 12_000  # half of Claude Code's 25,000-token tool output limit
FIELD_CHARS = 4000
RETRIEVE_HEADROOM = 1000  # of MAX_RESULT_TOKENS, left by retrieve's budget for the JSON around the context
RESCAN_SECONDS = 30.0  # the catalog is brought up to date at most this often
# Failures that mean "the request or the setup is wrong", shown to the model as they are:
# every JackedError, and the ValueError / LookupError of an argument out of range.
USER_ERRORS: tuple[type[Exception], ...] = (JackedError, ValueError, LookupError)
# The library's messages name CLI flags; a tool's caller knows its arguments.
CLI_TERMS = {"--max-tokens": "max_tokens", "--type": "types", "--scope": "scope", "--repo": "repo", "-n": "limit"}
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


def first_line(e: BaseException) -> str:
    """The one line a user error shows: its message's first line (its class name if it has none)."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def in_tool_terms(message: str) -> str:
    """`message` with the CLI flags it names given as the tool's argument names."""
    return re.sub(r"(?<![\w-])(--[a-z][a-z-]*|-n)(?![\w-])", lambda m: CLI_TERMS.get(m.group(1), m.group(1)), message)


def tool_arguments(tool: str, model: type[BaseModel], given: dict[str, Any]) -> dict[str, Any]:
    """The arguments of a call to `tool`, checked against its model; any problem is one line in the
    tool's own terms (an unknown argument names the known ones)."""
    fields = {f.alias or name: f for name, f in model.model_fields.items()}
    unknown = [k for k in given if k not in fields]
    if unknown:
        raise ValueError(f"unknown argument {unknown[0]!r}: {tool} takes {', '.join(fields)}")
    missing = [k for k, f in fields.items() if f.is_required() and k not in given]
    if missing:
        raise ValueError(f"{missing[0]} is required")
    try:
        return model.model_validate(given).model_dump_one_level()  # type: ignore[attr-defined]  # the MCP SDK's argument models (ArgModelBase) have it
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(part) for part in err["loc"]) or tool
        given_text = clip(repr(err.get("input")), 80)
        raise ValueError(f"{where}: {err['msg'][0].lower()}{err['msg'][1:]} (given {given_text})") from None


def dumps(obj: Any) -> str:
    """An answer as JSON text, in the form every surface gives it (`jacked.schema`)."""
    return schema.dumps(obj).decode()


def _without_texts(sections: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Sections with their own texts left out: the answer's `text` holds them all, joined (both
    would send the context twice)."""
    return [{k: v for k, v in sec.items() if k != "text"} for sec in sections]


def bounded(obj: Mapping[str, Any], max_tokens: int = MAX_RESULT_TOKENS) -> str:
    """A non-list answer as JSON within the token bound (long texts clipped harder if need be)."""
    limit = FIELD_CHARS
    text = dumps(clip(obj, limit))
    while count_tokens(text) > max_tokens and limit > 200:
        limit //= 2
        text = dumps(clip(obj, limit))
    return text


def page_bounds(offset: int, limit: int) -> tuple[int, int]:
    """`offset` and `limit` as a page takes them: from 0, 1 to 200 items."""
    return max(0, offset), max(1, min(limit, 200))


def page(items: list[Any], offset: int, limit: int, max_tokens: int = MAX_RESULT_TOKENS,
         extra: dict[str, Any] | None = None, total: int | None = None, more: bool | None = None) -> str:
    """One page of `items` as JSON: {items, total, offset, next_offset, ...extra}, within the bound.

    The page is the longest run from `offset` (at most `limit` items) that fits (budget.fit,
    contiguous: the rest is on the next page); its first item always goes in, its long texts
    clipped harder (`bounded`) if it alone is over. With `total`, `items` holds only the rows
    from `offset` on (a page read from the catalog), out of `total`. With `more` instead, it
    holds the rows from `offset` on of a list not counted (total null), `more` saying whether
    others follow them."""
    offset, limit = page_bounds(offset, limit)
    count: int | None
    if more is not None:
        chunk, count = items[:limit], None
    elif total is None:
        chunk, count = items[offset:offset + limit], len(items)
    else:
        chunk, count = items[:limit], total
    chunk = [clip(x) for x in chunk]

    def body(kept: list[Any]) -> dict[str, Any]:
        nxt = offset + len(kept)
        follows = nxt < count if count is not None else bool(more) or len(kept) < len(chunk)
        return {**(extra or {}), "items": kept, "total": count, "offset": offset,
                "next_offset": nxt if follows else None}

    # The frame at its widest (next_offset a number, not null); each item adds its JSON and a comma.
    frame = count_tokens(dumps({**body([]), "next_offset": offset + limit if count is None else count}))
    kept, over = _fit_json(chunk, max_tokens, frame, body, first_must=True)
    text = dumps(body(kept))
    if over:  # one huge item: clip its texts harder
        return bounded(body(kept), max_tokens)
    return text


def retrieve_answer(result: Any, max_tokens: int = MAX_RESULT_TOKENS) -> str:
    """A retrieve result as `jacked retrieve --json` gives it, with the whole context as `text`
    (its sections without their texts); the list of omitted units is shortened to the longest run
    from its start that fits (`omitted_total` keeps their number)."""
    whole = schema.to_json(result)
    sessions = [{**s, "sections": _without_texts(s["sections"])} for s in whole["sessions"]]

    def answer(omitted: list[Any]) -> dict[str, Any]:
        return {**whole, "sessions": sessions, "omitted": omitted, "omitted_total": len(result.omitted),
                "text": result.text}

    kept, _ = _fit_json(list(result.omitted), max_tokens, count_tokens(dumps(answer([]))), answer)
    return dumps(answer(kept))


def _fit_json(items: list[Any], max_tokens: int, frame: int, whole: Callable[[list[Any]], Any],
              first_must: bool = False) -> tuple[list[Any], bool]:
    """The longest run of `items` from the start whose JSON, in `whole(kept)`, fits `max_tokens`
    (budget.fit on each item's count plus a comma after the `frame`, settled on the exact count),
    and whether it is still over (only when the first item, with `first_must`, is too big alone)."""
    fitted = fit(range(len(items)), max_tokens, lambda i: count_tokens(dumps(items[i])) + 1, contiguous=True,
                 used=frame, must=(lambda i: i == 0) if first_must else None)

    def exact(f: Fitted[int]) -> int:
        return count_tokens(dumps(whole([items[i] for i in f.kept])))

    over = settle(fitted, exact) > max_tokens
    return [items[i] for i in fitted.kept], over


def _described(spec: search_filters.SearchFilterSpec) -> str:
    """A filter's help for the tool's schema, with its valid values when they are a closed set."""
    choices = list(spec.choices()) if spec.choices else []
    if all(c in spec.help for c in choices):  # none, or the help names them already
        return spec.help
    return f"{spec.help} One of: {', '.join(choices)}."


class JackedService:
    """The MCP tools over `Jacked`: arguments in, bounded JSON text out (tests call them directly)."""

    def __init__(self, settings: Settings, scan: bool = True, jacked: Jacked | None = None) -> None:
        """`jacked`: the service to answer with (the daemon's); a new one when None."""
        self.settings = settings
        self.jacked = jacked if jacked is not None else Jacked(settings, scan=scan, rescan_seconds=RESCAN_SECONDS)

    @property
    def catalog(self) -> Catalog:
        return self.jacked.catalog

    def search(self, query: str, scope: str = "all", repo: str | None = None, since: str | None = None,
               limit: int = 5, **filters: str | None) -> str:
        """`filters`: any other entry of the search-filter table (jacked.query.filters), by name."""
        given = {"repo": repo, "since": since, **filters}
        opts = SearchOptions(scope=scope, limit=max(1, min(limit, 20)),
                             filters={k: v for k, v in given.items() if v is not None})
        opts.validate()  # a bad argument says so even before there is an index
        return bounded(self.jacked.search(query, opts))

    def retrieve(self, session_ids: list[str], mode: str = "smart", max_tokens: int = 8000) -> str:
        from jacked.query.retrieve import MIN_BUDGET

        if max_tokens < MIN_BUDGET:
            raise ValueError(f"max_tokens must be at least {MIN_BUDGET} (given {max_tokens})")
        # The context is never clipped (`used` counts exactly what is returned): its token budget
        # keeps it under the tool-output bound, with room for the other fields.
        budget = max(MIN_BUDGET, min(max_tokens, MAX_RESULT_TOKENS - RETRIEVE_HEADROOM))
        while True:
            text = retrieve_answer(self.jacked.retrieve(session_ids, mode=mode, budget=budget))
            over = count_tokens(text) - MAX_RESULT_TOKENS
            if over <= 0 or budget <= MIN_BUDGET:
                return text
            # JSON escapes made the context cost more than its count: fit it into a smaller budget.
            budget = max(MIN_BUDGET, budget - over - 100)

    def list_sessions(self, repo: str | None = None, offset: int = 0, limit: int = 20) -> str:
        # Read from the catalog a page at a time: a long history is never loaded whole.
        offset, limit = page_bounds(offset, limit)
        return page(self.jacked.sessions(repo, limit, offset), offset, limit, total=self.jacked.session_count(repo))

    def get_session(self, session_id: str) -> str:
        from jacked.query.history import session_rows, session_summary

        sid, turn_sums, sess = self.jacked.summaries(session_id)
        cat = self.catalog
        row = cat.get_session_row(sid) or {}
        # the session's row as `jacked sessions --json` gives it (what it cost included)
        out = session_rows(cat, [session_summary(row)], self.jacked.prices())[0]
        out.update({"plan": row.get("plan"), "summary": sess["text"] if sess else None,
                    "subagents": [{"agent_id": a["agent_id"], "agent_type": a["agent_type"],
                                   "description": a["description"], "turn_index": a["turn_index"]}
                                  for a in cat.subagent_rows(sid) if not a["is_warmup"]],
                    "turns": [{"index": t["turn_index"], "summary": (turn_sums.get(t["turn_index"]) or {}).get("text")}
                              for t in cat.turn_rows(sid)][:50]})
        return bounded(out)

    def list_turns(self, session_id: str, offset: int = 0, limit: int = 20) -> str:
        sid, sums, _ = self.jacked.summaries(session_id)
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
        sid, sums, _ = self.jacked.summaries(session_id)
        data = self.jacked.turns(sid)
        turn = next((t for t in data["turns"] if t["index"] == turn_index), None)
        if turn is None:
            raise ValueError(f"session {sid[:8]} has no turn {turn_index} (it has {len(data['turns'])} turns)")
        shown = {k: v for k, v in turn.items() if k != "invocations"}
        shown["summary"] = (sums.get(turn_index) or {}).get("text")
        return page(turn["invocations"], offset, limit, extra={"session_id": sid, "turn": clip(shown)})

    def timeline(self, session_id: str | None = None, types: list[str] | None = None, repo: str | None = None,
                 file: str | None = None, offset: int = 0, limit: int = 50) -> str:
        from jacked.query.timeline import TimelineQuery

        events = self.jacked.timeline(TimelineQuery(types=types or None, repo=repo, file=file),
                                      session=session_id or None)
        if session_id:
            return page(list(events), offset, limit)
        # across sessions, counting every event would read every session: read the page and one more
        offset, limit = page_bounds(offset, limit)
        window = list(islice(events, offset, offset + limit + 1))
        return page(window, offset, limit, more=len(window) > limit)

    def file_history(self, path: str, repo: str | None = None, offset: int = 0, limit: int = 20) -> str:
        return page(self.jacked.file_history(path, repo), offset, limit, extra={"path": path})

    def stats(self, repo: str | None = None, since: str | None = None, session_id: str | None = None,
              tool: str | None = None, top: int = 10) -> str:
        from jacked.query.stats import StatsQuery

        return bounded(self.jacked.stats(StatsQuery(repo=repo, since=since, tool=tool, top=max(1, min(top, 50))),
                                         session=session_id or None))

    def restore(self, session_id: str, max_tokens: int = 4000) -> str:
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1 (given {max_tokens})")
        brief = schema.to_json(self.jacked.restore(session_id, min(max_tokens, MAX_RESULT_TOKENS - 1000)))
        return dumps({**brief, "sections": _without_texts(brief["sections"])})


def build_server(settings: Settings, scan: bool = True,
                 jacked_factory: Callable[[], Jacked] | None = None,
                 executor: Callable[[Callable[[], Any]], concurrent.futures.Future[Any]] | None = None) -> Any:
    """The MCP server with jacked's tools registered. In the daemon,
    `jacked_factory` gives its one service and `executor` runs each tool on the service's thread
    (the catalog connection belongs to that thread, and the event loop must not block)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.mcpserver.tools import Tool
    from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata

    from jacked import __version__

    class RawArguments(FuncMetadata):
        """Hands the call's arguments to the tool as they came: the tool checks them itself, so that
        an unknown or missing one is one line in its terms (the SDK ignores unknown arguments and
        reports the others as a many-line validation dump)."""

        def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
            return self.pre_parse_json(arguments_to_validate)

    svc: JackedService | None = None

    def service() -> JackedService:
        nonlocal svc
        if svc is None:
            svc = JackedService(settings, scan=scan,
                                jacked=jacked_factory() if jacked_factory is not None else None)
        return svc

    if executor is None:
        service()
    tools: list[Tool] = []

    def tool(fn: Callable[..., Any], description: str) -> None:
        """Register `fn`; a problem the caller can fix reaches the model as a one-line tool error."""
        model: type[BaseModel] = Tool.from_function(fn, structured_output=False).fn_metadata.arg_model

        @functools.wraps(fn)
        async def wrapper(**given: Any) -> str:
            try:
                arguments = tool_arguments(fn.__name__, model, given)
                if executor is None:
                    return await fn(**arguments)
                return await asyncio.wrap_future(executor(lambda: asyncio.run(fn(**arguments))))
            except USER_ERRORS as e:  # StoreBusy, ModelMismatch, TokenizerUnavailable, SessionNotFound, …
                raise ToolError(in_tool_terms(first_line(e))) from e

        t = Tool.from_function(wrapper, name=fn.__name__, description=description, structured_output=False)
        t.fn_metadata = RawArguments(arg_model=model)
        t.parameters["additionalProperties"] = False
        tools.append(t)

    # Tools are async so they run on the server's one thread: the catalog's SQLite
    # connection belongs to the thread that opened it.
    async def search(query: str, scope: str = "all", limit: int = 5, **filters: str | None) -> str:
        return service().search(query, scope, limit=limit, **filters)

    # One argument per entry of the search-filter table: the tool's schema is read from this signature.
    search.__signature__ = inspect.Signature(  # type: ignore[attr-defined]  # read by the MCP SDK for the tool's schema
        [inspect.Parameter("query", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=str),
         inspect.Parameter("scope", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=str, default="all"),
         inspect.Parameter("limit", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=int, default=5)]
        + [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=None,
                             annotation=Annotated[list[str] | None if f.many else str | None,
                                                  Field(description=_described(f))])
           for f in search_filters.FILTERS], return_annotation=str)

    async def retrieve(session_ids: list[str], mode: str = "smart", max_tokens: int = 8000) -> str:
        return service().retrieve(session_ids, mode, max_tokens)

    async def list_sessions(repo: str | None = None, offset: int = 0, limit: int = 20) -> str:
        return service().list_sessions(repo, offset, limit)

    async def get_session(session_id: str) -> str:
        return service().get_session(session_id)

    async def list_turns(session_id: str, offset: int = 0, limit: int = 20) -> str:
        return service().list_turns(session_id, offset, limit)

    async def get_turn(session_id: str, turn_index: int, offset: int = 0, limit: int = 50) -> str:
        return service().get_turn(session_id, turn_index, offset, limit)

    async def timeline(session_id: str | None = None, types: list[str] | None = None, repo: str | None = None,
                       file: str | None = None, offset: int = 0, limit: int = 50) -> str:
        return service().timeline(session_id, types, repo, file, offset, limit)

    async def file_history(path: str, repo: str | None = None, offset: int = 0, limit: int = 20) -> str:
        return service().file_history(path, repo, offset, limit)

    async def stats(repo: str | None = None, since: str | None = None, session_id: str | None = None,
                    tool: str | None = None, top: int = 10) -> str:
        return service().stats(repo, since, session_id, tool, top)

    async def restore(session_id: str, max_tokens: int = 4000) -> str:
        return service().restore(session_id, max_tokens)

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
    tool(timeline, "Typed events (intent, action, file, error, llm, compaction, subagent, decision, feedback, "
                   "snapshot) of a session, or across sessions of a repo; filter by types and file. decision: "
                   "questions the user answered, plans approved or rejected; feedback: calls the user refused, "
                   "interruptions, corrections; snapshot: the state a turn started from. Paged (across "
                   "sessions, total is null: follow next_offset).")
    tool(file_history, "Every recorded change to a file across sessions, oldest first, with diffs. Paged.")
    tool(stats, "Tool usage and error rates, files most read/edited, bash commands, tokens and cost in USD "
                "(subagents and compactions included; by role and model), tool sequences, "
                "parallel batches, how often the user refused or interrupted each tool and in each repo "
                "(feedback); give tool for its position and neighbours.")
    tool(restore, "A brief for continuing an interrupted session: goal, state after each turn, where it stopped.")
    return MCPServer(
        "jacked", version=__version__, tools=tools,
        instructions=("Long-term memory of past Claude Code sessions: search them, read their turns, "
                      "timelines, file histories and tool statistics, retrieve context, restore a brief. "
                      "Lists are paged: pass next_offset back as offset."),
    )


def serve(settings: Settings) -> None:
    """Run the server on stdin/stdout until the client closes it."""
    build_server(settings).run("stdio")
