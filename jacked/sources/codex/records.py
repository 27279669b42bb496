"""Codex CLI rollout records: one decoded line in, one `(kind, payload, timestamp)` out, and
the pieces of a payload jacked keeps (texts, tool arguments, tool outputs, patches).

Two generations of rollout lines (`codex-rs/protocol`, `RolloutLine` / `RolloutItem`):
- since about 0.3x (autumn 2025) every line is an envelope `{timestamp, type, payload}` with
  `type` one of `session_meta`, `response_item`, `event_msg`, `turn_context`, `compacted`
  (newer: `inter_agent_communication`, `inter_agent_communication_metadata`, `world_state`,
  and an optional `ordinal` beside `timestamp`);
- before, the first line was the session header itself (`{id, timestamp, instructions, git,
  cwd?, ...}`, no `type`), followed by bare response items (`{"type": "message", ...}`) with no
  timestamp, and `{"record_type": "state"}` markers.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

import orjson

ENVELOPE_TYPES = frozenset({
    "session_meta", "response_item", "event_msg", "turn_context", "compacted",
    "inter_agent_communication", "inter_agent_communication_metadata", "world_state",
})
RESPONSE_ITEM_TYPES = frozenset({
    "message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
    "custom_tool_call_output", "local_shell_call", "web_search_call", "tool_search_call",
    "tool_search_output", "image_generation_call", "ghost_snapshot", "compaction", "compaction_summary",
})
# Model output: the items of one API response (what starts a new response after a boundary).
MODEL_OUTPUT_TYPES = frozenset({
    "message", "reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call",
    "tool_search_call", "image_generation_call",
})
CALL_TYPES = frozenset({"function_call", "custom_tool_call", "local_shell_call", "web_search_call",
                        "tool_search_call", "image_generation_call"})
OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})

# User-role texts Codex writes itself: instructions, environment, AGENTS.md, notices. They are
# sent to the model as user messages but no person typed them.
INJECTED_PREFIXES = (
    "<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<INSTRUCTIONS>",
    "<turn_aborted>", "<subagent_notification>", "<skill>", "<user_action>", "<permissions instructions>",
    "<collaboration_mode>", "<user_shell_command>", "<environment_context ", "<developer_instructions>",
    "Another language model started to solve this problem",
)
SHELL_COMMAND_PREFIX = "<user_shell_command>"

_EXIT_CODE = re.compile(r"^(?:Exit code: |Process exited with code )(-?\d+)\s*$", re.M)


def normalize(rec: dict[str, Any]) -> tuple[str, dict[str, Any], str | None]:
    """`(kind, payload, timestamp)` of a rollout line of either generation. `kind` is an envelope
    type, "state" (a legacy marker), or "unknown"."""
    rtype = rec.get("type")
    payload = rec.get("payload")
    ts = rec.get("timestamp")
    ts = ts if ts.__class__ is str else None
    if rtype in ENVELOPE_TYPES and payload.__class__ is dict:
        return rtype, payload, ts
    if rtype is None:
        if rec.get("record_type") == "state":
            return "state", rec, None
        if rec.get("id").__class__ is str and ("timestamp" in rec or "instructions" in rec):
            return "session_meta", rec, ts  # the legacy header line
        return "unknown", rec, ts
    if rtype in RESPONSE_ITEM_TYPES:
        return "response_item", rec, ts  # a legacy bare item
    return "unknown", rec, ts


def text_of_content(content: Any, kinds: tuple[str, ...] = ("input_text", "output_text", "text")) -> str:
    """The text parts of a message's `content` (a list of items, or a string) joined by newlines."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    if isinstance(content, list):
        for item in content:
            if isinstance(item, dict) and item.get("type") in kinds and isinstance(item.get("text"), str):
                parts.append(item["text"])
    return "\n".join(parts)


_ENV_CWD = re.compile(r"<cwd>\s*(.*?)\s*</cwd>|^Current working directory: (.+?)\s*$", re.S | re.M)


