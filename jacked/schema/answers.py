"""The JSON shape of each service answer, as `TypedDict`s: what `jacked schema NAME` publishes and
the tests validate every surface's output against (docs/schema.md).

Imported for the schema and by type checkers only, never by a command on its way to an answer:
pydantic reads `TypedDict`s of `typing_extensions` on Python 3.11, and that module alone costs a
client more than its whole request.
"""
from __future__ import annotations

from typing import Annotated, Any, Generic, Literal, NotRequired, TypeVar

from pydantic import ConfigDict, Field, with_config
from typing_extensions import TypedDict

Confidence = Literal["high", "medium", "low", "none"]
Item = TypeVar("Item")
#: An object whose keys vary by kind (a decision's, a compaction's): the keys named are always
#: there, others may be (its schema leaves it open).
OPEN = ConfigDict(extra="allow")


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
    short_id: str  # the id as a list shows it: 8 characters, more when another session's id starts so
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
    words_confidence: NotRequired[Confidence]  # the grade with the verbatim match left out


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
    # in lists (sessions, the web's, MCP's): the id as the list shows it, 8 characters or more when
    # another session's id starts with those
    short_id: NotRequired[str]
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
    version_last: NotRequired[str | None]  # the web view's session page only
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
    roots: NotRequired[list[str]]  # a source read from several folders (Copilot: CLI and VS Code): every one
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


# ------------------------------------------------------------------------------- MCP paging
class Page(TypedDict, Generic[Item]):
    """A list as an MCP tool pages it: `total` is null where counting would read everything (the
    timeline across sessions); `next_offset` is null on the last page."""

    items: list[Item]
    total: int | None
    offset: int
    next_offset: int | None


class SessionsPage(Page[SessionRow]):
    """The MCP `list_sessions` tool."""


# ------------------------------------------------------------------------------ usage, stats
class UsageTally(TypedDict):
    """Tokens and cost of some API responses (`jacked.query.usage.Tally`)."""

    api_calls: int
    tokens: Tokens
    cache_creation_1h: int
    total_tokens: int
    cost_usd: float | None
    cost_usd_known: float
    unpriced_models: list[str]
    models: list[str]
    agent_cost_usd: NotRequired[float]  # what the agent itself recorded (opencode)
    by_role: NotRequired[dict[str, RoleUsage]]


class UsageRow(UsageTally):
    """One row of `usage --json`: its key under the grouping's name (`day`, `session`, …)."""

    day: NotRequired[str | None]
    week: NotRequired[str | None]
    month: NotRequired[str | None]
    session: NotRequired[str | None]
    model: NotRequired[str | None]
    agent: NotRequired[str | None]
    role: NotRequired[str | None]
    repo: NotRequired[str | None]
    # by session: what names it
    repo_name: NotRequired[str | None]
    title: NotRequired[str | None]
    started_at: NotRequired[str | None]


class UsageFilters(TypedDict):
    since: str | None
    until: str | None
    since_iso: str | None
    until_iso: str | None
    repo: str | None
    session: str | None
    agent: str | None


class PriceSource(TypedDict):
    as_of: str
    sources: list[str]
    overridden: list[str]
    unit: str


class UsageAnswer(TypedDict):
    """`jacked usage --json`."""

    by: str
    filters: UsageFilters
    prices: PriceSource
    rows: list[UsageRow]
    total: UsageTally


class StatsFilters(TypedDict):
    repo: str | None
    since: str | None
    since_iso: str | None
    session: str | None
    tool: str | None
    include_subagents: bool


class AgentTotals(TypedDict):
    sessions: int
    turns: int
    tool_calls: int
    tool_errors: int
    input_tokens: int
    output_tokens: int


class ModelUsage(Tokens):
    calls: int
    cost_usd: float | None


class StatsTokens(Tokens):
    api_calls: int
    cost_usd: float | None
    cost_usd_known: float
    unpriced_models: list[str]
    by_role: dict[str, RoleUsage]
    by_model: dict[str, ModelUsage]


class StatsTime(TypedDict):
    first: str | None
    last: str | None
    turn_ms_total: int | None
    turns_timed: int | None
    turn_ms_median: int | None


class PathCount(TypedDict):
    path: str
    count: int


class FileChurn(PathCount):
    lines_added: int
    lines_removed: int


