"""Cline, Roo Code and Kilo Code as transcript sources: one reader, three extensions.

Each keeps a task per folder in its editor's extension storage (`globalStorage/<extension id>`,
`src/core/storage/disk.ts`: `tasks/<task id>/`):

    api_conversation_history.json   what was sent to the model (read for the workspace only)
    ui_messages.json                the chat as shown (`claude_messages.json` before 2024-10)
    task_metadata.json              files in context, models used, the extension's version

The storage is under the editor's user folder: `~/.config/<editor>/User/globalStorage` on
Linux, `~/Library/Application Support/<editor>/User/globalStorage` on macOS,
`%APPDATA%/<editor>/User/globalStorage` on Windows, for VS Code (`Code`), `Code - Insiders`,
`VSCodium`, `Cursor` and `Windsurf`; Cline's CLI and JetBrains hosts keep it in `~/.cline/data`
(`CLINE_DATA_DIR`). Not read yet: the sessions Cline's SDK-based releases (2026-05 on) write
apart from `tasks/` (a session folder of a manifest and a messages file); their `tasks/` of
before the move are.
The source's folder is the extension's storage in the first editor that has it (or the
`JACKED_<NAME>_DIR` variable); the same extension's storage in the other editors next to it is
read too. A task's id is its folder name; a task is re-read when one of its files changed.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from jacked.sources.base import FoundSession, stat_fingerprint
from jacked.sources.cline.turns import PARSER_VERSION, build_turns, cwd_in
from jacked.sources.model import Session
from jacked.sources.paths import repo_name_of
from jacked.sources.reader import complete_array_items

EDITORS = ("Code", "Cursor", "Code - Insiders", "VSCodium", "Windsurf")
UI_FILES = ("ui_messages.json", "claude_messages.json")
API_FILE = "api_conversation_history.json"
META_FILE = "task_metadata.json"
MAX_FILE_BYTES = 256 * 1024 * 1024
CWD_SCAN_BYTES = 1 << 20  # the workspace is named in the first request


def editor_config_dir(environ: Mapping[str, str], platform: str = sys.platform) -> Path:
    """Where the editors keep their user folders on this system."""
    home = Path(environ.get("HOME", "").strip() or environ.get("USERPROFILE", "").strip() or os.path.expanduser("~"))
    if platform == "darwin":
        return home / "Library" / "Application Support"
    if platform.startswith("win"):
        appdata = environ.get("APPDATA", "").strip()
        return Path(appdata) if appdata else home / "AppData" / "Roaming"
    xdg = environ.get("XDG_CONFIG_HOME", "").strip()
    return Path(xdg) if xdg else home / ".config"


class ClineFamilySource:
    """One extension of the Cline family, by its extension id."""

    parser_version = PARSER_VERSION

    def __init__(self, name: str, label: str, extension_id: str, cli_dir: str | None = None) -> None:
        self.name, self.label, self.extension_id, self.cli_dir = name, label, extension_id, cli_dir

    def default_root(self, environ: Mapping[str, str]) -> Path:
        configured = environ.get(f"JACKED_{self.name.upper()}_DIR", "").strip()
        if configured:
            return Path(configured).expanduser()
        base = editor_config_dir(environ)
        candidates = [base / editor / "User" / "globalStorage" / self.extension_id for editor in EDITORS]
        if self.cli_dir:
            # Cline's own data folder: `CLINE_DATA_DIR`, else `CLINE_DIR/data`, else ~/.cline/data
            home = environ.get("HOME", "").strip() or environ.get("USERPROFILE", "").strip() or os.path.expanduser("~")
            data = environ.get("CLINE_DATA_DIR", "").strip() or (
                str(Path(environ["CLINE_DIR"].strip()) / "data") if environ.get("CLINE_DIR", "").strip() else "")
            candidates.append(Path(data).expanduser() if data else Path(home) / self.cli_dir)
        return next((c for c in candidates if (c / "tasks").is_dir()), candidates[0])

    def _storages(self, root: Path) -> list[Path]:
        """The root, and the same extension's storage in the other editors beside it."""
        out = [root]
        parts = root.parts
        if len(parts) >= 4 and parts[-3:-1] == ("User", "globalStorage") and parts[-1] == self.extension_id:
            base = root.parents[3]
            out += [base / e / "User" / "globalStorage" / self.extension_id for e in EDITORS
                    if base / e != root.parents[2]]
        return [s for s in out if (s / "tasks").is_dir()]

    def discover(self, root: Path, errors: list[str]) -> Iterable[FoundSession]:
        for storage in self._storages(root):
            try:
                tasks = sorted(p for p in (storage / "tasks").iterdir() if p.is_dir())
            except OSError as e:
                errors.append(f"{storage / 'tasks'}: {e.strerror or e}")
                continue
            for task in tasks:
                ui = next((task / n for n in UI_FILES if (task / n).is_file()), None)
                if ui is None:
                    continue  # a task folder with no chat yet (or only checkpoints)
                try:
                    size = ui.stat().st_size
                except OSError:
                    continue
                if size > MAX_FILE_BYTES:
                    errors.append(f"{ui}: {size} bytes, over the {MAX_FILE_BYTES} read; skipped")
                    continue
                files = [p for p in (ui, task / API_FILE, task / META_FILE) if p.is_file()]
                yield FoundSession(task.name, str(ui.absolute()), files, stat_fingerprint(files),
                                   extra={"task": task, "ui": ui})

    def read(self, found: FoundSession) -> Session:
        task: Path = found.extra["task"]
        ui: Path = found.extra["ui"]
        messages, cut = load_messages(ui)
        built = build_turns(messages)
        meta = _metadata(task / META_FILE)
        cwd = built.cwd or _cwd_from_history(task / API_FILE)
        models = built.models or [m for m in meta["models"] if m]
        versions = meta["versions"]
        return Session(session_id=found.session_id, file=str(ui.absolute()), agent=self.name,
                       project_dir=task.parent.parent.name, cwd=cwd, repo_name=repo_name_of(cwd),
                       version_first=versions[0] if versions else None,
                       version_last=versions[-1] if versions else None,
                       started_at=built.started_at, ended_at=built.ended_at, turns=built.turns, texts=built.texts,
                       models=models, lines=len(messages) + cut, lines_malformed=cut, lines_unknown=built.unknown,
                       message_lines=built.message_lines)