def environment_cwd(text: str) -> str | None:
    """The working directory an `<environment_context>` message states (`<cwd>…</cwd>`, or
    "Current working directory: …" in 2025 builds), else None."""
    if not text.lstrip().startswith("<environment_context"):
        return None
    m = _ENV_CWD.search(text)
    if m is None:
        return None
    cwd = (m.group(1) or m.group(2) or "").strip()
    return cwd or None


def is_injected(text: str) -> bool:
    return text.lstrip().startswith(INJECTED_PREFIXES)


def prompt_key(text: str) -> str:
    """What two records of one prompt are compared by: the text, whitespace folded."""
    return " ".join(text.split())


def parse_arguments(raw: Any) -> dict[str, Any]:
    """A function call's `arguments` (a JSON string, sometimes already an object) as a dict; text
    that is not a JSON object is kept under "input"."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return {"input": raw}
        return value if isinstance(value, dict) else {"input": value}
    return {}


def command_text(command: Any) -> str | None:
    """A shell call's command as one line: `["bash", "-lc", "script"]` is the script, another
    argv list is joined with shell quoting, a string is itself."""
    if isinstance(command, str):
        return command
    if isinstance(command, list) and command and all(isinstance(c, str) for c in command):
        if len(command) >= 3 and command[-2] in ("-lc", "-c") and command[0].rsplit("/", 1)[-1] in (
                "bash", "sh", "zsh", "dash", "fish", "pwsh", "powershell", "powershell.exe", "cmd", "cmd.exe"):
            return command[-1]
        return shlex.join(command)
    return None


@dataclass(slots=True)
class ToolOutput:
    """A tool output as jacked keeps it: its text and whether it reports a failure (None: it
    does not say)."""

    text: str
    is_error: bool | None = None
    exit_code: int | None = None


def parse_output(output: Any) -> ToolOutput:
    """A `function_call_output` / `custom_tool_call_output` `output` of any Codex version:
    - a JSON string `{"output": ..., "metadata": {"exit_code", "duration_seconds"}}` (shell, 2025);
    - a JSON string or object `{"content": ..., "success": bool}`;
    - an MCP `CallToolResult` (`{"content": [items], "isError": bool}`);
    - a list of content items (`input_text`, `input_image`, ...);
    - plain text, with "Exit code: N" (shell, apply_patch) or "Process exited with code N"
      (unified exec) in its header."""
    if isinstance(output, str):
        stripped = output.lstrip()
        if stripped.startswith("{"):
            try:
                value = orjson.loads(stripped)
            except orjson.JSONDecodeError:
                value = None
            if isinstance(value, dict):
                structured = _structured_output(value)
                if structured is not None:
                    return structured
        return _plain_output(output)
    if isinstance(output, dict):
        structured = _structured_output(output)
        return structured if structured is not None else ToolOutput(orjson.dumps(output).decode())
    if isinstance(output, list):
        return ToolOutput(_items_text(output))
    return ToolOutput("" if output is None else str(output))


def _items_text(items: list[Any]) -> str:
    parts = []
    for item in items:
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("text"), str):
            parts.append(item["text"])
        elif item.get("type") in ("input_image", "image"):
            parts.append("[image]")
    return "\n".join(parts)


def _structured_output(value: dict[str, Any]) -> ToolOutput | None:
    meta = value.get("metadata")
    if isinstance(value.get("output"), str) and isinstance(meta, dict):
        code = meta.get("exit_code")
        code = code if isinstance(code, int) else None
        return ToolOutput(value["output"], None if code is None else code != 0, code)
    if "content" in value and ("success" in value or "isError" in value or "is_error" in value):
        content = value["content"]
        text = content if isinstance(content, str) else _items_text(content) if isinstance(content, list) else ""
        if "success" in value and isinstance(value["success"], bool):
            return ToolOutput(text, not value["success"])
        flag = value.get("isError", value.get("is_error"))
        return ToolOutput(text, flag if isinstance(flag, bool) else None)
    if isinstance(value.get("content"), list) and set(value) <= {"content", "structuredContent", "_meta"}:
        return ToolOutput(_items_text(value["content"]))
    return None


_ERROR_HEADS = ("apply_patch verification failed", "unsupported call", "failed to parse function arguments",
                "aborted by user", "aborted", "error: ", "execution error", "patch rejected", "failed to apply patch",
                "invalid patch")


_HEADER_KEYS = ("Exit code:", "Wall time:", "Chunk ID:", "Process exited with code", "Process running with session ID",
                "Original token count:", "Total output lines:")


def _without_header(text: str) -> str:
    """The output after Codex's header (`Exit code: 0` / `Wall time: …` / `Output:`, or unified
    exec's `Chunk ID: …` block): the exit code is kept apart, the rest is what the command printed."""
    lines = text.split("\n", 8)
    for i, line in enumerate(lines[:8]):
        if line.strip() == "Output:":
            return text.split("\n", i + 1)[-1] if i + 1 < len(lines) else ""
        if not line.startswith(_HEADER_KEYS):
            break
    return text


