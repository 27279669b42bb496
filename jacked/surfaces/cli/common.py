"""What every CLI module shares: settings from global options, JSON output, clean errors."""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jacked.errors import JackedError
from jacked.schema import dumps
from jacked.surfaces.cli.params import echo

if TYPE_CHECKING:  # the service and the settings are imported by the commands that need them, not at start-up
    from jacked.config import Settings
    from rich.console import Console
    from jacked.service import Jacked


class CliError(JackedError):
    """A problem the user can fix: printed as one line on stderr, exit code 1."""


@dataclass
class GlobalOptions:
    claude_dir: Path | None = None


STATE = GlobalOptions()


def settings() -> Settings:
    """Settings for this command, with the global `--claude-dir` applied."""
    from jacked.config import load_settings

    return load_settings(STATE.claude_dir)


def print_json(obj: Any) -> None:
    """A service answer as JSON on stdout and nothing else (the `--json` contract; its form is
    `jacked.schema`'s, as on every surface)."""
    sys.stdout.write(dumps(obj, indent=True).decode() + "\n")


def print_json_list(items: Iterable[Any]) -> None:
    """A JSON list on stdout as `print_json` writes it, one item at a time: a long list is never
    held whole."""
    opened = False
    for item in items:
        body = dumps(item, indent=True).decode()
        sys.stdout.write(("[\n  " if not opened else ",\n  ") + body.replace("\n", "\n  "))
        opened = True
    sys.stdout.write("\n]\n" if opened else "[]\n")


def print_jsonl(obj: Any) -> None:
    sys.stdout.write(dumps(obj).decode() + "\n")


def stdout_console() -> Console:
    """A rich console on stdout. On a terminal it wraps to the terminal's width; piped to a file or
    `less` it leaves lines whole (rich would hard-wrap them at 80 columns, splitting paths)."""
    from rich.console import Console

    return Console(highlight=False, soft_wrap=not sys.stdout.isatty())


def warn(message: str) -> None:
    """Progress and warnings go to stderr so `--json` stdout stays clean."""
    echo(message, err=True)


def service(scan: bool = True) -> Jacked:
    """The service for this command (warnings on stderr); `scan=False` answers from the catalog as
    it is. The daemon's (`jacked.surfaces.daemon`), started when none runs; with JACKED_DAEMON=off,
    or when no daemon can be had (said in one line), a `Jacked` in this process."""
    remote = daemon_service(scan)
    if remote is not None:
        return remote  # type: ignore[return-value]  # a RemoteService answers as a Jacked does
    from jacked.service import Jacked

    return Jacked(settings(), scan=scan, warn=warn)


def daemon_service(scan: bool = True) -> object | None:
    """The daemon's service for this command, or None to answer in this process: JACKED_DAEMON=off,
    or no daemon could be reached or started (a one-line warning says why)."""
    from jacked.surfaces.daemon.protocol import daemon_enabled

    if not daemon_enabled():
        return None
    from jacked.surfaces.daemon.client import DaemonUnavailable, RemoteService, connect
    from jacked.surfaces.daemon.protocol import locate

    where = locate(STATE.claude_dir)
    if not where.claude_dir_given and os.environ.get("CLAUDE_CONFIG_DIR", "").strip() and not where.claude_dir.is_dir():
        return None  # a mistyped CLAUDE_CONFIG_DIR: this process says so in one line, and no daemon home is made
    try:
        client = connect(where)
    except DaemonUnavailable as e:
        if not e.quiet:
            warn(f"jacked: {e}; answering in this process (JACKED_DAEMON=off says so quietly)")
        return None
    return RemoteService(client, where, scan=scan, warn=warn)


def require_projects(s: Settings) -> None:
    """Stop with one line when there is nothing to read: no projects folder in the Claude directory
    and no other agent's folder (Codex CLI, Gemini CLI, opencode)."""
    from jacked.ingest.agents import source_roots

    if s.projects_dir.is_dir():
        return
    if s.sources.get("claude_dir") == "env" and not s.claude_dir.is_dir():
        # the user named this folder: reading the other agents only would hide the typo (a
        # --claude-dir that is not there stops every command before this, in `main`)
        raise CliError(f"no Claude directory at {s.claude_dir} (from CLAUDE_CONFIG_DIR): "
                       "point it at the folder that holds projects/")
    if not source_roots(s.disabled_sources):
        raise CliError(f"no projects folder in {s.claude_dir}: point --claude-dir or CLAUDE_CONFIG_DIR at a Claude directory")


@contextmanager
def progress_bar(enabled: bool) -> Iterator[Callable[[str, int, int], None] | None]:
    """A rich progress bar on stderr when it is a terminal; a no-op callback otherwise."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

    # Refreshed from the callback, not by rich's refresh thread: a cold scan forks worker
    # processes only from a single-threaded process.
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=Console(stderr=True), transient=True, auto_refresh=False) as bar:
        tasks: dict[str, TaskID] = {}
        last_refresh = [0.0]

        def update(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                label = {"glance": "glancing at prompts", "scan": "reading sessions",
                         "optimize": "building the search index"}.get(stage, "indexing")
                tasks[stage] = bar.add_task(label, total=total)
            bar.update(tasks[stage], completed=done, total=total)
            now = time.monotonic()
            if now - last_refresh[0] >= 0.1 or done >= total:
                bar.refresh()
                last_refresh[0] = now

        yield update
