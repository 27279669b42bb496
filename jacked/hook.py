"""`jacked index [--hook]`: index one session now; from a Claude Code hook, never fail.

Claude Code hands a hook a JSON object on stdin (`session_id`, `transcript_path`, `cwd`,
`hook_event_name`). A hook must never break Claude Code, so `run_hook` always returns 0 and
writes problems (redacted) to `JACKED_HOME/logs/hook.log`.
"""
from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jacked.config import Settings
from jacked.indexer import Indexer, IndexReport

LOG_MAX_BYTES = 1 << 20


def log_problem(home: Path, message: str) -> None:
    """Append one redacted line to the hook log (rotated at 1 MB); never raises."""
    try:
        from jacked.redact import redact

        logs = home / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        path = logs / "hook.log"
        if path.exists() and path.stat().st_size > LOG_MAX_BYTES:
            path.replace(logs / "hook.log.1")
        with path.open("a", encoding="utf-8") as fh:
            fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {redact(message)}\n")
    except Exception:  # logging must not be the thing that breaks a hook
        pass


def index_target(settings: Settings, target: str | None) -> IndexReport:
    """Index a session given by id, prefix or transcript path; everything when `target` is None."""
    indexer = Indexer(settings)
    if target is None:
        return indexer.backfill()
    from jacked.history import resolve_session, session_files_for_path

    path = Path(target).expanduser()
    if path.suffix == ".jsonl" and path.is_file():
        return indexer.index_paths([session_files_for_path(path)])
    from jacked.scanner import Scanner

    Scanner(indexer.catalog, settings.claude_dir, settings.user_name).scan()
    sid = resolve_session(indexer.catalog, target, settings.claude_dir)
    row = indexer.catalog.get_session_row(sid) or {}
    if row.get("file") and Path(row["file"]).is_file():
        return indexer.index_paths([session_files_for_path(Path(row["file"]))])
    return indexer.backfill()


def parse_hook_input(raw: str) -> dict[str, Any]:
    data = json.loads(raw) if raw.strip() else {}
    if not isinstance(data, dict):
        raise ValueError("hook input is not a JSON object")
    return data


def run_hook(raw: str, get_settings: Callable[[], Settings]) -> int:
    """Index the transcript a hook names. Always 0: problems go to the hook log."""
    home: Path | None = None
    try:
        settings = get_settings()
        home = Path(settings.home)
        data = parse_hook_input(raw)
        path = data.get("transcript_path")
        if not path:
            sid = data.get("session_id")
            if not sid:
                log_problem(home, "hook input names no transcript_path or session_id; nothing indexed")
                return 0
            index_target(settings, str(sid))
            return 0
        if not Path(path).expanduser().is_file():
            log_problem(home, f"hook: transcript {path} not found; nothing indexed")
            return 0
        index_target(settings, str(Path(path).expanduser()))
    except Exception as e:  # a hook must never break Claude Code
        detail = traceback.format_exc(limit=3).replace("\n", " | ")
        log_problem(home or Path.home() / ".claude" / "jacked", f"hook failed: {type(e).__name__}: {e} :: {detail}")
    return 0
