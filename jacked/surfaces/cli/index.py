"""`jacked backfill | index | cleardb | status`: argument parsing and output formatting only."""
from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from jacked.surfaces.cli.common import CliError, print_json, progress_bar, require_projects, service, settings, warn
from jacked.surfaces.cli.history import NOT_SESSIONS
from jacked.surfaces.cli.params import Argument, Option, echo, typed
from jacked.util.text import counted

if TYPE_CHECKING:
    import typer


def backfill_cmd(
    rebuild: bool = Option(False, "--rebuild", help="Drop the index and build it again (e.g. after a model change)."),
    repo: str | None = Option(None, "--repo", help="Only sessions of this repo."),
    json_out: bool = Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Index every session of the Claude directory (incremental; only changed units are embedded)."""
    jk = service()
    require_projects(jk.settings)
    with progress_bar(not json_out) as bar:
        report = jk.backfill(rebuild=rebuild, repo=repo, progress=bar)
    if json_out:
        print_json(report.to_json())
        return
    echo(f"{counted(report.sessions_indexed, 'session')} indexed, {report.sessions_unchanged} unchanged; "
         f"{counted(report.points_written, 'point')} written, {report.points_unchanged} unchanged, "
         f"{report.points_deleted} deleted; {counted(report.texts_embedded, 'text')} embedded; "
         f"{counted(report.lines_skipped, 'line')} skipped; {report.seconds:.1f}s")
    passed = report.to_json()
    skipped = [f"{passed['sessions_forgotten']} forgotten (`jacked forget --list`)" if passed["sessions_forgotten"] else "",
               f"{counted(report.files_without_session, 'file')} holding no session ({NOT_SESSIONS})"
               if report.files_without_session else "",
               f"{counted(len(report.errors), 'file')} not readable" if report.errors else ""]
    if any(skipped):
        echo("  passed over: " + ", ".join(s for s in skipped if s))
    for e in jk.unsaid(report.errors):
        warn(f"skipped: {e}")


def index_cmd(
    target: str | None = Argument(None, help="Session id, prefix or transcript path (default: all)."),
    hook: bool = Option(False, "--hook", help="Read Claude Code's hook JSON on stdin; never fails."),
    json_out: bool = Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Index one session now (or, with --hook, the session a Claude Code hook names)."""
    from jacked.surfaces import hook as hook_lib

    if hook:
        import typer

        raise typer.Exit(hook_lib.run_hook(sys.stdin.read(), settings))
    report = service(scan=False).index(target)
    if json_out:
        print_json(report.to_json())
    else:
        echo(f"{counted(report.sessions_indexed, 'session')} indexed; {counted(report.points_written, 'point')} "
             f"written, {report.points_deleted} deleted; {counted(report.texts_embedded, 'text')} embedded")


def cleardb_cmd(yes: bool = Option(False, "--yes", "-y", help="Do not ask for confirmation.")) -> None:
    """Delete your points and index state (other users' points stay); the next backfill re-indexes."""
    jk = service()
    user = jk.settings.user_name
    if not yes:
        if not sys.stdin.isatty():
            raise CliError("cleardb deletes your indexed points: add --yes to confirm")
        import typer

        typer.confirm(f"Delete every point of user {user!r}?", abort=True)
    echo(f"deleted {jk.cleardb()} points of {user}")


def status_cmd(json_out: bool = Option(False, "--json", help="Print JSON.")) -> None:
    """What the index holds: backend, model, points by type and user, sessions."""
    data = service(scan=False).status()
    if json_out:
        print_json(data)
        return
    echo(f"backend {data['backend']} · model {data['embedding_model']} · {data['points']} points · "
         f"{data['sessions']} sessions ({data['sessions_indexed']} indexed)")
    _print_backfill(data)
    by_source = data.get("sessions_by_source") or {}
    echo(f"  sessions: {by_source.get('transcript', 0)} full, {by_source.get('archive', 0)} archived-only "
         f"(transcript deleted, kept in the archive), {by_source.get('history', 0)} prompt-only "
         f"(from history.jsonl)")
    sources = data.get("sources") or []
    width = max((len(src["label"]) for src in sources), default=0)
    for src in sources:
        state = ("off (disabled_sources)" if not src["enabled"] else "read" if src["found"] else "not found")
        echo(f"  {src['label']:{width}s} {src['sessions']:6d} sessions · {state} · "
             f"{', '.join(src.get('roots') or [str(src['root'])])}")
    for k, v in data["points_by_type"].items():
        echo(f"  {k:20s} {v}")
    for k, v in data["points_by_user"].items():
        echo(f"  user {k:15s} {v}")


def _print_backfill(data: Mapping[str, Any]) -> None:
    """The two passes of a running or stopped backfill: done / total and an ETA."""
    bf = data.get("backfill") or {}
    pending = data.get("points_pending_dense") or 0
    if not bf.get("running") and not pending:
        return
    eta = lambda s: f", ~{s // 60}m{s % 60:02d}s left" if s is not None else ""  # noqa: E731  # a one-line formatter
    lex, dense = bf.get("lexical") or {}, bf.get("dense") or {}
    state = f"running (pid {bf.get('pid')}, {bf.get('phase')})" if bf.get("running") else "stopped: `jacked backfill` resumes it"
    echo(f"  backfill {state}")
    if bf.get("running") and bf.get("phase") == "glance":
        glance = bf.get("glance") or {}
        echo(f"    glance (findable by prompts): {glance.get('sessions_done', 0)}/"
             f"{glance.get('sessions_total', 0)} sessions{eta(glance.get('eta_seconds'))}")
    echo(f"    lexical pass (findable by words): {data.get('sessions_lexical', 0)}/{data['sessions']} sessions"
         f"{eta(lex.get('eta_seconds')) if bf.get('phase') in ('scan', 'lexical') else ''}")
    echo(f"    dense pass (semantic search): {pending} points waiting"
         f"{eta(dense.get('eta_seconds')) if bf.get('phase') == 'dense' else ''}")


def register(app: typer.Typer) -> None:
    app.command("backfill")(typed(backfill_cmd))
    app.command("index")(typed(index_cmd))
    app.command("cleardb")(typed(cleardb_cmd))
    app.command("status")(typed(status_cmd))
