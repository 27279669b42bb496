"""`jacked ui` on the wire: raw sockets against the real command, for what HTTP itself must hold.

- Request smuggling: a POST answered before its body is read (415, 405, 403, 401, 413) must not
  leave that body on the connection to be parsed as the next request. The attack is the one a
  web page on any site can make: a `text/plain` POST (`fetch(…, {mode: "no-cors"})`) whose body
  is itself a whole `POST /api/scan` request. The server is started with `--no-scan` on an empty
  home, so the catalog stays empty unless the smuggled scan runs.
- Slow clients: half-sent requests must cost neither a thread each nor the service to others,
  and must be cut off after `--request-timeout` seconds (1 s here), dribbling or not.
- Framing: keep-alive and pipelining still work; malformed and oversized requests get one 400.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kit import REAL, suite_mode

from jacked.config import load_settings
from jacked.surfaces.ui.server import Limits, make_server, serve_in_thread

TIMEOUT = 1.0  # --request-timeout of the servers under test
SLACK = 2.0  # on top of it: a loaded 2-core CI machine

INNER = (b"POST /api/scan HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
         b"Content-Length: 2\r\n\r\n{}")


@dataclass
class Ui:
    port: int
    proc: subprocess.Popen[str]


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JACKED_")}
    return dict(env, CLAUDE_CONFIG_DIR=str(REAL), JACKED_HOME=str(home), JACKED_USER_NAME="tester",
                HOME=str(home.parent), **suite_mode())  # no other agent's folder in a real home gets scanned


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ui]:
    """`jacked ui --no-scan --request-timeout 1` on an empty home: its catalog holds no session."""
    home = tmp_path_factory.mktemp("ui-http") / "home"
    exe = Path(sys.executable).parent / "jacked"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "jacked.surfaces.cli.main"]
    proc = subprocess.Popen(cmd + ["ui", "--port", "0", "--no-scan", "--request-timeout", str(TIMEOUT)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(home))
    line = proc.stdout.readline() if proc.stdout else ""
    assert "jacked ui: serving" in line, (line, proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
    port = int(line.split(" at ", 1)[1].strip().rstrip("/").rsplit(":", 1)[1])
    yield Ui(port, proc)
    proc.terminate()
    proc.wait(timeout=30)


# --------------------------------------------------------------------------- raw HTTP
def _connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_until_closed(sock: socket.socket, wait: float) -> tuple[bytes, bool]:
    """What the server sends until it closes the connection (True) or `wait` seconds pass (False)."""
    data = b""
    deadline = time.monotonic() + wait
    while (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            break
        except ConnectionResetError:
            return data, True
        if not chunk:
            return data, True
        data += chunk
    return data, False


def responses(data: bytes) -> list[tuple[int, dict[str, str], bytes]]:
    """The HTTP/1.1 responses in `data`, in order: (status, headers lower-cased, body)."""
    out = []
    while data:
        head, sep, rest = data.partition(b"\r\n\r\n")
        assert sep, f"an incomplete response: {data[:200]!r}"
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, v in (x.split(":", 1) for x in lines[1:])}
        n = int(headers.get("content-length", len(rest)))  # none: the body runs to the close
        out.append((status, headers, rest[:n]))
        data = rest[n:]
    return out


def _get(port: int, path: str, timeout: float = 10) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as res:
            return res.status, json.loads(res.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def _sessions(port: int) -> int:
    status, health = _get(port, "/api/health")
    assert status == 200
    return health["sessions"]


def _post(path: str, ctype: str | None, body: bytes, host: str = "127.0.0.1", extra: str = "") -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: {host}\r\n"
    if ctype:
        head += f"Content-Type: {ctype}\r\n"
    return (head + f"Content-Length: {len(body)}\r\n{extra}\r\n").encode() + body


# --------------------------------------------------------------------------- smuggling
ATTACKS = {
    # the case: what any web page can send with fetch(…, {mode: "no-cors"})
    "text/plain body": (_post("/api/scan", "text/plain", INNER), 415),
    "form body": (_post("/api/scan", "application/x-www-form-urlencoded", INNER), 415),
    "no content type": (_post("/api/scan", None, INNER), 415),
    "POST to a GET route": (_post("/api/sessions", "application/json", INNER), 405),
    "POST to the page": (_post("/", "text/plain", INNER), 405),
    "POST to nowhere": (_post("/api/nothing", "text/plain", INNER), 404),
    "foreign Host (DNS rebinding)": (_post("/api/scan", "application/json", INNER, host="evil.example:8377"), 403),
    "chunked and Content-Length": (
        b"POST /api/scan HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + INNER, 415),
    "body over the limit": (
        b"POST /api/scan HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 10000000\r\n\r\n" + INNER, 413),
}


def _replay(port: int, attack: bytes) -> tuple[list[tuple[int, dict[str, str], bytes]], bool]:
    with _connect(port) as s:
        s.sendall(attack)
        data, closed = read_until_closed(s, TIMEOUT + SLACK)
    return responses(data), closed


@pytest.mark.parametrize("name", list(ATTACKS))
def test_a_smuggled_request_is_never_run(ui: Ui, name: str) -> None:
    attack, status = ATTACKS[name]
    got, closed = _replay(ui.port, attack)
    assert [r[0] for r in got] == [status], got  # one answer: the smuggled POST got none
    assert closed, "the server kept the connection open after answering without reading the body"
    body = json.loads(got[0][2])
    assert body["error"] and "\n" not in body["error"]
    assert got[0][1]["connection"] == "close"
    assert _sessions(ui.port) == 0, "the smuggled POST /api/scan ran"


def test_a_smuggled_request_is_never_run_past_the_token(tmp_path: Path) -> None:
    settings = load_settings(REAL, jacked_home=str(tmp_path / "home"), user_name="tester")
    server = make_server(settings, "127.0.0.1", 0, token="s3cret", limits=Limits(request_timeout=TIMEOUT))
    serve_in_thread(server)
    try:
        port = server.server_address[1]
        inner = INNER.replace(b"Host: 127.0.0.1\r\n", b"Host: 127.0.0.1\r\nX-Jacked-Token: s3cret\r\n")
        got, closed = _replay(port, _post("/api/scan", "text/plain", inner))
        assert [r[0] for r in got] == [401] and closed
        assert _sessions_with_token(port, "s3cret") == 0
    finally:
        server.shutdown()
        server.server_close()


def _sessions_with_token(port: int, token: str) -> int:
    return _get(port, f"/api/health?token={token}")[1]["sessions"]


def test_the_inner_request_alone_does_scan(tmp_path: Path) -> None:
    """The control: the smuggled bytes are a valid request, which does scan when sent as one."""
    settings = load_settings(REAL, jacked_home=str(tmp_path / "home"), user_name="tester")
    server = make_server(settings, "127.0.0.1", 0, limits=Limits(request_timeout=TIMEOUT))
    serve_in_thread(server)
    try:
        port = server.server_address[1]
        assert _sessions(port) == 0
        with _connect(port) as s:
            s.sendall(INNER)
            data, _ = read_until_closed(s, 120)  # kept alive: returns when the keep-alive timer closes it
        assert [r[0] for r in responses(data)] == [200]
        assert _sessions(port) == 27
    finally:
        server.shutdown()
        server.server_close()


# --------------------------------------------------------------------------- slow clients
def _threads(pid: int) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    return int(next(x for x in status.splitlines() if x.startswith("Threads:")).split()[1])


def test_slow_clients_cost_no_thread_and_are_cut_off(ui: Ui) -> None:
    before = _threads(ui.proc.pid)
    partial = [b"GET /api/health HT",  # half a request line
               b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n",  # headers never finished
               b"POST /api/scan HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/",
               b""]  # connected, silent
    socks: list[tuple[socket.socket, float]] = []
    for i in range(48):
        s = _connect(ui.port)
        if partial[i % len(partial)]:
            s.sendall(partial[i % len(partial)])
        socks.append((s, time.monotonic()))
    # two more send a header byte every 0.2 s: trickling must not reset the deadline
    stop = threading.Event()
    dribblers = [(_connect(ui.port), time.monotonic()) for _ in range(2)]

    def dribble(s: socket.socket) -> None:
        s.sendall(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        while not stop.is_set():
            try:
                s.sendall(b"X")
            except OSError:
                return
            time.sleep(0.2)

    workers = [threading.Thread(target=dribble, args=(s,), daemon=True) for s, _ in dribblers]
    for w in workers:
        w.start()
    socks += dribblers
    try:
        time.sleep(0.3)
        t = time.monotonic()
        assert _get(ui.port, "/api/health", timeout=5)[0] == 200  # others are still served, at once
        assert time.monotonic() - t < 0.5 + SLACK / 2
        during = _threads(ui.proc.pid)
        if before is not None and during is not None:
            assert during <= before + 4, (before, during)  # not a thread per connection
        closed_after = []
        for s, opened in socks:
            data, closed = read_until_closed(s, opened + TIMEOUT + SLACK - time.monotonic())
            assert closed, f"a slow client was still connected after {TIMEOUT + SLACK:g} s"
            assert b"200 OK" not in data
            closed_after.append(time.monotonic() - opened)
        assert min(closed_after) >= TIMEOUT * 0.8  # cut off by the deadline, not straight away
    finally:
        stop.set()
        for s, _ in socks:
            s.close()
    assert _get(ui.port, "/api/health", timeout=5)[0] == 200


@pytest.mark.parametrize("dribble", [False, True])
def test_a_body_that_does_not_arrive_gets_408(ui: Ui, dribble: bool) -> None:
    with _connect(ui.port) as s:
        s.sendall(b"POST /api/retrieve HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 60\r\n\r\n{\"session_ids\"")
        start = time.monotonic()
        if dribble:
            for _ in range(int(TIMEOUT / 0.2) + 2):
                time.sleep(0.2)
                try:
                    s.sendall(b" ")
                except OSError:
                    break
        data, closed = read_until_closed(s, TIMEOUT + SLACK)
    assert [r[0] for r in responses(data)] == [408] and closed
    assert time.monotonic() - start < TIMEOUT + SLACK


# --------------------------------------------------------------------------- framing
def test_keep_alive_and_pipelining_still_work(ui: Ui) -> None:
    with _connect(ui.port) as s:
        get = b"GET /api/repos HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        s.sendall(get + get)  # pipelined: two answers, in order
        data = b""
        while len(responses_or_none(data)) < 2:
            chunk = s.recv(65536)
            assert chunk, "closed before answering both"
            data += chunk
        s.sendall(get)  # and the connection is still usable
        data, _ = read_until_closed(s, 1)
        assert [r[0] for r in responses(data)] == [200]


def responses_or_none(data: bytes) -> list[Any]:
    try:
        return responses(data)
    except (AssertionError, ValueError, IndexError):
        return []


@pytest.mark.parametrize("raw", [
    b"NONSENSE\r\n\r\n",
    b"GET /api/health HTTP/1.1\r\n\r\n",  # HTTP/1.1 without Host
    # headers over 16 KiB, still incomplete (h11 holds the buffer of an unfinished request to that;
    # a complete one that arrives in one read is parsed whole)
    b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 20_000,
    b"POST /api/scan HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
    b"POST /api/scan HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: gzip\r\n\r\n{}",
])
def test_malformed_requests_get_one_4xx_and_a_closed_connection(ui: Ui, raw: bytes) -> None:
    with _connect(ui.port) as s:
        s.sendall(raw)
        time.sleep(0.2)
        try:
            s.sendall(INNER)  # never a request on this connection
        except OSError:
            pass  # already closed
        data, closed = read_until_closed(s, TIMEOUT + SLACK)
    got = responses(data)
    assert len(got) == 1 and 400 <= got[0][0] < 500 and closed, got
    assert _sessions(ui.port) == 0


def test_idle_keep_alive_connections_are_closed(tmp_path: Path) -> None:
    settings = load_settings(REAL, jacked_home=str(tmp_path / "home"), user_name="tester")
    server = make_server(settings, "127.0.0.1", 0, limits=Limits(keep_alive=0.5, request_timeout=30))
    serve_in_thread(server)
    try:
        with _connect(server.server_address[1]) as s:
            s.sendall(b"GET /api/repos HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            t = time.monotonic()
            data, closed = read_until_closed(s, 0.5 + SLACK)
        assert [r[0] for r in responses(data)] == [200] and closed
        assert time.monotonic() - t >= 0.4
    finally:
        server.shutdown()
        server.server_close()


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("path", [
    "/api/sessions?since=99999y", "/api/sessions?until=99999y", "/api/stats?since=99999y",
    "/api/search?q=x&since=99999y", "/api/sessions?since=9999999999999999999999d",
    "/api/sessions?since=0001-01-01T00:00:00%2B14:00", "/api/sessions/" + "a" * 5000,
])
def test_bad_input_is_a_one_line_400(ui: Ui, path: str) -> None:
    status, err = _get(ui.port, path)
    assert status == 400 and err["error"] and "\n" not in err["error"], (status, err)
