"""Structured views of the catalog: sessions, turns and export, in the CLI contract's shapes.

These are the library functions behind `jacked sessions`, `turns`, `export` and `show`.
"""
from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from jacked.catalog import Catalog, forget_queries, timeline_queries
from jacked.errors import JackedError
from jacked.ingest.scan import Scanner, ScanReport
from jacked.query.ids import mark_short_ids
from jacked.query.prices import PriceTable
from jacked.query.timeline import TURN_EVENT_TYPES, turn_event_fields
from jacked.query.usage import Tally, session_usage, turn_usage
from jacked.sources.claude.discover import SessionFiles, SubagentFile, is_agent_file, is_compaction_file, session_dir_files
from jacked.sources.reader import first_record


class SessionNotFound(JackedError):
    """The session reference matches nothing, or more than one session."""


SESSION_FIELDS = ("session_id", "agent", "repo_name", "cwd", "started_at", "ended_at", "turn_count", "title")


def session_summary(row: dict[str, Any]) -> dict[str, Any]:
    """The `sessions --json` fields of a session row, plus a few helpful extras."""
    out = {k: row.get(k) for k in SESSION_FIELDS}
    out["title"] = row.get("title") or None
    out["agent"] = row.get("agent") or "claude"
    out.update({
        # a first prompt can be a pasted file: a list shows its head (`show` has it whole)
        "first_prompt": _head(row.get("first_prompt"), FIRST_PROMPT_CHARS), "git_branch": row.get("git_branch"), "slug": row.get("slug"),
        "version": row.get("version_first"), "tool_call_count": row.get("tool_call_count"),
        "tool_error_count": row.get("tool_error_count"), "subagent_count": row.get("subagent_count"),
        # what was decided (AskUserQuestion answers, plans approved or rejected, …) and what the user
        # said about the work (calls refused, interruptions, corrections): see `jacked timeline`
        "decision_count": row.get("decision_count") or 0, "feedback_count": row.get("feedback_count") or 0,
        "lines_skipped": row.get("lines_skipped"), "file": row.get("file") or None,
        # where the transcript is: transcript (on disk) | archive (only in jacked's archive) |
        # history (deleted before jacked saw it: the prompts from history.jsonl only)
        "source": row.get("source") or "transcript",
    })
    return out


FIRST_PROMPT_CHARS = 300


def _head(text: str | None, limit: int) -> str | None:
    return text if text is None or len(text) <= limit else text[:limit].rstrip() + "…"


def list_sessions(catalog: Catalog, repo: str | None = None, limit: int | None = None, offset: int = 0,
                  prices: PriceTable | None = None, since: str | None = None,
                  until: str | None = None) -> list[dict[str, Any]]:
    return session_rows(catalog, [session_summary(r) for r in catalog.list_sessions(repo, limit, offset, since, until)],
                        prices)


def session_rows(catalog: Catalog, sessions: list[dict[str, Any]],
                 prices: PriceTable | None = None) -> list[dict[str, Any]]:
    """`sessions` (`session_summary` dicts) as every surface gives them: the id a list shows
    (`short_id`, see `jacked.query.ids`) and what each cost (`with_usage`)."""
    return with_usage(catalog, mark_short_ids(catalog, sessions), prices)


def with_usage(catalog: Catalog, sessions: list[dict[str, Any]],
               prices: PriceTable | None = None) -> list[dict[str, Any]]:
    """`sessions` (`session_summary` dicts) with what each cost, everything it caused included:
    `tokens` {input, output, cache_creation, cache_read}, `cost_usd` (null when a model has no
    price), `api_calls`, `usage_by_role` (main, subagent, teammate, compaction) and the `models`
    that answered (a subagent's too)."""
    tallies = session_usage(catalog, [s["session_id"] for s in sessions], prices or PriceTable())
    for s in sessions:
        t = tallies.get(s["session_id"]) or Tally()
        u = t.to_json()
        # a prompts-only session (its transcript deleted before jacked saw it): what it cost is not known
        unknown = not u["api_calls"] and s.get("source") == "history"
        s.update({"tokens": u["tokens"], "cost_usd": None if unknown else u["cost_usd"], "api_calls": u["api_calls"],
                  "usage_by_role": u.get("by_role", {}), "models": u["models"]})
        if u["unpriced_models"]:
            s["unpriced_models"] = u["unpriced_models"]
    return sessions


