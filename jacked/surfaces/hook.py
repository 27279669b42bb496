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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # a hook that hands its work to the daemon imports neither
    from jacked.config import Settings
    from jacked.index.indexer import IndexReport
    from jacked.surfaces.daemon.protocol import Where

LOG_MAX_BYTES = 1 << 20


def log_problem(home: Path, message: str) -> None:
    """Append one redacted line to the hook log (rotated at 1 MB); never raises."""
    try:
        from jacked.sources.redact import redact

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
    from jacked.service import Jacked

    return Jacked(settings, scan=False).index(target)


def parse_hook_input(raw: str) -> dict[str, Any]:
    data = json.loads(raw) if raw.strip() else {}
    if not isinstance(data, dict):
        raise ValueError("hook input is not a JSON object")
    return data


def run_hook(raw: str, get_settings: Callable[[], Settings]) -> int:
    """Index the transcript a hook names. Always 0: problems go to the hook log.

    The daemon takes the work on its queue (durable before this returns); without one
    (`JACKED_DAEMON=off`, or none can start) the hook indexes it in its own process before
    returning, waiting for the index like any other writer.
    """
    home: Path | None = None
    try:
        from jacked.surfaces.daemon.protocol import daemon_enabled, locate

        # With a daemon, nothing here loads the settings: it has them, and a hook must be quick.
        where = locate() if daemon_enabled() else None
        settings = None if where is not None else get_settings()
        home = where.home if where is not None else Path(settings.home)  # type: ignore[union-attr]  # settings are loaded when there is no daemon
        data = parse_hook_input(raw)
        path = data.get("transcript_path")
        if path:
            if not Path(path).expanduser().is_file():
                log_problem(home, f"hook: transcript {path} not found; nothing indexed")
                return 0
            target = str(Path(path).expanduser())
        elif data.get("session_id"):
            target = str(data["session_id"])
        else:
            log_problem(home, "hook input names no transcript_path or session_id; nothing indexed")
            return 0
        if where is not None and _to_daemon(where, target):
            return 0
        index_target(settings or get_settings(), target)
    except Exception as e:  # a hook must never break Claude Code
        _log_exception(home, e)
    return 0


def _to_daemon(where: Where, target: str) -> bool:
    """Put the session on the daemon's queue (on disk before this returns) and tell the daemon,
    started if need be. False when that cannot be done (then the hook indexes it in its own process)."""
    from jacked.surfaces.daemon.client import DaemonUnavailable, enqueue_index

    try:
        enqueue_index(where, target)
    except (DaemonUnavailable, OSError) as e:
        log_problem(where.home, f"hook: daemon unavailable ({e}); indexing in the hook's process")
        return False
    return True


def _log_exception(home: Path | None, e: BaseException) -> None:
    detail = traceback.format_exc(limit=3).replace("\n", " | ")
    log_problem(home or Path.home() / ".claude" / "jacked", f"hook failed: {type(e).__name__}: {e} :: {detail}")
