"""Shared pytest fixtures. Each section belongs to the module it serves."""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# The suite answers in-process (JACKED_DAEMON=off) unless run with JACKED_TEST_DAEMON=on: then every
# CLI command a test runs asks a daemon of its own JACKED_HOME, as a user's would. Tests of the
# daemon itself turn it on for their own homes.
DAEMON_MODE = os.environ.get("JACKED_TEST_DAEMON", "off").strip().lower() == "on"
if not DAEMON_MODE:
    os.environ["JACKED_DAEMON"] = "off"
else:
    os.environ.pop("JACKED_DAEMON", None)
    os.environ.setdefault("JACKED_DAEMON_IDLE_MINUTES", "0.5")  # no daemon outlives its test for long

@pytest.fixture(autouse=True, scope="session")
def _no_daemon_outlives_the_tests(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every jacked daemon a test started (its home in this run's temp folder) is stopped at the end,
    whatever the test did: a daemon otherwise waits out `daemon_idle_minutes`."""
    yield
    import signal
    import time

    base = str(tmp_path_factory.getbasetemp())
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if "jacked.surfaces.daemon" in cmd and any(a.startswith(base) for a in cmd):
            pids.append(int(proc.name))
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in pids):
        time.sleep(0.1)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


# --- embeddings and stores (jacked.index.embed, jacked.index.store) ---------------------------------


@pytest.fixture(scope="session")
def dense_embedder(tmp_path_factory: pytest.TempPathFactory):
    """The default offline dense model, loaded once per test session.

    Its model folder is assembled in a session temp dir. It is also the process-wide
    instance of ``jacked.index.embed.get_dense_embedder()``, so code under test that asks for the
    default model reuses this load instead of loading (or writing under ~/.claude) again.
    """
    from jacked.index.embed import DEFAULT_MODEL, get_dense_embedder

    emb = get_dense_embedder(DEFAULT_MODEL, cache_dir=tmp_path_factory.mktemp("models"))
    emb.load()
    return emb


@pytest.fixture(scope="session")
def sparse_embedder():
    """The BM25 sparse encoder (English), shared by the session."""
    from jacked.index.embed import SparseEmbedder

    return SparseEmbedder()


# --- settings (jacked.config) -----------------------------------------------------------


@pytest.fixture()
def claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh Claude dir as CLAUDE_CONFIG_DIR, HOME in tmp, no jacked variables (tests that
    read settings from the environment and the config file)."""
    from jacked.config import ENV_VARS

    for names in ENV_VARS.values():
        for name in names:
            monkeypatch.delenv(name, raising=False)
    for name in list(os.environ):
        if name.startswith("JACKED_") and name not in ("JACKED_DAEMON", "JACKED_DAEMON_IDLE_MINUTES"):
            monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    d = tmp_path / "claude"
    d.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(d))
    return d


# --- transcript sources (jacked.sources.registry) ------------------------------------------------


@pytest.fixture(autouse=True, scope="session")
def _no_real_agent_folders(tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test reads this machine's own Codex, Gemini, opencode, Aider, Qwen Code, Copilot CLI, Goose or
    Cline-family folders: their variables point
    at an empty folder (tests of those sources set their own)."""
    empty = tmp_path_factory.mktemp("no-agents")
    os.environ["CODEX_HOME"] = str(empty / "codex")
    os.environ["GEMINI_CLI_HOME"] = str(empty / "gemini")
    os.environ["XDG_DATA_HOME"] = str(empty / "xdg-data")
    os.environ["JACKED_AIDER_ROOT"] = str(empty / "aider")  # else the home folder is searched
    os.environ["QWEN_RUNTIME_DIR"] = str(empty / "qwen")
    os.environ["COPILOT_HOME"] = str(empty / "copilot")
    os.environ["JACKED_VSCODE_DIR"] = str(empty / "vscode")  # else VS Code's user folders (Copilot Chat)
    for name in ("CLINE", "ROO", "KILO"):  # else the editors' extension storage is looked for
        os.environ[f"JACKED_{name}_DIR"] = str(empty / name.lower())
    os.environ["JACKED_CURSOR_DIR"] = str(empty / "cursor")
    os.environ["CONTINUE_GLOBAL_DIR"] = str(empty / "continue")
    os.environ["JACKED_OPENHANDS_DIR"] = str(empty / "openhands")
    os.environ["JACKED_GOOSE_DIR"] = str(empty / "goose")
