"""The jacked daemon end to end, as a user meets it: real `jacked` processes, a real daemon started
on demand, the real model and Edge shard, real fixture sessions.

- every command answers the same, byte for byte, through the daemon and in its own process;
- `jacked mcp` relays to the daemon and its tools answer as the in-process server's;
- racing clients start one daemon; a stale socket and pid file from a crash are cleaned up; a
  `kill -9` mid-write loses nothing; another user is refused; it stops when idle and on SIGTERM;
- clients import no model, no store and no transcript reader.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kit import DEEP, REAL

from jacked.config import load_settings
from jacked.surfaces.daemon.client import DaemonClient, connect, open_socket
from jacked.surfaces.daemon.protocol import DaemonPaths, decode, encode, locate

JACKED = Path(sys.executable).parent / "jacked"
CI = "fe869ecb-c176-478f-9734-7e4b8ef12cff"
SESSIONS = (DEEP, CI, "cb2e607c-c758-415a-8b45-c49e4631906a")
LATE = "29ccd257"  # a session left out of the backfill, for the hooks to bring in


def _copy_session(claude: Path, sid: str) -> Path:
    src = next(REAL.rglob(f"{sid}*.jsonl"))
    dst = claude / "projects" / src.parent.name / src.name
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, dst)
    for agent in src.parent.glob("agent-*.jsonl"):  # flat 2.0.x subagents of the session
        if src.stem in agent.read_text(errors="replace")[:2000]:
            shutil.copy(agent, dst.parent / agent.name)
    sub = src.parent / src.stem
    if sub.is_dir():
        shutil.copytree(sub, dst.parent / src.stem, dirs_exist_ok=True)
    return dst


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, dense_embedder: Any) -> tuple[Path, Path]:
    """A Claude directory of three real sessions and a JACKED_HOME with them backfilled."""
    from jacked.index.indexer import Indexer

    claude = tmp_path_factory.mktemp("daemon-claude")
    for sid in SESSIONS:
        _copy_session(claude, sid)
    shutil.copytree(REAL / "plans", claude / "plans")
    home = tmp_path_factory.mktemp("daemon-home-base")
    assert Indexer(load_settings(claude, jacked_home=str(home), user_name="ada")).backfill().errors == []
    return claude, home


def env_for(claude: Path, home: Path, daemon: bool, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JACKED_")}
    env.update({"CLAUDE_CONFIG_DIR": str(claude), "JACKED_HOME": str(home), "JACKED_USER_NAME": "ada",
                "NO_COLOR": "1", "COLUMNS": "200"})
    if daemon:
        env["JACKED_DAEMON_IDLE_MINUTES"] = "5"
    else:
        env["JACKED_DAEMON"] = "off"
    env.update(extra)
    return env


def jacked(args: list[str], env: dict[str, str], stdin: str | None = None,
           timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(JACKED), *args], env=env, input=stdin, capture_output=True, text=True,
                          timeout=timeout)


def status_of(home: Path) -> dict[str, Any] | None:
    return DaemonClient(DaemonPaths(home)).status()


def stop(home: Path) -> None:
    DaemonClient(DaemonPaths(home)).stop()


def daemon_pids(home: Path) -> list[int]:
    """The processes serving `home` as a daemon (from /proc: what `ps` would show)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"jacked.surfaces.daemon" in cmd and f"JACKED_HOME={home}".encode() in environ:
            try:
                state = (proc / "stat").read_text().split(")")[-1].split()[0]
            except OSError:
                continue
            if state != "Z":
                pids.append(int(proc.name))
    return pids


