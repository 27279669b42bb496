"""`jacked archive [--json]`: what the archive keeps (argument parsing and output only)."""
from __future__ import annotations

import typer

from jacked.surfaces.cli.common import print_json, service


def archive_cmd(
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    gone_only: bool = typer.Option(False, "--gone", help="Only files whose original Claude Code has deleted."),
) -> None:
    """List the compressed copies of transcripts, subagent files and plans (after bringing them up to date)."""
    data = service().archive()  # a scan archives whatever is new first
    if gone_only:
        data["files"] = [f for f in data["files"] if not f["original_present"]]
    if json_out:
        print_json(data)
        return
    t = data["totals"]
    typer.echo(f"{data['archive_dir']}: {t['files']} files, {t['bytes'] / 1e6:.1f} MB kept in "
               f"{t['stored_bytes'] / 1e6:.1f} MB; {t['originals_gone']} originals gone "
               f"({t['sessions_only_in_archive']} sessions now only in the archive)")
    for f in data["files"]:
        mark = "  " if f["original_present"] else "✗ "
        typer.echo(f"  {mark}{f['kind']:8s} {f['bytes']:>10,} → {f['stored_bytes']:>9,}  {f['path']}")


def register(app: typer.Typer) -> None:
    app.command("archive")(archive_cmd)