class CommandCount(TypedDict):
    command: str
    count: int
    failed: int


class ToolSequence(TypedDict):
    tools: list[str]
    n: int
    count: int


class ToolSet(TypedDict):
    tools: list[str]
    count: int


class ParallelStats(TypedDict):
    batches: int
    sizes: dict[str, int]
    tool_sets: list[ToolSet]
    share_by_tool: dict[str, float]


class ToolFeedback(TypedDict):
    tool: str
    calls: int
    rejected: int
    interrupted: int
    stopped: int
    rejection_rate: float | None
    interruption_rate: float | None


class RepoFeedback(TypedDict):
    repo: str | None
    turns: int
    tool_calls: int
    rejected: int
    interrupted: int
    corrections: int
    rejection_rate: float | None
    interruption_rate: float | None


class FeedbackStats(TypedDict):
    rejections: int
    interruptions: int
    corrections: int
    by_tool: list[ToolFeedback]
    by_repo: list[RepoFeedback]


class CommandTally(TypedDict):
    command: str
    count: int


class ToolDetail(TypedDict):
    """`stats --tool NAME`: where the tool sits in its turns and what comes before and after."""

    tool: str
    calls: int
    errors: int
    error_rate: float
    turns_using: int
    position: dict[str, int]
    ordinal: dict[str, int]
    mean_relative_position: float | None
    preceded_by: dict[str, int]
    followed_by: dict[str, int]
    top_files: list[PathCount]
    top_commands: list[CommandTally]


class DayActivity(AgentTotals):
    day: str


class StatsAnswer(TypedDict):
    """`jacked stats --json`, the MCP `stats` tool, `GET /api/stats` (which adds the time series)."""

    filters: StatsFilters
    sessions: int
    turns: int
    by_agent: dict[str, AgentTotals]
    tokens: StatsTokens
    time: StatsTime
    tool_calls: int
    tool_error_count: int
    tool_usage: dict[str, int]
    tool_errors: dict[str, int]
    error_rates: dict[str, float]
    files_read: list[PathCount]
    files_edited: list[FileChurn]
    bash_commands: list[CommandCount]
    bash_failing: list[CommandCount]
    sequences: list[ToolSequence]
    parallel: ParallelStats
    feedback: FeedbackStats
    tool_detail: NotRequired[ToolDetail]
    over_time: NotRequired[list[DayActivity]]  # web: per day, for the charts
    cost_over_time: NotRequired[list[UsageRow]]  # web: `usage --by day` rows


# ------------------------------------------------------------------------------------- turns
class Invocation(TypedDict):
    tool_name: str
    tool_use_id: str | None
    sequence: int | None
    parallel_group: int | None
    is_error: bool
    timestamp: str | None
    file_path: str | None
    command: str | None
    agent_id: str | None
    input: str | None
    result: str | None
    duration_ms: NotRequired[int | None]  # the web's session page: call → result


class TurnMetrics(TypedDict, total=False):
    """Empty for a turn read from the prompt history alone (its transcript was deleted)."""

    tool_call_count: int
    tool_error_count: int
    tool_usage: dict[str, int]
    files_read: list[str]
    files_written: list[str]
    files_modified: list[str]
    lines_added: int
    lines_removed: int
    bash_commands: list[str]
    bash_error_count: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_creation_tokens: int
    api_calls: int


class TurnUsage(TypedDict):
    api_calls: int
    tokens: Tokens
    cost_usd: float | None
    by_role: dict[str, RoleUsage]


@with_config(OPEN)  # the keys vary by kind
class TurnMark(TypedDict):
    """A decision or the user's feedback in a turn; its other keys depend on its `kind`."""

    timestamp: str | None
    text: str


@with_config(OPEN)  # the keys vary by agent
class Snapshot(TypedDict):
    """The state a turn started from (more keys where the agent records them: the IDE's context)."""

    timestamp: str | None


class TurnFields(TypedDict):
    index: int
    prompt: str | None
    started_at: str | None
    ended_at: str | None
    duration_ms: int | None
    duration_source: str | None
    is_slash_command: bool
    started_by: str | None
    compacted: bool
    interrupted: bool
    models: list[str]
    assistant_text: str | None
    metrics: TurnMetrics
    usage: TurnUsage
    decisions: list[TurnMark]
    feedback: list[TurnMark]
    snapshot: Snapshot | None
    context: list[Any]


