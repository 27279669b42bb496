"""`jacked usage`: argument parsing and output formatting only (see `jacked.query.usage`)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import typer

from jacked.surfaces.cli.common import print_json, service

GROUP_HELP = "Rows by: day, week, month, session, model, agent (claude, codex, …), role (main, subagent, " \
             "teammate, compaction) or repo."


def usage_cmd(
    by: str = typer.Option("day", "--by", help=GROUP_HELP),
    since: str | None = typer.Option(None, "--since", help="Only responses since: 7d, 2w, 3m, 1y or a date."),
    until: str | None = typer.Option(None, "--until", help="Only responses before this time; a date "
                                        "(YYYY-MM-DD) includes that whole day."),
    repo: str | None = typer.Option(None, "--repo", help="Only sessions of this repo (name or cwd)."),
    session: str | None = typer.Option(None, "--session", help="Only this session (id, prefix or path)."),
    agent: str | None = typer.Option(None, "--agent", help="Only sessions of this coding agent (claude, codex, "
                                        "gemini, opencode)."),
    no_scan: bool = typer.Option(False, "--no-scan", help="Answer from the catalog as it is (skip the "
                                 "check for new transcript lines)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Tokens and cost (USD) of every API response: main chain, subagents, teammates, compactions."""
    from jacked.query.usage import UsageQuery

    data = service(scan=not no_scan).usage(UsageQuery(by=by.strip().lower(), since=since, until=until, repo=repo,
                                                      agent=agent), session=session or None)
    if json_out:
        print_json(data)
    else:
        typer.echo(render(data))


def _usd(v: float | None) -> str:
    return "unknown" if v is None else f"${v:,.2f}"


def _label(by: str, row: dict[str, Any]) -> str:
    key = row.get(by)
    if by == "session":
        title = (row.get("title") or "").replace("\n", " ")
        return f"{(key or '?')[:8]}  {row.get('repo_name') or '-'}  {title[:40]}"
    return str(key) if key else "-"


def render(d: Mapping[str, Any]) -> str:
    """A table: one row per key, then the total; a cost left unknown names the unpriced models."""
    by = d["by"]
    head = f"{by:<40} {'calls':>7} {'input':>11} {'output':>11} {'cache write':>12} {'cache read':>13} {'cost':>11}"
    lines = [head, "-" * len(head)]

    def line(label: str, r: dict[str, Any]) -> str:
        t = r["tokens"]
        return (f"{label[:40]:<40} {r['api_calls']:>7,} {t['input']:>11,} {t['output']:>11,} "
                f"{t['cache_creation']:>12,} {t['cache_read']:>13,} {_usd(r['cost_usd']):>11}")

    for r in d["rows"]:
        lines.append(line(_label(by, r), r))
    lines.append("-" * len(head))
    lines.append(line("total", d["total"]))
    unpriced = d["total"]["unpriced_models"]
    if unpriced:
        lines.append(f"cost unknown: no price for {', '.join(unpriced)} (add it under \"prices\" in jacked.json); "
                     f"priced part {_usd(d['total']['cost_usd_known'])}")
    p = d["prices"]
    lines.append(f"prices as of {p['as_of']}" + (f", overridden: {', '.join(p['overridden'])}" if p["overridden"]
                                                  else "") + "; `jacked usage --json` has the split by role")
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    app.command("usage")(usage_cmd)
