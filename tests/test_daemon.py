"""The jacked daemon end to end, as a user meets it: real `jacked` processes, a real daemon started
on demand, the real model and Edge shard, real fixture sessions.

- every command answers the same, byte for byte, through the daemon and in its own process;
- `jacked mcp` relays to the daemon and its tools answer as the in-process server's;
- racing clients start one daemon; a stale socket and pid file from a crash are cleaned up; a
  `kill -9` mid-hook or mid-backfill loses nothing; another user is refused; many hooks, MCP
  clients and a backfill at once; an idle daemon spends no CPU, stops and leaves no process;
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

import jsonschema
import pytest
from kit import DEEP, REAL

from jacked.config import load_settings
from jacked.schema import json_schema
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
    ["retrieve", DEEP[:8], CI[:8], "--max-tokens", "1500"], ["retrieve", DEEP[:8], "--mode", "smart", "--json"],
    ["restore", CI[:8]], ["status", "--json"], ["status"], ["timeline", CI[:8], "--json"],
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


# The hot read commands as `jacked.surfaces.cli.fast` reads them, and argument lists it leaves to typer.
FAST_READ = [
    ["sessions"], ["sessions", "-n", "2", "--json"], ["sessions", "--repo", "deep-manifest", "--since", "2025-01-01"],
    ["sessions", "--until", "2025-01-01"], ["sessions", "--limit=1", "--json", "--json"],
    ["turns", DEEP[:8]], ["turns", "--json", CI[:8]], ["turns", "no-such-session"],
    ["search", "add tar archive support to the manifest", "--json"], ["search", "manifest", "-n", "2"],
    ["search", "manifest", "--type", "plan", "-t", "user_message", "--repo", "deep-manifest", "--json"],
    ["search", "manifest", "--agent", "nope"], ["search", ""], ["search"], ["search", "x", "--mine", "--user", "bob"],
    ["stats"], ["stats", "--tool", "Edit", "-n", "3", "--subagents", "--no-scan"], ["stats", "--session", CI[:8], "--json"],
    ["status"], ["status", "--json"],
    # typer's to read: help, unknown options, values out of range, bad types, missing and extra arguments
    ["sessions", "--help"], ["search", "--help"], ["sessions", "--bogus"], ["sessions", "-n", "0"], ["sessions", "-n5"],
    ["sessions", "-n", "many"], ["sessions", "--repo"], ["turns"], ["turns", "a", "b"], ["stats", "--json=yes"],
    ["search", "--", "-x"], ["status", "extra"],
]


def test_read_commands_answer_the_same_without_typer(homes: tuple[Path, Path, Path]) -> None:
    """`jacked.surfaces.cli.fast` answers as typer does, byte for byte, and imports neither typer nor pydantic."""
    from jacked.surfaces.cli import entry, fast

    assert entry._FAST_COMMANDS == set(fast.COMMANDS)
    claude, via_daemon, _ = homes
    env = env_for(claude, via_daemon, True)
    typer_path = [sys.executable, "-c", f"import sys; sys.argv[0] = {str(JACKED)!r}; "
                  "from jacked.surfaces.cli.main import run; run()"]
    for args in FAST_READ:
        fast_run = jacked(args, env)
        typer_run = subprocess.run([*typer_path, *args], env=env, capture_output=True, text=True, timeout=300)
        assert [fast_run.returncode, fast_run.stdout, fast_run.stderr] == \
            [typer_run.returncode, typer_run.stdout, typer_run.stderr], args
        assert "Traceback" not in fast_run.stderr, args
    for args in (["sessions", "--json"], ["search", "manifest", "-t", "plan"], ["turns", CI[:8]], ["stats"], ["status"]):
        done = subprocess.run([sys.executable, "-X", "importtime", str(JACKED), *args], env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
        assert not imported & {"typer", "pydantic", "click", "rich"}, args


def test_fast_parser_reads_plain_arguments_and_declines_the_rest() -> None:
    from jacked.surfaces.cli.fast import COMMANDS, _Declined, _specs, command_of, parse
    from jacked.surfaces.cli.history import sessions_cmd

    for name in COMMANDS:  # every parameter of every hot command is read here
        _specs(command_of(name))
    search_command = command_of("search")
    assert parse(sessions_cmd, ["--repo", "x", "-n", "3", "--repo=y"]) == {
        "repo": "y", "since": None, "until": None, "limit": 3, "json_out": False}
    got = parse(search_command, ["q", "-t", "plan", "--type=title", "--json"])
    assert got["query"] == "q" and got["types"] == ["plan", "title"] and got["json_out"] and got["limit"] == 10
    for argv in (["--help"], ["-n", "0"], ["-n5"], ["--json=1"], ["x"], ["--since"], ["--repo", "-x"]):
        with pytest.raises(_Declined):
            parse(sessions_cmd, argv)


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


# Hooks fired at once in the test below; the figure is 200 (JACKED_TEST_HOOKS=200: a few minutes).
HOOKS_AT_ONCE = int(os.environ.get("JACKED_TEST_HOOKS", "40"))


def test_many_hooks_mcp_clients_and_a_backfill_at_once(homes: tuple[Path, Path, Path],
                                                      request: pytest.FixtureRequest) -> None:
    claude, via_daemon, _ = homes
    env = env_for(claude, via_daemon, True)
    sessions = sorted((claude / "projects").rglob("*.jsonl"))
    sessions = [s for s in sessions if not s.name.startswith("agent-")]
    procs = [subprocess.Popen([str(JACKED), "backfill", "--json"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)]
    mcp = [subprocess.Popen([str(JACKED), "mcp"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE) for _ in range(5)]
    late = _copy_session(claude, LATE)  # not indexed yet: the hooks (and the backfill) bring it in
    request.addfinalizer(lambda: late.unlink(missing_ok=True))
    sessions.append(late)
    hooks = []
    for i in range(HOOKS_AT_ONCE):
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
    assert wait_until(lambda: (status_of(via_daemon) or {}).get("queued_writes") == 0
                      and not (status_of(via_daemon) or {}).get("job"), 300)
    hook_log = via_daemon / "logs" / "hook.log"
    assert "hook failed" not in (hook_log.read_text() if hook_log.exists() else "")
    status = json.loads(jacked(["status", "--json"], env).stdout)
    assert status["sessions"] == status["sessions_indexed"] == 4  # every session indexed, the late one too
    assert late.stem in {r["session_id"] for r in json.loads(jacked(["sessions", "--json"], env).stdout)}


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


def test_a_backfill_killed_midway_is_finished_by_the_next_daemon(indexed: tuple[Path, Path], tmp_path: Path) -> None:
    claude, base = indexed
    home, clean = tmp_path / "fresh", tmp_path / "clean"
    env = env_for(claude, home, True)
    try:
        first = subprocess.Popen([str(JACKED), "backfill", "--json"], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)

        def writing() -> bool:
            # Any phase: a small backfill goes from its scan to done between two looks on a fast machine.
            progress = ((status_of(home) or {}).get("index") or {}).get("backfill") or {}
            return bool(progress.get("running"))

        assert wait_until(writing, 300)
        os.kill(status_of(home)["pid"], signal.SIGKILL)  # type: ignore[index]
        out, err = first.communicate(timeout=120)
        assert first.returncode == 1 and err.count("\n") == 1 and "Traceback" not in err  # cut short, said in one line
        again = jacked(["backfill", "--json"], env)  # starts a new daemon, which finishes the work
        assert again.returncode == 0 and json.loads(again.stdout)["errors"] == []
        shutil.copytree(base, clean)  # a clean run's index of the same sessions
        local = env_for(claude, clean, False)
        counts = ("points", "points_by_type", "points_by_user", "sessions", "sessions_indexed", "points_pending_dense")
        got, want = (json.loads(jacked(["status", "--json"], e).stdout) for e in (env, local))
        assert {k: got.get(k) for k in counts} == {k: want.get(k) for k in counts}
        query = ["search", "add tar archive support to the manifest", "--json"]
        got, want = (json.loads(jacked(query, e).stdout)["results"] for e in (env, local))
        # The same sessions in the same order, each led by the same match. A session's lesser matches
        # (a raw-text chunk against a turn summary) can tie, and ties come in the store's own order,
        # which a build resumed midway lays out differently from a clean one.
        assert [(r["session_id"], r["matches"][0]["text"]) for r in got] == \
            [(r["session_id"], r["matches"][0]["text"]) for r in want]
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
    assert not list(jsonschema.Draft202012Validator(json_schema("daemon-status")).iter_errors(data))
    assert oct(DaemonPaths(via_daemon).socket.stat().st_mode & 0o777) == "0o600"
    assert jacked(["daemon", "stop"], env).stdout.strip() == "jacked daemon stopped"
    assert not daemon_pids(via_daemon) and not DaemonPaths(via_daemon).socket.exists()
    assert jacked(["daemon", "start"], env).returncode == 0
    pid = status_of(via_daemon)["pid"]  # type: ignore[index]
    os.kill(pid, signal.SIGTERM)
    assert wait_until(lambda: not daemon_pids(via_daemon), 30)
    assert not DaemonPaths(via_daemon).socket.exists() and not DaemonPaths(via_daemon).pid.exists()
    assert "Traceback" not in (via_daemon / "logs" / "daemon.log").read_text()


def test_a_daemon_whose_home_is_deleted_exits(homes: tuple[Path, Path, Path]) -> None:
    claude, via_daemon, _ = homes
    env = env_for(claude, via_daemon, True)
    assert jacked(["daemon", "start"], env).returncode == 0
    pid = status_of(via_daemon)["pid"]  # type: ignore[index]
    shutil.rmtree(via_daemon)  # as a test or an eval removes its temp home, the daemon still running
    assert wait_until(lambda: not Path(f"/proc/{pid}").exists()
                      or Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z", 60)


# How long an idle daemon's CPU time is watched (the figure: 60 s).
IDLE_WINDOW_S = float(os.environ.get("JACKED_TEST_IDLE_S", "60"))


def test_idle_daemon_spends_no_cpu_then_exits_and_leaves_no_process(homes: tuple[Path, Path, Path]) -> None:
    claude, via_daemon, _ = homes
    env = env_for(claude, via_daemon, True, JACKED_DAEMON_IDLE_MINUTES=str(IDLE_WINDOW_S / 60 + 0.1))
    assert jacked(["search", "manifest archive"], env).returncode == 0  # the model and the index loaded
    pid = status_of(via_daemon)["pid"]  # type: ignore[index]
    time.sleep(0.5)
    before = _cpu_seconds(pid)
    time.sleep(IDLE_WINDOW_S)
    assert _cpu_seconds(pid) - before < 0.01 * IDLE_WINDOW_S + 0.1  # idle: no spinning (under 1 % of a core)
    assert wait_until(lambda: not home_pids(via_daemon), 60)  # the daemon and anything it started
    assert not DaemonPaths(via_daemon).socket.exists() and not DaemonPaths(via_daemon).pid.exists()


def home_pids(home: Path) -> list[int]:
    """Every live process started for `home` (its JACKED_HOME in their environment), whatever it runs."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and f"JACKED_HOME={home}".encode() in (proc / "environ").read_bytes().split(b"\0") \
                    and (proc / "stat").read_text().split(")")[-1].split()[0] != "Z":
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


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


