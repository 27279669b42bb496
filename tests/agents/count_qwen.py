"""An independent count of a Qwen Code folder (`~/.qwen`), straight from its files.

Standard library only, nothing from jacked (the 2025 generation is Gemini CLI's format: it is
counted by `count_gemini.py`, the other plain counter, with `qwen` messages as Gemini's).

    python tests/agents/count_qwen.py QWEN_DIR [--json]

Rules, as Qwen Code records a session (`packages/core/src/services/chatRecordingService.ts`):
* a session is `projects/<project>/chats/<id>.jsonl` holding at least one record (its id the
  file name), or a 2025 `tmp/<hash>/chats/session-*.json`, or a `tmp/<hash>/logs.json` session
  with no chat file of either kind;
* records of a subagent (`isSidechain`) are not the session's own;
* a turn is a `user` record without `subtype` (and, when it has one, of `provenance`
  `real_user`) whose typed text (`systemPayload.displayText`,
  else its text parts) is not blank, or a `slash_command` system record of phase `invocation`
  that did not go to the model;
* a tool call is a `functionCall` part of an `assistant` record; it failed when the
  `tool_result` with its id has status `error` or `cancelled`, or, for `run_shell_command`,
  when its output's last `Exit Code: n` has n != 0;
* refused: a call whose `tool_result` is `cancelled` and says the user "did not allow tool call"
  (its text or `resultDisplay`); interrupted: a turn with a call cancelled otherwise, counted
  once, and not when a refusal in it came first;
* tokens per assistant record's `usageMetadata`: prompt - cached + tool-use prompt,
  candidates + thoughts, cached.
"""
from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any

_spec = importlib.util.spec_from_file_location("count_gemini_for_qwen", Path(__file__).with_name("count_gemini.py"))
assert _spec and _spec.loader
count_gemini = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(count_gemini)

EXIT = re.compile(r"^Exit Code: (-?\d+)\s*$", re.M)


def _n(v: Any) -> int:
    return v if isinstance(v, int) and v > 0 else 0


def _parts(rec: dict[str, Any]) -> list[dict[str, Any]]:
    msg = rec.get("message")
    parts = msg.get("parts") if isinstance(msg, dict) else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def _records(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and rec.get("type") in ("user", "assistant", "tool_result", "system"):
            out.append(rec)
    return out


def count_records(records: list[dict[str, Any]]) -> dict[str, int]:
    out = {"turns": 0, "tool_calls": 0, "errors": 0, "input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
           "rejected": 0, "interrupted": 0}
    stopped = False  # the running turn has its refusal or interruption
    own = [r for r in records if r.get("isSidechain") is not True]
    results: dict[str, tuple[Any, str]] = {}
    for r in records:
        if r.get("type") == "tool_result":
            meta = r.get("toolCallResult") if isinstance(r.get("toolCallResult"), dict) else {}
            text = ""
            for p in _parts(r):
                fr = p.get("functionResponse")
                if isinstance(fr, dict):
                    results.setdefault(fr.get("id"), (meta.get("status"), ""))
                    resp = fr.get("response") if isinstance(fr.get("response"), dict) else {}
                    text = str(resp.get("output") or resp.get("error") or "")
                    if isinstance(meta.get("resultDisplay"), str):
                        text += "\n" + meta["resultDisplay"]
                    results[fr.get("id")] = (meta.get("status"), text)
            if meta.get("callId") not in results:
                results[meta.get("callId")] = (meta.get("status"), text)
    for r in own:
        payload = r.get("systemPayload") if isinstance(r.get("systemPayload"), dict) else {}
        if r.get("type") == "user" and "subtype" not in r and r.get("provenance", "real_user") == "real_user":
            typed = payload.get("displayText") if isinstance(payload.get("displayText"), str) else ""
            if not typed.strip():
                typed = "".join(p["text"] for p in _parts(r) if isinstance(p.get("text"), str) and not p.get("thought"))
            out["turns"] += bool(typed.strip())
            stopped = stopped and not typed.strip()
        elif r.get("type") == "system" and r.get("subtype") == "slash_command":
            out["turns"] += (payload.get("phase") == "invocation" and bool(payload.get("rawCommand"))
                             and not payload.get("sentToModel") and not payload.get("hiddenInvocation"))
        elif r.get("type") == "assistant":
            for p in _parts(r):
                fc = p.get("functionCall")
                if not isinstance(fc, dict):
                    continue
                out["tool_calls"] += 1
                status, text = results.get(fc.get("id"), (None, ""))
                codes = EXIT.findall(text) if fc.get("name") == "run_shell_command" else []
                out["errors"] += status in ("error", "cancelled") or bool(codes and int(codes[-1]) != 0)
                if status == "cancelled" and "did not allow tool call" in text.lower():
                    out["rejected"] += 1
                    stopped = True
                elif status == "cancelled" and not stopped:
                    out["interrupted"] += 1
                    stopped = True
            u = r.get("usageMetadata")
            if isinstance(u, dict):
                cached = _n(u.get("cachedContentTokenCount"))
                out["input_tokens"] += max(0, _n(u.get("promptTokenCount")) - cached) + _n(u.get("toolUsePromptTokenCount"))
                out["output_tokens"] += _n(u.get("candidatesTokenCount")) + _n(u.get("thoughtsTokenCount"))
                out["cache_read_tokens"] += cached
    return out


def count(root: Path) -> dict[str, Any]:
    """{"sessions": n, "turns": n, "tool_calls": n, "errors": n, "by_session": {id: counts}}."""
    by_session: dict[str, dict[str, int]] = {}
    for path in sorted((root / "projects").glob("*/chats/*.jsonl")):
        records = _records(path)
        if records:
            by_session[path.stem] = count_records(records)
    # the 2025 generation: Gemini CLI's files with `qwen` model messages, read as Gemini's
    legacy = count_gemini.count_session
    count_gemini.count_session = lambda msgs: legacy([{**m, "type": "gemini"} if m.get("type") == "qwen" else m
                                                      for m in msgs])
    try:
        older = count_gemini.count(root)["by_session"]
    finally:
        count_gemini.count_session = legacy
    for sid, counts in older.items():
        by_session.setdefault(sid, counts)  # a JSONL session's prompts are in logs.json too
    total = {k: sum(c[k] for c in by_session.values()) for k in ("turns", "tool_calls", "errors", "rejected",
                                                                 "interrupted")}
    return {"sessions": len(by_session), **total, "by_session": by_session}


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--json"]
    result = count(Path(args[0]) if args else Path.home() / ".qwen")
    if "--json" in sys.argv:
        print(json.dumps(result, indent=2))
    else:
        print(f"sessions {result['sessions']}  turns {result['turns']}  tool calls {result['tool_calls']}  "
              f"errors {result['errors']}")
