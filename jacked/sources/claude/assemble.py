"""Assembly: the builders of a session's files become one `Session`.

Links each subagent to the parent's Task/Agent call (by `agentId` — from the result's
`toolUseResult`, else its text — by the call's `input.prompt`, or for 1.0.x inline subagents
by the call's `tool_use_id`), finds the plan (`plans/<slug>.md`, else the last ExitPlanMode
plan) and takes the repo from the `cwd` inside the records.

Newer layouts (2.1.x):
- a compaction file (`agent-acompact-*`, layout "acompact") is not a subagent: its final text
  is the compaction summary, kept once (the main file's `isCompactSummary` line usually holds
  it already);
- the agents of a workflow run (layout "workflow") belong to the turn whose time span holds the
  run's first agent line; the run's journal `result` serves as an agent's report when its file
  has none (or only announces its structured output);
- teammates (members of an agent team) are subagents with role "teammate", a team and a name;
- tool outputs moved to `tool-results/` are read back into the result briefs
  (`jacked.sources.claude.tool_results`).
"""
from __future__ import annotations

import functools
import os
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from jacked.sources.redact import redact, redact_obj
from jacked.util.time import parse_ts
from jacked.sources.claude.discover import SubagentFile, repo_name_of
from jacked.sources.model import AGENT_TOOLS, Compaction, Session, Subagent, TextUnit, Turn
from jacked.sources.reader import ReadResult, iter_records
from jacked.sources.claude.tool_results import resolve_session
from jacked.sources.claude.turns import MAX_TEXT_CHARS, FileBuilder, prompt_hash
from jacked.sources.metrics import fill_subagent_counts
from jacked.sources.briefs import add_subagent_raw

WORKFLOW_TOOLS = frozenset({"Workflow"})
STRUCTURED_OUTPUT_TOOL = "StructuredOutput"
EXTRA = "_jacked"  # the key under which `subagent_meta` adds what jacked found beside `.meta.json`


def read_meta(path: Path | None) -> dict[str, Any]:
    """A subagent's `.meta.json`, redacted (its `description`, `agentType`, names reach the
    catalog), or {} when it is missing or unreadable."""
    if path is None:
        return {}
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return redact_obj(data) if isinstance(data, dict) else {}


def subagent_meta(sf: SubagentFile) -> dict[str, Any]:
    """A subagent file's `.meta.json`, plus (under `EXTRA`) a workflow agent's run and the run
    journal's `result` for it. (A teammate's team and name are in its records: the builder
    keeps them.)"""
    meta = read_meta(sf.meta_path)
    extra: dict[str, Any] = {}
    if sf.layout == "workflow":
        extra["workflow_run"] = sf.workflow_run
        if sf.journal_path is not None:
            aid = agent_id_from_path(str(sf.path))
            results = journal_results(sf.journal_path)
            if aid in results:
                extra["journal_result"] = results[aid]
    if extra:
        meta[EXTRA] = extra
    return meta


