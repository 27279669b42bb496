"""Console entry point: `jacked index --hook` takes a fast path that skips the CLI framework.

A hook runs at every turn of Claude Code, so its start-up time matters; everything else goes
to the typer app in `jacked.surfaces.cli.main`.
"""
from __future__ import annotations

import os
import sys


def run() -> None:
    # Everything jacked writes (catalog, index, archive, models, logs) holds what the transcripts
    # hold: owner-only, whatever the umask (022 would leave it world-readable).
    os.umask(0o077)
    from jacked.util.lifetime import set_ends_soon

    set_ends_soon(True)  # `jacked mcp` and `jacked ui` say otherwise when they start serving
    if sys.argv[1:] == ["index", "--hook"]:
        from jacked.config import load_settings
        from jacked.surfaces.hook import run_hook

        try:
            raw = sys.stdin.read()
        except (OSError, UnicodeDecodeError):
            raw = ""
        sys.exit(run_hook(raw, load_settings))
    from jacked.surfaces.cli.main import run as run_cli

    run_cli()


if __name__ == "__main__":
    run()
