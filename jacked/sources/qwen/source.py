"""Qwen Code as a transcript source.

Qwen Code (a fork of Gemini CLI) keeps its sessions under `~/.qwen` (`QWEN_RUNTIME_DIR`, when
set, is the folder that holds them, as its `Storage.getRuntimeBaseDir` has it), the same on
Linux, macOS and Windows:

    projects/<cwd, every non-alphanumeric character a dash>/chats/<session id>.jsonl   (2025-11 on)
    tmp/<SHA-256 of the project root>/chats/session-<start>-<id8>.json                 (2025-08 … 11)
    tmp/<SHA-256 of the project root>/logs.json          every prompt typed, by session

The JSONL generation is read by `jacked.sources.qwen.records`; the older one is Gemini CLI's own
format (its model messages typed `qwen`), read by the Gemini CLI source. A session known only
from `logs.json` is read from there, as for Gemini CLI, unless a JSONL chat holds it.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from jacked.sources.base import FoundSession, stat_fingerprint
from jacked.sources.gemini.source import GeminiSource
from jacked.sources.gemini.turns import PARSER_VERSION as GEMINI_PARSER_VERSION
from jacked.sources.gemini.turns import build_turns
from jacked.sources.metrics import fill_subagent_counts
from jacked.sources.model import AGENT_TOOLS, Session, Subagent, TextUnit, Turn
from jacked.sources.paths import repo_name_of
from jacked.sources.qwen.records import QwenChat, load_chat

PARSER_VERSION = 100 + GEMINI_PARSER_VERSION  # the Gemini turn rules are shared: a change there re-reads these


def qwen_runtime_dir(environ: Mapping[str, str]) -> Path:
    """`QWEN_RUNTIME_DIR` when set, else `~/.qwen`."""
    configured = environ.get("QWEN_RUNTIME_DIR", "").strip()
    if configured:
        return Path(configured).expanduser()
    home = environ.get("HOME", "").strip() or environ.get("USERPROFILE", "").strip()
    return (Path(home) if home else Path(os.path.expanduser("~"))) / ".qwen"


def _chat_files(root: Path) -> list[Path]:
    projects = root / "projects"
    if not projects.is_dir():
        return []
    return sorted(p for p in projects.glob("*/chats/*.jsonl") if p.is_file())


class QwenSource:
    """Qwen Code (`QWEN_RUNTIME_DIR`, else `~/.qwen`)."""

    name = "qwen"
    label = "Qwen Code"
    parser_version = PARSER_VERSION

    def __init__(self) -> None:
        self._legacy = GeminiSource()

    def default_root(self, environ: Mapping[str, str]) -> Path:
        return qwen_runtime_dir(environ)

    def discover(self, root: Path, errors: list[str]) -> Iterable[FoundSession]:
        seen: set[str] = set()
        for path in _chat_files(root):
            try:
                if path.stat().st_size == 0:
                    continue  # created at start, nothing recorded yet
            except OSError:
                continue
            seen.add(path.stem)
            yield FoundSession(path.stem, str(path.absolute()), [path], stat_fingerprint([path]),
                               extra={"kind": "jsonl"})
        for found in self._legacy.discover(root, errors):
            if found.session_id not in seen:  # a JSONL session's prompts are in logs.json too
                yield found

    def read(self, found: FoundSession) -> Session:
        if found.extra.get("kind") != "jsonl":
            return self._legacy.read(found)
        path = Path(found.location)
        chat = load_chat(path)
        built = build_turns(chat.messages)
        s = Session(session_id=found.session_id, file=str(path.absolute()), agent=self.name,
                    project_dir=path.parent.parent.name, cwd=chat.cwd, repo_name=repo_name_of(chat.cwd),
                    git_branch=chat.git_branch,
                    version_first=chat.versions[0] if chat.versions else None,
                    version_last=chat.versions[-1] if chat.versions else None,
                    started_at=chat.started_at, ended_at=chat.ended_at, turns=built.turns, texts=built.texts,
                    models=list(built.models), lines=chat.lines, lines_malformed=chat.malformed,
                    lines_unknown=chat.unknown + built.unknown, message_lines=built.message_lines)
        if chat.title:
            s.texts.append(TextUnit("custom_title", chat.title, s.ended_at, None))
        s.subagents = _subagents(chat, path, s.turns)
        return s


def _subagents(chat: QwenChat, path: Path, turns: list[Turn]) -> list[Subagent]:
    """Each subagent's records (a sidechain of this file), linked to the turn running when it began."""
    out: list[Subagent] = []
    linked: set[str] = set()
    for agent_id, messages in chat.subagents.items():
        built = build_turns(messages)
        first = next((t for t in built.turns if t.index >= 1), None)
        sub = Subagent(agent_id=agent_id, layout="inline", file=str(path.absolute()),
                       agent_type=chat.subagent_names.get(agent_id), prompt=first.prompt if first else None,
                       summary_text=built.last_assistant_text, started_at=built.started_at,
                       ended_at=built.ended_at, turns=built.turns)
        running = [t for t in turns if sub.started_at and t.started_at and t.started_at <= sub.started_at]
        if running:
            turn = running[-1]
            sub.turn_index = turn.index
            # the agent call of that turn not yet given its subagent (started in the same order)
            call = next((i for i in turn.invocations if i.tool_name in AGENT_TOOLS and i.tool_use_id not in linked), None)
            if call is not None:
                linked.add(call.tool_use_id)
                sub.tool_use_id, sub.description = call.tool_use_id, call.description
                sub.agent_type = call.subagent_type or sub.agent_type
        fill_subagent_counts(sub)
        out.append(sub)
    return out
