"""`jacked stats`: argument parsing and output formatting only (see `jacked.query.stats`)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from jacked.surfaces.cli.common import print_json, service
from jacked.surfaces.cli.params import Option, echo, typed
from jacked.util.text import counted

if TYPE_CHECKING:
    import typer


def stats_cmd(
    repo: str | None = Option(None, "--repo", help="Only sessions of this repo (name or cwd)."),
    since: str | None = Option(None, "--since", help="Only turns since: 7d, 2w, 3m, 1y or a date."),
    session: str | None = Option(None, "--session", help="Only this session (id, prefix or path)."),
    tool: str | None = Option(None, "--tool", help="Detail for one tool: position, before / after."),
    subagents: bool = Option(False, "--subagents", help="Count the subagents' own tool calls too."),
    top: int = Option(10, "-n", "--top", min=1, help="Rows in each top list."),
    no_scan: bool = Option(False, "--no-scan", help="Answer from the catalog as it is (skip the "
                           "check for new transcript lines)."),
    json_out: bool = Option(False, "--json", help="Print JSON."),
) -> None:
    """Tool use, errors, files, commands, tokens and tool patterns, from the catalog."""
    from jacked.query.stats import StatsQuery

    data = service(scan=not no_scan).stats(StatsQuery(repo=repo, since=since, tool=tool, include_subagents=subagents,
                                                      top=top), session=session or None)
    if json_out:
        print_json(data)
    else:
        echo(render(data))


def render(d: Mapping[str, Any]) -> str:
    """The stats as a few readable blocks."""
    out = [f"{counted(d['sessions'], 'session')}, {counted(d['turns'], 'turn')}, {counted(d['tool_calls'], 'tool call')} "
           f"({d['tool_error_count']} failed)",
           f"tokens {d['tokens']['input']:,} in, {d['tokens']['cache_creation']:,} cache writes, "
           f"{d['tokens']['cache_read']:,} cache reads, {d['tokens']['output']:,} out; cost "
           + ("unknown" if d['tokens']['cost_usd'] is None else f"${d['tokens']['cost_usd']:,.2f}")]
    if d["time"]["turn_ms_total"]:
        med = d["time"]["turn_ms_median"]
        out.append(f"time in turns {d['time']['turn_ms_total'] / 3.6e6:.1f} h"
                   + (f", median turn {med / 1000:.0f} s" if med is not None else "")
                   + f"; {d['time']['first'] or '?'} → {d['time']['last'] or '?'}")
    out.append("\ntools (calls, failed, error rate):")
    for name, calls in list(d["tool_usage"].items())[:15]:
        out.append(f"  {name:<18} {calls:>6} {d['tool_errors'].get(name, 0):>5}  {d['error_rates'][name] * 100:5.1f}%")
    if d["sequences"]:
        out.append("\ncommon sequences within turns:")
        for s in d["sequences"]:
            out.append(f"  {s['count']:>5}  {' → '.join(s['tools'])}")
    p = d["parallel"]
    if p["batches"]:
        sizes = ", ".join(f"{k}×{v}" for k, v in p["sizes"].items())
        out.append(f"\nparallel batches: {p['batches']} (sizes {sizes})")
        for t in p["tool_sets"][:5]:
            out.append(f"  {t['count']:>5}  {' ∥ '.join(t['tools'])}")
    for key, label in (("files_read", "files most read"), ("files_edited", "files most edited")):
        if d[key]:
            out.append(f"\n{label}:")
            out += [f"  {f['count']:>5}  {f['path']}" for f in d[key]]
    if d["bash_commands"]:
        out.append("\nbash commands most run (runs, failed):")
        out += [f"  {c['count']:>5} {c['failed']:>4}  {c['command'][:100]}" for c in d["bash_commands"]]
    if d["bash_failing"]:
        out.append("\nbash commands most failing (failed / runs):")
        out += [f"  {c['failed']:>5}/{c['count']:<4} {c['command'][:100]}" for c in d["bash_failing"]]
    fb = d.get("feedback") or {}
    if fb.get("by_tool") or fb.get("corrections"):
        out.append(f"\nstopped by the user: {fb['rejections']} calls refused, {fb['interruptions']} interruptions, "
                   f"{fb['corrections']} corrections")
        out.append("  tool               refused  interrupted   of calls")
        for r in fb["by_tool"][:10]:
            rates = "/".join(f"{x * 100:.1f}%" if x is not None else "-"
                             for x in (r["rejection_rate"], r["interruption_rate"]))
            out.append(f"  {r['tool']:<18} {r['rejected']:>7} {r['interrupted']:>12}   {r['calls']:>5} ({rates})")
        out.append("  repo               refused/calls  interrupted/turns  corrections")
        for r in fb["by_repo"]:
            if r["rejected"] or r["interrupted"] or r["corrections"]:
                out.append(f"  {str(r['repo'])[:18]:<18} {r['rejected']:>5}/{r['tool_calls']:<7} "
                           f"{r['interrupted']:>8}/{r['turns']:<8} {r['corrections']:>6}")
    t = d.get("tool_detail")
    if t:
        out.append(f"\n{t['tool']}: {t['calls']} calls in {t['turns_using']} turns, {t['errors']} failed; "
                   f"position {t['position']}, mean relative position {t['mean_relative_position']}")
        out.append("  preceded by: " + ", ".join(f"{k} {v}" for k, v in t["preceded_by"].items()))
        out.append("  followed by: " + ", ".join(f"{k} {v}" for k, v in t["followed_by"].items()))
    return "\n".join(out)


def register(app: typer.Typer) -> None:
    app.command("stats")(typed(stats_cmd))
