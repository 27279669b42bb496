"""`python -m jacked.surfaces.daemon run [--spawned] [--claude-dir DIR]`: how a client starts the
daemon, detached (`--spawned`: exit quietly when another daemon holds the home already)."""
from __future__ import annotations

import argparse
import logging
import os
import sys


#: The exit code of a daemon that could not load its settings.
SETTINGS_ERROR = 3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jacked.surfaces.daemon")
    parser.add_argument("command", choices=["run"])
    parser.add_argument("--spawned", action="store_true")
    parser.add_argument("--claude-dir", default=None)
    parser.add_argument("--home", default=None)
    args = parser.parse_args(argv)
    os.umask(0o077)  # everything the daemon writes holds what the transcripts hold
    from pathlib import Path

    from jacked.config import load_settings
    from jacked.errors import JackedError
    from jacked.surfaces.daemon.server import serve

    try:
        settings = load_settings(args.claude_dir)
    except JackedError as e:  # a broken jacked.json: the client's own process says so, in its words
        print(f"jacked daemon: {e}", file=sys.stderr)
        return SETTINGS_ERROR
    return serve(settings, args.claude_dir, spawned=args.spawned, home=Path(args.home) if args.home else None)


if __name__ == "__main__":
    code = main()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # its work is closed and flushed: tearing the interpreter down would only delay the exit
