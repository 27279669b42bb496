"""`jacked scan | sessions | turns | export | show`: argument parsing and output formatting only."""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from jacked.surfaces.cli.common import (CliError, print_json, print_jsonl, progress_bar, require_projects, service,
                                       stdout_console, warn)
from jacked.surfaces.cli.params import Argument, Option, echo, typed
from jacked.util.text import counted, noun

if TYPE_CHECKING:
    import typer


def scan_cmd(json_out: bool = Option(False, "--json", help="Print the scan report as JSON.")) -> None:
    """Read every session of the Claude directory into the catalog (incremental)."""
    jk = service()
    require_projects(jk.settings)
    with progress_bar(True) as bar:  # on stderr, and only on a terminal
        report = jk.scan(progress=(lambda d, n: bar("scan", d, n)) if bar else None)
    if json_out:
        print_json(report.to_json())
        return
    echo(f"{counted(report.sessions, 'session')} ({report.sessions_scanned} read, {report.sessions_unchanged} "
         f"unchanged), {counted(report.turns, 'turn')}, {counted(report.lines_read, 'line')} read, "
         f"{report.lines_skipped} skipped, "
         f"{report.bytes_read / 1e6:.1f} MB in {report.seconds:.2f}s")
    if report.tool_results_missing:
        warn(f"jacked: {report.tool_results_missing} tool result(s) refer to a tool-results/ file that is gone "
             "(their preview is kept)")
    if report.files_without_session:
        echo(f"  {counted(report.files_without_session, 'file')} holding no session passed over "
             f"({NOT_SESSIONS})")
    if report.sessions_excluded or report.sessions_forgotten:
        echo(f"  {report.sessions_excluded} kept out now (exclude, #nomem), {report.sessions_forgotten} "
             "forgotten earlier and passed over (`jacked forget --list`)")
    h = report.history
    if h.get("sessions"):
        echo(f"  of them {h['sessions']} prompt-only (transcript deleted; prompts from history.jsonl): "
             f"{h['sessions_built']} built now, {h['lines_read']} history lines read, "
             f"{h['lines_malformed'] + h['lines_without_session']} skipped")
    for err in jk.unsaid(report.errors):
        warn(f"skipped: {err}")


def sessions_cmd(
    repo: str | None = Option(None, "--repo", help="Only sessions of this repo (name or cwd)."),
    since: str | None = Option(None, "--since", help="Only sessions active since: 7d, 2w, 3m, 1y or a date."),
    until: str | None = Option(None, "--until", help="Only sessions started by: 7d, 2w, 3m, 1y or a date "
                                  "(that whole day)."),
    limit: int = Option(20, "-n", "--limit", min=1, help="How many sessions, newest first."),
    json_out: bool = Option(False, "--json", help="Print JSON."),
) -> None:
    """List sessions, newest first."""
    rows = service().sessions(repo, limit, since=since, until=until)
    if json_out:
        print_json(rows)
        return
    if not rows:
        bounds = [f"for repo {repo}" if repo else "", f"since {since}" if since else "",
                  f"until {until}" if until else ""]
        echo(" ".join(["no sessions found", *(b for b in bounds if b)]))
        return
    shown = [r.get("short_id") or r["session_id"][:8] for r in rows]
    id_width = max(map(len, shown))
    agent_width = max(8, *(len(r.get("agent") or "claude") for r in rows))
    for r, short in zip(rows, shown):
        label = (r["title"] or r["first_prompt"] or "").replace("\n", " ")
        mark = SOURCE_MARKS.get(r.get("source") or "", "")
        cost = r.get("cost_usd")
        usd = ("?" if r.get("api_calls") else "-") if cost is None else f"${cost:,.2f}"
        echo(f"{short:{id_width}}  {(r['started_at'] or '')[:16]:16}  "
             f"{r.get('agent') or 'claude':{agent_width}} "
             f"{str(r['repo_name'] or '-')[:22]:22} {r['turn_count']:>3} {noun(r['turn_count'] or 0, 'turn'):5} {usd:>8}  "
             f"{mark + ' ' if mark else ''}{label[:70]}")


# What the files that hold no session are (a scan reads them, nothing lists them).
NOT_SESSIONS = "empty, summaries only, or a subagent's whose session is gone"

