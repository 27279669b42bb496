"""`jacked search`: argument parsing and output formatting only."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from jacked.surfaces.cli.common import CliError, print_json, print_jsonl, service


def search_cmd(
    query: Optional[str] = typer.Argument(None, help="What to look for (words, a paraphrase, an error message)."),
    types: Optional[list[str]] = typer.Option(None, "--type", "-t", help="Only these content types (repeatable)."),
    scope: Optional[str] = typer.Option(None, "--scope", help="sessions | turns | messages | all (default all)."),
    agent_type: Optional[str] = typer.Option(None, "--agent-type", help="Only subagent units of this agent type."),
    repo: Optional[str] = typer.Option(None, "--repo", help="Only sessions of this repo."),
    user: Optional[str] = typer.Option(None, "--user", help="Only this user's sessions."),
    mine: bool = typer.Option(False, "--mine", help="Only your own sessions."),
    since: Optional[str] = typer.Option(None, "--since", help="Only units since: 7d, 2w, 3m, 1y or a date."),
    limit: int = typer.Option(10, "-n", "--limit", help="How many sessions."),
    batch: Optional[Path] = typer.Option(None, "--batch", help="One query per line of FILE; JSON Lines out."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Find past sessions: hybrid semantic + keyword search, grouped by session."""
    from jacked.query.search import SearchOptions, current_repo_name

    if user and mine:
        raise CliError("--user and --mine exclude each other")
    if batch is not None:
        try:
            queries = [ln for ln in batch.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
        except OSError as e:
            raise CliError(f"cannot read --batch file {batch}: {e.strerror or e}") from e
    elif query is not None:
        queries = [query]
    else:
        raise CliError("give a query, or --batch FILE")
    opts = SearchOptions(types=types or None, scope=scope, agent_type=agent_type, repo=repo, user=user, mine=mine, since=since,
                         limit=limit, current_repo=current_repo_name())
    results = service(scan=False).search_many(queries, opts)  # the index answers as it is
    if batch is not None:
        for r in results:
            if json_out:
                print_jsonl(r)
            else:
                typer.echo(f"# {r['query']}")
                _print_human(r)
        return
    if json_out:
        print_json(results[0])
    else:
        _print_human(results[0])


def _print_human(result: dict[str, Any]) -> None:
    from jacked.surfaces.cli.history import SOURCE_MARKS

    if not result["results"]:
        typer.echo("no matching sessions")
        return
    if result.get("confidence") == "low":
        typer.echo("(nothing matched well: these are the closest sessions, likely not the one you mean)")
    for i, r in enumerate(result["results"], 1):
        label = r.get("title") or r.get("first_prompt") or ""
        mark = SOURCE_MARKS.get(r.get("source") or "", "")
        exact = "= " if r.get("exact") else ""
        typer.echo(f"{i:>2}. {exact}{r['score']:.4f}  {r.get('repo_name') or '-'}  {r['age']}  "
                   f"{r.get('user_name') or ''}  {r['session_id'][:8]}  {mark + ' ' if mark else ''}{label[:80]}")
        for m in r["matches"]:
            typer.echo(f"      [{m['content_type']}] {m['text'][:160]}")


def register(app: typer.Typer) -> None:
    app.command("search")(search_cmd)
