"""opencode (sst/opencode) as a transcript source: its sessions under `$XDG_DATA_HOME/opencode`
(default `~/.local/share/opencode`), in its SQLite database (`opencode.db`: the 1.x tables, and
the 2.x ones, `session_v2` and `session_message`) or its JSON store (`storage/`, older
releases); see `jacked.sources.opencode.store` and `jacked.sources.opencode.db`.

A session is found with its subagent sessions (those whose `parentID` leads to it) and read
whole, with them, whenever its fingerprint changes: for the JSON store the name, size and mtime
of every file, for the database each session's `time_updated` with the count and newest
`time_updated` of its messages and parts (2.x: of its records), so an unchanged session is not
read at all.
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from jacked.sources.base import FoundSession
from jacked.sources.model import Session
from jacked.sources.opencode.build import PARSER_VERSION, build_session
from jacked.sources.opencode.db import DbStore, databases
from jacked.sources.opencode.store import FileStore, RawSession


class OpencodeSource:
    """opencode (`XDG_DATA_HOME`, else `~/.local/share`, then `opencode/`)."""

    name = "opencode"
    label = "opencode"
    parser_version = PARSER_VERSION

    def default_root(self, environ: Mapping[str, str]) -> Path:
        data = environ.get("XDG_DATA_HOME", "").strip()
        if data:
            return Path(data).expanduser() / "opencode"
        home = environ.get("HOME", "").strip() or os.path.expanduser("~")
        return Path(home) / ".local" / "share" / "opencode"

    def discover(self, root: Path, errors: list[str]) -> Iterable[FoundSession]:
        seen: set[str] = set()
        for db in databases(root):
            try:
                found = list(_db_sessions(db, seen))
            except (OSError, ValueError) as e:
                errors.append(str(e))
                continue
            yield from found
        storage = root / "storage"
        if storage.is_dir():
            yield from _file_sessions(FileStore(storage), seen, errors)

    def read(self, found: FoundSession) -> Session:
        tree: list[tuple[str, str]] = found.extra.get("tree", [])
        raws: dict[str, RawSession] = {}
        db = found.extra.get("db")
        if isinstance(db, Path):
            with DbStore(db) as store:
                raws[found.session_id] = store.read(found.session_id)
                for cid, _ in tree:
                    try:
                        raws[cid] = store.read(cid)
                    except ValueError:
                        continue  # a subagent session removed since it was found
        else:
            files = FileStore(found.extra["storage"])
            paths: dict[str, str] = found.extra["paths"]
            raws[found.session_id] = files.read(found.session_id, Path(paths[found.session_id]))
            for cid, _ in tree:
                try:
                    raws[cid] = files.read(cid, Path(paths[cid]))
                except OSError:
                    continue
        for cid, parent in tree:
            if cid in raws and parent in raws:
                raws[parent].children.append(raws[cid])
        return build_session(raws[found.session_id])


def _trees(infos: Mapping[str, dict[str, Any]]) -> dict[str, list[tuple[str, str]]]:
    """{top-level session id: [(descendant id, its parent id), ...] parents first}. A session whose
    parent is not in the store is a session of its own."""
    children: dict[str, list[str]] = {}
    for sid, info in infos.items():
        parent = info.get("parentID")
        if isinstance(parent, str) and parent in infos and parent != sid:
            children.setdefault(parent, []).append(sid)
    trees: dict[str, list[tuple[str, str]]] = {}
    claimed: set[str] = set()
    for sid, info in infos.items():
        parent = info.get("parentID")
        if isinstance(parent, str) and parent in infos and parent != sid:
            continue
        tree: list[tuple[str, str]] = []
        stack = [(c, sid) for c in reversed(children.get(sid, []))]
        while stack:
            cid, pid = stack.pop()
            if cid in claimed:
                continue  # a cycle of parentIDs: each session once
            claimed.add(cid)
            tree.append((cid, pid))
            stack.extend((c, cid) for c in reversed(children.get(cid, [])))
        trees[sid] = tree
    return trees


def _db_sessions(db: Path, seen: set[str]) -> Iterable[FoundSession]:
    with DbStore(db) as store:
        infos = {sid: info for sid, info in store.sessions().items() if sid not in seen}
        counts = store.counts()
    seen.update(infos)  # a session in a database is not read again from another store
    for sid, tree in _trees(infos).items():
        if not counts.get(sid, (0,))[0]:
            continue  # a session with no message yet (or an orphan subagent run never started)
        h = hashlib.blake2b(digest_size=12)
        for member in [sid] + [c for c, _ in tree]:
            updated = infos[member].get("time", {}).get("updated")
            h.update(f"{member}\0{updated}\0{counts.get(member)}\n".encode())
        yield FoundSession(sid, f"{db.absolute()}#{sid}", [db], h.hexdigest(), extra={"db": db, "tree": tree})


def _file_sessions(store: FileStore, seen: set[str], errors: list[str]) -> Iterable[FoundSession]:
    sessions = {sid: entry for sid, entry in store.sessions(errors).items() if sid not in seen}
    infos = {sid: info for sid, (_, info) in sessions.items()}
    for sid, tree in _trees(infos).items():
        path = sessions[sid][0]
        own = store.files_of(sid)
        if not own:
            continue  # no message yet
        files = [path, *own]
        for cid, _ in tree:
            files.append(sessions[cid][0])
            files.extend(store.files_of(cid))
        seen.add(sid)
        seen.update(c for c, _ in tree)
        yield FoundSession(sid, str(path.absolute()), files, store.fingerprint(files),
                           extra={"storage": store.storage, "tree": tree,
                                  "paths": {m: str(sessions[m][0]) for m in [sid] + [c for c, _ in tree]}})