# How a session whose transcript is gone is marked in text output (`sessions`, `search`).
SOURCE_MARKS = {"archive": "[archived]", "history": "[prompts only]"}
SOURCE_NOTES = {
    "archive": "transcript deleted by Claude Code: read from jacked's archive",
    "history": "prompt-only: the transcript was deleted before jacked saw it; prompts from history.jsonl",
}


def turns_cmd(
    session: str = Argument(..., help="Session id, unique prefix, or transcript path."),
    json_out: bool = Option(False, "--json", help="Print JSON."),
) -> None:
    """Every turn of a session: prompt, tool calls, metrics."""
    data = service().turns(session)
    if json_out:
        print_json(data)
        return
    for t in data["turns"]:
        echo(f"#{t['index']:<3} {_one_line(t['prompt'])[:80]}")
        echo(f"     {_metrics_line(t)}")


def export_cmd(
    sessions: list[str] | None = Argument(None, help="Session ids or prefixes (default: all)."),
) -> None:
    """Export sessions with their turns as JSON Lines (one line per session)."""
    for row in service().export_iter(sessions or None):  # streamed: one session in memory at a time
        print_jsonl(row)


def show_cmd(
    session: str = Argument(..., help="Session id, unique prefix, or transcript path."),
    turn: int | None = Option(None, "--turn", help="Only this turn."),
) -> None:
    """A readable view of a session: prompts, tool calls by sequence, parallel batches, errors."""
    row, data = service().session_view(session)
    turns = [t for t in data["turns"] if turn is None or t["index"] == turn]
    if turn is not None and not turns:
        raise CliError(f"session {data['session_id'][:8]} has no turn {turn} (it has {counted(len(data['turns']), 'turn')})")
    console = stdout_console()
    console.print(render_header(row, data))
    subs = {a["tool_use_id"]: a for a in data["subagents"] if a["tool_use_id"]}
    before: dict[str, Any] | None = None
    for t in turns:
        console.print(render_turn(t, subs, before))
        before = t.get("snapshot") or before


def _one_line(text: str | None) -> str:
    return (text or "").replace("\n", " ").strip()


def _metrics_line(t: Mapping[str, Any]) -> str:
    m = t["metrics"]
    parts = [counted(m.get("tool_call_count", 0), "call"), counted(m.get("tool_error_count", 0), "error")]
    if m.get("files_read"):
        parts.append(f"{len(m['files_read'])} read")
    if m.get("files_written"):
        parts.append(f"{len(m['files_written'])} written")
    if m.get("files_modified"):
        parts.append(f"{len(m['files_modified'])} edited")
    if m.get("lines_added") or m.get("lines_removed"):
        parts.append(f"+{m.get('lines_added', 0)}/-{m.get('lines_removed', 0)} lines")
    if m.get("bash_commands"):
        parts.append(f"{len(m['bash_commands'])} bash ({m.get('bash_error_count', 0)} failed)")
    tokens = (m.get("input_tokens", 0) + m.get("cache_read_tokens", 0) + m.get("cache_creation_tokens", 0))
    if tokens or m.get("output_tokens"):
        parts.append(f"{tokens} in / {m.get('output_tokens', 0)} out tokens")
    cost = (t.get("usage") or {}).get("cost_usd")
    if cost is not None and (t.get("usage") or {}).get("api_calls"):
        parts.append(f"${cost:,.2f} with its subagents" if len(t["usage"].get("by_role") or {}) > 1 else f"${cost:,.2f}")
    if t.get("duration_ms") is not None:
        approx = "~" if t.get("duration_source") == "timestamps" else ""
        parts.append(f"{approx}{t['duration_ms'] / 1000:.1f}s")
    return " · ".join(parts)


