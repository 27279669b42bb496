"""What the sessions cost: tokens of every API response (main chain, subagents, teammates,
compactions) and their price, by day, week, month, session, turn, model, agent, role or repo.

Every surface that shows tokens or cost takes them from here (`jacked usage`, `sessions`,
`turns`, `stats`, the MCP `stats` tool, the web view), so the same filter gives the same totals.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from jacked.catalog import Catalog
from jacked.catalog.usage_queries import GROUP_KEYS, UsageFilter, UsageSum, session_labels, usage_sums
from jacked.errors import JackedError
from jacked.query.prices import PriceTable
from jacked.util.time import iso_utc

GROUPS = ("day", "week", "month", "session", "model", "agent", "role", "repo")
ROLES = ("main", "subagent", "teammate", "compaction")


class UsageError(JackedError):
    """A usage question that cannot be answered as asked (an unknown grouping, a bad time)."""


@dataclass(slots=True)
class Tally:
    """Tokens and cost of some responses; `cost_usd` is None when any of them has no price."""

    calls: int = 0
    input: int = 0
    output: int = 0
    cache_creation: int = 0
    cache_creation_1h: int = 0
    cache_read: int = 0
    priced_usd: float = 0.0
    unpriced_calls: int = 0
    unpriced_models: set[str] = field(default_factory=set)
    agent_cost_usd: float | None = None
    models: set[str] = field(default_factory=set)
    by_role: dict[str, Tally] = field(default_factory=dict)

    def add(self, s: UsageSum, prices: PriceTable, split: bool = True) -> None:
        self.calls += s.calls
        self.input += s.input
        self.output += s.output
        self.cache_creation += s.cache_creation
        self.cache_creation_1h += s.cache_creation_1h
        self.cache_read += s.cache_read
        if s.model:
            self.models.add(s.model)
        price = prices.price(s.model)
        tokens = s.input + s.output + s.cache_creation + s.cache_read
        if price is not None:
            self.priced_usd += price.for_response(s.long_context).cost(
                s.input, s.output, s.cache_creation, s.cache_creation_1h, s.cache_read)
        elif tokens:  # a model nobody priced, or none named: its cost is not known
            self.unpriced_calls += s.calls
            self.unpriced_models.add(s.model or "(no model)")
        if s.agent_cost_usd is not None:
            self.agent_cost_usd = (self.agent_cost_usd or 0.0) + s.agent_cost_usd
        if split:
            self.by_role.setdefault(s.role, Tally()).add(s, prices, split=False)

    def merge(self, other: Tally) -> None:
        """Add `other`'s responses (both already priced) to these."""
        for name in ("calls", "input", "output", "cache_creation", "cache_creation_1h", "cache_read", "priced_usd",
                     "unpriced_calls"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.unpriced_models |= other.unpriced_models
        self.models |= other.models
        if other.agent_cost_usd is not None:
            self.agent_cost_usd = (self.agent_cost_usd or 0.0) + other.agent_cost_usd
        for role, part in other.by_role.items():
            self.by_role.setdefault(role, Tally()).merge(part)

    @property
    def cost_usd(self) -> float | None:
        return None if self.unpriced_calls else round(self.priced_usd, 6)

    def tokens(self) -> dict[str, int]:
        return {"input": self.input, "output": self.output, "cache_creation": self.cache_creation,
                "cache_read": self.cache_read}

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "api_calls": self.calls, "tokens": self.tokens(), "cache_creation_1h": self.cache_creation_1h,
            "total_tokens": self.input + self.output + self.cache_creation + self.cache_read,
            "cost_usd": self.cost_usd,
            # what the priced responses cost when some are not priced (their models are listed)
            "cost_usd_known": round(self.priced_usd, 6),
            "unpriced_models": sorted(self.unpriced_models), "models": sorted(self.models),
        }
        if self.agent_cost_usd is not None:  # what the agent itself recorded (opencode)
            out["agent_cost_usd"] = round(self.agent_cost_usd, 6)
        if self.by_role:
            out["by_role"] = {r: {"api_calls": t.calls, "tokens": t.tokens(), "cost_usd": t.cost_usd}
                              for r, t in sorted(self.by_role.items(), key=lambda kv: _role_order(kv[0]))}
        return out


