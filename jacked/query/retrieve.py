"""Retrieve: chosen sessions' distilled context, fitted into a token budget, ready to inject.

Every unit (a plan, a subagent report, a compaction summary, a user prompt, a label) is
taken whole from the catalog — already redacted — and never cut. When everything does not
fit, whole units are left out by priority, then sessions with nothing left (a warning), and
the result says what was left out.

Fitting (`fit`) is greedy by priority tier. An item goes in when its cost (its block plus
any heading it opens: the session's header, its group's heading) fits what is left, and no
item of a higher tier that was left out is as small as it: "never keep a lower-priority
item while leaving out a smaller higher-priority one". The remaining budget only shrinks,
so an item that did not fit blocks every later one at least as large; the explicit check
also covers the cases where headings make costs differ.

Smart-mode tiers: plan > decisions (questions answered, plans approved or rejected) > subagent
summaries > compaction summaries and recaps > the first 3 user messages > labels and further
user messages. The last tier mixes two kinds, taken
smallest first: that keeps labels ahead of further messages in practice (labels are a few
words), and means neither kind is ever kept while a smaller one of the other is left out.

`used` is the exact cl100k count of the whole rendered block — headers, notices and hints
included — and is kept within the budget less the safety margin for Claude's tokenizer. The
margin rule and the fitting are jacked.query.budget's (`capacity`, `fit`, `settle`), shared
with restore, recall and MCP paging; the rules above are its `parts`, `rank` and `size`.
"""
from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from jacked.catalog import Catalog, retrieve_queries
from jacked.errors import JackedError
from jacked.index.extract import MIN_SUBAGENT_SUMMARY
from jacked.sources.registry import label_of
from jacked.query.budget import Fitted, fit, settle
from jacked.query.budget import capacity as capacity_for  # `capacity` is a local name below
from jacked.query.ids import short_ids
from jacked.query.prices import PriceTable
from jacked.query.staleness import Staleness, assess, touched_files
from jacked.query.usage import session_usage
from jacked.util.time import now_utc, relative_age
from jacked.util.text import counted
from jacked.util.tokens import count_tokens

if TYPE_CHECKING:  # the published shape (docs/schema.md); never imported at run time
    from jacked.schema.answers import RetrieveAnswer, RetrieveOmitted, RetrieveSession

__all__ = ["MODES", "RetrieveError", "Item", "RetrieveResult", "build_items", "retrieve"]

MODES = ("smart", "plan", "labels", "agents", "full")
FIRST_USER_MESSAGES = 3
MIN_BUDGET = 100
TOOL_LINE_CHARS = 160


class RetrieveError(JackedError, ValueError):
    """A retrieve request the user must fix (bad mode, budget too small)."""


# Group keys → headings, in display order.
GROUPS: dict[str, str] = {
    "plan": "## Plan",
    "decisions": "## Decisions",
    "agents": "## Subagent reports",
    "compact": "## Compaction summaries and recaps",
    "users": "## User messages",
    "labels": "## Summary labels",
}


@dataclass
class Item:
    """One whole unit that may go into the context."""

    session_id: str
    content_type: str
    text: str
    tier: int
    order: int  # natural order within the session (display and tie-breaks)
    group: str  # heading it sits under (a GROUPS key, or "turn:<n>" in full mode)
    title: str = ""  # the line above the text ("" = none)
    tokens: int = 0  # of `text` alone (the section's `tokens`)
    cost: int = 0  # of the rendered block (title + text)
    turn_index: int | None = None

    def block(self) -> str:
        return f"{self.title}\n{self.text}" if self.title else self.text


@dataclass
class SessionCtx:
    """One chosen session: its catalog row, staleness and candidate items."""

    session_id: str
    row: dict[str, Any]
    staleness: Staleness
    items: list[Item]
    position: int
    resume_hint: str | None = None
    cost: dict[str, Any] | None = None  # what the session cost (`Tally.to_json`), everything it caused


