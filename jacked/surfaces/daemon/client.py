"""A light client of the jacked daemon: HTTP over the daemon's Unix socket, standard library only.

`connect(settings)` finds the daemon of the settings' JACKED_HOME, starting it when none runs
(racing clients start one between them), and gives a `RemoteService`: the methods of
`jacked.service.Jacked`, answered by the daemon. Nothing here imports the model, the store or a
transcript reader.
"""
from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from jacked.errors import JackedError
from jacked.util.fs import read_only_dir
from jacked.surfaces.daemon.protocol import (
    PROTOCOL_VERSION, DaemonPaths, Where, build_id, daemon_alive, decode, encode, socket_address,
    write_queue_entry,
)

#: The exit code of a daemon that could not load its settings (`jacked.surfaces.daemon.__main__`).
SETTINGS_ERROR = 3
#: How long a client waits for a daemon it started to answer (it imports the web stack first).
START_TIMEOUT_S = 30.0
#: How long a call may wait for a daemon's answer before the connection is given up.
CALL_TIMEOUT_S = 24 * 3600.0
#: How long `stop` waits for the daemon to let go of its lock.
STOP_TIMEOUT_S = 60.0
#: How long a hook waits for the daemon to hear of its queued session (it is on disk already).
NOTIFY_TIMEOUT_S = 2.0
#: How long a client waits for a daemon that runs but does not answer: while Qdrant optimises the
#: index it holds the interpreter lock, and nothing else in the daemon runs (minutes at most).
BUSY_TIMEOUT_S = 900.0

Warn = Callable[[str], None]


class DaemonUnavailable(Exception):
    """No daemon could be reached or started: the caller answers in its own process instead.
    `quiet`: nothing to say about the daemon (JACKED_HOME itself cannot be made: answering in
    this process says that, in its own words)."""

    def __init__(self, message: str, quiet: bool = False) -> None:
        super().__init__(message)
        self.quiet = quiet


class RemoteError(JackedError):
    """A problem the user can fix, raised in the daemon: its one-line message."""


class DaemonCrashed(JackedError):
    """The daemon failed on a request in a way that is jacked's bug, not the user's."""


class OtherProtocol(DaemonUnavailable):
    """The daemon speaks another `PROTOCOL_VERSION` (jacked was upgraded while it ran): it refused
    the request unread."""


class _Answer:
    """An HTTP/1.0 answer read off the socket: the daemon closes the connection at its end, so the
    body is everything after the headers (no chunking to undo). `http.client` is not used: importing
    it (and the email parser it brings) cost a hook more than its whole request."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.file = sock.makefile("rb")
        status_line = self.file.readline(65537)
        parts = status_line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
            raise ConnectionError("the daemon's answer is not HTTP")
        self.status = int(parts[1])
        while True:  # headers: nothing in them is needed
            line = self.file.readline(65537)
            if line in (b"\r\n", b"\n", b""):
                break

    def read(self) -> bytes:
        return self.file.read()

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.file)

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def open_socket(paths: DaemonPaths, timeout: float | None) -> socket.socket:
    """A stream socket connected to the daemon of `paths` (OSError when none listens)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        with socket_address(paths) as address:
            sock.connect(address)
    except BaseException:
        sock.close()
        raise
    return sock


