"""`jacked daemon start | stop | status | run`: the process that owns the index (see
`jacked.surfaces.daemon`)."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

import typer

from jacked.surfaces.cli.common import STATE, CliError, print_json, settings

if TYPE_CHECKING:
    from jacked.surfaces.daemon.client import DaemonClient
    from jacked.surfaces.daemon.protocol import Where

daemon_app = typer.Typer(help="The per-user daemon that holds the index and answers every jacked command.",
                         no_args_is_help=True)


def _client() -> tuple[Where, DaemonClient]:
    from jacked.surfaces.daemon.client import DaemonClient
    from jacked.surfaces.daemon.protocol import DaemonPaths, locate

    where = locate(STATE.claude_dir)
    return where, DaemonClient(DaemonPaths(where.home))


@daemon_app.command("start")
def start_cmd() -> None:
    """Start the daemon in the background (every command starts it when needed, too)."""
    from jacked.surfaces.daemon.client import DaemonUnavailable, connect

    where, client = _client()
    try:
        connect(where)
    except DaemonUnavailable as e:
        raise CliError(str(e)) from e
    status = client.status() or {}
    typer.echo(f"jacked daemon running (pid {status.get('pid')}) at {status.get('socket')}")


@daemon_app.command("stop")
def stop_cmd() -> None:
    """Stop the daemon (it finishes the request it is on first)."""
    _, client = _client()
    if not client.stop():
        typer.echo("no jacked daemon runs")
        return
    typer.echo("jacked daemon stopped")


@daemon_app.command("status")
def status_cmd(json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Whether the daemon runs: pid, socket, version, uptime, memory, queued writes, index state."""
    _, client = _client()
    status = client.status()
    if status is None:
        raise CliError(f"no jacked daemon runs for {client.paths.home} (`jacked daemon start` starts one)")
    status["uptime_s"] = status.get("uptime_s")
    if json_out:
        print_json(status)
        return
    job = status.get("job") or {}
    doing = f"busy: {job.get('method')} for {time.time() - float(job.get('started') or time.time()):.0f} s" \
        if job else "idle"
    optimizing = (status.get("index") or {}).get("optimizing")
    if optimizing:
        doing += f" · optimising the index for {time.time() - float(optimizing['started']):.0f} s (pid {optimizing['pid']})"
    typer.echo(f"jacked daemon {status.get('version')} · pid {status.get('pid')} · up {status.get('uptime_s')} s · "
               f"{status.get('rss_mb')} MB · {status.get('queued_writes')} queued writes · {doing}")
    typer.echo(f"  socket {status.get('socket')}")


@daemon_app.command("run")
def run_cmd() -> None:
    """Run the daemon in the foreground (for systemd or launchd; Ctrl-C or SIGTERM stops it)."""
    from jacked.surfaces.daemon.server import serve

    code = serve(settings(), STATE.claude_dir)
    if code:
        raise CliError("a daemon already runs for this JACKED_HOME (`jacked daemon status`)")


def register(app: typer.Typer) -> None:
    app.add_typer(daemon_app, name="daemon")