@dataclass
class RetrieveResult:
    """The fitted context; `to_json` is the `retrieve --json` shape."""

    mode: str
    budget: int
    capacity: int
    margin: float
    used: int
    text: str
    sessions: list[dict[str, Any]] = field(default_factory=list)
    dropped_sessions: list[str] = field(default_factory=list)
    omitted: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self, dry_run: bool = False) -> RetrieveAnswer:
        sessions = self.sessions
        if dry_run:  # what would go in, without the texts
            sessions = [{**s, "sections": [{k: v for k, v in sec.items() if k != "text"} | {
                "preview": " ".join(sec["text"].split())[:80]} for sec in s["sections"]]} for s in sessions]
        return {"mode": self.mode, "budget": self.budget, "used": self.used, "remaining": self.budget - self.used,
                "capacity": self.capacity, "safety_margin": self.margin, "dry_run": dry_run, "sessions": cast("list[RetrieveSession]", sessions),
                "dropped_sessions": self.dropped_sessions, "omitted": cast("list[RetrieveOmitted]", self.omitted)}


_SESSION_ID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


# --------------------------------------------------------------------------- items
def _one_line(text: str | None, limit: int = TOOL_LINE_CHARS) -> str:
    t = " ".join((text or "").split())
    return t if len(t) <= limit else t[:limit - 1] + "…"


def _subagent_title(a: dict[str, Any]) -> str:
    who = a.get("agent_type") or "subagent"
    if a.get("role") == "teammate":  # "teammate alice@test-coverage (general-purpose)"
        member = "@".join(x for x in (a.get("member_name"), a.get("team_name")) if x)
        kind = a.get("agent_type") if a.get("agent_type") not in (None, "teammate") else ""
        who = "teammate" + (f" {member}" if member else "") + (f" ({kind})" if kind else "")
    elif a.get("workflow_run"):
        who += f" [workflow {a['workflow_run']}]"
    desc = f": {_one_line(a.get('description'), 100)}" if a.get("description") else ""
    where = f" (turn {a['turn_index']})" if a.get("turn_index") is not None else ""
    return f"### {who}{desc}{where}"


def build_items(catalog: Catalog, session_id: str, mode: str) -> list[Item]:
    """The candidate units of one session for `mode`, each a whole catalog text."""
    row = catalog.get_session_row(session_id) or {}
    items: list[Item] = []
    sid = session_id

    def add(ctype: str, text: str | None, tier: int, group: str, title: str = "",
            turn_index: int | None = None) -> None:
        if text is None or not text.strip():
            return
        items.append(Item(sid, ctype, text, tier, len(items), group, title, turn_index=turn_index))

    texts = catalog.text_rows(sid)
    subs = [a for a in catalog.subagent_rows(sid)
            if not a["is_warmup"] and len(a["summary_text"] or "") >= MIN_SUBAGENT_SUMMARY]
    turns = [t for t in catalog.turn_rows(sid)]
    if mode in ("smart", "plan") and row.get("plan"):
        add("plan", row["plan"], 0, "plan")
    if mode == "smart":  # right after the plan: what was decided, each a line of its own
        for turn_index, text in retrieve_queries.decision_lines(catalog, sid):
            add("decision", f"- turn {turn_index}: {text}", 1, "decisions", "", turn_index)
    if mode in ("smart", "agents"):
        for a in subs:
            add("subagent_summary", a["summary_text"], 2, "agents", _subagent_title(a), a["turn_index"])
    if mode == "smart":
        for x in texts:
            if x["kind"] in ("compact_summary", "recap"):
                add(x["kind"], x["text"], 3, "compact", f"### {x['kind'].replace('_', ' ')}"
                    + (f" (turn {x['turn_index']})" if x["turn_index"] is not None else ""), x["turn_index"])
        n = 0
        for t in turns:
            if t["turn_index"] < 1 or t["is_slash_command"] or not (t["prompt"] or "").strip():
                continue  # slash commands say how, not what: they are not the user's intent
            n += 1
            add("user_message", t["prompt"], 4 if n <= FIRST_USER_MESSAGES else 5, "users",
                f"### turn {t['turn_index']}", t["turn_index"])
    if mode in ("smart", "labels"):
        for x in texts:
            if x["kind"] == "summary_label":
                add("summary_label", x["text"], 5 if mode == "smart" else 0, "labels", "- label:")
    if mode == "full":
        items.extend(_full_items(catalog, sid, row, texts, subs, turns))
    for it in items:
        it.tokens = count_tokens(it.text)
        it.cost = count_tokens(it.block())
    return items


