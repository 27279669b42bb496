"""An independent count of a Claude directory, straight from the JSONL lines (issue 10).

Follows DESIGN.md "Turn rules" with the standard library only and imports nothing from
jacked, so that jacked's reconstruction can be checked against a second reading of the same
files rather than against its own output. Deliberately simple: one pass per file, no
incremental state, no cleverness that could share a bug with jacked.

    python tests/independent_count.py [CLAUDE_DIR] [--json]

`count_dir(path)` returns the same dict as `--json` prints.
"""
from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REAL = Path(__file__).resolve().parent / "fixtures" / "claude-code" / "real"
NOT_SESSION_TYPES = {"summary", "file-history-snapshot"}  # a file of only these is not a session
NOT_PROMPT_PREFIXES = ("<local-command-stdout>", "<local-command-caveat>", "[Request interrupted by user")
COMMAND_RE = re.compile(r"<command-name>\s*(.*?)\s*</command-name>", re.S)
ARGS_RE = re.compile(r"<command-args>(.*?)</command-args>", re.S)


def records(path: Path) -> Iterator[dict[str, Any]]:
    """Parsed lines of a file; bad or non-object lines (a truncated last line) are skipped, and a
    line whose uuid was already seen in this file (written again on resume) is ignored."""
    seen: set[str] = set()
    with path.open("rb") as fh:
        for raw in fh:  # streamed: snapshot lines can be huge
            try:
                rec = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(rec, dict):
                continue
            uuid = rec.get("uuid")
            if isinstance(uuid, str):
                if uuid in seen:
                    continue
                seen.add(uuid)
            yield rec


def message(rec: dict[str, Any]) -> dict[str, Any]:
    msg = rec.get("message")
    if isinstance(msg, str):  # some files write `message` as a JSON string
        try:
            msg = json.loads(msg)
        except ValueError:
            return {}
    return msg if isinstance(msg, dict) else {}


