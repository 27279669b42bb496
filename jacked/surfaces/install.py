"""`jacked install` / `jacked uninstall`: the skill, the hooks and (optionally) the MCP server.

What install touches, all under the Claude directory unless noted:
* `skills/jacked/SKILL.md` — the skill shipped in the package (`jacked/skill/SKILL.md`);
* `settings.json` — `hooks`: Stop and SessionEnd run `<jacked> index --hook` (async: Claude
  Code does not wait; the command itself also returns at once and indexes in a child);
  with `recall`, SessionStart and UserPromptSubmit run `<jacked> recall --hook` (synchronous:
  its output is the context Claude Code adds to the new session, or to the prompt);
* with `mcp`, Claude Code's user-scope MCP servers (`mcpServers` in `.claude.json`: in the
  Claude directory when it holds one or when it is not the default `~/.claude`, else
  `~/.claude.json`) get `jacked` as a stdio server (`<jacked> mcp`).

Guarantees: idempotent (a second install writes nothing); all or nothing (every file is read
and checked before any is written: a file jacked must not touch stops the run with nothing
changed); a timestamped backup of every file before it is written (`<claude dir>/jacked-backups/`,
mode 0600); a symlinked file is written through to its target (a dotfiles repo stays the one
copy); the user's other settings and hooks are left as they are; uninstall removes exactly
what install added.
For byte identity, the state file (`<claude dir>/jacked-install.json`) remembers each
JSON file's bytes from before jacked's additions and a hash of what install wrote: when
the file is still exactly what install wrote, uninstall puts the old bytes back; when
the user changed it since, only jacked's entries are taken out.

The entries themselves (hooks and MCP server, with `{jacked}` for the command) are package
data, `jacked/defaults/hooks.json`, read by `hook_snippets()`.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shlex
import shutil
import sys
import time
from collections.abc import Callable, Mapping
from glob import escape as glob_escape
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from jacked.errors import JackedError
from jacked.util.fs import atomic_write

__all__ = ["InstallError", "InstallReport", "install", "uninstall", "jacked_command", "mcp_config_path",
           "skill_source", "hook_snippets", "STATE_FILE", "HOOK_EVENTS"]

STATE_FILE = "jacked-install.json"
BACKUP_DIR = "jacked-backups"
HOOKS_RESOURCE = "defaults/hooks.json"  # inside the package, so an installed wheel has it
PLACEHOLDER = "{jacked}"


def hook_snippets() -> dict[str, Any]:
    """`jacked/defaults/hooks.json`: `index` and `recall` (fragments of settings.json) and
    `mcp` (a fragment of .claude.json), with PLACEHOLDER where the jacked command goes."""
    text = resources.files("jacked").joinpath(HOOKS_RESOURCE).read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


_SNIPPETS = hook_snippets()
HOOK_EVENTS: tuple[str, ...] = tuple(_SNIPPETS["index"]["hooks"])
RECALL_EVENTS: tuple[str, ...] = tuple(_SNIPPETS["recall"]["hooks"])
(MCP_NAME,) = _SNIPPETS["mcp"]["mcpServers"]


class InstallError(JackedError):
    """A file install must not touch as it is (e.g. settings.json is not valid JSON)."""


@dataclass
class InstallReport:
    """What install or uninstall did; `to_json` for `--json`."""

    changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    backups: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # uninstall: what happened to each changed file: "restored" (its bytes from before install put
    # back), "removed" (install made it), "edited" (jacked's entries taken out, the rest kept)
    actions: dict[str, str] = field(default_factory=dict)
    backups_removed: list[str] = field(default_factory=list)  # install's backups identical to a restored file

    def to_json(self) -> dict[str, Any]:
        return {"changed": self.changed, "unchanged": self.unchanged, "backups": self.backups, "notes": self.notes,
                "actions": self.actions, "backups_removed": self.backups_removed}


# --------------------------------------------------------------------------- paths and commands
def jacked_command() -> str:
    """The absolute command that runs this jacked (hooks run without the user's PATH setup)."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name in ("jacked", "jacked.exe"):
        p = argv0 if argv0.is_absolute() else Path(shutil.which(str(argv0)) or argv0).absolute()
        if p.exists():
            return shlex.quote(str(p.resolve()))
    found = shutil.which("jacked")
    if found:
        return shlex.quote(str(Path(found).resolve()))
    script = Path(sys.executable).parent / "jacked"
    if script.exists():
        return shlex.quote(str(script))
    return f"{shlex.quote(sys.executable)} -m jacked.surfaces.cli.main"


def skill_source() -> str:
    """The SKILL.md shipped inside the package."""
    return resources.files("jacked").joinpath("skill/SKILL.md").read_text(encoding="utf-8")


def mcp_config_path(claude_dir: Path, default_dir: Path | None = None) -> Path:
    """Where Claude Code keeps user-scope MCP servers: `.claude.json` in the Claude directory
    when that file exists there or the directory is not the default one, else `~/.claude.json`."""
    default_dir = default_dir or Path.home() / ".claude"
    inside = Path(claude_dir) / ".claude.json"
    if inside.exists() or Path(claude_dir).absolute() != default_dir.absolute():
        return inside
    return default_dir.parent / ".claude.json"


def _sha(data: bytes | None) -> str | None:
    return hashlib.sha256(data).hexdigest() if data is not None else None


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _write_atomic(path: Path, data: bytes, mode: int | None = None) -> None:
    path = Path(os.path.realpath(path))  # through a symlink (e.g. into a dotfiles repo): the link stays
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o777
        except FileNotFoundError:
            mode = 0o644
    atomic_write(path, data, mode=mode)


class _Ctx:
    """One install/uninstall run: the Claude dir, the state file, backups, the report."""

    def __init__(self, claude_dir: Path, report: InstallReport, stamp: str | None = None) -> None:
        self.claude_dir = Path(claude_dir)
        self.report = report
        self.stamp = stamp or time.strftime("%Y%m%d-%H%M%S") + f"-{time.time_ns() % 1_000_000:06d}"
        self.state_path = self.claude_dir / STATE_FILE
        raw = _read(self.state_path)
        try:
            self.state: dict[str, Any] = json.loads(raw) if raw else {}
        except (ValueError, RecursionError):  # not JSON, not UTF-8: start afresh
            self.state = {}
        if not isinstance(self.state, dict) or not isinstance(self.state.get("files", {}), dict):
            self.state = {}
        self.state.setdefault("version", 1)
        self.state.setdefault("files", {})
        # uninstall: how jacked's entries are taken out of each JSON file (to judge its backups)
        self.removers: dict[str, Callable[[dict[str, Any]], bool]] = {}

    def backup(self, path: Path) -> None:
        """A timestamped copy of `path` (if it exists) before it is written."""
        if not path.exists():
            return
        dest_dir = self.claude_dir / BACKUP_DIR
        dest_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        dest = dest_dir / f"{path.name}.{self.stamp}"
        shutil.copyfile(path, dest)
        os.chmod(dest, 0o600)  # settings files may hold tokens
        self.report.backups.append(str(dest))

    def save_state(self) -> None:
        if not self.state["files"] and not self.state.get("skill"):
            if self.state_path.exists():
                self.state_path.unlink()
            return
        _write_atomic(self.state_path, (json.dumps(self.state, indent=2) + "\n").encode(), 0o600)


# --------------------------------------------------------------------------- JSON files
def _load_json(path: Path, raw: bytes | None) -> dict[str, Any]:
    if raw is None or not raw.strip():
        return {}
    untouched = "fix it first; jacked leaves it untouched"
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as e:
        raise InstallError(f"{path}: invalid JSON at line {e.lineno}, column {e.colno} ({e.msg}): "
                           f"{untouched}") from None
    except UnicodeDecodeError as e:
        raise InstallError(f"{path}: not UTF-8 text (byte {e.start}): {untouched}") from None
    except RecursionError:
        raise InstallError(f"{path}: JSON nested too deeply to read: {untouched}") from None
    if not isinstance(data, dict):
        found = {str: "a string", list: "an array", bool: "true or false", type(None): "null"}.get(
            type(data), "a number")
        raise InstallError(f"{path}: expected a JSON object, found {found}; jacked leaves it untouched")
    try:
        _dump(data)
    except UnicodeEncodeError:
        raise InstallError(f"{path}: holds a lone surrogate escape (like \\ud800), which is not text: "
                           f"{untouched}") from None
    return data


def _dump(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


Step = Callable[[], None]  # a write planned by install or uninstall, run once every file passed its checks


def _run(steps: list[Step]) -> None:
    for step in steps:
        step()


def _edit_json(ctx: _Ctx, path: Path, key: str, add: Callable[[dict[str, Any]], None],
               remove: Callable[[dict[str, Any]], bool]) -> Step:
    """Plan merging jacked's entries into a JSON file, remembering its bytes from before them:
    the file is read and checked now (InstallError when jacked must not touch it), written by
    the returned step."""
    raw = _read(path)
    data = _load_json(path, raw)
    entry = ctx.state["files"].get(key)
    probe = json.loads(json.dumps(data))
    had_ours = remove(probe)
    if not had_ours:
        pre = raw  # the user's file as it is: restored byte for byte on uninstall
    elif entry and _sha(raw) == entry.get("post_sha256"):
        pre = base64.b64decode(entry["pre_b64"]) if entry.get("pre_b64") is not None else None
    else:  # changed since jacked wrote it: the best "before" is the file without jacked's entries
        pre = _dump(probe)
    add(data)
    new = _dump(data)
    if raw is not None and json.loads(raw or b"{}") == data and had_ours:
        def keep() -> None:
            ctx.report.unchanged.append(str(path))
            if entry is None:  # entries found but no state (e.g. state file lost): remember them now
                ctx.state["files"][key] = {"path": str(path), "pre_b64": base64.b64encode(pre).decode()
                                           if pre is not None else None, "post_sha256": _sha(raw)}
        return keep

    def write() -> None:
        ctx.backup(path)
        _write_atomic(path, new)
        ctx.state["files"][key] = {"path": str(path), "pre_b64": base64.b64encode(pre).decode()
                                   if pre is not None else None, "post_sha256": _sha(new)}
        ctx.report.changed.append(str(path))
    return write


def _unedit_json(ctx: _Ctx, path: Path, key: str, remove: Callable[[dict[str, Any]], bool]) -> Step:
    """Plan taking jacked's entries out of a JSON file: the old bytes back when nothing else
    changed. Read and checked now, written by the returned step."""
    raw = _read(path)
    entry = ctx.state["files"].get(key)
    ctx.removers[str(path)] = remove

    def forget() -> None:
        ctx.state["files"].pop(key, None)

    if raw is None:
        return forget
    if entry and _sha(raw) == entry.get("post_sha256"):
        def put_back() -> None:
            # No backup: the file is exactly what install wrote, which install's own backup and
            # the bytes put back now hold.
            forget()
            pre = entry.get("pre_b64")
            if pre is None:
                path.unlink()
            else:
                _write_atomic(path, base64.b64decode(pre))
            ctx.report.changed.append(str(path))
            ctx.report.actions[str(path)] = "removed" if pre is None else "restored"
        return put_back
    data = _load_json(path, raw)
    if not remove(data):
        def keep() -> None:
            forget()
            ctx.report.unchanged.append(str(path))
        return keep

    def write() -> None:
        forget()
        ctx.backup(path)  # kept: the file holds the user's changes since install
        _write_atomic(path, _dump(data))
        ctx.report.changed.append(str(path))
        ctx.report.actions[str(path)] = "edited"
    return write


def _drop_spent_backups(ctx: _Ctx) -> None:
    """Delete install's backups that hold nothing the user lacks now that uninstall restored their
    file: a copy byte for byte of it, or (a JSON file) the same settings once jacked's own entries
    are taken out. Any other backup stays; the folder goes once it is empty."""
    folder = ctx.claude_dir / BACKUP_DIR
    restored = [Path(p) for p, action in ctx.report.actions.items() if action == "restored"]
    if not restored or not folder.is_dir():
        return
    for path in restored:
        current = _read(path)
        remove = ctx.removers.get(str(path))
        for backup in sorted(folder.glob(f"{glob_escape(path.name)}.*")):
            if not _BACKUP_STAMP.fullmatch(backup.name[len(path.name) + 1:]):
                continue
            held = _read(backup)
            if held == current or (remove is not None and _same_without_jacked(held, current, remove)):
                backup.unlink()
                ctx.report.backups_removed.append(str(backup))
    try:
        folder.rmdir()  # only when empty
    except OSError:
        pass


def _same_without_jacked(backup: bytes | None, current: bytes | None,
                         remove: Callable[[dict[str, Any]], bool]) -> bool:
    """Whether a JSON backup, less jacked's entries, holds the same settings as `current`."""
    try:
        held, now = json.loads(backup or b""), json.loads(current or b"")
    except (ValueError, RecursionError):
        return False
    if not isinstance(held, dict) or not isinstance(now, dict):
        return False
    remove(held)
    return held == now


_BACKUP_STAMP = re.compile(r"\d{8}-\d{6}-\d{6}")  # _Ctx.stamp


# --------------------------------------------------------------------------- hooks
def _is_ours(hook: Any, sub: str) -> bool:
    """A hook entry jacked added: a command running some jacked with `<sub> --hook`."""
    if not isinstance(hook, dict) or not isinstance(hook.get("command"), str):
        return False
    cmd = hook["command"]
    try:
        words = shlex.split(cmd)
    except ValueError:
        return False
    if not words or words[-2:] != [sub, "--hook"]:
        return False
    exe = " ".join(words[:-2])
    return Path(words[0]).name in ("jacked", "jacked.exe") or "jacked.surfaces.cli.main" in exe


def _expand(node: Any, exe: str) -> Any:
    """A fresh copy of a snippet with PLACEHOLDER replaced by `exe`."""
    if isinstance(node, str):
        return node.replace(PLACEHOLDER, exe)
    if isinstance(node, list):
        return [_expand(x, exe) for x in node]
    if isinstance(node, dict):
        return {k: _expand(v, exe) for k, v in node.items()}
    return node


def _wanted_hooks(exe: str, index: bool, recall: bool) -> dict[str, list[dict[str, Any]]]:
    """{event: [hook group, ...]} for the `index` and/or `recall` snippets."""
    hooks: dict[str, list[dict[str, Any]]] = {}
    if index:
        hooks.update(_expand(_SNIPPETS["index"]["hooks"], exe))
    if recall:
        hooks.update(_expand(_SNIPPETS["recall"]["hooks"], exe))
    return hooks


def _remove_hooks(data: dict[str, Any]) -> bool:
    """Drop jacked's hook entries (and the groups, lists and `hooks` key left empty by that)."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return False
    found = False
    for ev in list(hooks):
        groups = hooks[ev]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for g in groups:
            if isinstance(g, dict) and isinstance(g.get("hooks"), list):
                kept = [h for h in g["hooks"] if not (_is_ours(h, "index") or _is_ours(h, "recall"))]
                if len(kept) != len(g["hooks"]):
                    found = True
                    if not kept:
                        continue  # the group held only jacked's hook: it was jacked's group
                    g = {**g, "hooks": kept}
            kept_groups.append(g)
        if kept_groups:
            hooks[ev] = kept_groups
        else:
            del hooks[ev]
    if found and not hooks:
        del data["hooks"]
    return found


def _add_hooks(data: dict[str, Any], wanted: dict[str, list[dict[str, Any]]]) -> None:
    _remove_hooks(data)  # one current entry per event, whatever an older install left
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError("settings.json: `hooks` is not an object; jacked leaves it untouched")
    for ev, ours in wanted.items():
        groups = hooks.setdefault(ev, [])
        if not isinstance(groups, list):
            raise InstallError(f"settings.json: hooks.{ev} is not a list; jacked leaves it untouched")
        groups.extend(ours)


# --------------------------------------------------------------------------- MCP
def _mcp_entry(exe: str) -> dict[str, Any]:
    """The snippet's server: the first word of `exe` as `command`, the others before `args`."""
    entry: dict[str, Any] = _expand(_SNIPPETS["mcp"]["mcpServers"][MCP_NAME], exe)
    words = shlex.split(exe)
    entry["command"] = words[0]
    entry["args"] = words[1:] + list(entry.get("args", []))
    return entry


def _add_mcp(data: dict[str, Any], exe: str) -> None:
    servers = data.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise InstallError("mcpServers is not an object; jacked leaves it untouched")
    servers[MCP_NAME] = _mcp_entry(exe)


def _remove_mcp(data: dict[str, Any]) -> bool:
    servers = data.get("mcpServers")
    if not isinstance(servers, dict) or MCP_NAME not in servers:
        return False
    entry = servers[MCP_NAME]
    args = entry.get("args") if isinstance(entry, dict) else None
    if not (isinstance(args, list) and args[-1:] == ["mcp"]):
        return False  # a server of the same name that is not ours: leave it
    del servers[MCP_NAME]
    if not servers:
        del data["mcpServers"]
    return True


# --------------------------------------------------------------------------- entry points
def install(claude_dir: Path, hooks: bool = True, skill: bool = True, recall: bool = False, mcp: bool = False,
            exe: str | None = None, mcp_path: Path | None = None) -> InstallReport:
    """Install the skill, the hooks and optionally recall and the MCP server (idempotent)."""
    claude_dir = Path(claude_dir)
    if not claude_dir.is_dir():
        raise InstallError(f"no Claude directory at {claude_dir}: run Claude Code once, or set CLAUDE_CONFIG_DIR")
    report = InstallReport()
    ctx = _Ctx(claude_dir, report)
    exe = exe or jacked_command()
    steps: list[Step] = []  # every file is checked before the first one is written
    if skill:
        steps.append(lambda: _install_skill(ctx))
    if hooks or recall:
        wanted = _wanted_hooks(exe, index=hooks, recall=recall)
        steps.append(_edit_json(ctx, claude_dir / "settings.json", "settings", lambda d: _add_hooks(d, wanted),
                                _remove_hooks))
    if mcp:
        path = mcp_path or mcp_config_path(claude_dir)
        steps.append(_edit_json(ctx, path, "mcp", lambda d: _add_mcp(d, exe), _remove_mcp))
    _run(steps)
    if mcp and str(path) in report.changed:
        report.notes.append(f"MCP server `{MCP_NAME}` registered in {path} (user scope): restart Claude Code")
    ctx.save_state()
    return report


def uninstall(claude_dir: Path, mcp_path: Path | None = None) -> InstallReport:
    """Remove what install added: the skill, jacked's hooks, the MCP server entry."""
    claude_dir = Path(claude_dir)
    report = InstallReport()
    ctx = _Ctx(claude_dir, report)
    mcp_file = Path(ctx.state["files"]["mcp"]["path"]) if "mcp" in ctx.state["files"] else (
        mcp_path or mcp_config_path(claude_dir))
    steps = [_unedit_json(ctx, claude_dir / "settings.json", "settings", _remove_hooks),
             _unedit_json(ctx, mcp_file, "mcp", _remove_mcp)]  # both checked before anything is removed
    _uninstall_skill(ctx)
    _run(steps)
    _drop_spent_backups(ctx)
    ctx.save_state()
    return report


def _install_skill(ctx: _Ctx) -> None:
    dest = ctx.claude_dir / "skills" / "jacked" / "SKILL.md"
    text = skill_source().encode("utf-8")
    current = _read(dest)
    if current == text:
        ctx.report.unchanged.append(str(dest))
    else:
        created = [str(d) for d in (dest.parent.parent, dest.parent) if not d.exists()]
        ctx.backup(dest)
        _write_atomic(dest, text, 0o644)
        prev = ctx.state.get("skill") or {}
        ctx.state["skill"] = {"path": str(dest), "sha256": _sha(text),
                              "created_dirs": prev.get("created_dirs", created),
                              "pre_b64": prev.get("pre_b64", base64.b64encode(current).decode() if current else None)}
        ctx.report.changed.append(str(dest))


def _uninstall_skill(ctx: _Ctx) -> None:
    info = ctx.state.pop("skill", None)
    dest = Path(info["path"]) if info else ctx.claude_dir / "skills" / "jacked" / "SKILL.md"
    current = _read(dest)
    if current is None:
        return
    ours = (info and _sha(current) == info.get("sha256")) or current == skill_source().encode("utf-8")
    if not ours:
        ctx.report.notes.append(f"{dest} was changed since install: left in place")
        return
    # no backup: the file is jacked's own skill
    if info and info.get("pre_b64"):
        _write_atomic(dest, base64.b64decode(info["pre_b64"]))  # someone else's skill was there before
        ctx.report.actions[str(dest)] = "restored"
    else:
        ctx.report.actions[str(dest)] = "removed"
        dest.unlink()
        for d in (info or {}).get("created_dirs", [str(dest.parent)])[::-1]:
            try:
                Path(d).rmdir()  # only when empty
            except OSError:
                pass
    ctx.report.changed.append(str(dest))


# --------------------------------------------------------------------------- other agents
OTHER_AGENTS = ("codex", "gemini", "opencode", "qwen", "copilot", "cursor")
# Agents jacked reads that take no MCP server: nothing to register (their sessions are read anyway).
NO_MCP_AGENTS = {"aider": "Aider"}
# Agents whose MCP configuration jacked leaves to the user: Goose's is YAML (`config.yaml`
# `extensions:`), and rewriting it without a YAML round-trip library would drop the user's comments.
BY_HAND_AGENTS = {"goose": "Goose keeps its MCP servers in ~/.config/goose/config.yaml, which jacked does not rewrite: "
                           "run `goose configure`, choose Add Extension > Command-line Extension and give it the "
                           "command `jacked mcp`"}


def install_for_agent(agent: str, environ: Mapping[str, str] | None = None) -> Path:
    """Register `jacked mcp` in another agent's own MCP configuration (Codex CLI's config.toml,
    Gemini CLI's settings.json, opencode's opencode.json); the file written (its old bytes kept
    beside it as `<file>.jacked.bak`)."""
    return _agent_module(agent).install(shlex.split(jacked_command()), os.environ if environ is None else environ)


def uninstall_for_agent(agent: str, environ: Mapping[str, str] | None = None) -> Path | None:
    """Take the `jacked` MCP server out of that agent's configuration; the file changed, or None."""
    return _agent_module(agent).uninstall(os.environ if environ is None else environ)


def _agent_module(agent: str) -> Any:
    if agent in NO_MCP_AGENTS:
        raise InstallError(f"{NO_MCP_AGENTS[agent]} takes no MCP server, so there is nothing to install: jacked reads "
                           "its sessions anyway (`jacked backfill`)")
    if agent in BY_HAND_AGENTS:
        raise InstallError(BY_HAND_AGENTS[agent])
    if agent not in OTHER_AGENTS:
        raise InstallError(f"unknown agent {agent!r}: use one of {', '.join(OTHER_AGENTS)} (Claude Code is the default)")
    import importlib

    return importlib.import_module(f"jacked.surfaces.agent_install.{agent}")

