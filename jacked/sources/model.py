"""Typed records of a reconstructed session: turns, invocations, subagents, distilled texts.

Every text kept here has already been redacted (see `jacked.sources.redact`): these objects are
stored in the catalog and printed, so they must never hold a secret.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

# Tool names by what they do, for every agent jacked reads (metrics, stats and timelines are
# agent-neutral): Claude Code (capitalised), Codex CLI, Gemini CLI, opencode, the Cline family.
READ_TOOLS = frozenset({"Read", "read_file", "read_many_files", "read", "view"})
WRITE_TOOLS = frozenset({"Write", "write_file", "write", "write_to_file", "create"})
EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "apply_patch", "replace", "edit", "multiedit", "patch", "replace_in_file",
                        "apply_diff", "insert_content", "search_and_replace"})
SHELL_TOOLS = frozenset({"Bash", "shell", "local_shell", "exec_command", "shell_command", "container.exec",
                         "run_shell_command", "bash", "execute_command"})
AGENT_TOOLS = frozenset({"Task", "Agent", "task", "invoke_agent"})
# Cursor's tool names (its `toolFormerData.name`), older and `_v2` generations
READ_TOOLS = READ_TOOLS | {"read_file_v2"}
EDIT_TOOLS = EDIT_TOOLS | {"edit_file", "edit_file_v2", "search_replace", "delete_file"}
SHELL_TOOLS = SHELL_TOOLS | {"run_terminal_cmd", "run_terminal_command", "run_terminal_command_v2"}
AGENT_TOOLS = AGENT_TOOLS | {"task_v2"}
# Continue's built-in tools
WRITE_TOOLS = WRITE_TOOLS | {"create_new_file"}
EDIT_TOOLS = EDIT_TOOLS | {"edit_existing_file", "single_find_and_replace", "multi_edit"}
SHELL_TOOLS = SHELL_TOOLS | {"run_terminal_command"}
# OpenHands' (its file actions are named read / write / edit)
SHELL_TOOLS = SHELL_TOOLS | {"execute_bash", "execute_ipython_cell"}
# VS Code's Copilot Chat (`toolId`s: the current names and the earlier `copilot_*` ones)
READ_TOOLS = READ_TOOLS | {"copilot_readFile"}
WRITE_TOOLS = WRITE_TOOLS | {"create_file", "copilot_createFile"}
EDIT_TOOLS = EDIT_TOOLS | {"replace_string_in_file", "multi_replace_string_in_file", "insert_edit_into_file",
                           "copilot_replaceString", "copilot_multiReplaceString", "copilot_insertEdit"}
SHELL_TOOLS = SHELL_TOOLS | {"run_in_terminal", "copilot_runInTerminal"}


@dataclass(slots=True)
class Invocation:
    """One tool call of a turn and, once it arrives, its result."""

    tool_name: str
    tool_use_id: str
    sequence: int
    position: int  # 1-based place among the tool calls of its API response
    message_id: str
    timestamp: str | None = None
    input_brief: str = ""  # redacted, shortened JSON of the arguments
    file_path: str | None = None
    command: str | None = None
    description: str | None = None
    subagent_type: str | None = None
    has_result: bool = False
    is_error: bool = False
    result_brief: str = ""  # redacted head of the result text
    result_timestamp: str | None = None
    lines_added: int = 0
    lines_removed: int = 0
    file_created: bool = False
    agent_id: str | None = None  # the subagent a Task/Agent call started
    prompt_key: str | None = None  # Task/Agent calls: hash of `input.prompt`, to find an inline sidechain
    team_name: str | None = None  # Task/Agent calls spawning a teammate: `input.team_name`
    member_name: str | None = None  # ... and `input.name`
    parallel_group: int = 0  # set when the turn is finalised
    # File changes (Edit/MultiEdit/Write): a bounded, redacted unified diff from the result's
    # `structuredPatch` (a created file: its lines as additions) and content hashes of the
    # file before and after, where the result carries enough to compute them.
    diff: str | None = None
    before_hash: str | None = None
    after_hash: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "tool_name": self.tool_name,
            "tool_use_id": self.tool_use_id,
            "sequence": self.sequence,
            "parallel_group": self.parallel_group,
            "is_error": self.is_error,
            "timestamp": self.timestamp,
            "file_path": self.file_path,
            "command": self.command,
            "agent_id": self.agent_id,
            "input": self.input_brief,
            "result": self.result_brief,
        }


@dataclass(slots=True)
class TurnMetrics:
    """Per-turn figures, as in the `turns --json` contract."""

    tool_call_count: int = 0
    tool_error_count: int = 0
    tool_usage: dict[str, int] = field(default_factory=dict)
    files_read: list[str] = field(default_factory=list)
    files_written: list[str] = field(default_factory=list)
    files_modified: list[str] = field(default_factory=list)
    lines_added: int = 0
    lines_removed: int = 0
    bash_commands: list[str] = field(default_factory=list)
    bash_error_count: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    api_calls: int = 0

    def to_json(self) -> dict[str, Any]:
        # By hand, not dataclasses.asdict: this runs for every turn of every scan.
        return {name: (list(v) if isinstance(v, list) else dict(v) if isinstance(v, dict) else v)
                for name in self.__slots__ for v in (getattr(self, name),)}


@dataclass(slots=True)
class LlmCall:
    """One API response of a turn: its model and token usage (the last line of the response wins)."""

    message_id: str
    model: str | None
    timestamp: str | None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    tool_calls: int = 0
    has_usage: bool = False  # a response without `usage` is not counted as an API call
    agent_cost_usd: float | None = None  # what the agent itself recorded it cost (opencode does)
    cache_creation_1h_tokens: int = 0  # of the cache writes, those kept for an hour (a higher rate)


@dataclass(slots=True)
class TurnEvent:
    """A notable non-tool moment of a turn: `compaction`, `notification` (a background task
    reported back; `data.summary`), `command_output` (what a local command such as /model
    printed; `data.output`)."""

    type: str
    timestamp: str | None
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class FileBackup:
    """A `file-history-snapshot` entry: Claude Code backed `path` up as `backup_file` (version n).

    The backup lives in `<claude dir>/file-history/<session id>/<backup_file>` and holds the
    file's content at `backup_time`; `backup_file` is None when the file did not exist yet.
    """

    path: str  # as Claude Code wrote it: relative to the session's cwd, or absolute
    version: int
    backup_file: str | None
    backup_time: str | None


@dataclass(slots=True)
class Turn:
    """A human prompt and everything that happened until the next one."""

    index: int
    prompt: str | None
    started_at: str | None
    is_slash_command: bool = False
    # What started the turn: "prompt" (a user line), "queued" (a message typed while Claude
    # worked, known only from its queue-operation line), "notification" (a background task
    # reporting back: no human prompt); None for turn 0 (assistant lines before any prompt).
    started_by: str | None = None
    # The uuid of the line that started the turn: a resumed or forked session repeats its
    # parent's lines with their uuids, so the same turn is recognised in both files.
    prompt_uuid: str | None = None
    ended_at: str | None = None
    duration_ms: int | None = None
    duration_source: str | None = None  # "turn_duration" | "timestamps"
    invocations: list[Invocation] = field(default_factory=list)
    metrics: TurnMetrics = field(default_factory=TurnMetrics)
    assistant_text: str | None = None  # the turn's last assistant text (redacted)
    # Everything said and done in the turn besides its prompt, as written: every assistant text,
    # tool inputs and results, an agent's printed output (redacted; capped, `briefs.add_raw`).
    # Indexed for its words only: the exact strings people search for are mostly here.
    raw_text: str | None = None
    compacted: bool = False
    interrupted: bool = False
    models: list[str] = field(default_factory=list)
    llm_calls: list[LlmCall] = field(default_factory=list)
    events: list[TurnEvent] = field(default_factory=list)
    backups: list[FileBackup] = field(default_factory=list)  # first seen in this turn


@dataclass(slots=True)
class TextUnit:
    """A distilled text of a session: label, recap, compaction summary, title."""

    kind: str  # summary_label | foreign_label (its leaf is in another file) | recap | compact_summary | title
    text: str
    timestamp: str | None = None
    turn_index: int | None = None
    leaf_uuid: str | None = None


@dataclass(slots=True)
class Subagent:
    """A subagent run: linked to the parent's Task/Agent call, with its final report."""

    agent_id: str | None
    layout: str  # subagents_dir | flat | inline
    file: str
    agent_type: str | None = None
    description: str | None = None
    tool_use_id: str | None = None
    turn_index: int | None = None
    prompt: str | None = None
    summary_text: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    tool_call_count: int = 0
    tool_error_count: int = 0
    tool_usage: dict[str, int] = field(default_factory=dict)
    is_warmup: bool = False
    turns: list[Turn] = field(default_factory=list)
    # "subagent", or "teammate" (a member of an agent team: `team_name`, `member_name`)
    role: str = "subagent"
    team_name: str | None = None
    member_name: str | None = None  # the name it was spawned with (`input.name`, `agentName`)
    workflow_run: str | None = None  # layout "workflow": the run (`subagents/workflows/<run>/`)


