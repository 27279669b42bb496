"""`jacked forget`: argument parsing and output only (the work is `Jacked.forget`, jacked.index.forget)."""
from __future__ import annotations

import sys
import time

import typer

from jacked.surfaces.cli.common import CliError, print_json, service, warn


def forget_cmd(
    sessions: list[str] | None = typer.Argument(None, help="Session ids, unique prefixes or transcript paths."),
    repo: str | None = typer.Option(None, "--repo", help="Every session of this repo (its name or its folder)."),
    before: str | None = typer.Option(None, "--before", help="Sessions last active before this date (2025-06-30) "
                                         "or older than this age (3m, 1y); with --repo, that repo's only."),
    list_: bool = typer.Option(False, "--list", help="Show the sessions forgotten so far instead."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Forget sessions: remove them from the catalog, the index and the archive, keep a tombstone so
    no later backfill brings them back, and compact so no old bytes of them remain."""
    jk = service()
    if list_:
        rows = jk.forgotten()
        if json_out:
            print_json({"forgotten": rows})
            return
        for r in rows:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(r["forgotten_at"] or 0))
            typer.echo(f"{r['session_id']}  {r['reason']:9s} {when}")
        if not rows:
            typer.echo("no session forgotten")
        return
    if not sessions and not repo and not before:
        raise CliError("name the sessions to forget: session ids, --repo REPO or --before DATE (or --list)")
    if not yes:
        if not sys.stdin.isatty():
            raise CliError("forget deletes sessions from jacked's memory for good: add --yes to confirm")
        what = ", ".join(sessions) if sessions else " and ".join(
            x for x in (f"every session of {repo}" if repo else "", f"sessions before {before}" if before else "") if x)
        typer.confirm(f"Forget {what}? jacked will not keep them again", abort=True)
    report = jk.forget(sessions or None, repo=repo, before=before)
    if json_out:
        print_json(report.to_json())
    else:
        n = len(report.sessions)
        typer.echo(f"forgot {n} session{'s' if n != 1 else ''}: {report.points_deleted} points, "
                   f"{report.archive_files} archived files; compacted in {report.seconds:.1f}s")
        for sid in report.sessions:
            typer.echo(f"  {sid}")
        if report.already:
            typer.echo(f"already forgotten: {', '.join(report.already)}")
    for sid, others in report.repeated_by.items():
        warn(f"jacked: {sid[:8]} shares turns with {', '.join(o[:8] for o in others)} (a resume or fork): "
             "forget those too to remove that text")
    for e in report.errors:
        warn(f"jacked: {e}")
    if report.errors:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("forget")(forget_cmd)
