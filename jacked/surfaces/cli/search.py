"""`jacked search`: argument parsing and output formatting only."""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jacked.surfaces.cli.common import CliError, print_json, print_jsonl, service
from jacked.surfaces.cli.params import Argument, Option, echo, typed

if TYPE_CHECKING:
    import typer


def search_cmd(
    query: str | None = Argument(None, help="What to look for (words, a paraphrase, an error message)."),
    scope: str | None = Option(None, "--scope", help="sessions | turns | messages | all (default all)."),
    mine: bool = Option(False, "--mine", help="Only your own sessions."),
    limit: int = Option(10, "-n", "--limit", help="How many sessions."),
    batch: Path | None = Option(None, "--batch", help="One query per line of FILE; JSON Lines out."),
    json_out: bool = Option(False, "--json", help="Print JSON."),
    **filters: Any,
) -> None:
    """Find past sessions: hybrid semantic + keyword search, grouped by session."""
    from jacked.query.options import SearchOptions, current_repo_name

    if filters.get("user") and mine:
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
    opts = SearchOptions(scope=scope, mine=mine, limit=limit, current_repo=current_repo_name(),
                         filters={k: v for k, v in filters.items() if v})
    results = service(scan=False).search_many(queries, opts)  # the index answers as it is
    if batch is not None:
        for r in results:
            if json_out:
                print_jsonl(r)
            else:
                echo(f"# {r['query']}")
                _print_human(r)
        return
    if json_out:
        print_json(results[0])
    else:
        _print_human(results[0])


def _with_filter_options(command: Callable[..., None]) -> Callable[..., None]:
    """`command` with one `--name` option per entry of the search-filter table (jacked.query.filters)."""
    from jacked.query.filters import FILTERS

    signature = inspect.signature(command, eval_str=True)
    fixed = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    options = [inspect.Parameter(spec.name, inspect.Parameter.KEYWORD_ONLY,
                                 annotation=list[str] | None if spec.many else str | None,
                                 default=Option(None, *spec.flags, help=spec.help)) for spec in FILTERS]

    @functools.wraps(command)
    def with_filters(**kwargs: Any) -> None:
        command(**kwargs)

    with_filters.__signature__ = signature.replace(parameters=fixed + options)  # type: ignore[attr-defined]  # typer reads it
    return with_filters


def _print_human(result: Mapping[str, Any]) -> None:
    from jacked.surfaces.cli.history import SOURCE_MARKS

    when = result.get("time_filter")
    if when and when.get("applied"):
        from datetime import datetime, timedelta

        until = datetime.fromisoformat(when["until"])
        last_day = until - timedelta(days=1) if until.time() == datetime.min.time() else until  # until is exclusive
        echo(f"(\"{when['phrase']}\" read as {when['since'][:10]} to {last_day.date().isoformat()}; "
             "give --since to choose the dates yourself)")
    if not result["results"]:
        echo("no matching sessions")
        return
    if result.get("confidence") == "low":
        echo("(nothing matched well: these are the closest sessions, likely not the one you mean)")
    for i, r in enumerate(result["results"], 1):
        label = r.get("title") or r.get("first_prompt") or ""
        mark = SOURCE_MARKS.get(r.get("source") or "", "")
        exact = "= " if r.get("exact") else ""
        echo(f"{i:>2}. {exact}{r['score']:.4f}  {r.get('agent') or 'claude'}  {r.get('repo_name') or '-'}  {r['age']}  "
             f"{r.get('user_name') or ''}  {r.get('short_id') or r['session_id'][:8]}  {mark + ' ' if mark else ''}{label[:80]}")
        for m in r["matches"]:
            echo(f"      [{m['content_type']}] {m['text'][:160]}")


def search_command() -> Callable[..., None]:
    """What `jacked search` runs, whichever parser reads its arguments (jacked.surfaces.cli.fast):
    made when asked, from the filter table as it is then."""
    return _with_filter_options(search_cmd)


def register(app: typer.Typer) -> None:
    app.command("search")(typed(search_command()))