def blocks(rec: dict[str, Any]) -> list[dict[str, Any]]:
    content = message(rec).get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def joined_text(content: Any) -> str | None:
    """A string, or the text blocks of a list joined by newlines; None if the list holds
    anything but text/image blocks (a tool result is not typed by a human)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list) or not content:
        return None
    if any(not isinstance(b, dict) or b.get("type") not in ("text", "image") for b in content):
        return None
    return "\n".join(b.get("text", "") for b in content if b.get("type") == "text")


def turn_start(rec: dict[str, Any]) -> tuple[str, str | None] | None:
    """("prompt", text) for a human prompt, ("notification", None) for a background task
    reporting back, None for any other line."""
    if rec.get("type") != "user" or rec.get("isSidechain") or rec.get("isMeta") or rec.get("isCompactSummary"):
        return None
    text = joined_text(message(rec).get("content"))
    if text is None:
        return None
    head = text.lstrip()
    origin = rec.get("origin")
    # 2.1.88+ also marks it in `origin`, even when the text no longer starts with the tag
    if head.startswith("<task-notification>") or (
            isinstance(origin, dict) and origin.get("kind") == "task-notification"):
        return ("notification", None)
    if head.startswith(NOT_PROMPT_PREFIXES):
        return None
    return ("prompt", text)


IDE_RE = re.compile(r"\s*<(ide_opened_file|ide_selection)>.*?</\1>\s*", re.S)


def as_typed(text: str) -> str:
    """A prompt as the user typed it: a slash command as `/name args`; the `<ide_opened_file>` /
    `<ide_selection>` blocks the IDE extension puts before the words left out (kept if nothing follows);
    a bash-mode command as `!command`."""
    m = COMMAND_RE.search(text)
    if m:
        a = ARGS_RE.search(text)
        name = m.group(1) if m.group(1).startswith("/") else "/" + m.group(1)
        return (name + " " + (a.group(1).strip() if a else "")).strip()
    shell = re.fullmatch(r"\s*<bash-input>(.*?)</bash-input>\s*", text, re.S)
    if shell and shell.group(1).strip() and text.count("<bash-input>") == 1:  # bash mode: typed as "!command"
        return "!" + shell.group(1).strip()
    rest = text
    while IDE_RE.match(rest):
        rest = rest[IDE_RE.match(rest).end():]
    return rest if rest.strip() else text


def prompt_keys(text: str) -> set[str]:
    """How a queued message may be written again as a user line: its text, or for a slash
    command `/name args` (the user line holds `<command-name>/name</command-name>…`)."""
    keys = {text.strip()}
    m = COMMAND_RE.search(text)
    if m:
        a = ARGS_RE.search(text)
        keys.add((m.group(1) + " " + (a.group(1).strip() if a else "")).strip())
    return keys


def new_turn(index: int, kind: str | None, prompt: str | None) -> dict[str, Any]:
    return {"index": index, "started_by": kind, "prompt": prompt, "tool_calls": 0, "tool_errors": 0,
            "api_calls": 0, "input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
            "cache_creation_tokens": 0, "_calls": []}


def count_session(path: Path) -> dict[str, Any]:
    """Turns, tool calls, API calls, tokens and inline sidechains of one main session file."""
    recs = list(records(path))
    typed: set[str] = set()  # texts written as user prompt lines: a queued copy of one is not a turn
    # ...unless the queue says it went to the model inside the running turn (2.1.x): a `remove`
    # (reason "absorbed_mid_turn", or none before 2.1.246) or a `queued_command` attachment. Then
    # no user line is written for it, and a later line with the same words is another prompt.
    absorbed: set[str] = set()
    for r in recs:
        start = turn_start(r)
        if start and start[1] is not None:
            typed |= prompt_keys(start[1])
        if r.get("type") == "queue-operation" and r.get("operation") == "remove" \
                and r.get("reason", "absorbed_mid_turn") == "absorbed_mid_turn":
            text = joined_text(r.get("content"))
            absorbed |= prompt_keys(text) if text else set()
        att = r.get("attachment")
        if r.get("type") == "attachment" and isinstance(att, dict) and att.get("type") == "queued_command":
            text = joined_text(att.get("prompt"))
            absorbed |= prompt_keys(text) if text else set()
    turns: list[dict[str, Any]] = []
    results: dict[str, bool] = {}  # tool_use_id -> is_error of its first result
    usage: dict[str, dict[str, Any]] = {}  # message.id -> last usage seen
    msg_turn: dict[str, dict[str, Any]] = {}  # message.id -> turn of its first line
    side: list[dict[str, Any]] = []  # inline sidechains (1.0.x): root prompt, calls
    side_of: dict[str, dict[str, Any]] = {}  # sidechain line uuid -> its chain
    task_calls: list[tuple[dict[str, Any], int]] = []  # (Task/Agent tool_use block, turn index)
    agent_ids: dict[str, str] = {}  # Task tool_use_id -> toolUseResult.agentId
    queued = 0
    for r in recs:
        if r.get("isSidechain"):  # 1.0.x inline subagent: never a turn, never the parent's calls
            parent = side_of.get(r.get("parentUuid") or "")
            if parent is None:
                text = joined_text(message(r).get("content")) if r.get("type") == "user" else None
                if text is not None or not side:  # a root prompt starts a chain
                    parent = {"prompt": text, "calls": [], "results": {}}
                    side.append(parent)
                else:  # an orphan line (parent not in the file): the chain written last
                    parent = side[-1]
            if isinstance(r.get("uuid"), str):
                side_of[r["uuid"]] = parent
            for b in blocks(r):
                if b.get("type") == "tool_use" and r.get("type") == "assistant":
                    parent["calls"].append(b.get("id"))
                elif b.get("type") == "tool_result":
                    parent["results"].setdefault(b.get("tool_use_id"), b.get("is_error") is True)
            continue
        kind = r.get("type")
        if kind == "queue-operation" and r.get("operation") == "enqueue":
            text = joined_text(r.get("content"))
            if text is not None and (prompt_keys(text) & absorbed or not (prompt_keys(text) & typed)):
                turns.append(new_turn(turns[-1]["index"] + 1 if turns else 1, "queued", as_typed(text)))
                queued += 1
            continue
        start = turn_start(r)
        if start:
            prompt = as_typed(start[1]) if start[1] is not None else None
            turns.append(new_turn(turns[-1]["index"] + 1 if turns else 1, start[0], prompt))
            continue
        if kind == "assistant":
            if not turns:  # assistant lines before the first prompt form turn 0
                turns.append(new_turn(0, None, None))
            turn = turns[-1]
            msg = message(r)
            mid = msg.get("id")
            if isinstance(mid, str):
                msg_turn.setdefault(mid, turn)
                if isinstance(msg.get("usage"), dict):
                    usage[mid] = msg["usage"]  # the last line of a response carries its final usage
            for b in blocks(r):
                if b.get("type") == "tool_use":
                    turn["_calls"].append(b.get("id"))
                    if b.get("name") in ("Task", "Agent"):
                        task_calls.append((b, turn["index"]))
        elif kind == "user":
            for b in blocks(r):
                if b.get("type") == "tool_result":
                    results.setdefault(b.get("tool_use_id"), b.get("is_error") is True)
                    tur = r.get("toolUseResult")
                    if isinstance(tur, dict) and isinstance(tur.get("agentId"), str):
                        agent_ids[b.get("tool_use_id")] = tur["agentId"]
    for mid, turn in msg_turn.items():  # an API response counts once, where its first line stands
        turn["api_calls"] += 1
        u = usage.get(mid, {})
        turn["input_tokens"] += int(u.get("input_tokens") or 0)
        turn["output_tokens"] += int(u.get("output_tokens") or 0)
        turn["cache_read_tokens"] += int(u.get("cache_read_input_tokens") or 0)
        turn["cache_creation_tokens"] += int(u.get("cache_creation_input_tokens") or 0)
    for t in turns:
        calls = t.pop("_calls")
        t["tool_calls"] = len(calls)
        t["tool_errors"] = sum(results.get(c, False) for c in calls)
    # 1.0.x sidechains pair with the Task call whose input.prompt is their root prompt (they are
    # written in completion order, so position means nothing)
    inline: list[dict[str, Any]] = []
    free = [(b, i) for b, i in task_calls]
    for chain in side:
        match = next(((b, i) for b, i in free if (b.get("input") or {}).get("prompt") == chain["prompt"]), None)
        if match:
            free.remove(match)
        inline.append({"tool_use_id": match[0].get("id") if match else None, "turn_index": match[1] if match else None,
                       "tool_calls": len(chain["calls"]),
                       "tool_errors": sum(chain["results"].get(c, False) for c in chain["calls"])})
    return {"turns": turns, "task_calls": {b.get("id"): i for b, i in task_calls}, "agent_ids": agent_ids,
            "inline_subagents": inline, "queued_prompts": queued,
            "uuids": {r["uuid"] for r in recs if isinstance(r.get("uuid"), str)},
            "summaries": [(r.get("summary"), r.get("leafUuid")) for r in recs if r.get("type") == "summary"],
            "own_titles": [t for r in recs for t in (r.get("customTitle") if r.get("type") == "custom-title" else
                                                     r.get("aiTitle") if r.get("type") == "ai-title" else None,)
                           if isinstance(t, str) and t],
            "is_session": any(r.get("type") not in NOT_SESSION_TYPES for r in recs)}


def count_agent_file(path: Path) -> dict[str, Any]:
    """Tool calls and errors of one subagent file, its parent session and whether it is a Warmup."""
    calls: list[str] = []
    errs: dict[str, bool] = {}
    parent, first_prompt, kinds = None, None, []
    for r in records(path):
        parent = parent or r.get("sessionId")
        kinds.append(r.get("type"))
        if r.get("type") == "user" and first_prompt is None:
            first_prompt = joined_text(message(r).get("content"))
        for b in blocks(r):
            if b.get("type") == "tool_use" and r.get("type") == "assistant":
                calls.append(b.get("id"))
            elif b.get("type") == "tool_result":
                errs.setdefault(b.get("tool_use_id"), b.get("is_error") is True)
    return {"parent": parent, "tool_calls": len(calls), "tool_errors": sum(errs.get(c, False) for c in calls),
            # 2.0.x warmups: the prompt "Warmup" and one reply; from 2.0.42 the prompt line is
            # not written, leaving a file of one assistant line
            "warmup": first_prompt == "Warmup" or kinds == ["assistant"]}


def count_dir(claude_dir: Path | str) -> dict[str, Any]:
    """Every session of `<claude_dir>/projects` with its turns, subagents and title candidates."""
    projects = Path(claude_dir) / "projects"
    mains = sorted(p for p in projects.glob("*/*.jsonl") if not p.name.startswith("agent-"))
    raw = {p.stem: count_session(p) for p in mains}
    owner_of = {u: sid for sid, s in raw.items() if s["is_session"] for u in s["uuids"]}
    sessions: dict[str, dict[str, Any]] = {}
    for sid, s in raw.items():
        if not s["is_session"]:
            continue
        turns = s["turns"]
        sessions[sid] = {
            # turns numbered from 1 (prompt, queued or notification); turn 0 is not a turn anyone started
            "turn_count": len([t for t in turns if t["index"] > 0]), "turns": turns,
            "prompts": [t["prompt"] for t in turns if t["index"] > 0],
            # what a session list shows: the first typed prompt, else the first command
            "first_prompt": next((t["prompt"] for t in turns if t["index"] > 0 and t["prompt"]
                                  and not t["prompt"].startswith("/")), None)
            or next((t["prompt"] for t in turns if t["index"] > 0 and t["prompt"]), None),
            "tool_calls": sum(t["tool_calls"] for t in turns), "tool_errors": sum(t["tool_errors"] for t in turns),
            "api_calls": sum(t["api_calls"] for t in turns),
            "input_tokens": sum(t["input_tokens"] for t in turns),
            "output_tokens": sum(t["output_tokens"] for t in turns),
            "cache_read_tokens": sum(t["cache_read_tokens"] for t in turns),
            "cache_creation_tokens": sum(t["cache_creation_tokens"] for t in turns),
            "notification_turns": sum(t["started_by"] == "notification" for t in turns),
            "queued_prompts": s["queued_prompts"], "subagents": [], "own_titles": s["own_titles"], "labels": []}
        for sub in s["inline_subagents"]:
            sessions[sid]["subagents"].append({"layout": "inline", "agent_id": None, **sub})
    # flat (2.0.x: agent-<8hex>.jsonl beside the session) and nested (2.1.x: <session>/subagents/)
    agent_files = [(p, None) for p in projects.glob("*/agent-*.jsonl")]
    agent_files += [(p, p.parent.parent.name) for p in projects.glob("*/*/subagents/agent-*.jsonl")]
    unlinked: list[dict[str, Any]] = []
    for path, parent_dir in sorted(agent_files):
        if path.name.startswith("agent-acompact-"):  # compaction of the conversation, not a subagent
            continue
        agent_id = path.stem[len("agent-"):]
        info = count_agent_file(path)
        parent = parent_dir or info["parent"]
        sess = raw.get(parent or "")
        call = next((tid for tid, aid in (sess or {}).get("agent_ids", {}).items() if aid == agent_id), None)
        entry = {"layout": "nested" if parent_dir else "flat", "agent_id": agent_id, "tool_use_id": call,
                 "turn_index": sess["task_calls"].get(call) if sess and call else None,
                 "tool_calls": info["tool_calls"], "tool_errors": info["tool_errors"], "file": str(path)}
        if call and parent in sessions:
            sessions[parent]["subagents"].append(entry)
        else:  # a Warmup, or a subagent whose parent session file is gone or never names it
            unlinked.append({**entry, "parent": parent, "warmup": info["warmup"]})
    # `summary` labels go to the session whose file holds their leaf, wherever the label sits
    cross, dropped = 0, 0
    for sid, s in raw.items():
        for text, leaf in s["summaries"]:
            owner = owner_of.get(leaf or "")
            if owner is None:
                dropped += 1
                continue
            sessions[owner]["labels"].append(text)
            cross += owner != sid
    return {"claude_dir": str(claude_dir), "sessions": sessions, "unlinked_agent_files": unlinked,
            "labels_cross_file": cross, "labels_dropped": dropped}


def file_usage(path: Path) -> dict[str, dict[str, int]]:
    """message.id -> the four token counts of that API response, from the last line of it that
    carries `usage` (streamed lines repeat a response's usage, growing). Every assistant line
    counts, sidechain ones included: they were billed too."""
    last: dict[str, dict[str, Any]] = {}
    for r in records(path):
        if r.get("type") != "assistant":
            continue
        msg = message(r)
        mid, usage = msg.get("id"), msg.get("usage")
        if isinstance(mid, str) and isinstance(usage, dict):
            last[mid] = usage
    return {mid: {"input": int(u.get("input_tokens") or 0), "output": int(u.get("output_tokens") or 0),
                  "cache_creation": int(u.get("cache_creation_input_tokens") or 0),
                  "cache_read": int(u.get("cache_read_input_tokens") or 0)} for mid, u in last.items()}


def count_billed(claude_dir: Path | str) -> dict[str, dict[str, int]]:
    """session id -> the four token totals of every API response the session caused: its main
    file (inline 1.0.x sidechains included), its flat `agent-*.jsonl` files (the `sessionId` they
    name), everything under `<session>/subagents/` (nested subagents, workflow agents, teammates
    and `agent-acompact-*` compactions). A response counts once, however many of its files
    repeat it. The files are read straight, with no notion of turns."""
    projects = Path(claude_dir) / "projects"
    owner_files: list[tuple[str, Path]] = []
    for p in projects.glob("*/*.jsonl"):
        if p.name.startswith("agent-"):
            parent = next((r.get("sessionId") for r in records(p) if isinstance(r.get("sessionId"), str)), None)
            if parent:
                owner_files.append((parent, p))
        else:
            owner_files.append((p.stem, p))
    owner_files += [(p.relative_to(projects).parts[1], p) for p in projects.glob("*/*/subagents/**/agent-*.jsonl")]
    seen: set[str] = set()
    out: dict[str, dict[str, int]] = {}
    for sid, path in sorted(owner_files, key=lambda x: str(x[1])):
        for mid, counts in file_usage(path).items():
            if mid in seen:
                continue
            seen.add(mid)
            tot = out.setdefault(sid, {"api_calls": 0, "input": 0, "output": 0, "cache_creation": 0, "cache_read": 0})
            tot["api_calls"] += 1
            for k, v in counts.items():
                tot[k] += v
    return out


def summary(data: dict[str, Any]) -> str:
    """One screen of totals over the directory."""
    ss = list(data["sessions"].values())
    subs = [a for s in ss for a in s["subagents"]]
    loose = data["unlinked_agent_files"]

    def total(key: str, items: list[dict[str, Any]] = ss) -> int:
        return sum(int(x[key]) for x in items)

    lines = [
        f"claude dir      {data['claude_dir']}",
        f"sessions        {len(ss)}",
        f"turns           {total('turn_count')} (+{sum(1 for s in ss if s['turns'] and s['turns'][0]['index'] == 0)}"
        " turn 0)",
        f"tool calls      {total('tool_calls')} ({total('tool_errors')} errors)",
        f"api calls       {total('api_calls')} (tokens in {total('input_tokens')}, cache read "
        f"{total('cache_read_tokens')}, cache write {total('cache_creation_tokens')}, out {total('output_tokens')})",
        f"subagents       {len(subs)} linked ({total('tool_calls', subs)} calls, {total('tool_errors', subs)} errors); "
        f"{len(loose)} agent files unlinked ({total('warmup', loose)} Warmup)",
        f"notif. turns    {total('notification_turns')}",
        f"queued prompts  {total('queued_prompts')}",
        f"titled          {sum(bool(s['own_titles'] or s['labels']) for s in ss)} sessions; summary labels resolved "
        f"cross-file {data['labels_cross_file']}, dropped {data['labels_dropped']}",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    args = [a for a in argv if a != "--json"]
    data = count_dir(Path(args[0]) if args else REAL)
    print(json.dumps(data, indent=1, ensure_ascii=False) if "--json" in argv else summary(data))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