class DaemonClient:
    """Requests to the daemon of one JACKED_HOME."""

    def __init__(self, paths: DaemonPaths) -> None:
        self.paths = paths

    def _request(self, method: str, url: str, body: Any = None, timeout: float = CALL_TIMEOUT_S,
                 raw: bytes | None = None, headers: dict[str, str] | None = None) -> _Answer:
        sock = open_socket(self.paths, timeout)
        try:
            payload = raw if raw is not None else json.dumps(body).encode() if body is not None else b""
            extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
            sock.sendall(f"{method} {url} HTTP/1.0\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                         f"X-Jacked-Protocol: {PROTOCOL_VERSION}\r\nContent-Length: {len(payload)}\r\n{extra}\r\n"
                         .encode() + payload)
            return _Answer(sock)
        except BaseException:
            sock.close()
            raise

    def post_mcp(self, message: bytes, protocol_version: str | None) -> tuple[int, bytes]:
        """One JSON-RPC message to the daemon's MCP server: (HTTP status, the answer's body)."""
        headers = {"Accept": "application/json, text/event-stream"}
        if protocol_version:
            headers["MCP-Protocol-Version"] = protocol_version
        resp = self._request("POST", "/mcp", raw=message, headers=headers)
        try:
            return resp.status, resp.read()
        finally:
            resp.close()

    def status(self, timeout: float = 5.0) -> dict[str, Any] | None:
        """The daemon's status, or None when no daemon answers."""
        try:
            resp = self._request("GET", "/daemon/status", timeout=timeout)
        except OSError:
            return None
        try:
            if resp.status != 200:
                return None
            data: dict[str, Any] = json.loads(resp.read())
            return data
        except (OSError, ValueError):
            return None
        finally:
            resp.close()

    def stop(self, wait: bool = True) -> bool:
        """Ask the daemon to stop (it finishes the request it is on); whether one was running."""
        status = self.status()
        if status is None:
            return False
        try:
            resp = self._request("POST", "/daemon/stop", timeout=5.0)
            resp.read()
            resp.close()
        except OSError:
            pass
        if wait:
            wait_for_exit(self.paths, int(status.get("pid") or 0), STOP_TIMEOUT_S)
        return True

    def notify_queue(self) -> None:
        """Tell the daemon its queue holds new work (it also finds it by itself within a second)."""
        resp = self._request("POST", "/queue/index", {}, timeout=NOTIFY_TIMEOUT_S)
        try:
            resp.read()
        finally:
            resp.close()

    def call(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any], options: dict[str, Any],
             warn: Warn | None, progress: Callable[[str, int, int], None] | None, stream: bool) -> Any:
        """Run `Jacked.<method>(*args, **kwargs)` in the daemon. Its warnings go to `warn` and its
        progress to `progress` as they come; a `stream` method's items are yielded as they arrive."""
        body = {"args": encode(list(args)), "kwargs": encode(kwargs), "options": options}
        try:
            resp = self._request("POST", f"/rpc/{method}", body)
        except OSError as e:
            raise DaemonUnavailable(f"cannot reach the daemon at {self.paths.socket}: {e}") from e
        lines = _lines(resp)
        if resp.status == 409:
            resp.close()
            raise OtherProtocol(f"the daemon at {self.paths.socket} speaks another protocol than {PROTOCOL_VERSION}")
        if resp.status != 200:
            resp.close()
            raise DaemonCrashed(f"the daemon answered {resp.status} to {method}")

        def next_answer() -> dict[str, Any]:
            for msg in lines:
                if "warn" in msg:
                    if warn is not None:
                        warn(msg["warn"])
                elif "progress" in msg:
                    if progress is not None:
                        progress(*msg["progress"])
                else:
                    if "error" in msg:
                        resp.close()
                        raise _error(msg["error"], self.paths)
                    return msg
            resp.close()
            raise DaemonCrashed(f"the daemon ended during {method} (see {self.paths.log})")

        first = next_answer()
        if not stream:
            resp.close()
            return decode(first["result"])

        def items(msg: dict[str, Any]) -> Iterator[Any]:
            try:
                while "item" in msg:
                    yield decode(msg["item"])
                    msg = next_answer()
            finally:
                resp.close()

        return items(first)


def _lines(resp: _Answer) -> Iterator[dict[str, Any]]:
    """The JSON messages of a streamed answer, one per line, as they arrive."""
    try:
        for raw in resp:
            if raw.strip():
                yield json.loads(raw)
    except (OSError, ValueError):
        return


def _error(err: dict[str, Any], paths: DaemonPaths) -> Exception:
    """The exception a daemon's error message stands for, raised as the in-process call would."""
    kind, message = err.get("kind"), err.get("message") or "error"
    same = _same_class(str(err.get("type") or ""), message)
    if same is not None and kind != "internal":
        return same
    if kind == "user":
        return RemoteError(message)
    if kind == "value":
        return ValueError(message)
    if kind == "lookup":
        return LookupError(message)
    if kind == "os":
        return OSError(message)
    return DaemonCrashed(f"internal error in the daemon: {message} (details in {paths.log})")


def _same_class(type_name: str, message: str) -> Exception | None:
    """The daemon's exception as its own class, when this process has imported that class already
    (a caller may catch it by name: the web view turns a SearchError into a 400); else None."""
    module, _, qualname = type_name.partition(":")
    obj: Any = sys.modules.get(module)
    for part in qualname.split(".") if obj is not None else ():
        obj = getattr(obj, part, None)
    if not (isinstance(obj, type) and issubclass(obj, Exception)):
        return None
    try:
        return obj(message)
    except Exception:
        return None


class RemoteService:
    """The `Jacked` service answered by the daemon: the same methods and the same answers."""

    #: Methods whose answer is an iterator: its items arrive one at a time.
    STREAMS = frozenset({"export_iter", "timeline"})

    def __init__(self, client: DaemonClient, where: Where, scan: bool = True, warn: Warn | None = None) -> None:
        self.client = client
        self.where = where
        self.scan_enabled = scan
        self.warn = warn
        self._settings: Any = None

    @property
    def settings(self) -> Any:
        """This process's own settings (the daemon was started from the same inputs), loaded when
        first asked for: most commands never need them here."""
        if self._settings is None:
            from jacked.config import load_settings

            flag = self.where.claude_dir if self.where.claude_dir_given else None
            self._settings = load_settings(flag)
        return self._settings

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        progress = kwargs.pop("progress", None)
        options = {"scan": self.scan_enabled, "progress": progress is not None}
        try:
            return self.client.call(method, args, kwargs, options, self.warn, progress, method in self.STREAMS)
        except OtherProtocol:
            # Replaced since this client connected (an upgrade): `connect` restarts it as this
            # client's build, and the request, refused unread, is sent again.
            self.client = connect(self.where)
            return self.client.call(method, args, kwargs, options, self.warn, progress, method in self.STREAMS)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self._call(name, *args, **kwargs)

    def close(self) -> None:
        """Nothing to close: the daemon keeps the catalog and the index."""