def _full_items(catalog: Catalog, sid: str, row: dict[str, Any], texts: list[dict[str, Any]],
                subs: list[dict[str, Any]], turns: list[dict[str, Any]]) -> list[Item]:
    """The whole conversation, turn by turn: prompts, answers, tool calls in brief.

    Tiers decide what survives a tight budget (the plan and every prompt first, then what
    was answered, then the details); the display stays in conversation order.
    """
    out: list[Item] = []

    def add(ctype: str, text: str | None, tier: int, group: str, title: str = "",
            turn_index: int | None = None) -> None:
        if text is None or not text.strip():
            return
        out.append(Item(sid, ctype, text, tier, len(out), group, title, turn_index=turn_index))

    if row.get("plan"):
        add("plan", row["plan"], 0, "plan")
    invs: dict[int, list[dict[str, Any]]] = {}
    for r in catalog.invocation_rows(sid):
        invs.setdefault(r["turn_index"], []).append(r)
    subs_by_turn: dict[int | None, list[dict[str, Any]]] = {}
    for a in subs:
        subs_by_turn.setdefault(a["turn_index"], []).append(a)
    texts_by_turn: dict[int | None, list[dict[str, Any]]] = {}
    for x in texts:
        if x["kind"] in ("compact_summary", "recap"):
            texts_by_turn.setdefault(x["turn_index"], []).append(x)
    for t in turns:
        ti = t["turn_index"]
        g = f"turn:{ti}"
        if ti >= 1:
            add("user_message", t["prompt"], 1, g, "USER:", ti)
        lines = []
        for inv in invs.get(ti, []):
            target = inv["command"] or inv["file_path"] or inv["description"] or inv["input_brief"] or ""
            line = f"- {inv['tool_name']}{' (error)' if inv['is_error'] else ''}: {_one_line(target)}"
            if inv["is_error"] and inv["result_brief"]:
                line += f"\n    → {_one_line(inv['result_brief'])}"
            lines.append(line)
        if lines:
            add("tool_calls", "\n".join(lines), 6, g, f"TOOLS ({len(lines)} calls):", ti)
        for a in subs_by_turn.get(ti, []):
            add("subagent_summary", a["summary_text"], 5, g, _subagent_title(a).replace("### ", "SUBAGENT "), ti)
        for x in texts_by_turn.get(ti, []):
            add(x["kind"], x["text"], 2, g, f"{x['kind'].upper().replace('_', ' ')}:", ti)
        add("assistant_response", t["assistant_text"], 3, g, "ASSISTANT:", ti)
    for a in subs_by_turn.get(None, []):  # subagents no call could be tied to
        add("subagent_summary", a["summary_text"], 5, "agents", _subagent_title(a))
    for x in texts_by_turn.get(None, []):
        add(x["kind"], x["text"], 2, "compact", f"{x['kind'].upper().replace('_', ' ')}:")
    for x in texts:
        if x["kind"] == "summary_label":
            add("summary_label", x["text"], 7, "labels", "- label:")
    return out


# Tiers whose items are taken smallest first and block each other both ways (see module doc).
# (Full mode has no tier 4, so that its subagent reports share tier 5 with the same effect as ever.)
MIXED_TIERS = {5}


def _sort_key(it: Item, position: int) -> tuple[Any, ...]:
    if it.tier in MIXED_TIERS:
        # user messages before labels at equal size: at a tie the higher kind goes first
        return (it.tier, it.tokens, 0 if it.content_type == "user_message" else 1, position, it.order)
    return (it.tier, position, it.order)


# --------------------------------------------------------------------------- rendering
def _group_heading(group: str, row: dict[str, Any], mode: str) -> str:
    if group.startswith("turn:"):
        ti = int(group.split(":", 1)[1])
        return f"## Turn {ti}" if ti >= 1 else "## Before the first prompt"
    return GROUPS.get(group, f"## {group}")