def wait_until(check: Any, timeout: float = 60.0, step: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(step)
    return bool(check())


@pytest.fixture()
def homes(indexed: tuple[Path, Path], tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    """(claude dir, a home for the daemon, a home answered in-process): both copies of the index."""
    claude, base = indexed
    via_daemon, in_process = tmp_path / "d", tmp_path / "p"
    shutil.copytree(base, via_daemon)
    shutil.copytree(base, in_process)
    yield claude, via_daemon, in_process
    stop(via_daemon)


# ------------------------------------------------------------------------------------ codec
def test_codec_gives_back_what_it_was_given() -> None:
    import datetime as dt

    from jacked.index.indexer import IndexReport
    from jacked.ingest.reading import ScanReport

    value = {"a": (1, "x", None), 3: [Path("/tmp/x"), {"__tuple__": "not a tag"}],
             "when": dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC), "s": {1, 2},
             "report": IndexReport(scan=ScanReport())}
    back = decode(json.loads(json.dumps(encode(value))))
    assert back == value and isinstance(back["report"], IndexReport)
    with pytest.raises(TypeError):
        encode(object())


# ------------------------------------------------------------------------------------ same answers
COMMANDS = [
    ["sessions", "--json"], ["sessions"], ["turns", DEEP[:8], "--json"], ["show", CI[:8]],
    ["search", "add tar archive support to the manifest", "--json"], ["search", "manifest archive", "-n", "2"],
    ["stats", "--json"], ["stats", "--tool", "Edit"], ["export"], ["timeline", DEEP[:8], "--limit", "20"],
    ["file-history", "deep_manifest/deep_manifest.py"], ["retrieve", DEEP[:8], "--json"],
    ["retrieve", DEEP[:8], CI[:8], "--max-tokens", "1500"], ["restore", CI[:8]], ["status", "--json"],
    ["recall", "--json"],
    ["recall", "--prompt", "continue the work on reporting BadZipFile errors", "--cwd", "/src/deep-manifest", "--json"],
    # mistakes answer with the same one line and exit code
    ["turns", "no-such-session"], ["search", ""], ["retrieve", DEEP[:8], "--mode", "nope"],
]


def test_every_command_answers_the_same_through_the_daemon(homes: tuple[Path, Path, Path]) -> None:
    claude, via_daemon, in_process = homes
    daemon_env, local_env = env_for(claude, via_daemon, True), env_for(claude, in_process, False)
    for args in COMMANDS:
        got, want = jacked(args, daemon_env), jacked(args, local_env)
        # the homes' own paths differ (`status` names its home); nothing else may
        answer = [got.returncode, got.stdout.replace(str(via_daemon), "HOME"), got.stderr.replace(str(via_daemon), "HOME")]
        assert answer == [want.returncode, want.stdout.replace(str(in_process), "HOME"),
                          want.stderr.replace(str(in_process), "HOME")], args
    assert want.returncode == 1 and "Traceback" not in want.stderr
    status = status_of(via_daemon)
    assert status is not None and len(daemon_pids(via_daemon)) == 1
    assert status["pid"] == daemon_pids(via_daemon)[0] and status["queued_writes"] == 0


def test_mcp_relay_answers_as_the_in_process_server(homes: tuple[Path, Path, Path]) -> None:
    import anyio

    claude, via_daemon, in_process = homes

    async def session(env: dict[str, str]) -> dict[str, Any]:
        from mcp.client import Client
        from mcp.client.stdio import StdioServerParameters

        out: dict[str, Any] = {}
        async with Client(StdioServerParameters(command=str(JACKED), args=["mcp"], env=env)) as client:
            out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
            for name, args in [("search", {"query": "add tar archive support", "limit": 2}),
                               ("list_sessions", {"limit": 2}), ("get_turn", {"session_id": DEEP, "turn_index": 6}),
                               ("stats", {"tool": "Edit"}), ("get_turn", {"session_id": "nope", "turn_index": 1})]:
                r = await client.call_tool(name, args)
                out[f"{name}{args}"] = (r.is_error, r.content[0].text)
        return out

    relayed = anyio.run(session, env_for(claude, via_daemon, True))
    served = anyio.run(session, env_for(claude, in_process, False))
    assert relayed == served and len(relayed["tools"]) == 10
    assert len(daemon_pids(via_daemon)) == 1


def test_a_client_imports_no_model_store_or_transcript_reader(homes: tuple[Path, Path, Path]) -> None:
    claude, via_daemon, _ = homes
    env = env_for(claude, via_daemon, True)
    session = next((claude / "projects").rglob(f"{CI}.jsonl"))
    heavy = ("onnxruntime", "qdrant_edge", "jacked.index.embed", "jacked.index.store", "jacked.sources.claude",
             "tiktoken", "jacked.service")
    runs = [(["sessions"], None), (["index", "--hook"], json.dumps({"transcript_path": str(session)})),
            (["turns", CI[:8], "--json"], None), (["search", "manifest archive"], None), (["stats"], None),
            (["timeline", CI[:8]], None),
            (["recall", "--hook"], json.dumps({"hook_event_name": "UserPromptSubmit", "cwd": "/src/deep-manifest",
                                               "prompt": "continue the work on reporting BadZipFile errors",
                                               "session_id": "s"}))]
    for args, stdin in runs:
        done = subprocess.run([sys.executable, "-X", "importtime", str(JACKED), *args], env=env, input=stdin,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
        assert not [m for m in imported for h in heavy if m == h or m.startswith(h + ".")], args
        if args == ["recall", "--hook"]:  # the prompt's context comes from the daemon
            assert DEEP in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]


# ------------------------------------------------------------------------------------ writes
def test_hooks_are_indexed_in_order_and_none_is_lost_when_the_daemon_is_killed(
        homes: tuple[Path, Path, Path]) -> None:
    claude, via_daemon, in_process = homes
    late = _copy_session(claude, LATE)
    try:
        hook = json.dumps({"session_id": late.stem, "transcript_path": str(late), "hook_event_name": "Stop"})
        env = env_for(claude, via_daemon, True)
        assert jacked(["sessions"], env).returncode == 0  # a daemon runs
        pid = status_of(via_daemon)["pid"]  # type: ignore[index]
        done = jacked(["index", "--hook"], env, stdin=hook)
        assert done.returncode == 0 and done.stdout == "" and done.stderr == ""
        os.kill(pid, signal.SIGKILL)  # whatever it had done of the hook's work
        assert wait_until(lambda: not daemon_pids(via_daemon), 10)
        # the next client starts a new daemon, which does what the queue still holds
        assert jacked(["sessions", "--json"], env).returncode == 0
        assert wait_until(lambda: (status_of(via_daemon) or {}).get("queued_writes") == 0
                          and not (status_of(via_daemon) or {}).get("job"), 120)
        assert status_of(via_daemon)["pid"] != pid  # type: ignore[index]
        local = env_for(claude, in_process, False)
        assert jacked(["index", str(late)], local).returncode == 0
        for args in (["status", "--json"], ["search", "explore task sub-agents haiku", "--json"]):
            assert jacked(args, env).stdout.replace(str(via_daemon), "HOME") == \
                jacked(args, local).stdout.replace(str(in_process), "HOME"), args
    finally:
        late.unlink()


def test_many_hooks_mcp_clients_and_a_backfill_at_once(homes: tuple[Path, Path, Path]) -> None:
    claude, via_daemon, _ = homes
    env = env_for(claude, via_daemon, True)
    sessions = sorted((claude / "projects").rglob("*.jsonl"))
    sessions = [s for s in sessions if not s.name.startswith("agent-")]
    procs = [subprocess.Popen([str(JACKED), "backfill", "--json"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)]
    mcp = [subprocess.Popen([str(JACKED), "mcp"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE) for _ in range(5)]
    hooks = []
    for i in range(200):
        target = sessions[i % len(sessions)]
        hooks.append(subprocess.Popen([str(JACKED), "index", "--hook"], env=env, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        hooks[-1].stdin.write(json.dumps({"transcript_path": str(target)}).encode())  # type: ignore[union-attr]
        hooks[-1].stdin.close()  # type: ignore[union-attr]
    requests = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search",
                                                                       "arguments": {"query": "manifest tar"}}}]
    answers = []
    for p in mcp:
        out, err = p.communicate("".join(json.dumps(r) + "\n" for r in requests).encode(), timeout=600)
        answers.append([json.loads(line) for line in out.decode().splitlines()])
    for h in hooks:
        assert h.wait(timeout=600) == 0
        assert h.stdout.read() == b"" and h.stderr.read() == b""  # type: ignore[union-attr]
    backfill_out, backfill_err = procs[0].communicate(timeout=900)
    assert procs[0].returncode == 0, backfill_err
    assert json.loads(backfill_out)["errors"] == []
    for got in answers:
        assert sorted(a["id"] for a in got) == [1, 2]
        call = next(a for a in got if a["id"] == 2)
        assert not call["result"].get("isError") and "session_id" in call["result"]["content"][0]["text"]
    assert len(daemon_pids(via_daemon)) == 1
    assert wait_until(lambda: (status_of(via_daemon) or {}).get("queued_writes") == 0, 300)
    assert "hook failed" not in (via_daemon / "logs" / "hook.log").read_text() \
        if (via_daemon / "logs" / "hook.log").exists() else True


def test_a_second_backfill_joins_the_running_one(indexed: tuple[Path, Path], tmp_path: Path) -> None:
    claude, _ = indexed
    home = tmp_path / "fresh"
    env = env_for(claude, home, True)
    try:
        first = subprocess.Popen([str(JACKED), "backfill", "--json"], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        assert wait_until(lambda: ((status_of(home) or {}).get("job") or {}).get("method") == "backfill", 120)
        second = jacked(["backfill", "--json"], env)
        out, _ = first.communicate(timeout=600)
        assert second.returncode == first.returncode == 0
        assert "a backfill is running already" in second.stderr
        assert json.loads(second.stdout) == json.loads(out)  # the same run's report, not a second run
        assert json.loads(out)["points_written"] > 0
    finally:
        stop(home)


# ------------------------------------------------------------------------------------ lifecycle
def test_racing_clients_start_one_daemon(homes: tuple[Path, Path, Path]) -> None:
    claude, via_daemon, _ = homes
    env = env_for(claude, via_daemon, True)
    procs = [subprocess.Popen([str(JACKED), "sessions", "--json"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(8)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    assert len({o[0] for o in outs}) == 1 and all(o[1] == "" for o in outs)
    assert len(daemon_pids(via_daemon)) == 1


def test_stale_socket_and_pid_file_are_cleaned_up(homes: tuple[Path, Path, Path]) -> None:
    claude, via_daemon, _ = homes
    env = env_for(claude, via_daemon, True)
    paths = DaemonPaths(via_daemon)
    assert jacked(["sessions"], env).returncode == 0
    old = status_of(via_daemon)["pid"]  # type: ignore[index]
    os.kill(old, signal.SIGKILL)
    assert wait_until(lambda: not daemon_pids(via_daemon), 10)
    assert paths.socket.exists() and paths.pid.exists()  # what the crash left
    done = jacked(["sessions", "--json"], env)
    assert done.returncode == 0 and done.stderr == ""
    new = status_of(via_daemon)
    assert new is not None and new["pid"] != old and paths.pid.read_text().strip() == str(new["pid"])


def test_status_stop_and_sigterm(homes: tuple[Path, Path, Path]) -> None:
    claude, via_daemon, _ = homes
    env = env_for(claude, via_daemon, True)
    none = jacked(["daemon", "status"], env)
    assert none.returncode == 1 and none.stderr.count("\n") == 1 and "no jacked daemon" in none.stderr
    assert jacked(["daemon", "start"], env).returncode == 0
    data = json.loads(jacked(["daemon", "status", "--json"], env).stdout)
    assert {"pid", "socket", "version", "uptime_s", "rss_mb", "queued_writes", "index"} <= set(data)
    assert oct(DaemonPaths(via_daemon).socket.stat().st_mode & 0o777) == "0o600"
    assert jacked(["daemon", "stop"], env).stdout.strip() == "jacked daemon stopped"
    assert not daemon_pids(via_daemon) and not DaemonPaths(via_daemon).socket.exists()
    assert jacked(["daemon", "start"], env).returncode == 0
    pid = status_of(via_daemon)["pid"]  # type: ignore[index]
    os.kill(pid, signal.SIGTERM)
    assert wait_until(lambda: not daemon_pids(via_daemon), 30)
    assert not DaemonPaths(via_daemon).socket.exists() and not DaemonPaths(via_daemon).pid.exists()
    assert "Traceback" not in (via_daemon / "logs" / "daemon.log").read_text()


def test_idle_daemon_exits_and_leaves_no_process(homes: tuple[Path, Path, Path]) -> None:
    claude, via_daemon, _ = homes
    env = env_for(claude, via_daemon, True, JACKED_DAEMON_IDLE_MINUTES="0.15")
    assert jacked(["sessions"], env).returncode == 0
    pid = status_of(via_daemon)["pid"]  # type: ignore[index]
    before = _cpu_seconds(pid)
    time.sleep(1.0)
    assert _cpu_seconds(pid) - before < 0.2  # idle: no spinning
    assert wait_until(lambda: not daemon_pids(via_daemon), 30)
    assert not DaemonPaths(via_daemon).socket.exists()


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_another_user_is_refused(homes: tuple[Path, Path, Path]) -> None:
    if os.getuid() != 0:
        pytest.skip("needs root to act as another user")
    claude, via_daemon, _ = homes
    env = env_for(claude, via_daemon, True)
    assert jacked(["daemon", "start"], env).returncode == 0
    paths = DaemonPaths(via_daemon)
    # even with the folder and socket opened to everyone, the daemon hangs up on another uid
    modes = {p: p.stat().st_mode & 0o777 for p in (via_daemon, paths.dir, paths.socket)}
    for p in modes:
        p.chmod(0o777)
    try:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.setgid(65534)
                os.setuid(65534)
                code = 0 if DaemonClient(paths).status() is None else 3
            finally:
                os._exit(code)
        _, code = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(code) == 0
    finally:
        for p, mode in modes.items():
            p.chmod(mode)
    assert DaemonClient(paths).status() is not None  # the owner is still answered


def test_without_a_socket_the_command_answers_in_its_own_process(homes: tuple[Path, Path, Path]) -> None:
    claude, via_daemon, in_process = homes
    (via_daemon / "daemon").write_text("not a folder")  # where the socket should go
    got = jacked(["sessions", "--json"], env_for(claude, via_daemon, True))
    want = jacked(["sessions", "--json"], env_for(claude, in_process, False))
    assert got.returncode == 0 and got.stdout == want.stdout
    assert got.stderr.count("\n") == 1 and "answering in this process" in got.stderr


def test_a_new_build_restarts_the_daemon(homes: tuple[Path, Path, Path]) -> None:
    import jacked as package

    claude, via_daemon, _ = homes
    env = env_for(claude, via_daemon, True)
    assert jacked(["sessions"], env).returncode == 0
    old = status_of(via_daemon)
    init = Path(package.__file__)
    stat = init.stat()
    os.utime(init, ns=(stat.st_atime_ns, time.time_ns() + 10**9))  # newer than any module: as an upgrade leaves it
    try:
        assert jacked(["sessions"], env).returncode == 0
        new = status_of(via_daemon)
        assert new is not None and old is not None and new["pid"] != old["pid"] and new["build"] != old["build"]
        assert len(daemon_pids(via_daemon)) == 1
    finally:
        os.utime(init, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_locate_agrees_with_the_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    claude = tmp_path / "c"
    claude.mkdir()
    monkeypatch.delenv("JACKED_HOME", raising=False)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    assert locate().home == load_settings().home
    monkeypatch.setenv("JACKED_HOME", str(tmp_path / "env"))
    assert locate().home == load_settings().home == tmp_path / "env"
    (claude / "jacked.json").write_text(json.dumps({"jacked_home": str(tmp_path / "elsewhere")}))
    (claude / "jacked.json").chmod(0o600)
    assert locate().home == load_settings().home == tmp_path / "elsewhere"  # the file wins
    assert locate().fingerprint != locate(claude).fingerprint  # a --claude-dir is part of what it is made of
    monkeypatch.setenv("JACKED_USER_NAME", "bob")
    first = locate().fingerprint
    monkeypatch.setenv("JACKED_USER_NAME", "eve")
    assert locate().fingerprint != first


def test_a_deep_home_gets_a_socket_all_the_same(indexed: tuple[Path, Path], tmp_path: Path) -> None:
    claude, base = indexed
    deep = tmp_path / ("d" * 60) / ("e" * 60) / "home"
    shutil.copytree(base, deep)
    try:
        done = jacked(["sessions", "--json"], env_for(claude, deep, True))
        assert done.returncode == 0 and done.stderr == "" and len(json.loads(done.stdout)) == 3
        assert len(str(DaemonPaths(deep).socket)) > 108 and status_of(deep) is not None
        sock = open_socket(DaemonPaths(deep), 5)
        sock.close()
    finally:
        stop(deep)


def test_connect_is_a_no_op_when_the_daemon_runs(homes: tuple[Path, Path, Path]) -> None:
    claude, via_daemon, _ = homes
    env = env_for(claude, via_daemon, True)
    assert jacked(["daemon", "start"], env).returncode == 0
    # the same inputs as the process that started it: this test process's environment, made alike
    where = locate(None, env)
    client = connect(where, start=False)
    assert client.status() is not None and isinstance(socket.AF_UNIX, int)
