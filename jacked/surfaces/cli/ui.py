"""`jacked ui`: argument parsing and startup messages only (the work is jacked.surfaces.ui.server)."""
from __future__ import annotations

import secrets

import typer

from jacked.surfaces.cli.common import CliError, service, warn


def ui_cmd(
    port: int = typer.Option(8377, "--port", "-p", min=0, max=65535, help="Port to listen on (0: any free port)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind. Anything but loopback needs a token."),
    open_browser: bool = typer.Option(False, "--open", help="Open the page in the default browser."),
    token: str | None = typer.Option(None, "--token", help="Token every request must carry (generated and "
                                        "printed when --host is not local and none is given)."),
    no_scan: bool = typer.Option(False, "--no-scan", help="Serve the catalog as it is (skip the startup scan)."),
    request_timeout: float = typer.Option(10.0, "--request-timeout", min=0.1, max=3600,
                                          help="Seconds a client gets to send a request's headers, and again "
                                               "its body, before the connection is closed."),
) -> None:
    """A local web view of your sessions, turns, stats and retrieval (Ctrl-C stops it)."""
    from jacked.surfaces.ui.server import Limits, UiConfigError, is_loopback, make_server

    jk = service()
    s = jk.settings
    if not no_scan:
        if not jk.scannable():
            warn(f"jacked: no projects folder in {s.claude_dir} (set --claude-dir or CLAUDE_CONFIG_DIR)")
        jk.fresh()
        jk.close()
    if token is None and not is_loopback(host):
        token = secrets.token_urlsafe(24)
        warn("jacked: --host is not local, so every request needs this token (generated; pass --token to choose)")
    remote = None
    if hasattr(jk, "client"):  # the daemon's service: searches and retrieval go to it
        from jacked.surfaces.daemon.client import RemoteService

        client, where = jk.client, jk.where  # type: ignore[attr-defined]  # a RemoteService's, checked by hasattr above
        remote = lambda warn_to: RemoteService(client, where, scan=False, warn=warn_to)  # noqa: E731  # a one-line factory
    try:
        server = make_server(s, host, port, token, Limits(request_timeout=request_timeout), remote=remote)
    except UiConfigError as e:
        raise CliError(str(e)) from e
    except OSError as e:
        raise CliError(f"cannot listen on {host}:{port}: {e.strerror or e} (try another --port)") from e
    url = server.url + (f"?token={token}" if token else "")
    typer.echo(f"jacked ui: serving {s.claude_dir} at {url}")
    typer.echo("press Ctrl-C to stop")
    if open_browser:
        import webbrowser

        webbrowser.open(url)
    try:
        server.serve_forever()  # on Ctrl-C uvicorn lets open requests finish (briefly), then returns
    except KeyboardInterrupt:
        pass  # re-raised after the shutdown when SIGINT was not ignored
    finally:
        server.server_close()
    typer.echo("jacked ui: stopped")


def register(app: typer.Typer) -> None:
    app.command("ui")(ui_cmd)
