"""Agent-neutral turn figures: parallel groups and metrics from a turn's invocations, elapsed
times, a subagent's tool counts. Every source (Claude Code, Codex CLI, ...) finishes its
turns with these, so the same rules (DESIGN "Turn rules") hold for every agent."""
from __future__ import annotations

from jacked.sources.model import EDIT_TOOLS, READ_TOOLS, SHELL_TOOLS, WRITE_TOOLS, Subagent, Turn
from jacked.util.time import parse_ts


def elapsed_ms(start: str | None, end: str | None) -> int | None:
    a, b = parse_ts(start), parse_ts(end)
    if a is None or b is None:
        return None
    return max(0, int((b - a).total_seconds() * 1000))


def fill_subagent_counts(sub: Subagent) -> None:
    usage: dict[str, int] = {}
    calls = errors = 0
    for t in sub.turns:
        for inv in t.invocations:
            calls += 1
            errors += inv.is_error
            usage[inv.tool_name] = usage.get(inv.tool_name, 0) + 1
    sub.tool_call_count, sub.tool_error_count, sub.tool_usage = calls, errors, usage


def _uniq_append(items: list[str], value: str | None) -> None:
    if value and value not in items:
        items.append(value)


def compute_metrics(turn: Turn) -> None:
    """Parallel groups and the per-turn metrics from the invocations (DESIGN "Turn rules")."""
    per_msg: dict[str, int] = {}
    for inv in turn.invocations:
        per_msg[inv.message_id] = per_msg.get(inv.message_id, 0) + 1
    m = turn.metrics
    m.tool_call_count = len(turn.invocations)
    m.tool_error_count = 0
    m.tool_usage = {}
    m.files_read, m.files_written, m.files_modified, m.bash_commands = [], [], [], []
    m.lines_added = m.lines_removed = m.bash_error_count = 0
    m.input_tokens = m.output_tokens = m.cache_read_tokens = m.cache_creation_tokens = m.api_calls = 0
    for c in turn.llm_calls:
        if c.has_usage:
            m.api_calls += 1
            m.input_tokens += c.input_tokens
            m.output_tokens += c.output_tokens
            m.cache_read_tokens += c.cache_read_tokens
            m.cache_creation_tokens += c.cache_creation_tokens
    for inv in turn.invocations:
        inv.parallel_group = 0 if per_msg[inv.message_id] == 1 else inv.position
        m.tool_usage[inv.tool_name] = m.tool_usage.get(inv.tool_name, 0) + 1
        if inv.is_error:
            m.tool_error_count += 1
        else:
            if inv.tool_name in READ_TOOLS:
                _uniq_append(m.files_read, inv.file_path)
            elif inv.tool_name in WRITE_TOOLS:
                _uniq_append(m.files_written, inv.file_path)
            elif inv.tool_name in EDIT_TOOLS:
                _uniq_append(m.files_modified, inv.file_path)
            if inv.tool_name in WRITE_TOOLS or inv.tool_name in EDIT_TOOLS:
                m.lines_added += inv.lines_added
                m.lines_removed += inv.lines_removed
        if inv.tool_name in SHELL_TOOLS:
            if inv.command is not None:
                m.bash_commands.append(inv.command)
            if inv.is_error:
                m.bash_error_count += 1


def finish_turns(turns: list[Turn]) -> list[Turn]:
    """Metrics and elapsed times of turns built from records that carry times (not Claude Code's
    `turn_duration`): what every other source does last."""
    for turn in turns:
        compute_metrics(turn)
        turn.duration_ms = elapsed_ms(turn.started_at, turn.ended_at)
        turn.duration_source = "timestamps" if turn.duration_ms is not None else None
    return turns