def resolve_session(catalog: Catalog, ref: str, claude_dir: Path | None = None) -> str:
    """A full session id, a unique prefix, or a transcript path → the session id."""
    ref = ref.strip()
    if not ref:
        raise SessionNotFound("empty session reference: give a session id, a unique prefix or a file path")
    if catalog.get_session_row(ref):
        return ref
    path = Path(ref).expanduser()
    if path.suffix == ".jsonl" or path.exists():
        for c in (str(path.absolute()), str(path.resolve())):
            sid = catalog.session_for_file(c)
            if sid:
                return sid
        if catalog.get_session_row(path.stem):
            return path.stem
    matches = catalog.find_session_ids(ref)
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        shown = ", ".join(m[:12] for m in matches[:5])
        raise SessionNotFound(f"'{ref}' matches {len(matches)} sessions ({shown}…): give more of the id")
    _raise_if_forgotten(catalog, path.stem if path.suffix == ".jsonl" else ref)
    raise SessionNotFound(f"no session '{ref}' in the catalog: run `jacked scan` first, or check `jacked sessions`")


def _raise_if_forgotten(catalog: Catalog, ref: str) -> None:
    """A reference to a forgotten session says so: a scan will not bring it back."""
    gone = forget_queries.forgotten_matching(catalog, ref)
    if len(gone) != 1:
        return
    when = time.strftime("%Y-%m-%d", time.localtime(gone[0]["forgotten_at"] or 0))
    why = FORGET_REASONS.get(gone[0]["reason"], gone[0]["reason"])
    raise SessionNotFound(f"session {gone[0]['session_id']} was forgotten on {when} ({why}): jacked keeps nothing of "
                          "it and will not read it again (`jacked forget --list`)")


# Why a tombstone was written (jacked.index.forget, jacked.ingest.privacy), in a user's words.
FORGET_REASONS = {"forget": "jacked forget", "excluded": "the exclude setting", "nomem": "#nomem in the session"}


def turns_json(catalog: Catalog, session_id: str, prices: PriceTable | None = None) -> dict[str, Any]:
    """`turns SESSION --json`: every turn with its invocations and metrics, and what each turn
    cost (`usage`: its own responses and those of the subagents and compactions it caused)."""
    per_turn = turn_usage(catalog, session_id, prices or PriceTable())
    invs: dict[int, list[dict[str, Any]]] = {}
    for r in catalog.invocation_rows(session_id):
        invs.setdefault(r["turn_index"], []).append({
            "tool_name": r["tool_name"], "tool_use_id": r["tool_use_id"], "sequence": r["sequence"],
            "parallel_group": r["parallel_group"], "is_error": bool(r["is_error"]), "timestamp": r["timestamp"],
            "file_path": r["file_path"], "command": r["command"], "agent_id": r["agent_id"],
            "input": r["input_brief"], "result": r["result_brief"],
        })
    # decisions, the user's feedback and the state each turn started from (see `jacked.sources.decisions`)
    marks: dict[int, dict[str, Any]] = {}
    for e in timeline_queries.turn_event_rows(catalog, session_id, TURN_EVENT_TYPES):
        m = marks.setdefault(e["turn_index"], {"decisions": [], "feedback": [], "snapshot": None})
        fields = {"timestamp": e["timestamp"], **turn_event_fields(e["type"], e["data"])}
        if e["type"] == "snapshot":
            m["snapshot"] = fields
        else:
            m["decisions" if e["type"] == "decision" else "feedback"].append(fields)
    turns = []
    for t in catalog.turn_rows(session_id):
        metrics = orjson.loads(t["metrics"]) if t["metrics"] else {}
        turns.append({
            "index": t["turn_index"], "prompt": t["prompt"], "started_at": t["started_at"],
            "ended_at": t["ended_at"], "duration_ms": t["duration_ms"], "duration_source": t["duration_source"],
            "is_slash_command": bool(t["is_slash_command"]), "started_by": t["started_by"],
            "compacted": bool(t["compacted"]),
            "interrupted": bool(t["interrupted"]), "models": orjson.loads(t["models"] or "[]"),
            "assistant_text": t["assistant_text"], "invocations": invs.get(t["turn_index"], []),
            "metrics": metrics,
            "usage": _turn_usage_json(per_turn.pop(t["turn_index"], None)),
            **marks.get(t["turn_index"], {"decisions": [], "feedback": [], "snapshot": None}),
        })
        # the file or selection open in the IDE when the prompt was sent (the prompt is what was typed)
        turns[-1]["context"] = (turns[-1]["snapshot"] or {}).get("ide_context") or []
    subagents = [{
        "agent_id": a["agent_id"], "agent_type": a["agent_type"], "description": a["description"],
        "layout": a["layout"], "tool_use_id": a["tool_use_id"], "turn_index": a["turn_index"],
        "summary_text": a["summary_text"], "tool_call_count": a["tool_call_count"],
        "tool_error_count": a["tool_error_count"], "is_warmup": bool(a["is_warmup"]), "file": a["file"],
        "role": a.get("role") or "subagent", "team_name": a.get("team_name"), "member_name": a.get("member_name"),
        "workflow_run": a.get("workflow_run"),
    } for a in catalog.subagent_rows(session_id)]
    texts = [{"kind": x["kind"], "text": x["text"], "timestamp": x["timestamp"], "turn_index": x["turn_index"]}
             for x in catalog.text_rows(session_id)]
    row = catalog.get_session_row(session_id) or {}
    session_total = session_usage(catalog, [session_id], prices or PriceTable()).get(session_id) or Tally()
    out = {"session_id": session_id, "turns": turns, "subagents": subagents, "texts": texts,
           "plan": row.get("plan"), "plan_source": row.get("plan_source"), "usage": session_total.to_json()}
    if per_turn:  # responses of no turn (a subagent no call names): in the total, not in a turn
        outside = Tally()
        for tally in per_turn.values():
            outside.merge(tally)
        out["usage_outside_turns"] = _turn_usage_json(outside)
    return out