def _role_order(role: str) -> tuple[int, str]:
    return (ROLES.index(role) if role in ROLES else len(ROLES), role)


def tally_by(sums: Iterable[UsageSum], prices: PriceTable) -> dict[str, Tally]:
    out: dict[str, Tally] = {}
    for s in sums:
        out.setdefault(s.key, Tally()).add(s, prices)
    return out


def session_usage(catalog: Catalog, session_ids: Sequence[str], prices: PriceTable) -> dict[str, Tally]:
    """Each session's tokens and cost, with everything it caused (subagents, compactions)."""
    if not session_ids:
        return {}
    return tally_by(usage_sums(catalog, "session", UsageFilter(session_ids=session_ids)), prices)


def turn_usage(catalog: Catalog, session_id: str, prices: PriceTable) -> dict[int | None, Tally]:
    """A session's tokens and cost per main-chain turn, each with the subagents and compactions
    it caused (None: responses tied to no turn, e.g. a subagent no call names)."""
    out: dict[int | None, Tally] = {}
    for key, t in tally_by(usage_sums(catalog, "turn", UsageFilter(session_ids=[session_id])), prices).items():
        turn = key.rpartition(":")[2]
        out[int(turn) if turn else None] = t
    return out


@dataclass
class UsageQuery:
    """`jacked usage`: how to group, and which responses (`since`/`until`: dates or relative
    times as `--since` takes them; `until` is exclusive, a bare date meaning that whole day)."""

    by: str = "day"
    since: str | None = None
    until: str | None = None
    repo: str | None = None
    session_id: str | None = None
    agent: str | None = None
    now: datetime | None = None


def usage_filter(q: UsageQuery) -> UsageFilter:
    return UsageFilter(repo=q.repo, session_ids=[q.session_id] if q.session_id else None, agent=q.agent,
                       since=iso_utc(q.since, q.now), until=_iso_until(q.until, q.now))


def _iso_until(until: str | None, now: datetime | None) -> str | None:
    """`--until`, exclusive: a bare date includes that whole day (the report's rows are days)."""
    if not until:
        return None
    text = until.strip()
    if len(text) == 10 and text[4] == "-" and text[7] == "-":
        try:
            day = datetime.strptime(text, "%Y-%m-%d")
        except ValueError:
            raise UsageError(f"cannot read --until {until!r}: use a date like 2026-01-31 or a time as "
                             "--since takes it") from None
        return (day + timedelta(days=1)).strftime("%Y-%m-%dT00:00:00.000Z")
    return iso_utc(text, now, "--until")


def usage_report(catalog: Catalog, q: UsageQuery, prices: PriceTable) -> dict[str, Any]:
    """The `usage --json` object: one row per key of `q.by`, newest period first (by time) or
    costliest first (by anything else), and the total of the same responses."""
    if q.by not in GROUPS or q.by not in GROUP_KEYS:
        raise UsageError(f"cannot group usage by {q.by!r}: choose one of {', '.join(GROUPS)}")
    where = usage_filter(q)
    sums = usage_sums(catalog, q.by, where)
    rows = tally_by(sums, prices)
    total = Tally()
    for s in sums:
        total.add(s, prices)
    keyed = [{q.by: key or None, **t.to_json()} for key, t in rows.items()]
    if q.by in ("day", "week", "month"):
        keyed.sort(key=lambda r: r[q.by] or "")
    else:
        keyed.sort(key=lambda r: (-(r["cost_usd_known"]), -r["total_tokens"], str(r[q.by])))
    if q.by == "session" and keyed:
        names = session_labels(catalog, [r["session"] for r in keyed if r["session"]])
        for r in keyed:
            r.update(names.get(r["session"], {}))
    return {"by": q.by, "filters": {"since": q.since, "until": q.until, "since_iso": where.since,
                                    "until_iso": where.until, "repo": q.repo, "session": q.session_id,
                                    "agent": q.agent},
            "prices": prices.describe(), "rows": keyed, "total": total.to_json()}