def _group_rank(group: str) -> tuple[int, int]:
    if group.startswith("turn:"):
        return (1, int(group.split(":", 1)[1]))
    order = {"plan": 0, "decisions": 1, "agents": 2, "compact": 3, "users": 4, "labels": 5}
    return (order.get(group, 9) if group != "plan" else 0, 0)


def _fmt(n: int) -> str:
    return f"{n:,}"


def _session_header(s: SessionCtx, n_sessions: int, tokens: int, now: datetime) -> str:
    row = s.row
    title = _one_line(row.get("title") or row.get("first_prompt"), 100) or "(untitled)"
    ended = row.get("ended_at") or row.get("started_at")
    lines = [f"--- Session {s.position}/{n_sessions}: {s.session_id} ({_fmt(tokens)} tokens) ---",
             f"Title: {title}",
             f"Agent: {label_of(row.get('agent'))}",
             f"Repo: {row.get('repo_name') or '-'} ({row.get('cwd') or '?'}) · branch {row.get('git_branch') or '-'}"
             f" · {row.get('turn_count') or 0} turns · ended {relative_age(ended, now)}"
             f" ({(ended or '?')[:16].replace('T', ' ')})"]
    if s.cost and s.cost["api_calls"]:
        usd = s.cost["cost_usd"]
        others = [f"{role}s" for role in s.cost.get("by_role", {}) if role != "main"]
        lines.append(f"Cost: {'unknown' if usd is None else f'${usd:,.2f}'} · {s.cost['api_calls']} API calls"
                     + (f" ({', '.join(others)} included)" if others else ""))
    if row.get("source") == "history":
        lines.append("Prompt-only: Claude Code deleted the transcript before jacked saw it; only the user's "
                     "prompts (from history.jsonl) are known, not what was done.")
    if s.staleness.message:
        lines.append(s.staleness.message)
    if s.staleness.files_message:
        lines.append(s.staleness.files_message)
    elif s.staleness.git_checked and s.staleness.files_touched:
        lines.append(f"The {s.staleness.files_touched} files this session changed are unchanged in git since.")
    if s.resume_hint:
        lines.append(f"Resume it: {s.resume_hint}")
    return "\n".join(lines)


def _block_header(mode: str, budget: int, used: int, omitted: list[Item], dropped: list[str],
                  margin: float) -> str:
    lines = [f"=== CONTEXT FROM PREVIOUS SESSIONS (jacked retrieve --mode {mode}) ===",
             f"Token budget: {_fmt(budget)} | Used: {_fmt(used)} | Remaining: {_fmt(budget - used)}"
             f" (cl100k count; {round(margin * 100)}% kept as a margin for Claude's tokenizer)"]
    if omitted:
        kinds: dict[str, int] = {}
        for it in omitted:
            kinds[it.content_type] = kinds.get(it.content_type, 0) + 1
        lines.append(f"Left out to fit the budget: {counted(len(omitted), 'unit')} ({_fmt(sum(i.tokens for i in omitted))} "
                     f"tokens: " + ", ".join(f"{v} {k}" for k, v in sorted(kinds.items())) + ")")
    if dropped:
        lines.append("Sessions left out entirely (nothing fit): " + ", ".join(d[:8] for d in dropped))
    lines.append("Older context is a map of WHERE to look, not proof of WHAT is there now.")
    return "\n".join(lines)


FOOTER = "=== END OF PREVIOUS SESSION CONTEXT ==="


