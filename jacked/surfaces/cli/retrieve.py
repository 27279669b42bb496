"""`jacked retrieve` and `jacked recall`: argument parsing and output formatting only (the work is `Jacked`'s)."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from jacked.surfaces.cli.common import CliError, print_json, service, warn

if TYPE_CHECKING:
    from jacked.query.retrieve import RetrieveResult


def retrieve_cmd(
    session_ids: list[str] = typer.Argument(..., help="Session ids or unique prefixes, most wanted first."),
    mode: str | None = typer.Option(None, "--mode", "-m",
                                       help="smart (default) | plan | labels | agents | full."),
    max_tokens: int | None = typer.Option(None, "--max-tokens",
                                             help="Token budget for everything printed (default: default_max_tokens)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show what would go in, with token counts, not the texts."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    output: Path | None = typer.Option(None, "-o", "--output", help="Write the output to FILE instead of stdout."),
    no_git: bool = typer.Option(False, "--no-git", help="Skip the git check of files changed since the session."),
) -> None:
    """Load past sessions' context into a token budget, ready to inject into a new session."""
    from jacked.query.retrieve import MODES
    from jacked.schema import dumps

    mode = (mode or "smart").strip().lower()
    if mode not in MODES:
        raise CliError(f"unknown --mode {mode!r}: use one of {', '.join(MODES)}")
    result = service().retrieve(session_ids, mode=mode, budget=max_tokens, check_git=not no_git)
    if json_out:
        data = dumps(result.to_json(dry_run), indent=True).decode() + "\n"
    elif dry_run:
        data = _dry_run_text(result)
    else:
        data = result.text
    if output is not None:
        try:
            output.write_text(data, encoding="utf-8")
        except OSError as e:
            raise CliError(f"cannot write {output}: {e.strerror or e}") from e
        warn(f"jacked: wrote {len(result.sessions)} sessions, {result.used} of {result.budget} tokens, to {output}")
        return
    typer.echo(data, nl=False)


def _dry_run_text(result: RetrieveResult) -> str:
    lines = [f"dry run · mode {result.mode} · budget {result.budget:,} · would use {result.used:,} "
             f"(remaining {result.budget - result.used:,})"]
    for s in result.sessions:
        st = s["staleness"]
        lines.append(f"  {s['session_id']}  {s['tokens']:>6,} tokens  {s['repo_name'] or '-'}  {s['age']}"
                     f"  staleness {st['level']}" + (f", {len(st['changed_files'])} files changed" if st['changed_files'] else ""))
        for sec in s["sections"]:
            preview = " ".join(sec["text"].split())[:70]
            lines.append(f"      + {sec['content_type']:18s} {sec['tokens']:>6,}  {preview}")
    for o in result.omitted:
        lines.append(f"      - {o['session_id'][:8]} {o['content_type']:18s} {o['tokens']:>6,}  (left out)")
    for d in result.dropped_sessions:
        lines.append(f"  {d}  dropped: nothing fit")
    return "\n".join(lines) + "\n"


def recall_cmd(
    hook: bool = typer.Option(False, "--hook", help="Run as Claude Code's SessionStart or UserPromptSubmit hook: "
                                                    "read its JSON on stdin, print added context or nothing, "
                                                    "always exit 0."),
    cwd: Path | None = typer.Option(None, "--cwd", help="The repo to recall (default: the current directory)."),
    max_tokens: int | None = typer.Option(None, "--max-tokens", min=100,
                                             help="Size limit of the brief (default 1500; 300 for a prompt)."),
    no_search: bool = typer.Option(False, "--no-search", help="Use the catalog only (no model load)."),
    prompt: str | None = typer.Option(None, "--prompt", help="Show what the UserPromptSubmit hook would add "
                                                                "to this prompt (and why), instead of the brief."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """A short brief of the past sessions most relevant to this repo (for the start of a session), or with
    --prompt the past sessions a prompt refers to."""
    import os
    import sys

    if hook:
        from jacked.surfaces.cli.common import STATE
        from jacked.surfaces.recall_hook import run_recall_hook

        if STATE.claude_dir is not None:
            os.environ["CLAUDE_CONFIG_DIR"] = str(STATE.claude_dir)
        raise typer.Exit(run_recall_hook(sys.stdin.read(), max_tokens, search=not no_search))
    where = str((cwd or Path.cwd()).absolute())
    if prompt is not None:
        said = service().prompt_recall(prompt, where, max_tokens=max_tokens)
        if json_out:
            print_json(said)
        else:
            typer.echo(said["text"] or f"(silent: {said['reason']})")
        return
    brief = service().recall(where, max_tokens or 1500, search=not no_search)
    if json_out:
        print_json(brief)
    else:
        typer.echo(brief["text"] or f"no past sessions found for {brief['repo']}")


def register(app: typer.Typer) -> None:
    app.command("retrieve")(retrieve_cmd)
    app.command("recall")(recall_cmd)