class Turn(TurnFields):
    invocations: list[Invocation]


class SubagentCall(TypedDict):
    tool_name: str
    sequence: int | None
    is_error: bool
    target: str | None
    turn_index: int | None


class Subagent(TypedDict):
    agent_id: str | None
    agent_type: str | None
    description: str | None
    layout: str | None
    tool_use_id: str | None
    turn_index: int | None
    summary_text: str | None
    tool_call_count: int | None
    tool_error_count: int | None
    is_warmup: bool
    file: str | None
    role: str
    team_name: str | None
    member_name: str | None
    workflow_run: str | None
    invocations: NotRequired[list[SubagentCall]]  # the web's session page: the subagent's own calls


class SessionText(TypedDict):
    kind: str
    text: str
    timestamp: str | None
    turn_index: int | None


class TurnsAnswer(TypedDict):
    """`jacked turns SESSION --json`, `GET /api/sessions/{id}/turns`."""

    session_id: str
    turns: list[Turn]
    subagents: list[Subagent]
    texts: list[SessionText]
    plan: str | None
    plan_source: str | None
    usage: UsageTally
    usage_outside_turns: NotRequired[TurnUsage]  # responses of no turn (a subagent no call names)


class ExportRow(SessionRow, TurnsAnswer):
    """One line of `jacked export`: the `sessions --json` row and its `turns --json`."""


class FileDiff(TypedDict):
    """A change to a file: an Edit, MultiEdit or Write call's (`operation`: edit, write or create)."""

    path: str | None
    tool_name: str
    operation: str
    lines_added: int | None
    lines_removed: int | None
    diff: str | None


class FileChangeBrief(FileDiff):
    turn_index: int | None
    timestamp: str | None
    tool_use_id: str | None


class ErrorBrief(TypedDict):
    turn_index: int | None
    tool_use_id: str | None
    tool_name: str
    message: str | None
    resolved: bool


class SessionView(TurnsAnswer):
    """`GET /api/sessions/{id}`: `turns --json` and what the web's session page places among the turns."""

    session: SessionRow
    plan_turn: int | None
    files: list[FileChangeBrief]
    errors: list[ErrorBrief]
    compactions: list[dict[str, Any]]


class SubagentBrief(TypedDict):
    agent_id: str | None
    agent_type: str | None
    description: str | None
    turn_index: int | None


class TurnSummary(TypedDict):
    index: int
    summary: str | None


class SessionDetail(SessionRow):
    """The MCP `get_session` tool: the session's row, its plan, summary, subagents and turn summaries."""

    plan: str | None
    summary: str | None
    subagents: list[SubagentBrief]
    turns: list[TurnSummary]


class TurnRow(TypedDict):
    index: int
    started_at: str | None
    duration_ms: int | None
    prompt: str | None
    summary: str | None
    tool_call_count: int
    tool_error_count: int
    tool_usage: dict[str, int]
    files_modified: list[str]
    files_written: list[str]
    interrupted: bool


class TurnsPage(Page[TurnRow]):
    """The MCP `list_turns` tool: a turn per row, in brief (`jacked turns` has them whole)."""

    session_id: str


class SummarizedTurn(TurnFields):
    summary: str | None


class TurnPage(Page[Invocation]):
    """The MCP `get_turn` tool: the turn as `turns --json` gives it (and its summary), its calls paged."""

    session_id: str
    turn: SummarizedTurn


# -------------------------------------------------------------------- timeline, file history
class Backup(TypedDict):
    """The Claude Code `file-history/` backup holding a file's content before a change."""

    version: int | None
    backup_file: str | None
    backup_time: str | None
    available: bool
    content_path: NotRequired[str]
    content_hash: NotRequired[str]
    note: NotRequired[str]


class EventBase(TypedDict):
    session_id: str
    turn_index: int | None
    timestamp: str | None


class IntentEvent(EventBase):
    type: Literal["intent"]
    prompt: str | None
    is_slash_command: bool
    interrupted: bool


class ActionEvent(EventBase):
    type: Literal["action"]
    tool_name: str
    tool_use_id: str | None
    sequence: int | None
    parallel_group: int | None
    is_error: bool
    file_path: str | None
    command: str | None
    input: str | None
    result: str | None
    duration_ms: int | None