def _render(mode: str, budget: int, margin: float, sessions: list[SessionCtx], chosen: dict[str, list[Item]],
            omitted: list[Item], dropped: list[str], used: int, sess_tokens: dict[str, int],
            now: datetime) -> tuple[str, dict[str, str]]:
    """The context block, and each included session's own text (for its token count)."""
    parts = [_block_header(mode, budget, used, omitted, dropped, margin)]
    per_session: dict[str, str] = {}
    shown = [s for s in sessions if s.session_id not in dropped]
    for s in shown:
        items = sorted(chosen.get(s.session_id, []), key=lambda it: (_group_rank(it.group), it.order))
        sp = [_session_header(s, len(sessions), sess_tokens.get(s.session_id, 0), now)]
        if not s.items:
            sp.append(f"(nothing of mode {mode} in this session)")
        group = None
        for it in items:
            if it.group != group:
                group = it.group
                sp.append(_group_heading(group, s.row, mode))
            sp.append(it.block())
        text = "\n\n".join(sp)
        per_session[s.session_id] = text
        parts.append(text)
    parts.append(FOOTER)
    return "\n\n".join(parts) + "\n", per_session


# --------------------------------------------------------------------------- fitting
SEP = 1  # "\n\n" between parts: one token, paid per part


def _fit(sessions: list[SessionCtx], capacity: int, reserve: int,
         session_cost: Callable[[SessionCtx], int]) -> Fitted[Item]:
    """Greedy fit of every session's units by priority (budget.fit): a unit costs its block, and
    the first unit of a session or of a group also pays the session's header or group's heading."""
    pos = {s.session_id: s.position for s in sessions}
    head = {s.session_id: session_cost(s) + SEP for s in sessions if s.items}
    heading: dict[str, int] = {}

    def parts(it: Item) -> tuple[tuple[tuple[str, ...], int], ...]:
        if it.group not in heading:
            heading[it.group] = count_tokens(_group_heading(it.group, {}, "")) + SEP
        return ((("s", it.session_id), head[it.session_id]), (("g", it.session_id, it.group), heading[it.group]))

    def rank(it: Item) -> tuple[Any, ...]:
        # a mixed tier's units outrank each other in their (smallest first) order: they block both ways
        return _sort_key(it, pos[it.session_id]) if it.tier in MIXED_TIERS else (it.tier,)

    units = sorted((it for s in sessions for it in s.items), key=lambda it: _sort_key(it, pos[it.session_id]))
    return fit(units, capacity, lambda it: it.cost + SEP, parts=parts, rank=rank, size=lambda it: it.tokens,
               used=reserve)


