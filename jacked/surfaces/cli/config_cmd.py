"""`jacked config [--show | --reset]`, `jacked config set KEY VALUE`, `jacked config unset KEY`,
`jacked config migrate`.

Thin wrappers over jacked.config's library functions: the file is `<claude dir>/jacked.json`
(mode 0600); a broken file is a one-line ConfigError naming the line, never a traceback.
"""
from __future__ import annotations

from typing import Any

import typer

from jacked.surfaces.cli.common import STATE, CliError, print_json, settings, warn

config_app = typer.Typer(
    name="config",
    help="Show or change jacked's settings (<claude dir>/jacked.json).",
    invoke_without_command=True,
    no_args_is_help=False,
)


def _value_text(v: Any) -> str:
    if v is None:
        return "-"
    return str(v)


@config_app.callback()
def config_main(
    ctx: typer.Context,
    show: bool = typer.Option(False, "--show", help="Every setting, its value and where it came from (secrets masked)."),
    reset: bool = typer.Option(False, "--reset", help="Remove the config file (kept as jacked.json.bak)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON (with --show)."),
) -> None:
    """Show or change jacked's settings; `jacked config` alone is `--show`."""
    if ctx.invoked_subcommand is not None:
        if show or reset:
            raise CliError("--show / --reset cannot be combined with a subcommand")
        return
    if show and reset:
        raise CliError("--show and --reset exclude each other")
    from jacked.config import config_path, reset_config

    if reset:
        bak = reset_config(STATE.claude_dir)
        path = config_path(STATE.claude_dir)
        if json_out:
            print_json({"reset": bak is not None, "path": str(path), "backup": str(bak) if bak else None})
        elif bak is None:
            typer.echo(f"no config file at {path}: nothing to reset (defaults apply)")
        else:
            typer.echo(f"config reset to defaults; the old file is kept as {bak}")
        return
    _show(json_out)


def _show(json_out: bool) -> None:
    from jacked.config import show_config

    s = settings()  # raises ConfigError (one line, naming the line) on a broken file
    data = show_config(s)
    if json_out:
        print_json({"path": str(s.config_path), "settings": data})
        return
    typer.echo(f"config file: {s.config_path}{'' if s.config_path.exists() else ' (not created yet)'}")
    width = max(len(k) for k in data)
    for key, info in data.items():
        origin = info["source"] if info["origin"] in (info["source"], "default") else f"{info['source']}: {info['origin']}"
        typer.echo(f"  {key:<{width}}  {_value_text(info['value']):<40}  ({origin})")


@config_app.command("set")
def set_cmd(
    key: str = typer.Argument(..., help="Setting name (see `jacked config --show`)."),
    value: str = typer.Argument(..., help="New value (numbers and paths are converted)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Write one setting into the config file (validated; mode 0600)."""
    from jacked.config import SECRET_KEYS, config_path, set_config_value

    stored = set_config_value(STATE.claude_dir, key, value)
    path = config_path(STATE.claude_dir)
    if json_out:
        print_json({"key": key, "value": stored, "path": str(path)})
        return
    typer.echo(f"{key} = {stored} (saved in {path})")
    if key in SECRET_KEYS:
        warn(f"jacked: {path} now holds an API key: keep it private (mode 0600, never commit it)")


@config_app.command("unset")
def unset_cmd(key: str = typer.Argument(..., help="Setting name to remove from the file.")) -> None:
    """Remove one setting from the config file (the environment or the default applies again)."""
    from jacked.config import config_path, set_config_value

    set_config_value(STATE.claude_dir, key, None)
    typer.echo(f"{key} removed from {config_path(STATE.claude_dir)}")


@config_app.command("migrate")
def migrate_cmd(json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Write the environment's settings and the old key names into the config file (loading never writes it).

    Copies JACKED_<KEY> and the old QDRANT_CLAUDE_SESSIONS_* variables for the keys the file lacks
    (not the per-run ones: JACKED_HOME, JACKED_USER_NAME, ...), so the file is the one place to look."""
    from jacked.config import config_path, migrate_config

    moved = migrate_config(STATE.claude_dir)
    path = config_path(STATE.claude_dir)
    if json_out:
        print_json({"migrated": moved, "path": str(path)})
    elif not moved:
        typer.echo(f"nothing to migrate into {path}")
    else:
        for key, origin in moved.items():
            typer.echo(f"{key}: from {origin}")
        typer.echo(f"saved in {path} (it now takes precedence over these variables)")


def register(app: typer.Typer) -> None:
    app.add_typer(config_app, name="config")