def journal_results(path: Path) -> dict[str, Any]:
    """agentId -> the `result` a workflow run's `journal.jsonl` records for it (read as a
    stream; the newest wins). Cached by size and mtime: every agent of a run asks."""
    try:
        st = os.stat(path)
    except OSError:
        return {}
    return _journal_results(str(path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=32)
def _journal_results(path: str, size: int, mtime_ns: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for rec in iter_records(Path(path), 0, ReadResult()):
        if rec.get("type") == "result" and isinstance(rec.get("agentId"), str) and rec.get("result") is not None:
            out[rec["agentId"]] = rec["result"]
    return out


def read_plan(plans_dir: Path | None, slug: str | None) -> str | None:
    if not plans_dir or not slug:
        return None
    path = plans_dir / f"{slug}.md"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return redact(text[:MAX_TEXT_CHARS]) if text.strip() else None


def agent_id_from_path(path: str) -> str | None:
    name = Path(path).name
    if name.startswith("agent-") and name.endswith(".jsonl"):
        return name[len("agent-"):-len(".jsonl")]
    return None


def assemble(session_id: str, project_dir: str, main: FileBuilder | None,
             subagents: list[tuple[FileBuilder, str, dict[str, Any]]], plans_dir: Path | None,
             session_dir: Path | None = None) -> Session:
    """One Session from its main file's builder and its subagent files' (builder, layout, meta)
    — compaction files (layout "acompact") included. `session_dir` (`<project>/<session>/`)
    is where moved tool outputs are looked for."""
    s = Session(session_id=session_id, file=main.rel_path if main else "", project_dir=project_dir)
    subs: list[Subagent] = []
    compactions: list[FileBuilder] = []
    for builder, layout, meta in subagents:
        if layout == "acompact":
            compactions.append(builder)
            continue
        sub = builder.subagent_record(layout, meta)
        if sub.agent_id is None:
            sub.agent_id = agent_id_from_path(builder.rel_path)
        _identify(sub, meta, builder.team_name, builder.member_name)
        subs.append(sub)
    if main is not None:
        main.finalize()
        s.turns = main.turns
        s.texts = list(main.texts)
        s.cwd, s.git_branch, s.slug = main.cwd, main.git_branch, main.slug
        s.version_first, s.version_last = main.version_first, main.version_last
        s.started_at, s.ended_at = main.started_at, main.ended_at
        s.models = list(main.models)
        s.lines = main.lines
        s.lines_duplicate = main.duplicates
        s.lines_unknown = main.unknown
        s.message_lines = main.messages
        s.leaf_uuids = list(dict.fromkeys(main.leaf_uuids + ([main.last_uuid] if main.last_uuid else [])))
        s.texts = [_own_or_foreign(t, main.seen_uuids) for t in s.texts]
        for sub_builder, sub in main.inline:
            sub_builder.finalize()
            sub.turns = sub_builder.turns
            sub.summary_text = sub_builder.last_assistant_text
            first = next((t for t in sub_builder.turns if t.index >= 1), None)
            sub.prompt = first.prompt if first else None
            sub.started_at, sub.ended_at = sub_builder.started_at, sub_builder.ended_at
            fill_subagent_counts(sub)
            subs.append(sub)
    if s.cwd is None:
        s.cwd = next((b.cwd for b, _, _ in subagents if b.cwd), None)
    s.repo_name = repo_name_of(s.cwd)
    _link(s, subs)
    _attach_workflows(s, subs)
    starters = {t.index: t for t in s.turns}
    for sub in subs:
        if sub.turn_index is not None and sub.turn_index in starters:
            add_subagent_raw(starters[sub.turn_index], sub.turns)
    for sub in subs:
        if sub.role == "teammate" and not sub.agent_type:
            sub.agent_type = "teammate"
    s.subagents = subs
    if compactions:
        _add_compactions(s, compactions)
    s.tool_results_missing = resolve_session(s, session_dir)[1]
    plan = read_plan(plans_dir, s.slug)
    if plan:
        s.plan, s.plan_source = plan, "file"
    elif main is not None and main.exit_plan:
        s.plan, s.plan_source = main.exit_plan, "exit_plan_mode"
    return s


def _own_or_foreign(unit: TextUnit, uuids: set[str]) -> TextUnit:
    """A `summary` line labels the session holding its `leafUuid`, often another file (the
    session that was resumed): such a label is kept as "foreign_label" for the catalog to
    give to its owner, never to this file."""
    if unit.kind != "summary_label" or not unit.leaf_uuid or unit.leaf_uuid in uuids:
        return unit
    return TextUnit("foreign_label", unit.text, unit.timestamp, unit.turn_index, unit.leaf_uuid)


_RESULT_AGENT_ID = re.compile(r"\bagentId: ([A-Za-z0-9_@.-]+)")


def _link(s: Session, subs: list[Subagent]) -> None:
    """Tie subagents to the Task/Agent calls that started them: by the `agentId` of the
    call's result (its `toolUseResult`, else the "agentId: …" line of its text), by the
    call's `tool_use_id` (1.0.x inline), else by the call's `input.prompt` (a teammate's
    first prompt is that text wrapped in a `<teammate-message>` from the team lead)."""
    by_agent = {sub.agent_id: sub for sub in subs if sub.agent_id}
    by_call = {sub.tool_use_id: sub for sub in subs if sub.tool_use_id}
    linked: set[int] = set()  # ids of the subagents tied to a call
    unmatched = []
    for turn in s.turns:
        for inv in turn.invocations:
            if inv.tool_name not in AGENT_TOOLS:
                continue
            if not inv.agent_id and inv.result_brief:
                m = _RESULT_AGENT_ID.search(inv.result_brief)
                if m and m.group(1) in by_agent:
                    inv.agent_id = m.group(1)
            sub = by_agent.get(inv.agent_id) if inv.agent_id else None
            if sub is None:
                sub = by_call.get(inv.tool_use_id)
            if sub is None:
                unmatched.append((turn, inv))
                continue
            _tie(sub, turn, inv)
            linked.add(id(sub))
    waiting = [sub for sub in subs if id(sub) not in linked and sub.layout in ("subagents_dir", "flat")
               and sub.prompt]
    if unmatched and waiting:
        keys = {id(sub): prompt_hash(sub.prompt) for sub in waiting}  # type: ignore[arg-type]  # `waiting` keeps only subagents with a prompt
        for turn, inv in unmatched:
            if inv.prompt_key is None:
                continue
            sub = next((x for x in waiting if id(x) not in linked and keys[id(x)] == inv.prompt_key), None)
            if sub is not None:
                inv.agent_id = sub.agent_id  # (a teammate's call may name it "name@team")
                _tie(sub, turn, inv)
                linked.add(id(sub))
    for sub in subs:
        if sub.tool_use_id is None and not sub.is_warmup and sub.layout == "flat":
            # 2.0.x warm-up agents answer a hidden prompt (or none) and no Task call names them.
            sub.is_warmup = not any(t.invocations for t in sub.turns) and (sub.prompt in (None, "Warmup"))


def _tie(sub: Subagent, turn: Turn, inv: Any) -> None:
    """Link one subagent to the Task/Agent call that started it."""
    sub.tool_use_id = inv.tool_use_id
    sub.turn_index = turn.index
    inv.agent_id = inv.agent_id or sub.agent_id
    sub.agent_type = sub.agent_type or inv.subagent_type
    sub.description = sub.description or inv.description
    if inv.member_name and not sub.member_name:
        sub.member_name = inv.member_name
    if inv.team_name:
        sub.role = "teammate"
        sub.team_name = sub.team_name or inv.team_name


_TEAMMATE_BLOCK = re.compile(r"<teammate-message\b([^>]*)>(.*?)</teammate-message>", re.S)
_TEAMMATE_ID = re.compile(r'teammate_id\s*=\s*"([^"]*)"')


def _identify(sub: Subagent, meta: dict[str, Any], team_name: str | None, member_name: str | None) -> None:
    """Who a subagent file is: a workflow run's agent (with its journal report), or a
    teammate (its records or meta name a team, or the team lead's message is its prompt)."""
    extra = given if isinstance(given := meta.get(EXTRA), dict) else {}
    if sub.layout == "workflow":
        sub.workflow_run = extra.get("workflow_run")
        if "journal_result" in extra:
            used_structured = any(inv.tool_name == STRUCTURED_OUTPUT_TOOL for t in sub.turns for inv in t.invocations)
            if not (sub.summary_text or "").strip() or used_structured:
                report = _render_result(extra["journal_result"])
                if report:
                    sub.summary_text = report
        return
    team = team_name or _str(meta.get("teamName"))
    name = member_name or _str(meta.get("agentName")) or _str(meta.get("name"))
    prompt = sub.prompt or ""
    if prompt.lstrip().startswith("<teammate-message"):
        for m in _TEAMMATE_BLOCK.finditer(prompt):
            who = _TEAMMATE_ID.search(m.group(1))
            if who and who.group(1) == "team-lead":
                sub.prompt = m.group(2).strip("\n")  # what the lead wrote, without the envelope
                sub.role = "teammate"
                break
    if team:
        sub.role = "teammate"
        sub.team_name = team
    if name:
        sub.member_name = name


def _str(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _render_result(result: Any) -> str | None:
    """A journal `result` as report text (structured output as indented JSON), redacted."""
    if isinstance(result, str):
        text = result
    else:
        try:
            text = orjson.dumps(result, option=orjson.OPT_INDENT_2).decode()
        except TypeError:
            text = str(result)
    text = text.strip()
    return redact(text[:MAX_TEXT_CHARS]) if text else None


def _turn_at(turns: list[Turn], when: datetime | None) -> Turn | None:
    """The turn whose time span holds `when`: a turn lasts until the next one starts, so the
    last turn started at or before it (the first turn when it is earlier than all)."""
    if not turns:
        return None
    if when is None:
        return None
    found = None
    for t in turns:
        start = parse_ts(t.started_at)
        if start is not None and start <= when:
            found = t
        elif start is not None and start > when:
            break
    return found or turns[0]


def _attach_workflows(s: Session, subs: list[Subagent]) -> None:
    """Each workflow run and its agents go to the turn that started it — no Task call names
    them: the turn whose time span holds the run's first agent line — and to the Workflow call
    of that turn made before that line, when there is one."""
    runs: dict[str, list[Subagent]] = {}
    for sub in subs:
        if sub.layout == "workflow":
            runs.setdefault(sub.workflow_run or "", []).append(sub)
    if not runs:
        return
    # A Workflow call whose result named its run (its `runId`, should the builder keep it as
    # the call's agent_id) is the call that started it, wherever it is.
    named = {inv.agent_id: (turn, inv) for turn in s.turns for inv in turn.invocations
             if inv.tool_name in WORKFLOW_TOOLS and inv.agent_id}
    for run, agents in runs.items():
        if run in named:
            turn, call = named[run]
        else:
            starts = [t for t in (parse_ts(a.started_at) for a in agents) if t is not None]
            first = min(starts) if starts else None
            nearest = _turn_at(s.turns, first)
            if nearest is None:
                continue
            turn, call = nearest, None
            for inv in turn.invocations:
                if inv.tool_name in WORKFLOW_TOOLS:
                    at = parse_ts(inv.timestamp)
                    if first is None or at is None or at <= first:
                        call = inv
        for a in agents:
            a.turn_index = turn.index
            if call is not None and a.tool_use_id is None:
                a.tool_use_id = call.tool_use_id


_ANALYSIS = re.compile(r"<analysis>.*?(?:</analysis>|$)", re.S)
_SUMMARY = re.compile(r"<summary>(.*?)(?:</summary>|$)", re.S)


def compaction_summary(text: str | None) -> str | None:
    """The summary of a compaction's final text: its `<summary>` content when it has one,
    else the text without its `<analysis>` part (as Claude Code shows it)."""
    if not text:
        return None
    rest = _ANALYSIS.sub("", text)
    m = _SUMMARY.search(rest)
    out = (m.group(1) if m else rest).strip()
    return out or None


def _fold(text: str) -> str:
    return " ".join(text.split())


def _add_compactions(s: Session, compactions: list[FileBuilder]) -> None:
    """Compaction files (`agent-acompact-*`): each one's summary is kept once. The main file
    usually holds it already, as the `isCompactSummary` line after the compaction (matched by
    its text, else by time: the first summary written after the compaction started and before
    the next one); otherwise the compaction's own summary becomes a `compact_summary`."""
    runs = []
    for b in compactions:
        b.finalize()
        runs.append((parse_ts(b.started_at), b))
    runs.sort(key=lambda r: (r[0] is None, r[0] or datetime.min))
    existing = [t for t in s.texts if t.kind == "compact_summary"]
    taken: set[int] = set()
    pending: list[tuple[int, FileBuilder, str]] = []
    for start, b in runs:
        when = parse_ts(b.ended_at) or start
        turn = _turn_at(s.turns, when)
        s.compactions.append(Compaction(agent_id_from_path(b.rel_path) or b.rel_path,
                                        turn.index if turn is not None else None,
                                        [c for t in b.turns for c in t.llm_calls]))
    for i, (_, b) in enumerate(runs):
        summary = compaction_summary(b.last_assistant_text)
        if not summary:
            continue
        probe = _fold(summary)[:160]
        match = next((u for u in existing if id(u) not in taken and probe and probe in _fold(u.text)), None)
        if match is not None:
            taken.add(id(match))
        else:
            pending.append((i, b, summary))
    for i, b, summary in pending:
        start = runs[i][0]
        end = runs[i + 1][0] if i + 1 < len(runs) else None
        match = None
        for u in existing:
            at = parse_ts(u.timestamp)
            if id(u) in taken or at is None or start is None:
                continue
            if at >= start and (end is None or at < end):
                match = u
                break
        if match is not None:
            taken.add(id(match))
            continue
        when = parse_ts(b.ended_at) or start
        turn = _turn_at(s.turns, when)
        s.texts.append(TextUnit("compact_summary", summary[:MAX_TEXT_CHARS], b.ended_at,
                                turn.index if turn is not None else None))