def retrieve(catalog: Catalog, session_ids: list[str], mode: str = "smart", budget: int = 8000,
             margin: float = 0.1, now: datetime | None = None, check_git: bool = True,
             warn: Callable[[str], None] | None = None, prices: PriceTable | None = None) -> RetrieveResult:
    """Fit the chosen sessions (ids already resolved, in the user's order) into `budget` tokens."""
    if mode not in MODES:
        raise RetrieveError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
    if budget < MIN_BUDGET:
        raise RetrieveError(f"--max-tokens {budget} is too small: give at least {MIN_BUDGET}")
    now = now or now_utc()
    ids = list(dict.fromkeys(session_ids))
    costs = session_usage(catalog, ids, prices or PriceTable())
    sessions: list[SessionCtx] = []
    for i, sid in enumerate(ids, 1):
        row = catalog.get_session_row(sid) or {"session_id": sid}
        st = assess(row, touched_files(catalog, sid), now=now, check_git=check_git)
        hint = None
        f = row.get("file")
        # `claude --resume` takes a session id: only for a transcript named by one (not a copy
        # under another name, whose stem jacked used as its id)
        if f and Path(f).stem == sid and _SESSION_ID.fullmatch(sid) and Path(f).is_file():
            hint = (f"cd {shlex.quote(row['cwd'])} && " if row.get("cwd") else "") + f"claude --resume {sid}"
        cost = costs[sid].to_json() if sid in costs else None
        sessions.append(SessionCtx(sid, row, st, build_items(catalog, sid, mode), i, hint, cost))
    capacity = capacity_for(budget, margin)

    # Reserve the block header and footer at their largest: every item omitted, every session dropped,
    # the numbers as wide as the budget. The final exact count below corrects any estimate.
    everything = [it for s in sessions for it in s.items]
    reserve = count_tokens(_block_header(mode, budget, budget, everything, ids, margin)) + count_tokens(FOOTER) + 4
    if reserve > capacity:
        raise RetrieveError(f"--max-tokens {budget} cannot hold even the context header ({reserve} tokens): "
                            f"give more")

    def session_cost(s: SessionCtx) -> int:
        return count_tokens(_session_header(s, len(sessions), budget, now))

    # A session with no candidate unit for this mode keeps its header (which says so) when it fits;
    # these come first, and are given back last (from the end) when the whole comes out over.
    nothing = count_tokens(f"(nothing of mode {mode} in this session)") + SEP
    empties = fit([s for s in sessions if not s.items], capacity, lambda s: session_cost(s) + SEP + nothing,
                  used=reserve)
    units = _fit(sessions, capacity, empties.used, session_cost)
    rendered: list[Any] = []  # the last render: chosen, dropped, text, used, per-session tokens

    def measure(_: Fitted[Any]) -> int:
        chosen: dict[str, list[Item]] = {}
        for it in units.kept:
            chosen.setdefault(it.session_id, []).append(it)
        left = {s.session_id for s in empties.left_out}
        dropped = [s.session_id for s in sessions
                   if (s.items and not chosen.get(s.session_id)) or s.session_id in left]
        text, used, sess_tokens = _render_counted(mode, budget, margin, sessions, chosen, units.left_out,
                                                  dropped, now)
        rendered[:] = [chosen, dropped, text, used, sess_tokens]
        return used

    # The estimate can be short (tokens merge differently across joins): give back the last units
    # taken, then the headers of sessions without units, until the exact count fits.
    if settle(units, measure) > capacity:
        settle(empties, measure)
    chosen, dropped, text, used, sess_tokens = rendered
    omitted = units.left_out
    if warn:
        for d in dropped:
            warn(f"jacked: session {d[:8]} left out: none of its units fit in {budget} tokens")
    out_sessions = []
    for s in sessions:
        if s.session_id in dropped:
            continue
        items = sorted(chosen.get(s.session_id, []), key=lambda it: (_group_rank(it.group), it.order))
        out_sessions.append({
            "session_id": s.session_id, "tokens": sess_tokens.get(s.session_id, 0),
            "agent": s.row.get("agent") or "claude",
            "repo_name": s.row.get("repo_name"), "cwd": s.row.get("cwd"), "title": s.row.get("title"),
            "started_at": s.row.get("started_at"), "ended_at": s.row.get("ended_at"),
            "age": s.staleness.age, "staleness": s.staleness.to_json(), "resume": s.resume_hint,
            "transcript_on_disk": s.resume_hint is not None,
            "cost_usd": s.cost["cost_usd"] if s.cost else None,
            "api_tokens": s.cost["tokens"] if s.cost else None,  # what the session used, not this block
            "sections": [{"content_type": it.content_type, "tokens": it.tokens, "text": it.text,
                          "turn_index": it.turn_index} for it in items],
        })
    omitted_sorted = sorted(omitted, key=lambda it: (next(s.position for s in sessions if s.session_id == it.session_id),
                                                     it.tier, it.order))
    return RetrieveResult(
        mode=mode, budget=budget, capacity=capacity, margin=margin, used=used, text=text, sessions=out_sessions,
        dropped_sessions=dropped,
        omitted=[{"session_id": it.session_id, "content_type": it.content_type, "tokens": it.tokens,
                  "turn_index": it.turn_index} for it in omitted_sorted])


def _render_counted(mode: str, budget: int, margin: float, sessions: list[SessionCtx],
                    chosen: dict[str, list[Item]], omitted: list[Item], dropped: list[str],
                    now: datetime) -> tuple[str, int, dict[str, int]]:
    """Render until the numbers printed in the headers equal the counts of what is printed."""
    used = 0
    sess_tokens: dict[str, int] = {}
    text = ""
    new_used = 0
    for _ in range(6):
        text, per_session = _render(mode, budget, margin, sessions, chosen, omitted, dropped, used, sess_tokens, now)
        new_used = count_tokens(text)
        new_sess = {sid: count_tokens(t) for sid, t in per_session.items()}
        if new_used == used and new_sess == sess_tokens:
            break
        used, sess_tokens = new_used, new_sess
    # `new_used` is the exact count of `text`; never report less than the sections themselves hold.
    floor = sum(it.tokens for items in chosen.values() for it in items)
    return text, max(new_used, floor), sess_tokens