class FileEvent(EventBase, FileDiff):
    type: Literal["file"]
    tool_use_id: str | None
    before_hash: str | None
    after_hash: str | None
    backup: Backup | None


class ErrorEvent(EventBase):
    type: Literal["error"]
    tool_name: str
    tool_use_id: str | None
    command: str | None
    file_path: str | None
    message: str | None
    resolved: bool
    resolved_by: dict[str, Any] | None


class LlmEvent(EventBase):
    type: Literal["llm"]
    model: str | None
    message_id: str | None
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_creation_tokens: int
    tool_calls: int


@with_config(OPEN)  # a boundary's keys are the agent's
class CompactionEvent(EventBase):
    """A compaction boundary (with what the agent recorded of it) or its summary."""

    type: Literal["compaction"]
    kind: Literal["boundary", "summary"]


class SubagentEvent(EventBase):
    type: Literal["subagent"]
    agent_id: str | None
    agent_type: str | None
    description: str | None
    layout: str | None
    tool_use_id: str | None
    ended_at: str | None
    tool_call_count: int | None
    tool_error_count: int | None
    summary: str | None


@with_config(OPEN)  # the keys vary by kind
class DecisionEvent(EventBase):
    type: Literal["decision"]
    text: str


@with_config(OPEN)  # the keys vary by kind
class FeedbackEvent(EventBase):
    type: Literal["feedback"]
    text: str


@with_config(OPEN)  # the keys vary by agent
class SnapshotEvent(EventBase):
    type: Literal["snapshot"]


TimelineEvent = Annotated[IntentEvent | ActionEvent | FileEvent | ErrorEvent | LlmEvent | CompactionEvent
                          | SubagentEvent | DecisionEvent | FeedbackEvent | SnapshotEvent, Field(discriminator="type")]


class TimelinePage(Page[TimelineEvent]):
    """The MCP `timeline` tool."""


class FileChange(FileDiff):
    session_id: str
    turn_index: int | None
    timestamp: str | None
    repo_name: str | None
    before_hash: str | None
    after_hash: str | None
    backup: Backup | None


class FileHistoryPage(Page[FileChange]):
    """The MCP `file_history` tool."""

    path: str


# ---------------------------------------------------------------------------- the web's own
class AgentCount(TypedDict):
    name: str
    label: str
    sessions: int


class HealthAnswer(TypedDict):
    """`GET /api/health`."""

    ok: bool
    agents: list[AgentCount]
    version: str
    claude_dir: str
    index: bool
    backend: str
    content_types: list[str]
    retrieve_modes: list[str]
    default_max_tokens: int
    token_safety_margin: float
    sessions: int
    turns: int
    lines_skipped: int


class RepoCount(TypedDict):
    repo_name: str | None
    sessions: int
    last_started_at: str | None


class ReposAnswer(TypedDict):
    """`GET /api/repos`."""

    repos: list[RepoCount]


class ListSearch(TypedDict):
    mode: Literal["hybrid", "substring"]
    query: str
    types: list[str]
    note: str | None
    confidence: NotRequired[Confidence]


class SearchOnlyRow(TypedDict):
    """A row of the web list searched for a session the local catalog does not hold (a teammate's,
    on a shared server): what the search knows of it."""

    session_id: str
    short_id: str
    repo_name: str | None
    title: str | None
    started_at: str | None
    ended_at: str | None
    age: str | None
    in_catalog: Literal[False]
    score: float
    matches: list[SearchMatch]
    confidence: Confidence | None


class SessionListAnswer(TypedDict):
    """`GET /api/sessions`: a page of `sessions --json` rows (`search`: how `q` was matched)."""

    total: int
    offset: int
    limit: int
    sessions: list[SessionRow | SearchOnlyRow]
    search: ListSearch | None


# ------------------------------------------------------------------- daemon, config, archive
class DaemonIndex(TypedDict):
    loaded: bool
    optimizing: dict[str, Any] | None
    backfill: dict[str, Any] | None


class DaemonStatus(TypedDict):
    """`jacked daemon status --json`."""

    pid: int
    socket: str
    build: str
    version: str
    protocol: int
    settings: str
    home: str
    uptime_s: float
    rss_mb: float | None
    queued_writes: int
    job: dict[str, Any] | None
    idle_minutes: float
    index: DaemonIndex


class ConfigValue(TypedDict):
    value: Any
    source: str
    origin: str


