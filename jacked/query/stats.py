"""Stats: what the agent did, aggregated over the catalog — no transcript is re-read.

One filtered read of the invocations (ordered by session, turn and call order) feeds every
figure in a single pass: calls and errors per tool, files most read / edited, bash commands
most run / most failing, tool n-grams within turns ("Glob → Read → Edit"), parallel batches,
and, for one tool, where it sits in a turn and what comes before and after it. Totals of
sessions, turns, tokens and time come from small SQL aggregates. A 1,000-session catalog
answers in a few tens of milliseconds (see `scripts/bench.py stats`).

By default only the main chain counts (as in the per-turn metrics); `include_subagents`
adds the subagents' own tool calls.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from statistics import median
from typing import Any

from jacked.catalog import Catalog, stats_queries
from jacked.catalog.usage_queries import UsageFilter, usage_sums
from jacked.query.prices import PriceTable
from jacked.query.usage import Tally, tally_by
from jacked.util.time import iso_utc
from jacked.sources.model import EDIT_TOOLS, READ_TOOLS, SHELL_TOOLS, WRITE_TOOLS

NGRAM_SIZES = (2, 3, 4)
TURN_START = "<turn start>"
TURN_END = "<turn end>"


@dataclass
class StatsQuery:
    """Which part of the catalog to aggregate, and how many rows each top list shows."""

    repo: str | None = None
    since: str | None = None
    session_id: str | None = None
    tool: str | None = None
    include_subagents: bool = False
    top: int = 10
    now: datetime | None = None


def iso_since(since: str | None, now: datetime | None = None) -> str | None:
    """`--since` as an ISO string comparable with the catalog's UTC `...Z` timestamps."""
    return iso_utc(since, now)


def _top(counter: Counter[Any], n: int) -> list[tuple[Any, int]]:
    # Ties are broken by key so the output is stable from run to run.
    return sorted(counter.items(), key=lambda kv: (-kv[1], str(kv[0])))[:n]


def compute_stats(catalog: Catalog, q: StatsQuery, prices: PriceTable | None = None) -> dict[str, Any]:
    """The `stats --json` object."""
    since = iso_since(q.since, q.now)
    totals = stats_queries.turn_totals(catalog, q.repo, q.session_id, since)
    durations = stats_queries.turn_durations(catalog, q.repo, q.session_id, since)
    out: dict[str, Any] = {
        "filters": {"repo": q.repo, "since": q.since, "since_iso": since, "session": q.session_id,
                    "tool": q.tool, "include_subagents": q.include_subagents},
        "sessions": totals["sessions"], "turns": totals["turns"],
        "by_agent": stats_queries.totals_by_agent(catalog, q.repo, q.session_id, since),
        "tokens": _tokens(catalog, q, since, prices),
        "time": {"first": totals["first"], "last": totals["last"], "turn_ms_total": totals["turn_ms_total"],
                 "turns_timed": totals["turns_timed"],
                 "turn_ms_median": int(median(durations)) if durations else None},
    }
    out.update(_invocation_stats(catalog, q, since))
    out["feedback"] = _feedback_stats(catalog, q, since)
    return out


def _tokens(catalog: Catalog, q: StatsQuery, since: str | None, prices: PriceTable | None) -> dict[str, Any]:
    """Tokens and cost of the selected sessions' API responses since `since` (their own times):
    everything the sessions caused, subagents and compactions included whatever
    `include_subagents` says (that is about tool calls; the bill has them all), as `jacked usage`
    counts them, with the split by role and by model."""
    table = prices or PriceTable()
    sums = usage_sums(catalog, "model", UsageFilter(repo=q.repo, session_ids=[q.session_id] if q.session_id else None,
                                                    since=since))
    total = Tally()
    for s in sums:
        total.add(s, table)
    u = total.to_json()
    by_model = {}
    for model, t in sorted(tally_by(sums, table).items(), key=lambda kv: (-kv[1].priced_usd, kv[0])):
        m = t.to_json()
        by_model[model or "?"] = {"calls": m["api_calls"], **m["tokens"], "cost_usd": m["cost_usd"]}
    return {**u["tokens"], "api_calls": u["api_calls"], "cost_usd": u["cost_usd"],
            "cost_usd_known": u["cost_usd_known"], "unpriced_models": u["unpriced_models"],
            "by_role": u.get("by_role", {}), "by_model": by_model}


NO_TOOL = "(no tool running)"  # an interruption while the agent was writing, not running a tool
REJECTIONS = ("tool_rejected", "plan_rejected")


def _rate(n: int, of: int) -> float | None:
    return round(n / of, 4) if of else None


