"""An independent count of a Gemini CLI folder (`~/.gemini`), straight from its files.

Standard library only (json, hashlib) and nothing from jacked, so jacked's reading of the same
folder is checked against a second, deliberately plain reading rather than against itself.

    python tests/agents/count_gemini.py GEMINI_DIR [--json]

Rules, as Gemini CLI records a session:
* chat files are `tmp/<project>/chats/*.json` and `*.jsonl` (not the subfolders: those hold
  subagents, counted apart); `.json` is one document, `.jsonl` a log of records: a metadata
  line, message records (the last one with an id wins), `$set` (a `messages` list there only
  adds ids not seen before) and `$rewindTo` (ignored: what was said stays);
* one session per session id: a `.jsonl` beats a `.json` of the same id; a file with no
  session id (empty) is none; a `logs.json` session with no chat file is one too, with one
  turn per logged prompt and no calls;
* a turn is a `user` message with typed text: its `displayContent` text if any, else its
  content text; not blank, no `functionResponse` part, not starting with `<session_context>`
  or `<hook_context>`, not holding `<state_snapshot>`;
* after a compression (a `user` message holding `<state_snapshot>`, then the model's reply), the
  messages that repeat an earlier one (same type, text and call/result ids) are Gemini CLI
  recording the kept history again: not counted;
* a tool call is an entry of a `gemini` message's `toolCalls`; it failed when its status is
  `error` or `cancelled`, or, for `run_shell_command`, when its output's last
  `Exit Code: n` has n != 0 (or a `Signal:` other than `(none)`);
* refused: a cancelled call whose result or `resultDisplay` says the user "did not allow tool
  call"; interrupted: a turn (from its prompt to the next) with a call cancelled otherwise or an
  `info` message "Request cancelled.", counted once, and not when a refusal in it came first;
* tokens per gemini message: input - cached + tool, output + thoughts, cached; counted once
  per message id.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

CONTEXT = ("<session_context>", "<hook_context>")


def _parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content}]
    if isinstance(content, dict):
        return [content]
    if isinstance(content, list):
        out = []
        for p in content:
            if isinstance(p, str):
                out.append({"text": p})
            elif isinstance(p, dict):
                out.append(p)
        return out
    return []


def _text(content: Any) -> str:
    return "".join(p["text"] for p in _parts(content) if isinstance(p.get("text"), str) and not p.get("thought"))


def _load(path: Path) -> tuple[str | None, list[dict[str, Any]]]:
    """(session id, messages in first-seen order, last version of each)."""
    raw = path.read_text(encoding="utf-8", errors="replace")
    order: list[str] = []
    by_id: dict[str, dict[str, Any]] = {}
    sid = None

    def put(m: Any, replace: bool = True) -> None:
        if isinstance(m, dict) and isinstance(m.get("id"), str):
            if m["id"] not in by_id:
                order.append(m["id"])
                by_id[m["id"]] = m
            elif replace:
                by_id[m["id"]] = m

    if path.suffix == ".json":
        try:
            doc = json.loads(raw)
        except ValueError:
            doc = None
        if isinstance(doc, dict):
            for m in doc.get("messages") or []:
                put(m)
            return doc.get("sessionId"), [by_id[i] for i in order]
        # cut short: the complete messages before the cut
        m = re.search(r'"sessionId"\s*:\s*"([^"]+)"', raw)
        sid = m.group(1) if m else None
        start = raw.find("[", raw.find('"messages"'))
        dec = json.JSONDecoder()
        pos = start + 1
        while start >= 0 and pos < len(raw):
            while pos < len(raw) and raw[pos] in " \r\n\t,":
                pos += 1
            try:
                obj, pos = dec.raw_decode(raw, pos)
            except ValueError:
                break
            put(obj)
        return sid, [by_id[i] for i in order]
    for line in raw.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if not isinstance(rec, dict):
            continue
        if "$set" in rec and isinstance(rec["$set"], dict):
            for m in rec["$set"].get("messages") or []:
                put(m, replace=False)
        elif "$rewindTo" in rec:
            continue
        elif isinstance(rec.get("id"), str):
            put(rec)
        elif isinstance(rec.get("sessionId"), str) and sid is None:
            sid = rec["sessionId"]
    return sid, [by_id[i] for i in order]


def _is_prompt(m: dict[str, Any]) -> bool:
    if m.get("type") != "user":
        return False
    if any(isinstance(p.get("functionResponse"), dict) for p in _parts(m.get("content"))):
        return False
    text = _text(m.get("displayContent")) if m.get("displayContent") is not None else ""
    if not text.strip():
        text = _text(m.get("content"))
    text = text.strip()
    return bool(text) and not text.startswith(CONTEXT) and "<state_snapshot>" not in text


def _failed(call: dict[str, Any]) -> bool:
    if call.get("status") in ("error", "cancelled"):
        return True
    if call.get("name") != "run_shell_command":
        return False
    out = []
    for p in _parts(call.get("result")):
        fr = p.get("functionResponse")
        resp = fr.get("response") if isinstance(fr, dict) else None
        if isinstance(resp, dict):
            out += [v for k, v in resp.items() if k in ("output", "error") and isinstance(v, str)]
    text = "\n".join(out)
    codes = re.findall(r"(?m)^Exit Code: (-?\d+)\s*$", text)
    signals = re.findall(r"(?m)^Signal: (.+?)\s*$", text)
    return bool(codes and int(codes[-1]) != 0) or bool(signals and signals[-1] != "(none)")


def _said(call: dict[str, Any]) -> str:
    """What a call's result and display say, as one lower-case text."""
    out = [call["resultDisplay"]] if isinstance(call.get("resultDisplay"), str) else []
    for p in _parts(call.get("result")):
        fr = p.get("functionResponse")
        resp = fr.get("response") if isinstance(fr, dict) else None
        if isinstance(resp, dict):
            out += [v for v in resp.values() if isinstance(v, str)]
    return "\n".join(out).lower()


