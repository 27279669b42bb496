"""Gemini CLI as a transcript source.

On disk (`GEMINI_CLI_HOME`, when set, is the folder that holds `.gemini`, as Gemini CLI's own
`homedir()` has it; else the user's home):

    ~/.gemini/projects.json                       project root -> folder name (2026)
    ~/.gemini/tmp/<project>/.project_root         the project's root path (2026)
    ~/.gemini/tmp/<project>/chats/session-<YYYY-MM-DDTHH-MM>-<id8>.json|.jsonl
    ~/.gemini/tmp/<project>/chats/<session id>/<agent id>.jsonl     its subagents (2026-03)
    ~/.gemini/tmp/<project>/<session id>/plans/*.md                 plan mode's plans
    ~/.gemini/tmp/<project>/logs.json             every prompt typed, by session

`<project>` is the SHA-256 of the project root, or (2026) a short name. A chat file is one
session (see `records` for its generations; a `.json` resumed by a newer CLI continues in a
`.jsonl` of the same name, which is then the one read). A session found only in `logs.json`
(its chat file deleted by Gemini CLI's retention, or written before chats were recorded,
2025-08) is read from there: its prompts, nothing else (`extra["fallback"]`).

The CLI's version and the git branch are not recorded by Gemini CLI: they stay None.
Subagent chats of 2026-02/03 were written next to the sessions, with `kind: "subagent"` and no
link to their parent: they are read as sessions of their own.
"""
from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from jacked.sources.base import FoundSession, stat_fingerprint
from jacked.sources.gemini.project import (
    is_hash_name,
    known_root,
    paths_in_context,
    read_registry,
    root_from_paths,
)
from jacked.sources.gemini.records import ChatFile, load_chat, peek_session
from jacked.sources.gemini.turns import PARSER_VERSION, build_turns, text_of
from jacked.sources.metrics import compute_metrics, fill_subagent_counts
from jacked.sources.model import Session, Subagent, TextUnit, Turn
from jacked.sources.paths import repo_name_of
from jacked.sources.textclean import strip_ansi
from jacked.util.time import catalog_iso, parse_ts

CHAT_SUFFIXES = (".json", ".jsonl")
LOGS_FILE = "logs.json"
MAX_PLAN_CHARS = 200_000


def gemini_home(environ: Mapping[str, str]) -> Path:
    """The folder that holds `.gemini`: `GEMINI_CLI_HOME` when set, else the home folder."""
    configured = environ.get("GEMINI_CLI_HOME", "").strip()
    if configured:
        return Path(configured).expanduser()
    home = environ.get("HOME", "").strip()
    return Path(home) if home else Path(os.path.expanduser("~"))


def sanitize_part(name: str) -> str:
    """Gemini CLI's `sanitizeFilenamePart`: a session id as a folder name."""
    return re.sub(r"[^a-zA-Z0-9_-]", "_", name)


def _chat_files(folder: Path) -> list[Path]:
    try:
        entries = list(folder.iterdir())
    except OSError:
        return []
    # `.tmp-<pid>` and `.unreadable-<ms>` files are Gemini CLI's own leftovers, not sessions
    return sorted(p for p in entries if p.suffix in CHAT_SUFFIXES and p.name.count(".") == 1 and p.is_file())


def _iso(ts: Any) -> str | None:
    """An ISO 8601 time in UTC with a Z (as Gemini CLI writes them; others converted)."""
    if not isinstance(ts, str) or not ts:
        return None
    if ts.endswith("Z"):
        return ts
    dt = parse_ts(ts)
    if dt is None:
        return None
    return catalog_iso(dt)


def load_logs(path: Path) -> dict[str, list[dict[str, Any]]]:
    """`logs.json`: its prompt entries by session id, in file order (entries of another shape
    are left out, as Gemini CLI does)."""
    data = orjson.loads(path.read_bytes())
    out: dict[str, list[dict[str, Any]]] = {}
    if not isinstance(data, list):
        return out
    for e in data:
        if (isinstance(e, dict) and isinstance(e.get("sessionId"), str) and isinstance(e.get("message"), str)
                and isinstance(e.get("timestamp"), str) and e.get("type", "user") == "user"):
            out.setdefault(e["sessionId"], []).append(e)
    return out


