"""`jacked timeline` and `jacked file-history`: argument parsing and output formatting only."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import typer

from jacked.surfaces.cli.common import print_json, print_json_list, service


def timeline_cmd(
    session: str | None = typer.Argument(None, help="Session id, prefix or path (default: all sessions)."),
    types: list[str] | None = typer.Option(None, "--type", "-t", help="Only these event types (repeatable): "
                                              "intent, action, file, error, llm, compaction, subagent, decision, "
                                              "feedback, snapshot."),
    repo: str | None = typer.Option(None, "--repo", help="Only sessions of this repo (name or cwd)."),
    file: str | None = typer.Option(None, "--file", help="Only events touching this file (absolute or a "
                                       "path suffix)."),
    limit: int | None = typer.Option(None, "-n", "--limit", min=1, help="At most this many events."),
    offset: int = typer.Option(0, "--offset", min=0, help="Skip this many events first."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """A typed event stream of what happened: prompts, tool calls, file changes, errors, LLM calls,
    decisions, the user's feedback and the state each turn started from."""
    from jacked.query.timeline import TimelineQuery

    events = service().timeline(TimelineQuery(types=types or None, repo=repo, file=file, limit=limit, offset=offset),
                                session=session or None)
    if json_out:
        print_json_list(events)
        return
    shown = 0
    for e in events:
        typer.echo(render_event(e, cross_session=not session))
        shown += 1
    if not shown:
        typer.echo("no events")


def _one(text: Any, n: int = 120) -> str:
    t = " ".join(str(text or "").split())
    return t if len(t) <= n else t[:n - 1] + "…"


def render_event(e: Mapping[str, Any], cross_session: bool = False) -> str:
    """One event on one line (a file change adds its diff below)."""
    where = (f"{e['session_id'][:8]} " if cross_session else "") + f"#{e['turn_index'] if e['turn_index'] is not None else '-'}"
    head = f"{(e['timestamp'] or '')[:19]:19} {where:>4} {e['type']:<10}"
    t = e["type"]
    if t == "intent":
        return f"{head} > {_one(e['prompt'])}"
    if t == "action":
        dur = f" ({e['duration_ms'] / 1000:.1f}s)" if e.get("duration_ms") is not None else ""
        err = " ✗" if e["is_error"] else ""
        return f"{head} {e['tool_name']}{err} {_one(e.get('command') or e.get('file_path') or e.get('input'), 100)}{dur}"
    if t == "file":
        line = f"{head} {e['operation']} {e['path']} +{e['lines_added']}/-{e['lines_removed']}"
        if e.get("diff"):
            line += "\n" + "\n".join("      " + ln for ln in e["diff"].splitlines()[:30])
        return line
    if t == "error":
        state = "fixed later" if e["resolved"] else "not fixed"
        return f"{head} {e['tool_name']} {_one(e.get('command') or e.get('file_path'), 60)}: {_one(e['message'], 100)} [{state}]"
    if t == "llm":
        return (f"{head} {e['model']} in {e['input_tokens'] + e['cache_read_tokens'] + e['cache_creation_tokens']:,} "
                f"out {e['output_tokens']:,}, {e['tool_calls']} tool calls")
    if t == "compaction":
        return f"{head} {e.get('kind')} {e.get('trigger') or ''} {_one(e.get('summary') or '', 100)}".rstrip()
    if t == "subagent":
        return (f"{head} {e.get('agent_type') or 'agent'} {e.get('agent_id') or ''}: {_one(e.get('description'), 60)} "
                f"({e['tool_call_count']} calls)")
    if t in ("decision", "feedback"):
        return f"{head} {_one(e.get('text'), 160)}"
    if t == "snapshot":
        return f"{head} {snapshot_line(e)}"
    return f"{head} {e}"


def snapshot_line(e: Mapping[str, Any]) -> str:
    """The state a turn started from, in one line."""
    parts = [f"{e.get('cwd') or '?'}", f"branch {e.get('git_branch') or '-'}", f"v{e.get('version') or '?'}",
             f"{e.get('model') or 'model ?'}"]
    if e.get("permission_mode"):
        parts.append(f"mode {e['permission_mode']}")
    files = e.get("files_backed_up") or []
    if files:
        parts.append(f"backed up {len(files)}: {_one(', '.join(files), 80)}")
    return " · ".join(parts)


def file_history_cmd(
    path: str = typer.Argument(..., help="The file: an absolute path, or a path suffix such as src/app.py."),
    repo: str | None = typer.Option(None, "--repo", help="Only sessions of this repo (name or cwd)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Every recorded change to a file, across sessions, oldest first, with diffs."""
    changes = service().file_history(path, repo)
    if json_out:
        print_json(changes)
        return
    if not changes:
        typer.echo(f"no recorded changes to {path}")
    for c in changes:
        typer.echo(f"{(c['timestamp'] or '')[:19]}  {c['session_id'][:8]} #{c['turn_index']}  {c['operation']:<6} "
                   f"{c['path']}  +{c['lines_added']}/-{c['lines_removed']}")
        diff = c["diff"]
        if diff:
            typer.echo("\n".join("    " + ln for ln in diff.splitlines()[:40]))


def register(app: typer.Typer) -> None:
    app.command("timeline")(timeline_cmd)
    app.command("file-history")(file_history_cmd)
