"""Cursor as a transcript source: its agent/composer chats in its SQLite state.

Cursor's `User` folder: Linux `$XDG_CONFIG_HOME/Cursor/User` (default `~/.config/Cursor/User`),
macOS `~/Library/Application Support/Cursor/User`, Windows `%APPDATA%\\Cursor\\User`;
`JACKED_CURSOR_DIR` names another (tests). Under it `globalStorage/state.vscdb` holds the
composer chats and their bubbles; each `workspaceStorage/<hash>/` a workspace's database (which
chats are that workspace's, and the older chat pane's tabs) and `workspace.json` (its folder:
the chats' cwd and repo); Cursor 0.4x kept each workspace's composer chats whole, bubbles
included, in that list. See `jacked.sources.cursor.db`.

Nothing is written: every database is opened read-only. A chat's fingerprint is its composer
row (size, `lastUpdatedAt`, status, headers) with the count and bytes of its bubble rows and of
its subagent chats', so a scan reads again only the chats that changed.
"""
from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from jacked.sources.base import FoundSession
from jacked.sources.cursor.build import (
    PARSER_VERSION,
    RawChat,
    build_session,
    headers_of,
    inline_bubbles,
    is_prompt,
)
from jacked.sources.cursor.db import CHAT_PANE_KEY, WORKSPACE_COMPOSERS_KEY, CursorDb, workspace_dbs
from jacked.sources.model import Session
from jacked.sources.paths import home_dir, path_of_uri
from jacked.sources.values import as_object

GLOBAL_DB = Path("globalStorage") / "state.vscdb"


def default_user_dir(environ: Mapping[str, str], app: str = "Cursor", platform: str = sys.platform) -> Path:
    """A VS Code-family editor's `User` folder on this platform."""
    home = home_dir(environ)
    if platform == "darwin":
        return home / "Library" / "Application Support" / app / "User"
    if platform.startswith("win"):
        appdata = environ.get("APPDATA", "").strip()
        return (Path(appdata) if appdata else home / "AppData" / "Roaming") / app / "User"
    config = environ.get("XDG_CONFIG_HOME", "").strip()
    return (Path(config).expanduser() if config else home / ".config") / app / "User"