def render_header(row: dict[str, Any], data: dict[str, Any]) -> str:
    from rich.markup import escape

    from jacked.sources.registry import label_of  # here: every source's reader, ~60 ms to import

    title = row.get("title") or _one_line(row.get("first_prompt"))[:80] or "(untitled)"
    lines = [f"[bold]{escape(title)}[/bold]",
             f"[dim]{row.get('session_id')} · {label_of(row.get('agent'))} · {row.get('repo_name') or '-'} "
             f"({row.get('cwd') or '?'}) · "
             f"branch {row.get('git_branch') or '-'} · {row.get('started_at') or '?'} → {row.get('ended_at') or '?'} · "
             f"v{row.get('version_first') or '?'} · {counted(row.get('turn_count') or 0, 'turn')}[/dim]"]
    note = SOURCE_NOTES.get(row.get("source") or "")
    if note:
        lines.append(f"[yellow]{escape(note)}[/yellow]")
    if row.get("decision_count") or row.get("feedback_count"):
        lines.append(f"[magenta]{row.get('decision_count') or 0} decisions[/magenta] · "
                     f"[red]{row.get('feedback_count') or 0} feedback[/red] [dim](rejections, interruptions, "
                     f"corrections)[/dim]")
    if data.get("plan"):
        lines.append(f"[magenta]plan ({data.get('plan_source')}):[/magenta] {escape(_one_line(data['plan'])[:160])}")
    for x in data.get("texts", []):
        lines.append(f"[cyan]{x['kind']}:[/cyan] {escape(_one_line(x['text'])[:160])}")
    return "\n".join(lines) + "\n"


SNAPSHOT_FIELDS = ("cwd", "git_branch", "version", "model", "permission_mode")


def render_turn(t: dict[str, Any], subs: dict[str, dict[str, Any]], before: dict[str, Any] | None = None) -> str:
    """One turn: the state it started from (when it changed since `before`, the snapshot of the turn
    shown before it), the prompt, its tool calls grouped by sequence with parallel batches marked,
    then what was decided and what the user said about the work."""
    from rich.markup import escape

    out = [f"[bold green]── turn {t['index']}[/bold green] [dim]{t.get('started_at') or ''}[/dim]"]
    snap = t.get("snapshot")
    if snap and (before is None or any(snap.get(k) != before.get(k) for k in SNAPSHOT_FIELDS)):
        state = " · ".join(f"{k.replace('_', ' ')} {snap[k]}" for k in SNAPSHOT_FIELDS
                           if snap.get(k) and (before is None or snap.get(k) != before.get(k)))
        if state:
            out.append(f"  [dim]state: {escape(state)}[/dim]")
    prompt = t["prompt"] if t["prompt"] is not None else "(assistant lines before the first prompt)"
    out.append(f"[bold]> [/bold]{escape(_one_line(prompt)[:300])}")
    for c in t.get("context") or []:  # the file or selection open in the IDE as it was sent
        out.append(f"  [dim]IDE: {escape(_one_line(c['text'])[:160])}[/dim]")
    groups: dict[int, list[dict[str, Any]]] = {}
    for inv in t["invocations"]:
        groups.setdefault(inv["sequence"], []).append(inv)
    for seq, invs in groups.items():
        parallel = len(invs) > 1
        head = f"  [yellow]{seq:>2} ∥ parallel ×{len(invs)}[/yellow]" if parallel else f"  [dim]{seq:>2}[/dim]"
        for j, inv in enumerate(invs):
            prefix = head if j == 0 else ("  [yellow]   ∥[/yellow]" if parallel else "    ")
            target = inv.get("command") or inv.get("file_path") or ""
            err = inv["is_error"]
            name = f"[red bold]{inv['tool_name']} ✗[/red bold]" if err else f"[cyan]{inv['tool_name']}[/cyan]"
            line = f"{prefix} {name} {escape(_one_line(target)[:110])}"
            if err and inv.get("result"):
                line += f"\n        [red]{escape(_one_line(inv['result'])[:160])}[/red]"
            sub = subs.get(inv["tool_use_id"])
            if sub:
                line += (f"\n        [magenta]subagent {sub.get('agent_type') or ''} {sub.get('agent_id') or ''}: "
                         f"{counted(sub.get('tool_call_count') or 0, 'call')}[/magenta]")
            out.append(line)
    for d in t.get("decisions") or []:
        out.append(f"  [magenta]◆ decided:[/magenta] {escape(_one_line(d.get('text'))[:240])}")
    for f in t.get("feedback") or []:
        out.append(f"  [red]✋ {escape(_one_line(f.get('text'))[:240])}[/red]")
    if t.get("assistant_text"):
        out.append(f"  [dim]⮑ {escape(_one_line(t['assistant_text'])[:200])}[/dim]")
    out.append(f"  [dim]{_metrics_line(t)}[/dim]\n")
    return "\n".join(out)


def register(app: typer.Typer) -> None:
    app.command("scan")(typed(scan_cmd))
    app.command("sessions")(typed(sessions_cmd))
    app.command("turns")(typed(turns_cmd))
    app.command("export")(typed(export_cmd))
    app.command("show")(typed(show_cmd))
