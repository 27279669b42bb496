"""`jacked install` / `jacked uninstall`: argument parsing and output only (the work is jacked.surfaces.install)."""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import typer

from jacked.surfaces.cli.common import CliError, print_json, settings, warn
from jacked.util.text import counted

if TYPE_CHECKING:
    from jacked.surfaces.install import InstallReport


def _print(report: InstallReport, json_out: bool, verb: str) -> None:
    if json_out:
        print_json(report.to_json())
        return
    for p in report.changed:
        action = report.actions.get(p)
        typer.echo(f"{action or verb}: {p}{ACTION_NOTES.get(action or '', '')}")
    for p in report.unchanged:
        typer.echo(f"already up to date: {p}")
    for b in report.backups:
        typer.echo(f"backup: {b}")
    if report.backups_removed:
        typer.echo(f"deleted {counted(len(report.backups_removed), 'backup')} jacked made, no longer needed "
                   "(they hold nothing the restored files lack)")
    for n in report.notes:
        typer.echo(n)
    if not (report.changed or report.unchanged):
        typer.echo("nothing to do")


# What uninstall did to a file, said so that a restored settings file does not read as deleted.
ACTION_NOTES = {"restored": " (put back as it was before `jacked install`)",
                "removed": " (`jacked install` had created it)",
                "edited": " (jacked's entries taken out; your changes since install kept)"}


def install_cmd(
    no_hooks: bool = typer.Option(False, "--no-hooks", help="Do not add the Stop/SessionEnd indexing hooks."),
    no_skill: bool = typer.Option(False, "--no-skill", help="Do not install the skill."),
    recall: bool = typer.Option(False, "--recall", help="Also add the recall hooks: a brief of past sessions at "
                                                        "SessionStart, and on each prompt the past sessions it "
                                                        "refers to (or nothing)."),
    mcp: bool = typer.Option(False, "--mcp", help="Also register `jacked mcp` as a user-scope MCP server."),
    agent: str | None = typer.Option(None, "--agent", help="Instead: register `jacked mcp` with another agent "
                                        "(codex, gemini, opencode or cursor) in its own MCP configuration."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Install the jacked skill and hooks into the Claude directory (idempotent, with backups)."""
    from jacked.surfaces.install import install, install_for_agent

    if agent:
        path = install_for_agent(agent)
        if json_out:
            print_json({"agent": agent, "changed": [str(path)]})
        else:
            typer.echo(f"registered `jacked mcp` with {agent}: {path}")
        return
    s = settings()
    report = install(s.claude_dir, hooks=not no_hooks, skill=not no_skill, recall=recall, mcp=mcp)
    _print(report, json_out, "installed")
    if s.qdrant_api_key is not None and not json_out:
        warn(f"jacked: {s.config_path} holds your Qdrant API key: keep it private (chmod 600), never commit it")


def uninstall_cmd(
    agent: str | None = typer.Option(None, "--agent", help="Instead: take `jacked mcp` out of that agent's "
                                        "MCP configuration (codex, gemini, opencode or cursor)."),
    purge: bool = typer.Option(False, "--purge", help="Then also delete all jacked data: JACKED_HOME (catalog, "
                               "index, archive, logs). Your transcripts are not touched."),
    yes: bool = typer.Option(False, "--yes", "-y", help="With --purge: do not ask for confirmation."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Remove exactly what `jacked install` added (skill, hooks, MCP entry); your data stays unless --purge."""
    from jacked.surfaces.install import uninstall, uninstall_for_agent

    if agent:
        path = uninstall_for_agent(agent)
        if json_out:
            print_json({"agent": agent, "changed": [str(path)] if path else []})
        else:
            typer.echo(f"removed `jacked mcp` from {agent}: {path}" if path else f"nothing to remove for {agent}")
        return

    s = settings()
    nothing_to_purge = purge and s.home is not None and not s.home.exists()
    if nothing_to_purge:
        purge = False
    if purge:
        from jacked.service import purge_target

        home = purge_target(s)  # a folder that is not jacked's own is refused before anything changes
        if not yes:
            if not sys.stdin.isatty():
                raise CliError(f"uninstall --purge deletes {home} and everything jacked kept: add --yes to confirm")
            typer.confirm(f"Delete {home} (catalog, index, archive of your transcripts)?", abort=True)
    report = uninstall(s.claude_dir)
    if not purge:
        _print(report, json_out, "removed")
        if nothing_to_purge and not json_out:
            typer.echo(f"nothing to purge: {s.home} does not exist")
        return
    from jacked.service import Jacked
    from jacked.surfaces.daemon.client import DaemonClient
    from jacked.surfaces.daemon.protocol import DaemonPaths

    DaemonClient(DaemonPaths(s.home)).stop()  # the daemon's files are in the home: it goes first
    purged = Jacked(s, scan=False).purge()
    if json_out:
        print_json({**report.to_json(), "purged": purged})
        return
    _print(report, json_out, "removed")
    typer.echo(f"purged: {purged['home']} ({purged['removed_bytes']:,} bytes)")


def register(app: typer.Typer) -> None:
    app.command("install")(install_cmd)
    app.command("uninstall")(uninstall_cmd)
