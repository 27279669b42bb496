"""`jacked.errors.JackedError`: every problem the user can fix is one, and each surface shows it
as one actionable line — the MCP server as a tool error, the CLI on stderr with exit code 1."""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from kit import DEEP, REAL

from jacked.config import ConfigError, load_settings
from jacked.errors import JackedError
from jacked.index.embed import DEFAULT_MODEL, EmbedError
from jacked.index.store import ModelMismatch, StoreBusy, StoreError, StoreNotFound
from jacked.index.store.edge import EdgeStore
from jacked.query.history import SessionNotFound
from jacked.query.restore import RestoreError
from jacked.query.retrieve import RetrieveError
from jacked.query.search import SearchError
from jacked.query.timeline import TimelineError
from jacked.surfaces.cli.common import CliError
from jacked.surfaces.install import InstallError
from jacked.surfaces.ui.api import ApiError
from jacked.surfaces.ui.server import UiConfigError
from jacked.util.time import TimeParseError
from jacked.util.tokens import TokenizerUnavailable

# Each user-facing error, with the base it had before JackedError (callers catching it must still work).
OLD_BASES: list[tuple[type[Exception], type[Exception]]] = [
    (SearchError, ValueError), (StoreError, Exception), (StoreBusy, StoreError), (StoreNotFound, StoreError),
    (ModelMismatch, StoreError), (SessionNotFound, Exception), (TimelineError, ValueError),
    (RestoreError, ValueError), (RetrieveError, ValueError), (TimeParseError, ValueError),
    (EmbedError, RuntimeError), (ConfigError, Exception), (TokenizerUnavailable, RuntimeError),
    (CliError, Exception), (InstallError, Exception), (ApiError, Exception), (UiConfigError, ValueError),
]


@pytest.mark.parametrize("cls,old", OLD_BASES, ids=[c.__name__ for c, _ in OLD_BASES])
def test_user_errors_are_jacked_errors_and_keep_their_bases(cls: type[Exception], old: type[Exception]) -> None:
    assert issubclass(cls, JackedError) and issubclass(cls, old)


