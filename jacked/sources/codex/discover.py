"""Finding Codex CLI rollouts: `<CODEX_HOME>/sessions/YYYY/MM/DD/rollout-<timestamp>-<uuid>.jsonl`
(early 2025 builds wrote them flat in `sessions/`) and the ones `codex` archived to
`<CODEX_HOME>/archived_sessions/` (flat or dated). A session's id is the uuid at the end of
the file name, else its first line's `id`; a session found both live and archived is read
from its larger copy (the live one on a tie)."""
from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from jacked.sources.reader import decode_line

SESSION_DIRS = ("sessions", "archived_sessions")
_NAME = re.compile(r"^rollout-.*?([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl$")


def rollout_files(root: Path, errors: list[str]) -> Iterator[Path]:
    """Every `rollout-*.jsonl` under the session folders of `root`, in name order per folder;
    a folder that cannot be listed is reported in `errors` and skipped."""
    for sub in SESSION_DIRS:
        top = root / sub
        if not top.is_dir():
            continue

        def report(e: OSError, top: Path = top) -> None:
            errors.append(f"{e.filename or top}: {e.strerror or e}")

        for dirpath, dirnames, filenames in os.walk(top, onerror=report):
            dirnames.sort()
            for name in sorted(filenames):
                if name.startswith("rollout-") and name.endswith(".jsonl"):
                    yield Path(dirpath) / name


def session_id_of(path: Path) -> str | None:
    """The session id of a rollout: the uuid in its name, else the `id` of its first line."""
    m = _NAME.match(path.name)
    if m is not None:
        return m.group(1).lower()
    try:
        with open(path, "rb") as fh:
            first = fh.readline(1 << 20)
    except OSError:
        return None
    rec = decode_line(first) if first.strip() else None
    if rec is None:
        return None
    meta = rec.get("payload") if rec.get("type") == "session_meta" else rec
    sid = meta.get("id") if isinstance(meta, dict) else None
    return sid if isinstance(sid, str) and sid else None


def find_rollouts(root: Path, errors: list[str]) -> dict[str, Path]:
    """{session id: the rollout to read} under `root` (live and archived, one file per id)."""
    found: dict[str, tuple[int, int, Path]] = {}  # id -> (size, live first, path)
    for path in rollout_files(root, errors):
        sid = session_id_of(path)
        if sid is None:
            continue  # an empty or unreadable header: nothing to read yet
        try:
            size = path.stat().st_size
        except OSError as e:
            errors.append(f"{path}: {e.strerror or e}")
            continue
        live = 1 if path.relative_to(root).parts[0] == "sessions" else 0
        best = found.get(sid)
        if best is None or (size, live) > best[:2]:
            found[sid] = (size, live, path)
    return {sid: path for sid, (_, _, path) in found.items()}
