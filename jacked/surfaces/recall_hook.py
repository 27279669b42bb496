"""`jacked recall --hook`: Claude Code's SessionStart and UserPromptSubmit hooks, kept light.

Claude Code waits for these two hooks (their output is context), and UserPromptSubmit runs on
every prompt, so this process only parses the hook's JSON, asks the daemon and prints: no CLI
framework, no model, no index, no settings unless no daemon answers. It prints
`{"hookSpecificOutput": {"hookEventName", "additionalContext"}}` or nothing, and always exits 0;
its own failures go to `JACKED_HOME/logs/hook.log`.
"""
from __future__ import annotations

import json
import os
from typing import Any

PROMPT_EVENT = "UserPromptSubmit"
START_EVENT = "SessionStart"
BRIEF_MAX_TOKENS = 1500


def _service(scan: bool) -> Any:
    """The daemon's service (started when none runs), else a `Jacked` in this process."""
    from jacked.surfaces.daemon.protocol import daemon_enabled

    if daemon_enabled():
        from jacked.surfaces.daemon.client import DaemonUnavailable, RemoteService, connect
        from jacked.surfaces.daemon.protocol import locate

        where = locate()
        try:
            return RemoteService(connect(where), where, scan=scan)
        except DaemonUnavailable:
            pass
    from jacked.config import load_settings
    from jacked.service import Jacked

    return Jacked(load_settings(), scan=scan)


def context_for(data: dict[str, Any], max_tokens: int | None = None, search: bool = True) -> tuple[str, str]:
    """(event, context) for a hook's input; context "" means print nothing."""
    where = str(data.get("cwd") or os.getcwd())
    event = data.get("hook_event_name") or (PROMPT_EVENT if "prompt" in data else START_EVENT)
    if event == PROMPT_EVENT:
        # No rescan first: the Stop hook indexes every turn, and this one must answer at once.
        said = _service(scan=False).prompt_recall(str(data.get("prompt") or ""), where,
                                                  session_id=data.get("session_id"), max_tokens=max_tokens)
        return PROMPT_EVENT, said["text"]
    brief = _service(scan=True).recall(where, max_tokens or BRIEF_MAX_TOKENS, search=search)
    return START_EVENT, brief["text"]


def run_recall_hook(raw: str, max_tokens: int | None = None, search: bool = True) -> int:
    """Answer one hook call from its stdin text; always 0."""
    import sys

    try:
        data = json.loads(raw) if raw.strip() else {}
        event, text = context_for(data if isinstance(data, dict) else {}, max_tokens, search)
        if text:
            sys.stdout.write(json.dumps({"hookSpecificOutput": {"hookEventName": event,
                                                                "additionalContext": text}}) + "\n")
    except Exception as e:
        try:
            from jacked.config import load_settings
            from jacked.surfaces.hook import log_problem

            log_problem(load_settings().home, f"recall hook failed: {type(e).__name__}: {e}")
        except Exception:
            pass
    return 0