def _feedback_stats(catalog: Catalog, q: StatsQuery, since: str | None) -> dict[str, Any]:
    """How often the user stops the agent: calls refused and interruptions per tool (of that tool's
    main-chain calls) and per repo (refusals per call, interruptions per turn), and corrections."""
    calls = stats_queries.calls_by_repo_and_tool(catalog, q.repo, q.session_id, since)
    turns = stats_queries.turns_by_repo(catalog, q.repo, q.session_id, since)
    tool_calls: Counter[str] = Counter()
    repo_calls: Counter[Any] = Counter()
    for repo, tool, n in calls:
        tool_calls[tool] += n
        repo_calls[repo] += n
    kinds: Counter[str] = Counter()
    rejected: Counter[str] = Counter()
    interrupted: Counter[str] = Counter()
    per_repo: dict[Any, Counter[str]] = {}
    for repo, kind, stopped_tool, n in stats_queries.feedback_counts(catalog, q.repo, q.session_id, since):
        kinds[kind or "?"] += n
        c = per_repo.setdefault(repo, Counter())
        if kind in REJECTIONS:
            rejected[stopped_tool or "?"] += n
            c["rejected"] += n
        elif kind == "interrupted":
            interrupted[stopped_tool or NO_TOOL] += n
            c["interrupted"] += n
        elif kind == "correction":
            c["corrections"] += n
    by_tool: list[dict[str, Any]] = [
        {"tool": t, "calls": tool_calls[t], "rejected": rejected[t], "interrupted": interrupted[t],
         "stopped": rejected[t] + interrupted[t], "rejection_rate": _rate(rejected[t], tool_calls[t]),
         "interruption_rate": _rate(interrupted[t], tool_calls[t])}
        for t in set(rejected) | set(interrupted)]
    by_tool.sort(key=lambda r: (-r["stopped"], -(r["rejection_rate"] or 0), r["tool"]))
    by_repo = []
    for repo, n_turns in turns.items():
        c = per_repo.get(repo, Counter())
        by_repo.append({"repo": repo, "turns": n_turns, "tool_calls": repo_calls[repo], "rejected": c["rejected"],
                        "interrupted": c["interrupted"], "corrections": c["corrections"],
                        "rejection_rate": _rate(c["rejected"], repo_calls[repo]),
                        "interruption_rate": _rate(c["interrupted"], n_turns)})
    by_repo.sort(key=lambda r: (-(r["rejected"] + r["interrupted"]), -r["corrections"], str(r["repo"])))
    return {"rejections": sum(kinds[k] for k in REJECTIONS), "interruptions": kinds["interrupted"],
            "corrections": kinds["correction"], "by_tool": by_tool, "by_repo": by_repo[:q.top]}