class ConfigAnswer(TypedDict):
    """`jacked config --show --json`: each setting's value and where it came from."""

    path: str
    settings: dict[str, ConfigValue]


class ArchivedFile(TypedDict):
    path: str
    archived_as: str
    kind: str
    session_id: str | None
    bytes: int
    stored_bytes: int
    members: int
    original_present: bool
    archived_at: str | None


class ArchiveTotals(TypedDict):
    files: int
    bytes: int
    stored_bytes: int
    originals_gone: int
    sessions_only_in_archive: int


class ArchiveAnswer(TypedDict):
    """`jacked archive --json`."""

    archive_dir: str
    totals: ArchiveTotals
    files: list[ArchivedFile]


class SummaryStatus(TypedDict):
    """`jacked summarize --status --json`."""

    sessions: int
    sessions_summarized: int
    turns: int
    turns_summarized: int
    turns_stale: int
    turns_missing: int
    by_summarizer: dict[str, int]


class SummarizeAnswer(TypedDict):
    """`jacked summarize --json`."""

    sessions: int
    turn_summaries_written: int
    turn_summaries_kept: int
    session_summaries_written: int
    llm_batches: int
    llm_failed_turns: int
    summarizer: str
    model: str | None
    errors: list[str]
    seconds: float


class Tombstone(TypedDict):
    session_id: str
    reason: str | None
    forgotten_at: float | None
    slug: str | None


class ForgottenAnswer(TypedDict):
    """`jacked forget --list --json`: the sessions forgotten so far, oldest first."""

    forgotten: list[Tombstone]


class Purged(TypedDict):
    home: str
    removed_bytes: int


class InstallAnswer(TypedDict):
    """`jacked install --json`, `jacked uninstall --json` (`actions`: uninstall's, per file)."""

    changed: list[str]
    unchanged: list[str]
    backups: list[str]
    notes: list[str]
    actions: dict[str, Literal["restored", "removed", "edited"]]
    backups_removed: list[str]
    purged: NotRequired[Purged]  # uninstall --purge


class AgentInstallAnswer(TypedDict):
    """`jacked install --agent NAME --json`, `jacked uninstall --agent NAME --json`."""

    agent: str
    changed: list[str]


class ConfigSetAnswer(TypedDict):
    """`jacked config set KEY VALUE --json`: the value as stored (converted, validated)."""

    key: str
    value: Any
    path: str


class ConfigMigrateAnswer(TypedDict):
    """`jacked config migrate --json`: each key written, with where its value came from."""

    migrated: dict[str, str]
    path: str


class ConfigResetAnswer(TypedDict):
    """`jacked config --reset --json`."""

    reset: bool
    path: str
    backup: str | None


class RecallAnswer(TypedDict):
    """`jacked recall --json`: the SessionStart brief of a repo's past sessions."""

    repo: str | None
    sessions: list[str]
    text: str
    tokens: int


class PromptRecallAnswer(TypedDict):
    """`jacked recall --prompt TEXT --json`: what the UserPromptSubmit hook adds (`text` "" when it
    stays silent, and `reason` says why either way)."""

    text: str
    sessions: list[str]
    tokens: int
    reason: str


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
    "stats": StatsAnswer,
    "usage": UsageAnswer,
    "turns": TurnsAnswer,
    "export": ExportRow,
    "timeline": list[TimelineEvent],
    "file-history": list[FileChange],
    "session": SessionDetail,
    "session-view": SessionView,
    "sessions-page": SessionsPage,
    "turns-page": TurnsPage,
    "turn-page": TurnPage,
    "timeline-page": TimelinePage,
    "file-history-page": FileHistoryPage,
    "web-sessions": SessionListAnswer,
    "health": HealthAnswer,
    "repos": ReposAnswer,
    "daemon-status": DaemonStatus,
    "config": ConfigAnswer,
    "archive": ArchiveAnswer,
    "summarize-status": SummaryStatus,
    "summarize": SummarizeAnswer,
    "forgotten": ForgottenAnswer,
    "install": InstallAnswer,
    "agent-install": AgentInstallAnswer,
    "config-set": ConfigSetAnswer,
    "config-migrate": ConfigMigrateAnswer,
    "config-reset": ConfigResetAnswer,
    "recall": RecallAnswer,
    "prompt-recall": PromptRecallAnswer,
}