@dataclass(slots=True)
class Compaction:
    """A compaction run (its own file): its API responses, and the main-chain turn it happened in."""

    owner: str  # the file's agent id, e.g. "acompact-1a2b3c"
    turn_index: int | None
    llm_calls: list[LlmCall] = field(default_factory=list)


@dataclass(slots=True)
class Session:
    """One session of a coding agent (`agent`: "claude", "codex", ...), reconstructed from its
    files: for Claude Code its main file, subagents and plan."""

    session_id: str
    file: str
    agent: str = "claude"
    project_dir: str = ""
    cwd: str | None = None
    repo_name: str | None = None
    git_branch: str | None = None
    slug: str | None = None
    version_first: str | None = None
    version_last: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    turns: list[Turn] = field(default_factory=list)
    subagents: list[Subagent] = field(default_factory=list)
    texts: list[TextUnit] = field(default_factory=list)
    plan: str | None = None
    plan_source: str | None = None  # "file" | "exit_plan_mode"
    models: list[str] = field(default_factory=list)
    lines: int = 0
    lines_skipped: int = 0
    lines_malformed: int = 0
    lines_unknown: int = 0
    lines_duplicate: int = 0
    message_lines: int = 0  # user and assistant lines: a file with none is not a session
    # uuids a `summary` line elsewhere may name as its `leafUuid` (the last line of each turn)
    leaf_uuids: list[str] = field(default_factory=list)
    # `<persisted-output>` results (2.1.x tool-results/) whose file was not found
    tool_results_missing: int = 0
    # Claude Code compacting the conversation (`agent-acompact-*`): not a subagent, but billed
    compactions: list[Compaction] = field(default_factory=list)

    @property
    def title(self) -> str | None:
        """The newest custom title, else the newest AI title, else the first label (labels
        whose leaf is in another file are that file's: see `TextUnit` kind "foreign_label")."""
        for kind in ("custom_title", "ai_title", "summary_label"):
            found = [t.text for t in self.texts if t.kind == kind]
            if found:
                return found[-1] if kind != "summary_label" else found[0]
        return None

    @property
    def first_prompt(self) -> str | None:
        """The first typed prompt; a session started by slash commands only gets the first
        command as typed ("/init"), not its markup."""
        command = None
        for t in self.turns:
            if t.index >= 1 and t.prompt:
                if not t.is_slash_command:
                    return t.prompt
                command = command or slash_command_text(t.prompt)
        return command