class GeminiSource:
    """Gemini CLI (`GEMINI_CLI_HOME/.gemini`, else `~/.gemini`)."""

    name = "gemini"
    label = "Gemini CLI"
    parser_version = PARSER_VERSION

    def default_root(self, environ: Mapping[str, str]) -> Path:
        return gemini_home(environ) / ".gemini"

    # ------------------------------------------------------------------ discovery
    def discover(self, root: Path, errors: list[str]) -> Iterable[FoundSession]:
        tmp = root / "tmp"
        if not tmp.is_dir():
            return
        registry = read_registry(root)
        for project in sorted(p for p in tmp.iterdir() if p.is_dir()):
            yield from self._project(project, registry, errors)

    def _project(self, project: Path, registry: dict[str, str], errors: list[str]) -> Iterable[FoundSession]:
        chats = project / "chats"
        cwd = known_root(project, registry)
        chosen: dict[str, Path] = {}
        for path in _chat_files(chats):
            sid, _kind = peek_session(path)
            if sid is None:
                continue  # empty, or its first line not written yet
            have = chosen.get(sid)
            if have is None or _prefer(path, have):
                chosen[sid] = path
        for sid, path in chosen.items():
            subs = _chat_files(chats / sanitize_part(sid))
            plans = sorted((project / sanitize_part(sid) / "plans").glob("*.md")) \
                if (project / sanitize_part(sid) / "plans").is_dir() else []
            files = [path, *subs, *plans]
            yield FoundSession(sid, str(path.absolute()), files, stat_fingerprint(files),
                               extra={"kind": "chat", "main": path, "subagents": subs, "plans": plans,
                                      "project": project, "cwd": cwd, "registry": registry})
        logs = project / LOGS_FILE
        if logs.is_file():
            try:
                by_session = load_logs(logs)
            except (OSError, orjson.JSONDecodeError) as e:
                errors.append(f"{logs}: {getattr(e, 'strerror', None) or e}")
                return
            for sid, entries in by_session.items():
                if sid in chosen:
                    continue
                digest = hashlib.blake2b(orjson.dumps(entries), digest_size=12).hexdigest()
                yield FoundSession(sid, f"{logs.absolute()}#{sid}", [logs], digest,
                                   extra={"kind": "logs", "entries": entries, "project": project, "cwd": cwd,
                                          "registry": registry, "fallback": True})

    # ------------------------------------------------------------------ reading
    def read(self, found: FoundSession) -> Session:
        if found.extra.get("kind") == "logs":
            return _from_logs(found)
        main: Path = found.extra.get("main") or Path(found.location)
        chat = load_chat(main)
        built = build_turns(chat.messages)
        project: Path = found.extra.get("project") or main.parent.parent
        cwd = given if isinstance(given := found.extra.get("cwd"), str) else None
        if cwd is None:
            cwd = _root_from_session(chat, built.paths, project)
        s = Session(session_id=found.session_id, file=str(main.absolute()), agent="gemini",
                    project_dir=project.name, cwd=cwd, repo_name=repo_name_of(cwd),
                    started_at=_iso(chat.meta.get("startTime")) or _iso(built.started_at),
                    ended_at=_iso(_latest(chat.meta.get("lastUpdated"), built.ended_at)),
                    turns=built.turns, texts=built.texts, models=list(built.models),
                    lines=chat.lines, lines_malformed=chat.malformed,
                    lines_unknown=chat.unknown + built.unknown, lines_duplicate=built.duplicates,
                    message_lines=built.message_lines)
        summary = chat.meta.get("summary")
        if isinstance(summary, str) and summary.strip():
            s.texts.append(TextUnit("ai_title", strip_ansi(summary.strip()), s.ended_at, None))
        subs = found.extra.get("subagents") or []
        s.subagents = _subagents(subs, s.turns)
        plans = found.extra.get("plans") or []
        s.plan, s.plan_source = _plan(plans, built.plan_file, built.written)
        return s


def _prefer(path: Path, other: Path) -> bool:
    """Of two files of one session: the `.jsonl` (a resumed `.json` continues there), then the
    newer."""
    if path.suffix != other.suffix:
        return path.suffix == ".jsonl"
    try:
        return path.stat().st_mtime_ns > other.stat().st_mtime_ns
    except OSError:
        return False


def _latest(a: Any, b: Any) -> str | None:
    a = a if isinstance(a, str) else None
    b = b if isinstance(b, str) else None
    da, db = parse_ts(a), parse_ts(b)
    if da is None:
        return b
    if db is None:
        return a
    return b if db > da else a