def _plain_output(text: str) -> ToolOutput:
    head = text[:2000]
    m = _EXIT_CODE.search(head)
    if m is not None:
        code = int(m.group(1))
        return ToolOutput(_without_header(text), code != 0, code)
    first = head.lstrip().split("\n", 1)[0].lower()
    if first.startswith(_ERROR_HEADS):
        return ToolOutput(text, True)
    return ToolOutput(_without_header(text))  # a command still running: its header, no exit code


# ------------------------------------------------------------------------ apply_patch
@dataclass(slots=True)
class PatchFile:
    """One file of an apply_patch patch: its operation (add, update, delete, move), path and
    the `+` / `-` lines the patch gives it."""

    op: str
    path: str
    added: int = 0
    removed: int = 0
    move_to: str | None = None
    lines: list[str] = field(default_factory=list)


def parse_patch(patch: str) -> list[PatchFile]:
    """The files of an apply_patch patch (`*** Begin Patch` … `*** End Patch`), each with its
    added and removed lines counted. A file whose hunks name no lines (a deleted file) counts 0."""
    files: list[PatchFile] = []
    cur: PatchFile | None = None
    for line in patch.splitlines():
        if line.startswith("*** "):
            head = line[4:]
            for op, marker in (("add", "Add File: "), ("update", "Update File: "), ("delete", "Delete File: ")):
                if head.startswith(marker):
                    cur = PatchFile(op, head[len(marker):].strip())
                    files.append(cur)
                    break
            else:
                if head.startswith("Move to: ") and cur is not None:
                    cur.move_to = head[len("Move to: "):].strip()
                    cur.op = "move"
                elif head.startswith(("End Patch", "Begin Patch", "End of File")):
                    pass
            continue
        if cur is None:
            continue
        cur.lines.append(line)
        if line.startswith("+"):
            cur.added += 1
        elif line.startswith("-"):
            cur.removed += 1
    return files


def patch_text(args: dict[str, Any]) -> str | None:
    """The patch of an apply_patch call: a custom tool's raw input, or the JSON variant's
    `input` / `patch`."""
    for key in ("input", "patch"):
        value = args.get(key)
        if isinstance(value, str) and "*** Begin Patch" in value:
            return value
    return None


def heredoc_patch(command: str | None) -> str | None:
    """A patch applied through the shell (`apply_patch <<'EOF' … EOF`, how gpt-4.1-era Codex
    applied patches): its text, else None."""
    if not command or "apply_patch" not in command or "*** Begin Patch" not in command:
        return None
    start = command.index("*** Begin Patch")
    end = command.find("*** End Patch", start)
    return command[start:end + len("*** End Patch")] if end >= 0 else command[start:]
