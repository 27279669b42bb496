"""The `jacked` command: a typer app assembled from one module per command group.

`run()` is the console entry point: it turns every expected failure into one line on
stderr and exit code 1 — never a traceback.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import typer

try:  # typer >= 0.25 vendors its own click
    from typer._click import exceptions as click_exc
    from typer._click.utils import PacifyFlushWrapper
except ImportError:  # pragma: no cover - older typer uses click itself
    from click import exceptions as click_exc  # type: ignore[no-redef]  # the same module under its older name
    from click.utils import PacifyFlushWrapper  # type: ignore[no-redef]  # the same class under its older name

from jacked.surfaces.cli import history as history_cli
from jacked.surfaces.cli import index as index_cli
from jacked.surfaces.cli import search as search_cli
from jacked.surfaces.cli import retrieve as retrieve_cli
from jacked.surfaces.cli import config_cmd as config_cli
from jacked.surfaces.cli import install as install_cli
from jacked.surfaces.cli import archive as archive_cli
from jacked.surfaces.cli import forget as forget_cli
from jacked.surfaces.cli import mcp_cmd as mcp_cli
from jacked.surfaces.cli import restore as restore_cli
from jacked.surfaces.cli import schema_cmd as schema_cli
from jacked.surfaces.cli import stats as stats_cli
from jacked.surfaces.cli import summarize as summarize_cli
from jacked.surfaces.cli import timeline as timeline_cli
from jacked.surfaces.cli import ui as ui_cli
from jacked.surfaces.cli import daemon_cmd as daemon_cli
from jacked.surfaces.cli import usage as usage_cli
from jacked.surfaces.cli.common import STATE, CliError
from jacked.surfaces.cli.params import error_line, expected_errors


def _hide_flag_types() -> None:
    """`--help` shows no `<bool>` beside a flag: a flag takes no value, and typer's rich help would
    print its type as if it did."""
    from typer.core import TyperOption

    type_of = TyperOption.display_type_rich

    def display_type_rich(self: TyperOption, ctx: typer.Context) -> str | None:
        return None if self.is_flag else type_of(self, ctx)

    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign, assignment]  # a patch; typer's Context is click's


_hide_flag_types()

app = typer.Typer(
    name="jacked",
    help="Long-term memory for Claude Code: reconstruct, index and search your past sessions.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


# Commands that may be pointed at a Claude directory not made yet (they write into it).
_CREATES_CLAUDE_DIR = frozenset({"install", "uninstall", "config"})


@app.callback()
def main(
    ctx: typer.Context,
    claude_dir: Path | None = typer.Option(
        None, "--claude-dir", help="Claude directory (default: $CLAUDE_CONFIG_DIR or ~/.claude).",
    ),
) -> None:
    """Long-term memory for Claude Code."""
    if claude_dir is not None and not claude_dir.expanduser().is_dir() \
            and ctx.invoked_subcommand not in _CREATES_CLAUDE_DIR:
        # a mistyped folder would otherwise read as "no sessions"
        raise CliError(f"--claude-dir {claude_dir}: no such directory (give the folder that holds projects/)")
    STATE.claude_dir = claude_dir


history_cli.register(app)
index_cli.register(app)
search_cli.register(app)
stats_cli.register(app)
usage_cli.register(app)
timeline_cli.register(app)
summarize_cli.register(app)
restore_cli.register(app)
mcp_cli.register(app)
retrieve_cli.register(app)
config_cli.register(app)
install_cli.register(app)
archive_cli.register(app)
forget_cli.register(app)
ui_cli.register(app)
daemon_cli.register(app)
schema_cli.register(app)


def run() -> None:
    """Console entry point."""
    if os.environ.get("NO_COLOR"):
        os.environ.setdefault("TERM", "dumb")
    stdout_was = _file_id(1)
    try:
        rv = app(standalone_mode=False)
        code = rv if isinstance(rv, int) else 0
    except typer.Exit as e:
        code = e.exit_code
    except SystemExit:
        # typer (wrapping the streams) and rich (pointing stdout at /dev/null) turn a closed stdout
        # (`jacked export | head -1`) into exit 1; like other Unix tools, a reader that left early
        # is not a failure
        if not (isinstance(sys.stdout, PacifyFlushWrapper) or _now_devnull(stdout_was)):
            raise
        code = 0
    except typer.Abort:
        typer.echo("jacked: aborted", err=True)
        code = 1
    except click_exc.ClickException as e:
        # usage errors: one line, exit 1 (click's default would be 2 with a usage block)
        typer.echo(f"jacked: {e.format_message()}", err=True)
        code = 1
    except KeyboardInterrupt:
        typer.echo("jacked: interrupted", err=True)
        code = 130
    except BrokenPipeError:
        code = 0
    except expected_errors() as e:
        typer.echo(error_line(e), err=True)
        code = 1
    sys.exit(code)


def _file_id(fd: int) -> tuple[int, int] | None:
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _now_devnull(stdout_was: tuple[int, int] | None) -> bool:
    """Whether stdout was turned to /dev/null while the command ran (rich's closed-pipe handler)."""
    try:
        null = os.stat(os.devnull)
    except OSError:
        return False
    now = _file_id(1)
    return now is not None and now != stdout_was and now == (null.st_dev, null.st_ino)


if __name__ == "__main__":
    run()