def _root_from_session(chat: ChatFile, paths: list[str], project: Path) -> str | None:
    project_hash = chat.meta.get("projectHash")
    if not isinstance(project_hash, str) or not is_hash_name(project_hash):
        project_hash = project.name if is_hash_name(project.name) else None
    candidates: list[str] = []
    dirs = chat.meta.get("directories")
    if isinstance(dirs, list):
        candidates += [d for d in dirs if isinstance(d, str)]
    for msg in chat.messages[:5]:
        if msg.get("type") == "user":
            text = text_of(msg.get("content"))
            if "<session_context>" in text or "working in the directory" in text:
                candidates += paths_in_context(text)
    candidates += paths
    return root_from_paths(project_hash, candidates)


def _subagents(files: list[Path], turns: list[Turn]) -> list[Subagent]:
    """The subagent chats of a session, linked to the call that started each (its `agentId`)."""
    calls = {inv.agent_id: (t, inv) for t in turns for inv in t.invocations if inv.agent_id}
    out: list[Subagent] = []
    for path in files:
        try:
            chat = load_chat(path)
        except (OSError, ValueError):
            continue
        built = build_turns(chat.messages)
        agent_id = chat.session_id or path.stem
        first = next((t for t in built.turns if t.index >= 1), None)
        summary = chat.meta.get("summary")
        report = summary if isinstance(summary, str) and summary.strip() else built.last_assistant_text
        sub = Subagent(agent_id=agent_id, layout="subagents_dir", file=str(path.absolute()),
                       prompt=first.prompt if first else None, summary_text=report,
                       started_at=_iso(chat.meta.get("startTime")) or _iso(built.started_at),
                       ended_at=_iso(_latest(chat.meta.get("lastUpdated"), built.ended_at)), turns=built.turns)
        linked = calls.get(agent_id)
        if linked is not None:
            turn, inv = linked
            sub.tool_use_id, sub.turn_index = inv.tool_use_id, turn.index
            sub.agent_type = inv.subagent_type or inv.tool_name
            sub.description = inv.description
        else:
            start = parse_ts(sub.started_at)
            for t in turns:  # the turn running when it started
                if start is not None and (ts := parse_ts(t.started_at)) is not None and ts <= start:
                    sub.turn_index = t.index
        fill_subagent_counts(sub)
        out.append(sub)
    return out


def _plan(plans: list[Path], plan_file: str | None, written: dict[str, str]) -> tuple[str | None, str | None]:
    """The session's plan: the plan file `exit_plan_mode` named (else the newest one) from the
    session's plans folder; else what a `write_file` call wrote to it."""
    if plans:
        named = [p for p in plans if plan_file and p.name == Path(plan_file).name]
        pick = named[-1] if named else max(plans, key=lambda p: p.stat().st_mtime_ns if p.exists() else 0)
        try:
            text = pick.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        if text.strip():
            return text[:MAX_PLAN_CHARS], "file"
    if plan_file:
        name = Path(plan_file).name
        for path, content in reversed(written.items()):
            if Path(path).name == name and content.strip():
                return content, "exit_plan_mode"
    return None, None


def _from_logs(found: FoundSession) -> Session:
    """A session known only from `logs.json`: one turn per prompt typed."""
    entries: list[dict[str, Any]] = found.extra.get("entries") or []
    project: Path = found.extra["project"]
    logs = project / LOGS_FILE
    cwd = given if isinstance(given := found.extra.get("cwd"), str) else None
    if cwd is None and is_hash_name(project.name):
        registry = found.extra.get("registry") or {}
        cwd = registry.get(project.name) if isinstance(registry, dict) else None
    entries = sorted(entries, key=lambda e: (parse_ts(e["timestamp"]) is None, e["timestamp"],
                                              e.get("messageId") if isinstance(e.get("messageId"), int) else 0))
    turns: list[Turn] = []
    for e in entries:
        text = strip_ansi(e["message"])
        if not text.strip():
            continue
        ts = _iso(e["timestamp"])
        turns.append(Turn(index=len(turns) + 1, prompt=text, started_at=ts, ended_at=ts,
                          is_slash_command=text.lstrip().startswith("/"), started_by="prompt"))
    for turn in turns:
        compute_metrics(turn)
    return Session(session_id=found.session_id, file=str(logs.absolute()), agent="gemini", project_dir=project.name,
                   cwd=cwd, repo_name=repo_name_of(cwd), started_at=turns[0].started_at if turns else None,
                   ended_at=turns[-1].started_at if turns else None, turns=turns, lines=len(entries),
                   message_lines=len(turns))