def _turn_usage_json(t: Tally | None) -> dict[str, Any]:
    u = (t or Tally()).to_json()
    return {"api_calls": u["api_calls"], "tokens": u["tokens"], "cost_usd": u["cost_usd"],
            "by_role": u.get("by_role", {})}


def export_rows(catalog: Catalog, session_ids: list[str] | None = None,
                prices: PriceTable | None = None) -> list[dict[str, Any]]:
    """`export`: one object per session, the `sessions` fields plus `turns`."""
    return list(iter_export_rows(catalog, session_ids, prices))


def iter_export_rows(catalog: Catalog, session_ids: list[str] | None = None,
                     prices: PriceTable | None = None) -> Iterator[dict[str, Any]]:
    """`export_rows` one session at a time: `jacked export` of a 10,000-session history holds one
    session's turns in memory, not all of them."""
    ids = session_ids if session_ids else catalog.listed_session_ids()
    for sid in ids:
        row = catalog.get_session_row(sid)
        if row is None:
            continue
        obj = session_rows(catalog, [session_summary(row)], prices)[0]
        obj.update(turns_json(catalog, sid, prices))
        yield obj


def session_files_for_path(path: Path) -> SessionFiles:
    """The files of the session whose main transcript is `path`, wherever it lies."""
    path = path.resolve()
    sid = path.stem
    files = SessionFiles(session_id=sid, project_dir=path.parent.name, main=path)
    files.subagents, files.compactions, files.tool_results = session_dir_files(path.parent / sid)
    for f in sorted(path.parent.glob("agent-*.jsonl")):
        rec = first_record(f)
        if rec and rec.get("sessionId") == sid and f != path:
            if is_compaction_file(f):
                files.compactions.append(SubagentFile(f, "acompact"))
            else:
                files.subagents.append(SubagentFile(f, "flat"))
    if is_agent_file(path):
        files.main = None
        files.subagents.append(SubagentFile(path, "flat"))
    return files


def catalog_for_path(path: Path, plans_dir: Path | None = None,
                     catalog: Catalog | None = None) -> tuple[Catalog, str, ScanReport]:
    """An in-memory catalog holding just the session of the transcript at `path` (with
    `catalog`: that one, the session added to it)."""
    if not path.is_file():
        raise SessionNotFound(f"no transcript file at {path}")
    catalog = catalog if catalog is not None else Catalog(Path(":memory:"))
    root = Path(plans_dir).parent if plans_dir else Path(tempfile.gettempdir())
    scanner = Scanner(catalog, root)
    report = ScanReport()
    group = session_files_for_path(path)
    scanner.scan_group(group, report)
    return catalog, group.session_id, report