def slash_command_text(prompt: str) -> str:
    """A slash-command line as the user typed it: "/name args" (its markup dropped; old files
    write some names without their slash)."""
    name = _COMMAND_NAME.search(prompt)
    args = _COMMAND_ARGS.search(prompt)
    command = name.group(1).strip() if name else ""
    if command and not command.startswith("/"):
        command = "/" + command
    parts = [command, args.group(1).strip() if args else ""]
    return " ".join(p for p in parts if p) or prompt.strip()


def typed_prompt(prompt: str, is_slash: bool) -> tuple[str, list[dict[str, str]]]:
    """What the user typed, and the IDE context Claude Code put before it (`<ide_opened_file>`,
    `<ide_selection>`: kind and text, in order). A slash command is "/name args"; a command run
    in bash mode (`<bash-input>…</bash-input>`) is "!command", as it is typed."""
    if is_slash:
        return slash_command_text(prompt), []
    shell = _BASH_INPUT.fullmatch(prompt)
    if shell is not None and shell.group(1).strip():
        return "!" + shell.group(1).strip(), []
    context: list[dict[str, str]] = []
    text = prompt
    while True:
        m = _IDE_CONTEXT.match(text)
        if m is None:
            break
        context.append({"kind": m.group(1), "text": m.group(2).strip()})
        text = text[m.end():]
    if not context or not text.strip():  # nothing typed after it: the text stays as written
        return prompt, []
    return text, context


_BASH_INPUT = re.compile(r"\s*<bash-input>((?:(?!</bash-input>).)*)</bash-input>\s*", re.S)
_IDE_CONTEXT = re.compile(r"\s*<(ide_opened_file|ide_selection)>(.*?)</\1>\s*", re.S)


_COMMAND_NAME = re.compile(r"<command-name>(.*?)</command-name>", re.S)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)


def prompt_text(prompt: str | None, is_slash: bool) -> str:
    """The indexable part of a prompt: a slash command counts only by its arguments."""
    if not prompt:
        return ""
    if is_slash:
        if "<command-name>" not in prompt:  # as typed (a prompt from history.jsonl): "/name args"
            _, _, args = prompt.strip().partition(" ")
            return prompt.strip() if args.strip() else ""
        m = _COMMAND_ARGS.search(prompt)
        args = m.group(1).strip() if m else ""
        name = _COMMAND_NAME.search(prompt)
        return f"{name.group(1).strip()} {args}".strip() if args and name else ""
    return prompt.strip()