def test_a_daemon_of_another_protocol_is_replaced_by_the_next_client(homes: tuple[Path, Path, Path]) -> None:
    """As after `pip install -U` changed the protocol: the daemon still running speaks version 0
    (its module patched before it starts). It refuses a request of this protocol unread (409); the
    next client, a command or a `RemoteService` connected before the change, replaces it and is
    answered by the new one."""
    from jacked.surfaces.daemon.protocol import PROTOCOL_VERSION

    claude, via_daemon, _ = homes
    env = env_for(claude, via_daemon, True)
    older = ("import sys, jacked.surfaces.daemon.protocol as protocol; protocol.PROTOCOL_VERSION = 0; "
             "from jacked.surfaces.daemon.__main__ import main; sys.exit(main(['run', '--home', sys.argv[1]]))")

    def start_older() -> dict[str, Any]:
        subprocess.Popen([sys.executable, "-c", older, str(via_daemon)], env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        assert wait_until(lambda: (status_of(via_daemon) or {}).get("protocol") == 0, 60)
        return status_of(via_daemon)  # type: ignore[return-value]

    old = start_older()
    assert old["build"].split("+")[1].startswith("0.")
    paths = DaemonPaths(via_daemon)
    refused = DaemonClient(paths)._request("POST", "/rpc/session_count", {"args": [], "kwargs": {}, "options": {}})
    assert refused.status == 409
    refused.close()
    want = jacked(["sessions", "--json"], env_for(claude, via_daemon, False)).stdout
    done = jacked(["sessions", "--json"], env)
    assert done.returncode == 0 and done.stderr == "" and done.stdout == want
    new = status_of(via_daemon)
    assert new is not None and new["pid"] != old["pid"] and new["protocol"] == PROTOCOL_VERSION
    assert daemon_pids(via_daemon) == [new["pid"]]

    # A client that connected before the change: its request is refused, it reconnects and asks again.
    stop(via_daemon)
    old = start_older()
    connected = ("from jacked.surfaces.daemon.client import DaemonClient, RemoteService; "
                 "from jacked.surfaces.daemon.protocol import DaemonPaths, locate; where = locate(); "
                 "print(RemoteService(DaemonClient(DaemonPaths(where.home)), where, scan=False).session_count())")
    done = subprocess.run([sys.executable, "-c", connected], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == str(len(json.loads(want))), done.stderr
    new = status_of(via_daemon)
    assert new is not None and new["pid"] != old["pid"] and new["protocol"] == PROTOCOL_VERSION
    assert daemon_pids(via_daemon) == [new["pid"]]


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


def test_a_jacked_folder_in_the_current_folder_is_not_what_the_daemon_runs(homes: tuple[Path, Path, Path],
                                                                          tmp_path: Path) -> None:
    claude, via_daemon, _ = homes
    shadow = tmp_path / "checkout" / "jacked"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text('__version__ = "0.0.0"\n')  # as an old checkout of jacked would be
    done = subprocess.run([str(JACKED), "sessions", "--json"], env=env_for(claude, via_daemon, True),
                          cwd=shadow.parent, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stderr == "" and len(json.loads(done.stdout)) == 3
    assert len(daemon_pids(via_daemon)) == 1


def test_connect_is_a_no_op_when_the_daemon_runs(homes: tuple[Path, Path, Path]) -> None:
    claude, via_daemon, _ = homes
    env = env_for(claude, via_daemon, True)
    assert jacked(["daemon", "start"], env).returncode == 0
    # the same inputs as the process that started it: this test process's environment, made alike
    where = locate(None, env)
    client = connect(where, start=False)
    assert client.status() is not None and isinstance(socket.AF_UNIX, int)