class Workspace:
    """A workspace's folder and the composer ids its database lists."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self.hash = db.parent.name
        self.folder = _workspace_folder(db.parent / "workspace.json")


def _workspace_folder(path: Path) -> str | None:
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    return path_of_uri(data.get("folder")) or path_of_uri(data.get("workspace"))


class CursorSource:
    """Cursor (cursor.com): composer chats in `globalStorage`, older chat tabs per workspace."""

    name = "cursor"
    label = "Cursor"
    parser_version = PARSER_VERSION

    def default_root(self, environ: Mapping[str, str]) -> Path:
        configured = environ.get("JACKED_CURSOR_DIR", "").strip()
        return Path(configured).expanduser() if configured else default_user_dir(environ)

    def discover(self, root: Path, errors: list[str]) -> Iterable[FoundSession]:
        owners: dict[str, Workspace] = {}  # composer id -> its workspace
        workspaces: list[Workspace] = []
        kept_inline: list[tuple[Workspace, dict[str, Any]]] = []  # Cursor 0.4x: whole chats in the list
        for db_path in workspace_dbs(root):
            ws = Workspace(db_path)
            workspaces.append(ws)
            try:
                with CursorDb(db_path) as db:
                    listed = db.item(WORKSPACE_COMPOSERS_KEY)
            except OSError as e:
                errors.append(str(e))
                continue
            for entry in as_object(listed).get("allComposers") or []:
                if isinstance(entry, dict) and isinstance(entry.get("composerId"), str):
                    owners.setdefault(entry["composerId"], ws)
                    if inline_bubbles(entry):
                        kept_inline.append((ws, entry))
        seen: set[str] = set()
        for db_path in [root / GLOBAL_DB, *(ws.db for ws in workspaces)]:
            if db_path.is_file():
                yield from self._composers(db_path, owners, seen, errors)
        for ws, entry in kept_inline:
            if entry["composerId"] not in seen:  # a `composerData` row, where there is one, wins
                seen.add(entry["composerId"])
                yield self._workspace_composer(ws, entry)
        for ws in workspaces:
            yield from self._chat_tabs(ws, seen, errors)

    def _composers(self, db_path: Path, owners: dict[str, Workspace], seen: set[str],
                   errors: list[str]) -> Iterator[FoundSession]:
        try:
            with CursorDb(db_path) as db:
                rows = {r.composer_id: r for r in db.composers(errors) if r.composer_id not in seen}
                stats = db.bubble_stats()
                locked = db.immutable
        except OSError as e:
            errors.append(str(e))
            return
        seen.update(rows)
        children: dict[str, list[str]] = {}
        for cid, row in rows.items():
            if row.parent in rows and row.parent != cid:
                children.setdefault(row.parent, []).append(cid)
        for cid, row in rows.items():
            if row.parent in rows:
                continue  # a subagent's chat: read with its parent's
            tree = _tree(cid, children)
            if not stats.get(cid) and not row.inline:
                continue  # opened and closed without a message
            h = hashlib.blake2b(digest_size=12)
            for member in [cid, *tree]:
                m = rows[member]
                h.update(orjson.dumps([member, m.size, m.updated, m.status, m.headers, m.inline, stats.get(member)],
                                      default=str))
            ws = owners.get(cid)
            yield FoundSession(cid, f"{db_path.absolute()}#{cid}", [db_path], h.hexdigest(), extra={
                "db": db_path, "locked": locked, "members": [cid, *tree], "parents": {m: rows[m].parent for m in tree},
                "cwd": ws.folder if ws else None, "project_dir": ws.hash if ws else ""})

    @staticmethod
    def _workspace_composer(ws: Workspace, entry: dict[str, Any]) -> FoundSession:
        """A chat Cursor 0.4x kept whole in its workspace's `composer.composerData` list."""
        cid = entry["composerId"]
        fingerprint = hashlib.blake2b(orjson.dumps(entry, option=orjson.OPT_SORT_KEYS), digest_size=12).hexdigest()
        return FoundSession(cid, f"{ws.db.absolute()}#{cid}", [ws.db], fingerprint,
                            extra={"composer": entry, "cwd": ws.folder, "project_dir": ws.hash})

    def _chat_tabs(self, ws: Workspace, seen: set[str], errors: list[str]) -> Iterator[FoundSession]:
        """The chat pane of releases before the composer: one session per tab with a prompt."""
        try:
            with CursorDb(ws.db) as db:
                pane = db.item(CHAT_PANE_KEY)
        except OSError:
            return  # reported with the workspace's composers
        tabs = as_object(pane).get("tabs")
        for tab in tabs if isinstance(tabs, list) else []:
            if not isinstance(tab, dict) or not isinstance(tab.get("tabId"), str) or tab["tabId"] in seen:
                continue
            bubbles = tab.get("bubbles")
            if not isinstance(bubbles, list) or not any(isinstance(b, dict) and is_prompt(b) for b in bubbles):
                continue
            seen.add(tab["tabId"])
            fingerprint = hashlib.blake2b(orjson.dumps(tab, option=orjson.OPT_SORT_KEYS), digest_size=12).hexdigest()
            yield FoundSession(tab["tabId"], f"{ws.db.absolute()}#{tab['tabId']}", [ws.db], fingerprint,
                               extra={"tab": tab, "cwd": ws.folder, "project_dir": ws.hash})

    def read(self, found: FoundSession) -> Session:
        tab = found.extra.get("tab")
        cwd: str | None = found.extra.get("cwd")
        project_dir = str(found.extra.get("project_dir") or "")
        if isinstance(tab, dict):
            data = {"name": tab.get("chatTitle"), "createdAt": tab.get("lastSendTime"),
                    "lastUpdatedAt": tab.get("lastSendTime")}
            return build_session(_kept_chat(found, data, tab.get("bubbles") or [], cwd, project_dir, rows=0))
        listed = found.extra.get("composer")
        if isinstance(listed, dict):  # its entry in the list counts as one record more
            return build_session(_kept_chat(found, listed, inline_bubbles(listed), cwd, project_dir, rows=1))
        db_path: Path = found.extra["db"]
        members: list[str] = found.extra["members"]
        parents: dict[str, str | None] = found.extra["parents"]
        chats: dict[str, RawChat] = {}
        with CursorDb(db_path, immutable=found.extra.get("locked") is True) as db:
            for cid in members:
                data = db.composer(cid)
                inline = inline_bubbles(data)
                raw = db.bubbles(cid, headers_of(data))
                bubbles = raw.bubbles or [b for b in inline if isinstance(b, dict)]
                records = raw.records if raw.bubbles else len(inline)
                malformed = raw.malformed if raw.bubbles else sum(not isinstance(b, dict) for b in inline)
                chats[cid] = RawChat(cid, f"{db_path.absolute()}#{cid}", data, bubbles, cwd if cid == found.session_id
                                     else None, project_dir, records=records + 1, malformed=malformed)
        for cid, parent in parents.items():
            if parent in chats and cid in chats:
                chats[parent].children.append(chats[cid])
        return build_session(chats[found.session_id])


def _kept_chat(found: FoundSession, data: dict[str, Any], bubbles: list[Any], cwd: str | None, project_dir: str,
               rows: int) -> RawChat:
    """A chat whose bubbles are kept in one value (a chat-pane tab, a 0.4x list entry)."""
    return RawChat(found.session_id, found.location, data, [b for b in bubbles if isinstance(b, dict)], cwd,
                   project_dir, records=len(bubbles) + rows, malformed=sum(not isinstance(b, dict) for b in bubbles))


def _tree(root: str, children: dict[str, list[str]]) -> list[str]:
    """A chat's subagent chats at any depth, parents first (each once, whatever the links)."""
    out: list[str] = []
    seen = {root}
    stack = list(reversed(children.get(root, [])))
    while stack:
        cid = stack.pop()
        if cid in seen:
            continue
        seen.add(cid)
        out.append(cid)
        stack.extend(reversed(children.get(cid, [])))
    return out