def test_errors_module_imports_nothing_from_jacked() -> None:
    import jacked.errors

    tree = ast.parse(Path(jacked.errors.__file__).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            assert not any(a.name.split(".")[0] == "jacked" for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0 and (node.module or "").split(".")[0] != "jacked"


# --------------------------------------------------------------------------- MCP
def _claude_with_deep(tmp: Path) -> Path:
    claude = tmp / "claude"
    src = next(REAL.rglob(f"{DEEP}.jsonl"))
    dst = claude / "projects" / src.parent.name / src.name
    dst.parent.mkdir(parents=True)
    shutil.copy(src, dst)
    return claude


async def _call(server: Any, name: str, args: dict[str, Any]) -> tuple[bool, str]:
    from mcp.client import Client

    async with Client(server) as client:
        r = await client.call_tool(name, args)
        return r.is_error, r.content[0].text


def _mcp_call(settings: Any, name: str, args: dict[str, Any]) -> tuple[bool, str]:
    from jacked.surfaces.mcp import build_server

    return anyio.run(_call, build_server(settings), name, args)


def test_mcp_store_busy_is_a_tool_error(tmp_path: Path) -> None:
    """Another process (here: another EdgeStore) holds the index lock: the model is told so."""
    settings = load_settings(_claude_with_deep(tmp_path), jacked_home=str(tmp_path / "home"), user_name="ada",
                             lock_timeout_s=0)
    dims = 384
    with EdgeStore(settings.home / "index", lock_timeout=0).open(DEFAULT_MODEL, dims):
        is_error, text = _mcp_call(settings, "search", {"query": "manifest"})
    assert is_error
    assert "busy" in text and f"process {os.getpid()}" in text and "try again" in text, text
    assert len(text.splitlines()) == 1


def test_mcp_model_mismatch_is_a_tool_error(tmp_path: Path) -> None:
    """An index built with another model: the answer names both models and the fix."""
    settings = load_settings(_claude_with_deep(tmp_path), jacked_home=str(tmp_path / "home"), user_name="ada")
    with EdgeStore(settings.home / "index", lock_timeout=5).open("other/some-model", 384):
        pass  # an (empty) index recorded for another model
    is_error, text = _mcp_call(settings, "search", {"query": "manifest"})
    assert is_error
    assert "index was built with model other/some-model" in text and "jacked backfill --rebuild" in text, text


def _no_tokenizer_env(tmp: Path, claude: Path) -> dict[str, str]:
    """An environment where tiktoken cannot be imported for real: a `tiktoken` package first on
    the path that fails to import shadows the installed one."""
    shadow = tmp / "shadow"
    (shadow / "tiktoken").mkdir(parents=True)
    (shadow / "tiktoken" / "__init__.py").write_text("raise ImportError('tiktoken is broken in this test')\n")
    return {"CLAUDE_CONFIG_DIR": str(claude), "JACKED_HOME": str(tmp / "home"), "JACKED_USER_NAME": "ada",
            "HOME": str(tmp), "PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(shadow), "NO_COLOR": "1"}


async def _stdio_call(env: dict[str, str], name: str, args: dict[str, Any]) -> tuple[bool, str]:
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    exe = Path(sys.executable).parent / "jacked"
    async with Client(StdioServerParameters(command=str(exe), args=["mcp"], env=env)) as client:
        r = await client.call_tool(name, args)
        return r.is_error, r.content[0].text


def test_mcp_tokenizer_unavailable_is_a_tool_error(tmp_path: Path) -> None:
    env = _no_tokenizer_env(tmp_path, _claude_with_deep(tmp_path))
    is_error, text = anyio.run(_stdio_call, env, "list_sessions", {"limit": 2})
    assert is_error
    assert "cannot import tiktoken" in text and "pip install" in text, text


# --------------------------------------------------------------------------- CLI
def test_cli_tokenizer_unavailable_is_one_line(tmp_path: Path) -> None:
    claude = _claude_with_deep(tmp_path)
    env = _no_tokenizer_env(tmp_path, claude)
    exe = Path(sys.executable).parent / "jacked"
    p = subprocess.run([str(exe), "retrieve", DEEP[:8], "--no-git"], env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("jacked: ") and "cannot import tiktoken" in lines[0]
    assert p.stdout == ""


def test_cli_catches_every_jacked_error() -> None:
    """A JackedError of any class (not only a listed one) is an expected failure of the CLI."""
    from jacked.surfaces.cli.params import expected_errors as _expected_errors

    class NewError(JackedError):
        pass

    assert isinstance(NewError("x"), _expected_errors())
    assert isinstance(TokenizerUnavailable("x"), _expected_errors())


@pytest.mark.parametrize("how", ["flag", "env"])
def test_a_claude_directory_that_is_not_there_is_one_line_not_an_empty_answer(tmp_path: Path, how: str) -> None:
    missing = tmp_path / "no-such-claude"
    others = tmp_path / "codex"  # another agent's folder exists: the typo must not pass as "nothing to read"
    others.mkdir()
    env = dict(os.environ, JACKED_HOME=str(tmp_path / "home"), CODEX_HOME=str(others),
               GEMINI_CLI_HOME=str(tmp_path / "gemini"), XDG_DATA_HOME=str(tmp_path / "xdg"))
    flag: list[str] = []
    if how == "flag":
        flag = ["--claude-dir", str(missing)]
    else:
        env["CLAUDE_CONFIG_DIR"] = str(missing)
    exe = Path(sys.executable).parent / "jacked"
    p = subprocess.run([str(exe), *flag, "backfill"], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert str(missing) in p.stderr and "Traceback" not in p.stderr and p.stdout == ""
    assert not missing.exists() and not (tmp_path / "home").exists()
    if how == "flag":  # commands that write into the folder (config, install) still take it
        q = subprocess.run([str(exe), *flag, "config", "--show", "--json"], env=env, capture_output=True,
                           text=True, timeout=120)
        assert q.returncode == 0, q.stderr
