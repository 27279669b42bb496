"""The JSON shape of each service answer, as `TypedDict`s: what `jacked schema NAME` publishes and
the tests validate every surface's output against (docs/schema.md).

Imported for the schema and by type checkers only, never by a command on its way to an answer:
pydantic reads `TypedDict`s of `typing_extensions` on Python 3.11, and that module alone costs a
client more than its whole request.
"""
from __future__ import annotations

from typing import Any, Literal

from typing_extensions import TypedDict
from typing import NotRequired

Confidence = Literal["high", "medium", "low", "none"]


class Tokens(TypedDict):
    input: int
    output: int
    cache_creation: int
    cache_read: int


class RoleUsage(TypedDict):
    api_calls: int
    tokens: Tokens
    cost_usd: float | None


# ------------------------------------------------------------------------------------ search
class SearchMatch(TypedDict):
    content_type: str | None
    text: str
    score: float
    turn_index: int | None


class SearchResult(TypedDict):
    session_id: str
    score: float
    relevance: float
    exact: bool
    repo_name: str | None
    user_name: str | None
    agent: str
    timestamp: str | None
    started_at: str | None
    age: str | None
    title: str | None
    matches: list[SearchMatch]
    first_prompt: NotRequired[str | None]
    source: NotRequired[str | None]
    confidence: NotRequired[Confidence]


class TimeFilter(TypedDict):
    phrase: str
    since: str
    until: str
    applied: bool
    overridden_by: NotRequired[list[str]]


class SearchAnswer(TypedDict):
    """`jacked search --json`, the MCP `search` tool, `GET /api/search`."""

    query: str
    confidence: Confidence
    results: list[SearchResult]
    time_filter: NotRequired[TimeFilter]


# ---------------------------------------------------------------------------------- sessions
class SessionRow(TypedDict):
    """One row of `jacked sessions --json` (the MCP `list_sessions` items, the web list's rows)."""

    session_id: str
    agent: str
    repo_name: str | None
    cwd: str | None
    started_at: str | None
    ended_at: str | None
    turn_count: int | None
    title: str | None
    first_prompt: str | None
    git_branch: str | None
    slug: str | None
    version: str | None
    tool_call_count: int | None
    tool_error_count: int | None
    subagent_count: int | None
    decision_count: int
    feedback_count: int
    lines_skipped: int | None
    file: str | None
    source: Literal["transcript", "archive", "history"]
    tokens: Tokens
    cost_usd: float | None
    api_calls: int
    usage_by_role: dict[str, RoleUsage]
    models: list[str]
    unpriced_models: NotRequired[list[str]]
    age: NotRequired[str | None]  # the web view's list only: "3 days ago"
    # the web view's list searched (`GET /api/sessions?q=`): the search's grades of the row
    score: NotRequired[float]
    matches: NotRequired[list[SearchMatch]]
    confidence: NotRequired[Confidence | None]


# ----------------------------------------------------------------------- restore and retrieve
class BriefSection(TypedDict):
    key: str
    tokens: int
    text: NotRequired[str]  # left out by the MCP tool: `text` holds them all, joined


class BriefAnswer(TypedDict):
    """`jacked restore --json`, the MCP `restore` tool."""

    session_id: str
    budget: int
    used: int
    remaining: int
    sections: list[BriefSection]
    omitted: list[dict[str, Any]]
    text: str


class RetrieveSection(TypedDict):
    content_type: str
    tokens: int
    turn_index: int | None
    text: NotRequired[str]  # left out by the MCP tool (`text` holds the context) and by --dry-run
    preview: NotRequired[str]  # --dry-run: the text's first 80 characters


class RetrieveSession(TypedDict):
    session_id: str
    tokens: int
    agent: str
    repo_name: str | None
    cwd: str | None
    title: str | None
    started_at: str | None
    ended_at: str | None
    age: str | None
    staleness: dict[str, Any]
    resume: str | None
    transcript_on_disk: bool
    cost_usd: float | None
    api_tokens: Tokens | None
    sections: list[RetrieveSection]