def load_messages(path: Path) -> tuple[list[Any], int]:
    """The messages of `ui_messages.json`, and 1 when the file was cut short (the extension was
    writing it: it rewrites the whole file), then the messages before the cut."""
    raw = path.read_bytes()
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _salvage(raw.decode("utf-8", "replace")), 1
    if not isinstance(data, list):
        raise ValueError("not a Cline task's messages (no JSON array)")
    return data, 0


def _salvage(text: str) -> list[Any]:
    start = text.find("[")
    if start < 0:
        raise ValueError("not a Cline task's messages (no JSON array)")
    return list(complete_array_items(text, start))


def _metadata(path: Path) -> dict[str, list[str]]:
    """The models and extension versions `task_metadata.json` recorded, in order."""
    out: dict[str, list[str]] = {"models": [], "versions": []}
    try:
        data: Any = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return out
    if not isinstance(data, dict):
        return out
    for key, field, into in (("model_usage", "model_id", "models"), ("environment_history", "cline_version", "versions")):
        entries = given if isinstance(given := data.get(key), list) else []
        for entry in entries:
            value = entry.get(field) if isinstance(entry, dict) else None
            if isinstance(value, str) and value and value not in out[into]:
                out[into].append(value)
    return out


def _cwd_from_history(path: Path) -> str | None:
    """The workspace named in the environment details of the first request sent."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(CWD_SCAN_BYTES)
    except OSError:
        return None
    return cwd_in(head.decode("utf-8", "replace").replace("\\n", "\n"))


CLINE = ClineFamilySource("cline", "Cline", "saoudrizwan.claude-dev", cli_dir=".cline/data")
ROO = ClineFamilySource("roo", "Roo Code", "rooveterinaryinc.roo-cline")
KILO = ClineFamilySource("kilo", "Kilo Code", "kilocode.kilo-code")