# --------------------------------------------------------------------------- recall
RECALL_MAX_TOKENS = 1500
RECALL_SESSIONS = 6


def _repo_sessions(catalog: Catalog, cwd: str, limit: int) -> tuple[list[dict[str, Any]], int]:
    """The newest `limit` sessions of the repo at `cwd` (same cwd, or inside it, or the same repo
    name), newest first, and how many it has."""
    from jacked.sources.claude.discover import repo_name_of

    top = cwd.rstrip("/") or "/"
    return retrieve_queries.sessions_in_folder(catalog, top, repo_name_of(top), limit)


def recall_brief(catalog: Catalog, cwd: str, search: Callable[[str, str], list[str]] | None = None,
                 max_tokens: int = RECALL_MAX_TOKENS, now: datetime | None = None,
                 margin: float = 0.0) -> dict[str, Any]:
    """A short brief (<= `max_tokens`, counted with jacked.util.tokens, less the safety `margin`) of
    the past sessions most relevant to the repo at `cwd`: its most recent sessions, plus — when
    `search(query, repo)` is given (an index exists) — the ones search finds for what was worked
    on lately. Whole entries, newest first; one that does not fit is left out and a smaller
    later one may still go in (budget.fit).

    Returns `{"repo", "sessions": [ids], "text", "tokens"}`; `text` is "" when there is nothing.
    """
    from jacked.sources.claude.discover import repo_name_of

    now = now or now_utc()
    rows, total = _repo_sessions(catalog, cwd, RECALL_SESSIONS)
    repo = repo_name_of(cwd) or cwd
    ordered: dict[str, dict[str, Any]] = {r["session_id"]: r for r in rows}
    if search is not None and rows:
        query = " ".join(_one_line(r.get("title") or r.get("first_prompt"), 120) for r in rows[:3])
        try:
            for sid in search(query, repo):
                row = catalog.get_session_row(sid)
                if row and sid not in ordered and len(ordered) < RECALL_SESSIONS + 3:
                    ordered[sid] = row
        except Exception:  # search is an extra: the catalog brief stands without it
            pass
    if not ordered:
        return {"repo": repo, "sessions": [], "text": "", "tokens": 0}
    head = (f"jacked memory: {total} past Claude Code sessions in {repo}. Most relevant, newest first "
            f"(load one with `jacked retrieve <id> --mode smart`, or use the jacked skill):")
    entries: list[tuple[str, str]] = []
    shown = short_ids(catalog, ordered)  # what `jacked retrieve <id>` takes as naming one session
    for sid, r in ordered.items():
        ended = r.get("ended_at") or r.get("started_at")
        title = _one_line(r.get("title") or r.get("first_prompt"), 120) or "(untitled)"
        entry = [f"- {shown[sid]} · {relative_age(ended, now)} · {r.get('turn_count') or 0} turns · {title}"]
        labels = [x["text"] for x in catalog.text_rows(sid) if x["kind"] == "summary_label"][-3:]
        if labels:
            entry.append("  topics: " + "; ".join(_one_line(x, 80) for x in labels))
        if r.get("plan"):
            first = next((ln.strip("# ").strip() for ln in r["plan"].splitlines() if ln.strip()), "")
            if first:
                entry.append(f"  plan: {_one_line(first, 120)}")
        entries.append((sid, "\n".join(entry)))

    def render(f: Fitted[tuple[str, str]]) -> str:
        return "\n".join([head, *(block for _, block in f.kept)])

    fitted = fit(entries, capacity_for(max_tokens, margin), lambda e: count_tokens(e[1]) + 1,
                 used=count_tokens(head))
    if settle(fitted, lambda f: count_tokens(render(f))) > fitted.capacity:
        return {"repo": repo, "sessions": [], "text": "", "tokens": 0}  # not even the heading fits
    text = render(fitted)
    return {"repo": repo, "sessions": [sid for sid, _ in fitted.kept], "text": text, "tokens": count_tokens(text)}
