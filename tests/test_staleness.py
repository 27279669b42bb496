"""Staleness: age levels at their boundaries (injectable clock) and files changed since, via git."""
from __future__ import annotations

import os
import subprocess
from datetime import datetime, timedelta, UTC
from pathlib import Path

import pytest

from jacked.query.staleness import age_level, assess, changed_files_since

ENDED = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
ROW = {"ended_at": ENDED.isoformat(), "cwd": None}


@pytest.mark.parametrize("days, level", [
    (0, "none"), (6, "none"), (7, "info"), (29, "info"), (30, "warning"), (89, "warning"), (90, "strong"), (400, "strong"),
])
def test_age_boundaries(days: int, level: str) -> None:
    st = assess(ROW, now=ENDED + timedelta(days=days), check_git=False)
    assert st.level == level and st.age_days == days
    assert (st.message is None) == (level == "none")


def test_a_second_before_the_boundary_is_still_the_lower_level() -> None:
    assert assess(ROW, now=ENDED + timedelta(days=7) - timedelta(seconds=1), check_git=False).level == "none"
    assert assess(ROW, now=ENDED + timedelta(days=30) - timedelta(seconds=1), check_git=False).level == "info"
    assert assess(ROW, now=ENDED + timedelta(days=90) - timedelta(seconds=1), check_git=False).level == "warning"
    assert age_level(None) == "none"


def test_messages_name_the_age() -> None:
    st = assess(ROW, now=ENDED + timedelta(days=100), check_git=False)
    assert "100 days" in st.message and "OLD CONTEXT" in st.message
    assert "STALENESS" in assess(ROW, now=ENDED + timedelta(days=45), check_git=False).message


def test_no_timestamps_and_missing_repo_never_fail() -> None:
    st = assess({"cwd": "/no/such/dir"}, files=["/no/such/dir/a.py"])
    assert st.level == "none" and not st.git_checked and not st.repo_on_disk


def _git(repo: Path, *args: str, when: datetime | None = None) -> None:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@e")
    if when is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = when.isoformat()
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env)


def test_files_changed_since_the_session_in_a_git_repo(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    old = datetime.now(UTC) - timedelta(days=20)
    for name in ("a.py", "b.py", "c.py", "d.py"):
        (repo / name).write_text("v1\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "v1", when=old - timedelta(days=1))
    ended = old
    # after the session: a.py committed again, b.py edited but not committed, c.py untouched
    (repo / "a.py").write_text("v2\n")
    _git(repo, "commit", "-qam", "v2", when=old + timedelta(days=2))
    (repo / "b.py").write_text("v2\n")
    # d.py edited before the session ended and never committed: not a change since
    (repo / "d.py").write_text("v2\n")
    past = ended.timestamp() - 3600
    os.utime(repo / "d.py", (past, past))
    files = [str(repo / n) for n in ("a.py", "b.py", "c.py", "d.py")] + ["/elsewhere/x.py"]
    res = changed_files_since(repo, files, ended)
    assert res is not None
    changed, commits = res
    assert changed == [str(repo / "a.py"), str(repo / "b.py")]
    assert commits == 1
    st = assess({"ended_at": ended.isoformat(), "cwd": str(repo)}, files)
    assert st.git_checked and st.changed_files == changed and st.level == "info"
    assert "2 of the 5 files" in st.files_message


def test_not_a_git_repo_is_unknown_not_an_error(tmp_path: Path) -> None:
    assert changed_files_since(tmp_path, [str(tmp_path / "x")], datetime.now(UTC)) is None
    st = assess({"ended_at": "2026-01-01T00:00:00Z", "cwd": str(tmp_path)}, [str(tmp_path / "x")])
    assert st.repo_on_disk and not st.git_checked