def _invocation_stats(catalog: Catalog, q: StatsQuery, since: str | None) -> dict[str, Any]:
    rows = stats_queries.invocation_rows(catalog, q.repo, q.session_id, since, q.include_subagents)
    usage: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    read: Counter[str] = Counter()
    edited: Counter[str] = Counter()
    created: Counter[str] = Counter()
    churn: dict[str, list[int]] = {}
    bash: Counter[str] = Counter()
    bash_failed: Counter[str] = Counter()
    ngrams: Counter[tuple[str, ...]] = Counter()
    batch_sizes: Counter[int] = Counter()
    batch_sets: Counter[tuple[str, ...]] = Counter()
    in_parallel: Counter[str] = Counter()
    tool = q.tool
    detail = _ToolDetail(tool) if tool else None

    turn_tools: list[str] = []
    batch: list[str] = []
    prev_turn: tuple[Any, ...] | None = None
    prev_batch: tuple[Any, ...] | None = None

    def close_batch() -> None:
        if len(batch) > 1:
            batch_sizes[len(batch)] += 1
            batch_sets[tuple(sorted(batch))] += 1
            for name in batch:
                in_parallel[name] += 1
        batch.clear()

    def close_turn() -> None:
        n = len(turn_tools)
        for k in NGRAM_SIZES:
            for i in range(n - k + 1):
                ngrams[tuple(turn_tools[i:i + k])] += 1
        if detail is not None and n:
            detail.add_turn(turn_tools)
        turn_tools.clear()

    for sid, owner, turn, seq, name, is_err, path, command, added, removed, was_created in rows:
        key = (sid, owner, turn)
        if key != prev_turn:
            close_batch()
            close_turn()
            prev_turn = key
        bkey = (sid, owner, turn, seq)
        if bkey != prev_batch:
            close_batch()
            prev_batch = bkey
        batch.append(name)
        turn_tools.append(name)
        usage[name] += 1
        if is_err:
            errors[name] += 1
        if name in SHELL_TOOLS and command:
            cmd = " ".join(command.split())
            bash[cmd] += 1
            if is_err:
                bash_failed[cmd] += 1
        if path and not is_err:
            if name in READ_TOOLS:
                read[path] += 1
            elif name in EDIT_TOOLS or name in WRITE_TOOLS:
                (created if was_created else edited)[path] += 1
                c = churn.setdefault(path, [0, 0])
                c[0] += added or 0
                c[1] += removed or 0
        if detail is not None and name == tool:
            detail.add_call(bool(is_err), path, command)
    close_batch()
    close_turn()

    n = q.top
    changed = edited + created
    out: dict[str, Any] = {
        "tool_calls": sum(usage.values()),
        "tool_error_count": sum(errors.values()),
        "tool_usage": dict(_top(usage, len(usage))),
        "tool_errors": {k: errors[k] for k, _ in _top(usage, len(usage)) if errors[k]},
        "error_rates": {k: round(errors[k] / v, 4) for k, v in _top(usage, len(usage))},
        "files_read": [{"path": p, "count": c} for p, c in _top(read, n)],
        "files_edited": [{"path": p, "count": c, "lines_added": churn[p][0], "lines_removed": churn[p][1]}
                         for p, c in _top(changed, n)],
        "bash_commands": [{"command": c, "count": k, "failed": bash_failed[c]} for c, k in _top(bash, n)],
        "bash_failing": [{"command": c, "failed": k, "count": bash[c]} for c, k in _top(bash_failed, n)],
        "sequences": [{"tools": list(t), "n": len(t), "count": c}
                      for size in NGRAM_SIZES
                      for t, c in _top(Counter({g: v for g, v in ngrams.items() if len(g) == size}), n)],
        "parallel": {
            "batches": sum(batch_sizes.values()),
            "sizes": {str(k): v for k, v in sorted(batch_sizes.items())},
            "tool_sets": [{"tools": list(t), "count": c} for t, c in _top(batch_sets, n)],
            "share_by_tool": {k: round(in_parallel[k] / v, 4) for k, v in _top(usage, len(usage)) if in_parallel[k]},
        },
    }
    if detail is not None:
        out["tool_detail"] = detail.to_json(n)
    return out


class _ToolDetail:
    """Where one tool sits in its turns and what comes before and after it."""

    def __init__(self, tool: str) -> None:
        self.tool = tool
        self.calls = 0
        self.errors = 0
        self.positions: Counter[str] = Counter()  # first | middle | last | only
        self.ordinal: Counter[int] = Counter()  # 1-based place among the turn's calls (capped)
        self.relative: list[float] = []
        self.before: Counter[str] = Counter()
        self.after: Counter[str] = Counter()
        self.files: Counter[str] = Counter()
        self.commands: Counter[str] = Counter()
        self.turns = 0

    def add_call(self, is_error: bool, path: str | None, command: str | None) -> None:
        self.calls += 1
        self.errors += is_error
        if path:
            self.files[path] += 1
        if command:
            self.commands[" ".join(command.split())] += 1

    def add_turn(self, tools: list[str]) -> None:
        n = len(tools)
        hit = False
        for i, name in enumerate(tools):
            if name != self.tool:
                continue
            hit = True
            self.positions["only" if n == 1 else "first" if i == 0 else "last" if i == n - 1 else "middle"] += 1
            self.ordinal[min(i + 1, 10)] += 1
            self.relative.append(i / (n - 1) if n > 1 else 0.0)
            self.before[tools[i - 1] if i else TURN_START] += 1
            self.after[tools[i + 1] if i + 1 < n else TURN_END] += 1
        self.turns += hit

    def to_json(self, n: int) -> dict[str, Any]:
        return {
            "tool": self.tool, "calls": self.calls, "errors": self.errors,
            "error_rate": round(self.errors / self.calls, 4) if self.calls else 0.0,
            "turns_using": self.turns,
            "position": dict(self.positions),
            "ordinal": {("10+" if k == 10 else str(k)): v for k, v in sorted(self.ordinal.items())},
            "mean_relative_position": round(sum(self.relative) / len(self.relative), 4) if self.relative else None,
            "preceded_by": dict(_top(self.before, n)),
            "followed_by": dict(_top(self.after, n)),
            "top_files": [{"path": p, "count": c} for p, c in _top(self.files, n)],
            "top_commands": [{"command": p, "count": c} for p, c in _top(self.commands, n)],
        }
