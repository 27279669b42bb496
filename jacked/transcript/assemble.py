"""Assembly: the builders of a session's files become one `Session`.

Links each subagent to the parent's Task/Agent call (by `agentId`, or for 1.0.x inline
subagents by the call's `tool_use_id`), finds the plan (`plans/<slug>.md`, else the last
ExitPlanMode plan) and takes the repo from the `cwd` inside the records.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from jacked.redact import redact
from jacked.transcript.discover import repo_name_of
from jacked.transcript.model import AGENT_TOOLS, Session, Subagent, TextUnit
from jacked.transcript.turns import MAX_TEXT_CHARS, FileBuilder, fill_subagent_counts


def read_meta(path: Path | None) -> dict[str, Any]:
    """A subagent's `.meta.json`, or {} when it is missing or unreadable."""
    if path is None:
        return {}
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


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
             subagents: list[tuple[FileBuilder, str, dict[str, Any]]], plans_dir: Path | None) -> Session:
    """One Session from its main file's builder and its subagent files' (builder, layout, meta)."""
    s = Session(session_id=session_id, file=main.rel_path if main else "", project_dir=project_dir)
    subs: list[Subagent] = []
    for builder, layout, meta in subagents:
        sub = builder.subagent_record(layout, meta)
        if sub.agent_id is None:
            sub.agent_id = agent_id_from_path(builder.rel_path)
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
    s.subagents = subs
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


def _link(s: Session, subs: list[Subagent]) -> None:
    """Tie subagents to the Task/Agent calls that started them."""
    by_agent = {sub.agent_id: sub for sub in subs if sub.agent_id}
    by_call = {sub.tool_use_id: sub for sub in subs if sub.tool_use_id}
    for turn in s.turns:
        for inv in turn.invocations:
            if inv.tool_name not in AGENT_TOOLS:
                continue
            sub = by_agent.get(inv.agent_id) if inv.agent_id else None
            if sub is None:
                sub = by_call.get(inv.tool_use_id)
            if sub is None:
                continue
            sub.tool_use_id = inv.tool_use_id
            sub.turn_index = turn.index
            inv.agent_id = inv.agent_id or sub.agent_id
            sub.agent_type = sub.agent_type or inv.subagent_type
            sub.description = sub.description or inv.description
    for sub in subs:
        if sub.tool_use_id is None and not sub.is_warmup and sub.layout == "flat":
            # 2.0.x warm-up agents answer a hidden prompt (or none) and no Task call names them.
            sub.is_warmup = not any(t.invocations for t in sub.turns) and (sub.prompt in (None, "Warmup"))
