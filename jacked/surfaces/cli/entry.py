"""Console entry point: `jacked index --hook` and `jacked recall --hook` take a fast path that skips the CLI framework.

A hook runs at every turn of Claude Code, so its start-up time matters; so does a read command a
daemon answers (`jacked.surfaces.cli.fast`: the same command, without typer); everything else goes
to the typer app in `jacked.surfaces.cli.main`. `run` owns the process: it ends it with the
command's exit code once the exit handlers ran (call `jacked.surfaces.cli.main.run`, or the
service, from a process that goes on).
"""
from __future__ import annotations

import atexit
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jacked.config import Settings

_exit_code = 0
#: Read commands that skip typer when a daemon answers them (`jacked.surfaces.cli.fast.COMMANDS`).
_FAST_COMMANDS = frozenset({"sessions", "turns", "search", "stats", "status"})


def run() -> None:
    global _exit_code
    # Everything jacked writes (catalog, index, archive, models, logs) holds what the transcripts
    # hold: owner-only, whatever the umask (022 would leave it world-readable).
    os.umask(0o077)
    atexit.register(_exit_now)  # registered first, so it runs last
    try:
        if sys.argv[1:] == ["index", "--hook"]:
            from jacked.surfaces.hook import run_hook

            def load_settings() -> Settings:  # only when no daemon takes the work: it has them
                from jacked.config import load_settings as load

                return load()

            try:
                raw = sys.stdin.read()
            except (OSError, UnicodeDecodeError):
                raw = ""
            sys.exit(run_hook(raw, load_settings))
        if sys.argv[1:] == ["recall", "--hook"]:  # SessionStart and every prompt: Claude Code waits for it
            from jacked.surfaces.recall_hook import run_recall_hook

            try:
                raw = sys.stdin.read()
            except (OSError, UnicodeDecodeError):
                raw = ""
            sys.exit(run_recall_hook(raw))
        if sys.argv[1:] == ["mcp"]:  # one per Claude Code window: as light as the relay can be
            from jacked.surfaces.daemon.protocol import daemon_enabled

            if daemon_enabled():
                from jacked.surfaces.daemon.client import DaemonUnavailable
                from jacked.surfaces.daemon.mcp_bridge import relay
                from jacked.surfaces.daemon.protocol import locate

                try:
                    sys.exit(relay(locate()))
                except DaemonUnavailable as e:
                    print(f"jacked: {e}; serving MCP in this process (JACKED_DAEMON=off says so quietly)",
                          file=sys.stderr)
                    os.environ["JACKED_DAEMON"] = "off"  # said once: the command below serves in-process
        if sys.argv[1:2] and sys.argv[1] in _FAST_COMMANDS:  # the daemon answers: typer would cost more
            from jacked.surfaces.daemon.protocol import daemon_enabled

            if daemon_enabled():
                from jacked.surfaces.cli.fast import run_fast

                code = run_fast(sys.argv[1:])
                if code is not None:
                    sys.exit(code)
        from jacked.surfaces.cli.main import run as run_cli

        run_cli()
    except SystemExit as e:
        _exit_code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
        raise
    except KeyboardInterrupt:
        _exit_code = 130  # as a shell reports a process stopped by Ctrl-C
        raise
    except BaseException:
        _exit_code = 1  # Python prints the traceback, then exits 1
        raise


def _exit_now() -> None:
    """End the process once every other exit handler ran (threads joined, executors shut down):
    tearing the interpreter down (its modules, the model, the index's maps) took ~0.15 s of every
    command, a search or a hook, for nothing the process still needs; the files it wrote are
    closed by then. Standard output is flushed first."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # the reader left (`| head`), or the stream is closed
            pass
    os._exit(_exit_code)


if __name__ == "__main__":
    run()