def _n(v: Any) -> int:
    return v if isinstance(v, int) and v > 0 else 0


def _key(m: dict[str, Any]) -> tuple[Any, ...]:
    parts = _parts(m.get("content"))
    ids = [p["functionResponse"].get("id") for p in parts if isinstance(p.get("functionResponse"), dict)]
    if not ids:
        ids = [c.get("id") for c in m.get("toolCalls") or [] if isinstance(c, dict)]
    if not ids:
        ids = [p["functionCall"].get("id") for p in parts if isinstance(p.get("functionCall"), dict)]
    return m.get("type"), _text(m.get("content")).strip(), tuple(sorted(str(i) for i in ids))


def _without_copies(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """After a `<state_snapshot>` (and the model's reply to it), Gemini CLI records the history it
    kept again under new ids: those copies are left out."""
    out, seen, copying = [], set(), False
    for m in messages:
        if m.get("type") not in ("user", "gemini"):
            out.append(m)
            continue
        key = _key(m)
        if copying and key in seen:
            continue
        copying = copying and m.get("type") == "gemini" and not m.get("tokens") and not m.get("toolCalls")
        seen.add(key)
        if m.get("type") == "user" and "<state_snapshot>" in _text(m.get("content")):
            copying = True
        out.append(m)
    return out


def count_session(messages: list[dict[str, Any]]) -> dict[str, int]:
    out = {"turns": 0, "tool_calls": 0, "errors": 0, "input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
           "rejected": 0, "interrupted": 0}
    stopped = False  # the running turn has its refusal or interruption
    for m in _without_copies(messages):
        if _is_prompt(m):
            out["turns"] += 1
            stopped = False
        if m.get("type") == "info" and _text(m.get("content")).strip() == "Request cancelled." and not stopped:
            out["interrupted"] += 1
            stopped = True
        if m.get("type") == "gemini":
            for call in m.get("toolCalls") or []:
                if isinstance(call, dict):
                    out["tool_calls"] += 1
                    out["errors"] += _failed(call)
                    if call.get("status") == "cancelled" and "did not allow tool call" in _said(call):
                        out["rejected"] += 1
                        stopped = True
                    elif call.get("status") == "cancelled" and not stopped:
                        out["interrupted"] += 1
                        stopped = True
            t = m.get("tokens")
            if isinstance(t, dict):
                out["input_tokens"] += max(0, _n(t.get("input")) - _n(t.get("cached"))) + _n(t.get("tool"))
                out["output_tokens"] += _n(t.get("output")) + _n(t.get("thoughts"))
                out["cache_read_tokens"] += _n(t.get("cached"))
    return out


def count(root: Path) -> dict[str, Any]:
    """{"sessions": n, "turns": n, "tool_calls": n, "errors": n, "by_session": {id: counts}}."""
    by_session: dict[str, dict[str, int]] = {}
    for project in sorted((root / "tmp").glob("*")):
        chosen: dict[str, Path] = {}
        for path in sorted((project / "chats").glob("*")):
            if not path.is_file() or path.suffix not in (".json", ".jsonl") or path.name.count(".") != 1:
                continue
            if path.stat().st_size == 0:
                continue
            sid, _ = _load(path)
            if not sid:
                continue
            if sid not in chosen or path.suffix == ".jsonl":
                chosen[sid] = path
        for sid, path in chosen.items():
            by_session[sid] = count_session(_load(path)[1])
        logs = project / "logs.json"
        if logs.is_file():
            entries = json.loads(logs.read_text(encoding="utf-8"))
            for e in entries if isinstance(entries, list) else []:
                if (isinstance(e, dict) and isinstance(e.get("sessionId"), str) and isinstance(e.get("message"), str)
                        and e["sessionId"] not in chosen and e["message"].strip()):
                    c = by_session.setdefault(e["sessionId"], count_session([]))
                    c["turns"] += 1
    total = {k: sum(c[k] for c in by_session.values()) for k in ("turns", "tool_calls", "errors", "rejected",
                                                                 "interrupted")}
    return {"sessions": len(by_session), **total, "by_session": by_session}


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--json"]
    result = count(Path(args[0]) if args else Path.home() / ".gemini")
    if "--json" in sys.argv:
        print(json.dumps(result, indent=2))
    else:
        print(f"sessions {result['sessions']}  turns {result['turns']}  tool calls {result['tool_calls']}  "
              f"errors {result['errors']}")
