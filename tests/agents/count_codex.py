"""An independent count of a Codex CLI home (`~/.codex`, `CODEX_HOME`), straight from its rollouts.

Standard library only (json, re) and nothing from jacked, so jacked's reading of the same
folder is checked against a second, deliberately plain reading rather than against itself.

    python tests/agents/count_codex.py CODEX_HOME [--json]

Rules, as Codex CLI records a session:
* rollouts are `sessions/**/rollout-*.jsonl` and `archived_sessions/**/rollout-*.jsonl`; lines
  that are not JSON objects are skipped;
* two generations of lines: enveloped `{"timestamp", "type", "payload"}` records (`session_meta`,
  `response_item`, `event_msg`, `turn_context`, `compacted`, ...), and, before them (spring
  2025), a header line `{"id", "timestamp", "instructions", ...}` followed by bare response
  items (`{"type": "message" | "function_call" | ...}`) and `{"record_type": "state"}` markers;
* one session per session id: the first `session_meta` id (a fork or subagent copies its
  parent's `session_meta` after its own), else the header's id, else the uuid ending the file
  name; a session in two files (live and archived) is counted once, from the larger file;
* a turn is a prompt, counted once. Codex records what the person typed as an event
  (`event_msg` `user_message`; in newer releases `event_msg` `item_completed` with an item of
  type `UserMessage`) and, separately, the model's copy of it (`response_item` `message`,
  role `user`). When a file has such events they are the prompts (a `UserMessage` item next
  to a `user_message` of the same text is the same prompt); without them (the bare
  generation, or releases that stopped writing the events) the prompts are the `user`
  messages, a repeat of the message just before not counted again. Either way, text that
  Codex injected (`<environment_context>`, `<user_instructions>`, AGENTS.md, `<turn_aborted>`,
  permissions and skills blocks, ...) is no prompt, nor is a `user_message` whose `kind` says
  it is not plain. Prompts copied into a fork or subagent file from its parent count there too;
* a tool call is a `function_call`, `custom_tool_call`, `local_shell_call`, `tool_search_call` or
  `web_search_call` item (enveloped or bare): each is a call the model made, the last two answered
  by Codex itself or by the server (`tool_search_output`, nothing for a web search);
* a call failed when it ended with a non-zero exit code: the `exit_code` of its
  `exec_command_end` event if there is one, else what its output (`function_call_output` /
  `custom_tool_call_output` with the same `call_id`) says: `metadata.exit_code` of a JSON
  output, or an `Exit code: n` / `Process exited with code n` line; or when the user refused it;
* refused: its output is what Codex tells the model of a declined call ("exec command rejected by
  user", "patch rejected by user", "rejected by user"), or an `exec_command_end` /
  `patch_apply_end` event with its `call_id` has `status` "declined";
* interrupted: a `turn_aborted` event whose `reason` is "interrupted" (or missing).
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

CALL_TYPES = ("function_call", "custom_tool_call", "local_shell_call", "tool_search_call", "web_search_call")
OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output")
INJECTED = ("<environment_context>", "<user_instructions>", "<turn_aborted>", "# AGENTS.md instructions for",
            "<INSTRUCTIONS>", "<permissions instructions>", "<skills_instructions>", "<user_shell_command>",
            "<subagent_notification>", "<collaboration_mode>", "<apps_instructions>", "<personality_spec>",
            "<model_switch>")
UUID_TAIL = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$")
REFUSED = ("exec command rejected by user", "patch rejected by user", "rejected by user")
EXIT_LINE = re.compile(r"^(?:Exit code:|Process exited with code) (-?\d+)\s*$", re.MULTILINE)


def _records(path: Path) -> list[dict[str, Any]]:
    out = []
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict):
                out.append(rec)
    return out


def _items(records: list[dict[str, Any]]) -> tuple[str | None, list[tuple[str, dict[str, Any]]]]:
    """The session id and the records as (kind, body): kind is `item` for a response item
    (enveloped or bare), else the envelope type."""
    sid, items = None, []
    for i, rec in enumerate(records):
        if "payload" in rec and isinstance(rec.get("type"), str):
            body = rec["payload"] if isinstance(rec["payload"], dict) else {}
            kind = "item" if rec["type"] == "response_item" else rec["type"]
            if kind == "session_meta" and sid is None and isinstance(body.get("id"), str):
                sid = body["id"]
            items.append((kind, body))
        elif i == 0 and "type" not in rec and "record_type" not in rec and isinstance(rec.get("id"), str):
            sid = rec["id"]  # the bare generation's header line
        elif isinstance(rec.get("type"), str):
            items.append(("item", rec))
    return sid, items


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(c.get("text", "") for c in content if isinstance(c, dict) and isinstance(c.get("text"), str))
    return ""


def _injected(text: str) -> bool:
    t = text.lstrip()
    return not t.strip() or t.startswith(INJECTED)


def _prompts(items: list[tuple[str, dict[str, Any]]]) -> list[str]:
    events: list[tuple[str, str]] = []  # (source, text)
    for kind, body in items:
        if kind != "event_msg":
            continue
        if body.get("type") == "user_message":
            kind_of = body.get("kind")
            text = body.get("message") if isinstance(body.get("message"), str) else ""
            if kind_of not in (None, "plain") or _injected(text):
                continue
            events.append(("user_message", text))
        elif body.get("type") == "item_completed" and isinstance(body.get("item"), dict) \
                and body["item"].get("type") == "UserMessage":
            text = _text(body["item"].get("content"))
            if not _injected(text):
                events.append(("UserMessage", text))
    if events:
        prompts: list[str] = []
        last: tuple[str, str] | None = None
        for source, text in events:
            if last is not None and last[0] != source and last[1] == text:
                last = None  # the same input recorded both ways
                continue
            prompts.append(text)
            last = (source, text)
        return prompts
    prompts, previous = [], None
    for kind, body in items:
        if kind == "item" and body.get("type") == "message":
            if body.get("role") != "user":
                previous = None
                continue
            text = _text(body.get("content"))
            if _injected(text) or text == previous:
                continue
            prompts.append(text)
            previous = text
    return prompts


def _exit_code(output: Any) -> int | None:
    if isinstance(output, list):
        output = _text(output)
    if not isinstance(output, str):
        return None
    try:
        parsed = json.loads(output)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        meta = parsed.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("exit_code"), int):
            return meta["exit_code"]
        output = parsed.get("output") if isinstance(parsed.get("output"), str) else ""
    m = EXIT_LINE.search(output[:400])
    return int(m.group(1)) if m else None


def scan_file(path: Path) -> dict[str, Any]:
    """What one rollout holds: its id, prompts and calls (name, call_id, exit code or None)."""
    sid, items = _items(_records(path))
    if sid is None:
        m = UUID_TAIL.search(path.name)
        sid = m.group(1) if m else path.stem
    calls: list[dict[str, Any]] = []
    outputs: dict[str, Any] = {}
    ends: dict[str, int] = {}
    declined: set[str] = set()
    aborted = 0
    for kind, body in items:
        t = body.get("type")
        if kind == "item" and t in CALL_TYPES:
            name = body.get("name") or {"local_shell_call": "local_shell", "tool_search_call": "tool_search",
                                        "web_search_call": "web_search"}.get(t)
            calls.append({"type": t, "name": name, "call_id": body.get("call_id") or body.get("id")})
        elif kind == "item" and t in OUTPUT_TYPES and isinstance(body.get("call_id"), str):
            outputs[body["call_id"]] = body.get("output")
        elif kind == "event_msg" and t == "exec_command_end" and isinstance(body.get("exit_code"), int):
            ends[str(body.get("call_id"))] = body["exit_code"]
        if kind == "event_msg" and t in ("exec_command_end", "patch_apply_end") and body.get("status") == "declined":
            declined.add(str(body.get("call_id")))
        if kind == "event_msg" and t == "turn_aborted" and body.get("reason") in (None, "interrupted"):
            aborted += 1
    for call in calls:
        cid = call["call_id"]
        call["exit_code"] = ends[cid] if cid in ends else _exit_code(outputs.get(cid))
        output = outputs.get(cid)
        call["refused"] = cid in declined or (isinstance(output, str) and output.strip().lower() in REFUSED)
    return {"session_id": sid, "file": str(path), "size": path.stat().st_size,
            "prompts": _prompts(items), "calls": calls, "interrupted": aborted}


def rollouts(root: Path) -> list[Path]:
    return sorted(p for folder in ("sessions", "archived_sessions") if (root / folder).is_dir()
                  for p in (root / folder).rglob("rollout-*.jsonl") if p.is_file())


def count_dir(root: Path) -> dict[str, Any]:
    """{"sessions": {id: {"turns", "tool_calls", "errors"}}, "totals": {...}} for a Codex home."""
    chosen: dict[str, dict[str, Any]] = {}
    for path in rollouts(root):
        found = scan_file(path)
        held = chosen.get(found["session_id"])
        if held is None or found["size"] > held["size"]:
            chosen[found["session_id"]] = found
    sessions = {sid: {"turns": len(f["prompts"]), "tool_calls": len(f["calls"]),
                      "errors": sum(1 for c in f["calls"] if c["exit_code"] not in (None, 0) or c["refused"]),
                      "rejected": sum(1 for c in f["calls"] if c["refused"]), "interrupted": f["interrupted"]}
                for sid, f in chosen.items()}
    totals = {k: sum(s[k] for s in sessions.values()) for k in ("turns", "tool_calls", "errors", "rejected",
                                                                 "interrupted")}
    totals["sessions"] = len(sessions)
    return {"sessions": sessions, "totals": totals}


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--json"]
    result = count_dir(Path(args[0]) if args else Path.home() / ".codex")
    if "--json" in sys.argv:
        print(json.dumps(result, indent=2))
    else:
        for sid, row in sorted(result["sessions"].items()):
            print(sid, " ".join(f"{k}={v}" for k, v in row.items()))
        print("totals", " ".join(f"{k}={v}" for k, v in result["totals"].items()))
