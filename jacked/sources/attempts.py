"""Attempts: what a tool call was trying to do, so that a failure can be matched with the
later call that succeeded at the same thing (used by summaries and timelines)."""
from __future__ import annotations

import re
from typing import Any

from jacked.sources.model import EDIT_TOOLS, SHELL_TOOLS, WRITE_TOOLS

FILE_TOOLS = EDIT_TOOLS | WRITE_TOOLS


_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*$")
_SETUP = frozenset({"cd", "source", ".", "export", "set", "pushd", "popd", "unset", "true"})
_SEPARATORS = re.compile(r"&&|\|\||;|\|")


def command_key(command: str | None) -> str:
    """What a shell command is trying to do, for matching a failure with a later success.

    The command is split at `&&`, `||`, `;` and `|`; set-up steps (`cd`, `source`, `export`,
    …) are skipped; of the first real step, VAR=value words and options are dropped and the
    first three words kept: `npm run build`, `python pytest tests/x.py` (`python -m pytest …`).
    """
    if not command:
        return ""
    for step in _SEPARATORS.split(command):
        words = [w for w in step.strip().strip("()").split() if not _ENV.match(w)]
        if not words or words[0] in _SETUP:
            continue
        picked = [w for w in words if not w.startswith("-")][:3]
        return " ".join(picked)
    return " ".join(command.split())


def attempt_key(tool: str, file_path: str | None, command: str | None, input_brief: str | None) -> tuple[str, str]:
    """Same tool and same target: the file for file tools, the command's gist for Bash,
    the arguments for other tools."""
    if tool in SHELL_TOOLS:
        return tool, command_key(command)
    if file_path:
        return ("file", file_path) if tool in FILE_TOOLS else (tool, file_path)
    return tool, input_brief or ""


def resolutions(rows: list[dict[str, Any]]) -> dict[tuple[int, int], dict[str, Any]]:
    """For each failed call (turn, ord) of one session's main chain: the later call that
    succeeded at the same thing, if any."""
    open_errors: dict[tuple[str, str], list[tuple[int, int]]] = {}
    solved: dict[tuple[int, int], dict[str, Any]] = {}
    for r in rows:
        key = attempt_key(r["tool_name"], r["file_path"], r["command"], r["input_brief"])
        if r["is_error"]:
            open_errors.setdefault(key, []).append((r["turn_index"], r["ord"]))
        elif key in open_errors:
            by = {"turn_index": r["turn_index"], "timestamp": r["timestamp"], "tool_use_id": r["tool_use_id"],
                  "tool_name": r["tool_name"]}
            for loc in open_errors.pop(key):
                solved[loc] = by
    return solved
