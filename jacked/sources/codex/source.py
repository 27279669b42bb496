"""Codex CLI as a transcript source (`CODEX_HOME`, else `~/.codex`)."""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from jacked.sources.base import FoundSession, stat_fingerprint
from jacked.sources.codex.discover import find_rollouts
from jacked.sources.codex.turns import PARSER_VERSION, RolloutBuilder
from jacked.sources.model import Session
from jacked.sources.paths import repo_name_of
from jacked.sources.reader import ReadResult, iter_records


def codex_home(environ: Mapping[str, str]) -> Path:
    """`CODEX_HOME` (Codex's own variable), else `~/.codex`."""
    configured = environ.get("CODEX_HOME", "").strip()
    return Path(configured).expanduser() if configured else Path(os.path.expanduser("~/.codex"))


class CodexSource:
    """Codex CLI (OpenAI): one rollout file per session, read whole when it changed."""

    name = "codex"
    label = "Codex CLI"
    parser_version = PARSER_VERSION

    def default_root(self, environ: Mapping[str, str]) -> Path:
        return codex_home(environ)

    def discover(self, root: Path, errors: list[str]) -> Iterable[FoundSession]:
        for sid, path in sorted(find_rollouts(root, errors).items(), key=lambda kv: str(kv[1])):
            yield FoundSession(sid, str(path.absolute()), [path], stat_fingerprint([path]), extra={"root": root})

    def read(self, found: FoundSession) -> Session:
        path = found.files[0]
        builder = RolloutBuilder(str(path.absolute()), found.session_id)
        result = ReadResult()
        for rec in iter_records(path, result=result):
            builder.feed(rec)
        builder.finalize()
        root = found.extra.get("root")
        try:
            folder = str(path.parent.relative_to(root)) if isinstance(root, Path) else path.parent.name
        except ValueError:
            folder = path.parent.name
        s = Session(session_id=found.session_id, file=str(path.absolute()), agent=self.name, project_dir=folder,
                    cwd=builder.cwd, repo_name=repo_name_of(builder.cwd), git_branch=builder.git_branch,
                    version_first=builder.version_first, version_last=builder.version_last,
                    started_at=builder.started_at, ended_at=builder.ended_at, turns=builder.turns,
                    texts=builder.texts, models=list(builder.models), lines=result.lines,
                    lines_malformed=result.malformed, lines_unknown=builder.unknown,
                    message_lines=builder.messages)
        s.lines_skipped = result.malformed + builder.unknown
        if builder.plan:
            s.plan, s.plan_source = builder.plan, "plan_item"
        return s
