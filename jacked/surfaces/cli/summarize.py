"""`jacked summarize`: argument parsing and output formatting only (see `jacked.index.summarize`)."""
from __future__ import annotations


import typer

from jacked.surfaces.cli.common import CliError, print_json, service, warn


def summarize_cmd(
    session: str | None = typer.Option(None, "--session", help="Only this session (id, prefix or path)."),
    all_sessions: bool = typer.Option(False, "--all", help="Every session of the catalog."),
    status: bool = typer.Option(False, "--status", help="Only report how many turns have a current summary."),
    force: bool = typer.Option(False, "--force", help="Summarize again even where a current summary exists."),
    llm: str | None = typer.Option(None, "--llm", help="Use a model: api (ANTHROPIC_API_KEY) or claude "
                                      "(claude -p). Default: the offline extractive summarizer."),
    model: str | None = typer.Option(None, "--model", help="The model for --llm."),
    batch: int = typer.Option(8, "--batch", min=5, max=10, help="Turns per model call (5-10)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Store turn and session summaries in the catalog (indexed by the next `jacked index`)."""
    jk = service()
    if status:
        data = jk.summary_status()
        if json_out:
            print_json(data)
        else:
            typer.echo(f"turns: {data['turns_summarized']}/{data['turns']} summarized, {data['turns_stale']} stale, "
                       f"{data['turns_missing']} missing; sessions: {data['sessions_summarized']}/{data['sessions']}; "
                       f"by summarizer: {data['by_summarizer']}")
        return
    if bool(session) == all_sessions:
        raise CliError("give --session S or --all (or --status)")
    report = jk.summarize([session] if session else None, force=force, llm=llm, model=model, batch=batch)
    for e in report.errors[:5]:
        warn(f"jacked: {e}")
    if json_out:
        print_json(report.to_json())
    else:
        typer.echo(f"{report.sessions} sessions: {report.turn_summaries_written} turn summaries written, "
                   f"{report.turn_summaries_kept} kept, {report.session_summaries_written} session summaries "
                   f"({report.summarizer}{' ' + report.model if report.model else ''}) in {report.seconds:.2f}s; "
                   f"run `jacked index` to index them")


def register(app: typer.Typer) -> None:
    app.command("summarize")(summarize_cmd)
