"""Claude Code as a transcript source: `~/.claude/projects/<encoded cwd>/<session>.jsonl`, its
subagent and compaction files, its plan. The scanner (`jacked.ingest.scan`) reads these files
incrementally with this package's builders; `read` rebuilds one session whole, from disk."""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from jacked.sources.base import FoundSession, stat_fingerprint
from jacked.sources.claude.assemble import assemble, subagent_meta
from jacked.sources.claude.discover import SessionFiles, discover
from jacked.sources.claude.turns import PARSER_VERSION, FileBuilder
from jacked.sources.model import Session
from jacked.sources.reader import iter_records


class ClaudeSource:
    """Claude Code (`CLAUDE_CONFIG_DIR`, else `~/.claude`)."""

    name = "claude"
    label = "Claude Code"
    parser_version = PARSER_VERSION
    incremental = True  # read by the scanner, file by file, resumed where a file grew

    def default_root(self, environ: Mapping[str, str]) -> Path:
        configured = environ.get("CLAUDE_CONFIG_DIR", "").strip()
        return Path(configured).expanduser() if configured else Path(os.path.expanduser("~/.claude"))

    def discover(self, root: Path, errors: list[str]) -> Iterable[FoundSession]:
        for group in discover(root / "projects", errors=errors):
            paths = group.all_paths()
            yield FoundSession(group.session_id, str(paths[0].absolute()) if paths else group.session_id,
                               paths, stat_fingerprint(paths), extra={"group": group, "plans": root / "plans"})

    def read(self, found: FoundSession) -> Session:
        group: SessionFiles = found.extra["group"]
        main = _build(group.main, False) if group.main is not None else None
        subs = [(_build(sf.path, True), sf.layout, subagent_meta(sf)) for sf in group.subagents + group.compactions]
        plans = found.extra.get("plans")
        return assemble(group.session_id, group.project_dir, main, subs, plans if isinstance(plans, Path) else None,
                        session_dir=group.session_dir)


def _build(path: Path, is_subagent: bool) -> FileBuilder:
    builder = FileBuilder(str(path.absolute()), is_subagent_file=is_subagent)
    for rec in iter_records(path):
        builder.feed(rec)
    builder.finalize()
    return builder
