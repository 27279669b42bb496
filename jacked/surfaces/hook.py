"""`jacked index [--hook]`: index one session now; from a Claude Code hook, never fail.

Claude Code hands a hook a JSON object on stdin (`session_id`, `transcript_path`, `cwd`,
`hook_event_name`). A hook must never break Claude Code, so `run_hook` always returns 0 and
writes problems (redacted) to `JACKED_HOME/logs/hook.log`.
"""
from __future__ import annotations

import json
import os
import select
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a hook that hands its work to the daemon imports neither
    from jacked.config import Settings
    from jacked.index.indexer import IndexReport
    from jacked.surfaces.daemon.protocol import Where

LOG_MAX_BYTES = 1 << 20
# How long the hook waits for its child to get hold of the index before returning anyway.
HOOK_WAIT_SECONDS = 30.0


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


def drain_queue(settings: Settings, on_open: Callable[[], None]) -> None:
    """Hold the index and index every queued hook entry, including ones that arrive meanwhile."""
    from jacked.service import Jacked
    from jacked.surfaces.hookqueue import Claimer, HookQueue

    claimer: Claimer | None = None

    def started() -> None:
        nonlocal claimer
        claimer = Claimer(HookQueue(settings.home)).start()
        on_open()

    stopped = False

    def next_batch() -> list[Any]:
        nonlocal stopped
        assert claimer is not None
        items = claimer.pop_all()
        if not items and not stopped:
            items, stopped = claimer.stop(), True
        return items

    Jacked(settings, scan=False).index_queue(
        next_batch, on_open=started, target_of=lambda item: item[1], done=HookQueue.done,
        on_error=lambda e: _log_exception(Path(settings.home), e))


def parse_hook_input(raw: str) -> dict[str, Any]:
    data = json.loads(raw) if raw.strip() else {}
    if not isinstance(data, dict):
        raise ValueError("hook input is not a JSON object")
    return data


def run_hook(raw: str, get_settings: Callable[[], Settings], detach: bool | None = None) -> int:
    """Index the transcript a hook names. Always 0: problems go to the hook log.

    With `detach` (the default where `os.fork` exists, unless `JACKED_HOOK_SYNC=1`), the work
    goes on in a child process and this returns as soon as the child holds the index, so
    Claude Code is not held up while any jacked command started afterwards still sees the
    new turn (it waits for the index like any other reader).
    """
    home: Path | None = None
    try:
        from jacked.surfaces.daemon.protocol import daemon_enabled, locate

        # With a daemon, nothing here loads the settings: it has them, and a hook must be quick.
        where = locate() if daemon_enabled() else None
        settings = None if where is not None else get_settings()
        home = where.home if where is not None else Path(settings.home)  # type: ignore[union-attr]
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
        settings = settings or get_settings()
        if detach is None:
            detach = hasattr(os, "fork") and not settings.hook_sync
        if detach:
            return _index_in_child(settings, target)
        index_target(settings, target)
    except Exception as e:  # a hook must never break Claude Code
        _log_exception(home, e)
    return 0


def _to_daemon(where: Where, target: str) -> bool:
    """Hand the session to the daemon (started if need be): on its queue, on disk, before this
    returns. False when no daemon can be had (then the hook indexes it in its own process)."""
    from jacked.surfaces.daemon.client import DaemonUnavailable, connect

    try:
        connect(where).enqueue_index(target)
    except (DaemonUnavailable, OSError) as e:
        log_problem(where.home, f"hook: daemon unavailable ({e}); indexing in the hook's process")
        return False
    return True


def _log_exception(home: Path | None, e: BaseException) -> None:
    detail = traceback.format_exc(limit=3).replace("\n", " | ")
    log_problem(home or Path.home() / ".claude" / "jacked", f"hook failed: {type(e).__name__}: {e} :: {detail}")


def _signal(fd: int) -> None:
    """Tell the waiting hook we hold the index; it may have returned already (entry claimed)."""
    try:
        os.write(fd, b"1")
    except OSError:
        pass


def _index_in_child(settings: Settings, target: str) -> int:
    """Queue the work and fork a child to do it; return once the work is in a holder's hands.

    That is when the child holds the index, or when the process already holding it has
    claimed our queue entry (it indexes it before letting go), or when the child is gone.
    """
    from jacked.surfaces.hookqueue import CLAIM_POLL_SECONDS, HookQueue

    entry = HookQueue(settings.home).put(target)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: detach from the hook's pipes and session, then work
        code = 0
        try:
            os.close(read_end)
            os.setsid()
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            drain_queue(settings, on_open=lambda: _signal(write_end))
        except BaseException as e:  # noqa: BLE001 - the child must always end quietly
            _log_exception(Path(settings.home), e)
            code = 1
        finally:
            os._exit(code)
    os.close(write_end)
    deadline = time.monotonic() + HOOK_WAIT_SECONDS
    try:
        while time.monotonic() < deadline and entry.exists():
            ready, _, _ = select.select([read_end], [], [], CLAIM_POLL_SECONDS)
            if ready:  # the child holds the index (or ended)
                break
    finally:
        os.close(read_end)
    return 0