def wait_for_exit(paths: DaemonPaths, pid: int, timeout: float) -> bool:
    """Wait until the daemon `pid` is gone (with no pid: until its lock is free); whether it went in time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not (_alive(pid) if pid else daemon_alive(paths)):
            return True
        time.sleep(0.05)
    return False


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, ended but not yet reaped by its parent, does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def connect(where: Where, start: bool = True) -> DaemonClient:
    """The client of the daemon for `where` (see `protocol.locate`), started first when none runs.

    A daemon of an older build (jacked was upgraded) is stopped and a new one started. One started
    with other settings is restarted with these when it is idle; when it is busy, `DaemonUnavailable`,
    and the caller answers in its own process.
    """
    paths = DaemonPaths(where.home)
    client = DaemonClient(paths)
    status = client.status()
    if status is None and daemon_alive(paths):
        status = _wait_while_busy(client)
    if status is not None and _matches(status, where):
        return client
    if not start:
        raise DaemonUnavailable("no jacked daemon runs")
    if status is not None:
        if status.get("build") == build_id() and not _idle(status):
            raise DaemonUnavailable("the running daemon has other settings and is busy")
        client.stop()
    _start(paths, where)
    return client


def _wait_while_busy(client: DaemonClient) -> dict[str, Any] | None:
    """The status of a daemon that runs but did not answer at once (see `BUSY_TIMEOUT_S`)."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while time.monotonic() < deadline and daemon_alive(client.paths):
        status = client.status(timeout=30.0)
        if status is not None:
            return status
    return None


def enqueue_index(where: Where, target: str) -> None:
    """A hook's session to index: on the daemon's queue, on disk, before this returns; the daemon
    (started when none runs) indexes it in turn. A daemon too busy to answer just now finds it
    when it is free."""
    paths = DaemonPaths(where.home)
    write_queue_entry(paths, target)
    client = DaemonClient(paths)
    status = client.status(timeout=NOTIFY_TIMEOUT_S)
    if status is None and daemon_alive(paths):
        return  # busy (optimising the index): its watcher picks the entry up when it is free
    if status is None or not _matches(status, where):
        connect(where)  # none runs, or one of another build or settings: the one started reads the queue
    try:
        client.notify_queue()
    except OSError:
        pass  # it finds the entry by itself within a second


def _matches(status: dict[str, Any], where: Where) -> bool:
    return (status.get("protocol") == PROTOCOL_VERSION and status.get("build") == build_id()
            and status.get("settings") == where.fingerprint)


def _idle(status: dict[str, Any]) -> bool:
    return not status.get("job") and not status.get("queued_writes")


def _start(paths: DaemonPaths, where: Where) -> None:
    """Start a daemon for `paths` detached from this process (its own session, output to its log)
    and wait until it answers; racing clients start one between them."""
    import subprocess

    from jacked.util.flock import FileLock, LockTimeout

    if read_only_dir(paths.home):  # no socket can be made there; answering in this process says why
        raise DaemonUnavailable(f"{paths.home} is read-only", quiet=True)
    try:
        paths.home.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as e:
        raise DaemonUnavailable(f"cannot make {paths.home}: {e.strerror or e}", quiet=True) from e
    try:
        paths.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        paths.log.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as e:
        raise DaemonUnavailable(f"cannot make {paths.dir}: {e.strerror or e}") from e
    client = DaemonClient(paths)
    try:
        with FileLock(paths.start_lock, timeout=START_TIMEOUT_S):
            status = client.status()
            if status is not None and _matches(status, where):
                return  # another client started it meanwhile
            # -P: not the current folder first on the module path, where a `jacked` folder (a checkout
            # of it) would be run instead of the installed jacked this client runs
            cmd = [sys.executable, "-P", "-m", "jacked.surfaces.daemon", "run", "--spawned", "--home", str(where.home)]
            if where.claude_dir_given:
                cmd += ["--claude-dir", str(where.claude_dir)]
            with open(paths.log, "ab") as log:
                proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                        start_new_session=True, close_fds=True)
            deadline = time.monotonic() + START_TIMEOUT_S
            while time.monotonic() < deadline:
                status = client.status(timeout=2.0)
                if status is not None and _matches(status, where):
                    return
                if proc.poll() is not None:
                    # settings it could not load: the client's own process says what is wrong with them
                    raise DaemonUnavailable(f"the daemon did not start ({_last_line(paths)})",
                                            quiet=proc.returncode == SETTINGS_ERROR)
                time.sleep(0.02)
            raise DaemonUnavailable(f"the daemon did not answer within {START_TIMEOUT_S:.0f} s (see {paths.log})")
    except LockTimeout:
        raise DaemonUnavailable("another client is still starting the daemon") from None


def _last_line(paths: DaemonPaths) -> str:
    try:
        lines = paths.log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return f"see {paths.log}"
    return lines[-1][:300] if lines else f"see {paths.log}"