class RetrieveOmitted(TypedDict):
    session_id: str
    content_type: str
    tokens: int
    turn_index: int | None
    reason: NotRequired[str]  # the web view's: why it was left out


class RetrieveAnswer(TypedDict):
    """`jacked retrieve --json`, the MCP `retrieve` tool, `POST /api/retrieve`."""

    mode: str
    budget: int
    used: int
    remaining: int
    capacity: int
    safety_margin: float
    dry_run: bool
    sessions: list[RetrieveSession]
    dropped_sessions: list[str]
    omitted: list[RetrieveOmitted]
    text: NotRequired[str]  # the context itself (MCP, web; the CLI prints it without --json)
    omitted_total: NotRequired[int]  # MCP: `omitted` is shortened to fit, this counts them all
    warnings: NotRequired[list[str]]  # web
    dropped: NotRequired[list[dict[str, str]]]  # web: {session_id, reason}


# ------------------------------------------------------------------------ scan, index, forget
class HistoryReport(TypedDict, total=False):
    """What the prompt history gave; empty when only named sessions were scanned."""

    bytes_read: int
    lines_read: int
    lines_malformed: int
    lines_without_session: int
    prompts: int
    sessions_built: int
    sessions: int
    resumed_at: int


class ScanAnswer(TypedDict):
    """`jacked scan --json`, `POST /api/scan`."""

    sessions: int
    sessions_scanned: int
    sessions_unchanged: int
    turns: int
    lines_read: int
    lines_skipped: int
    lines_malformed: int
    lines_unknown: int
    lines_duplicate: int
    tool_results_missing: int
    sessions_forgotten: int
    sessions_excluded: int
    files_without_session: int
    files_opened: int
    files_resumed: int
    bytes_read: int
    errors: list[str]
    seconds: float
    history: HistoryReport
    agents: dict[str, dict[str, Any]]


class IndexAnswer(TypedDict):
    """`jacked backfill --json`, `jacked index --json`."""

    sessions_indexed: int
    sessions_unchanged: int
    sessions_forgotten: int
    files_without_session: int
    points_written: int
    points_unchanged: int
    points_deleted: int
    texts_embedded: int
    points_dense_filled: int
    optimize_seconds: float
    lines_skipped: int
    errors: list[str]
    seconds: float
    sessions_scanned: int
    tool_results_missing: int
    glance_sessions: int
    glance_points: int
    glance_seconds: float


class ForgetAnswer(TypedDict):
    """`jacked forget --json`."""

    forgotten: list[str]
    already_forgotten: list[str]
    catalog_sessions: int
    points_deleted: int
    archive_files_deleted: int
    archive_bytes_deleted: int
    log_entries_deleted: int
    repeated_by: dict[str, list[str]]
    compaction: dict[str, Any]
    errors: list[str]
    seconds: float


# ------------------------------------------------------------------------------------ status
class SourceStatus(TypedDict):
    name: str
    label: str
    root: str | None
    found: bool
    enabled: bool
    sessions: int


class StatusAnswer(TypedDict):
    """`jacked status --json`."""

    backend: str
    embedding_model: str
    points: int
    points_by_type: dict[str, int]
    points_by_user: dict[str, int]
    home: str
    sessions: int
    sessions_by_source: dict[str, int]
    history_file: dict[str, Any] | None
    sources: list[SourceStatus]
    turns: int
    sessions_indexed: int
    sessions_lexical: int
    points_pending_dense: int
    backfill: NotRequired[dict[str, Any]]


#: The answers by the name `jacked schema NAME` takes: their JSON shape.
ANSWERS: dict[str, Any] = {
    "search": SearchAnswer,
    "sessions": list[SessionRow],
    "restore": BriefAnswer,
    "retrieve": RetrieveAnswer,
    "scan": ScanAnswer,
    "index": IndexAnswer,
    "forget": ForgetAnswer,
    "status": StatusAnswer,
}
