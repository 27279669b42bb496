"""The jacked daemon: the one process of a JACKED_HOME that holds the catalog writer, the embedding
model and the index, and answers every other jacked process over a Unix socket.

It serves, over HTTP on `JACKED_HOME/daemon/jacked.sock` (owner-only; a peer of another uid is
refused):
- `POST /rpc/<method>`: a method of `jacked.service.Jacked`, its answer streamed as JSON lines
  (warnings and progress as they happen, then the result, or one line per item of an iterator);
- `POST /queue/index`: a hook's session to index, on disk before the answer, indexed in order;
- `/mcp`: jacked's MCP tools (streamable HTTP, stateless), which `jacked mcp` relays from stdio;
- `GET /daemon/status`, `POST /daemon/stop`.

Every call into the service runs on one thread, in order of arrival: the catalog connection and
the index belong to it, and writes never interleave. One lock file decides which process is the
daemon; it exits after `daemon_idle_minutes` without requests, and cleanly on SIGTERM.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import queue
import signal
import socket
import sqlite3
import struct
import threading
import time
import traceback
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import orjson

from jacked.config import Settings
from jacked.errors import JackedError
from jacked.surfaces.daemon.protocol import (
    PROTOCOL_VERSION, DaemonPaths, build_id, decode, encode, locate, socket_address, write_queue_entry,
)
from jacked.util.flock import FileLock

log = logging.getLogger("jacked.daemon")

#: The service's methods a client may call (everything `Jacked` answers, except `purge`, which
#: removes the daemon's own home: `jacked uninstall --purge` stops the daemon first).
RPC_METHODS = frozenset({
    "scan", "backfill", "index", "forget", "forgotten", "cleardb", "status", "archive", "summary_status",
    "summarize", "search", "search_many", "retrieve", "recall", "prompt_recall", "restore", "sessions", "session_count", "turns",
    "session_view", "export", "export_iter", "timeline", "file_history", "stats", "summaries", "fresh",
    "scannable", "session_id", "usage", "prices", "unsaid",
})
STREAMS = frozenset({"export_iter", "timeline"})
#: Answers that are not the caller's to see (the catalog object `fresh` returns): sent as nothing.
_UNSENT = frozenset({"fresh"})
#: Items waiting for a slow reader before the service thread waits for it.
_STREAM_BUFFER = 256
_IDLE_CHECK_S = 1.0


class _Cancelled(Exception):
    """The client went away: stop producing its answer."""


class _Backfill:
    """A backfill in progress, which later backfill requests join instead of running again."""

    def __init__(self) -> None:
        self.listeners: list[Callable[[dict[str, Any]], None]] = []
        self.final: dict[str, Any] | None = None  # its report or error, once sent
        self.lock = threading.Lock()

    def send(self, msg: dict[str, Any]) -> None:
        with self.lock:
            if "result" in msg or "error" in msg:
                self.final = msg
            listeners = list(self.listeners)
        for emit in listeners:
            try:
                emit(msg)
            except _Cancelled:
                with self.lock:
                    if emit in self.listeners:
                        self.listeners.remove(emit)

    def join(self, emit: Callable[[dict[str, Any]], None]) -> None:
        with self.lock:
            final = self.final
            if final is None:
                self.listeners.append(emit)
        if final is not None:
            emit(final)


class Daemon:
    """The daemon of one JACKED_HOME (see the module doc)."""

    def __init__(self, settings: Settings, claude_dir: Path | None = None) -> None:
        assert settings.home is not None
        self.settings = settings
        self.claude_dir = claude_dir
        self.paths = DaemonPaths(Path(settings.home))
        self.build = build_id()
        self.fingerprint = locate(claude_dir).fingerprint
        self.idle_seconds = float(getattr(settings, "daemon_idle_minutes", 30.0)) * 60.0
        self.started = time.monotonic()
        self.last_request = time.monotonic()
        self.active_requests = 0
        self.job: dict[str, Any] | None = None  # what the service thread is doing now
        self.backfill: _Backfill | None = None
        self._service: Any = None  # the Jacked, made on the service thread
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="jacked-service")
        self._readers = concurrent.futures.ThreadPoolExecutor(32, thread_name_prefix="jacked-stream")
        self._pending = 0  # calls submitted to the service thread and not finished
        self._pending_lock = threading.Lock()
        self._drain_queued = threading.Event()
        self._server: Any = None
        self._lock = FileLock(self.paths.lock)

    # ------------------------------------------------------------------ lifecycle
    def run(self, quiet_if_running: bool = False) -> int:
        """Serve until idle, SIGTERM or a stop request; 0, or 1 when another daemon runs already."""
        import uvicorn

        self.paths.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.paths.dir, 0o700)
        if not self._lock.try_acquire():
            log.info("a daemon already runs for %s (pid %s)", self.paths.home, _read_pid(self.paths.pid))
            return 0 if quiet_if_running else 1
        sock: socket.socket | None = None
        try:
            self.paths.pid.write_text(f"{os.getpid()}\n", encoding="utf-8")
            self.paths.queue.mkdir(exist_ok=True, mode=0o700)
            sock = _bind(self.paths)
            log.info("daemon %s serving %s (pid %d)", self.build, self.paths.socket, os.getpid())
            if any(self.paths.queue.iterdir()):
                self._submit_drain()  # what a daemon that died accepted and did not finish
            config = uvicorn.Config(
                _Dispatch(self), http=_PeerCheckedProtocol, ws="none", lifespan="on", loop="asyncio",
                interface="asgi3", log_config=None, log_level="warning", access_log=False,
                server_header=False, timeout_graceful_shutdown=5, timeout_keep_alive=30,
            )
            self._server = _make_server_class()(config)
            threading.Thread(target=self._watch_idle, name="jacked-idle", daemon=True).start()
            self._server.run(sockets=[sock])
        finally:
            self._shutdown(sock)
        return 0

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True

    def _shutdown(self, sock: socket.socket | None) -> None:
        """Finish what the service thread was given, close the index and let go of the lock."""
        try:
            if self._service is not None:
                self._service.stop_optimizing()  # minutes of work that the next writer can redo
            # closed on the service thread, after everything given to it: the catalog connection is that thread's
            self._executor.submit(self._close_service)
            self._executor.shutdown(wait=True)
            self._readers.shutdown(wait=False, cancel_futures=True)
        except Exception:
            log.exception("closing the service failed")
        finally:
            if sock is not None:
                sock.close()
            for path in (self.paths.socket, self.paths.pid):
                try:
                    path.unlink()
                except OSError:
                    pass
            self._lock.release()
            log.info("daemon stopped")

    def _close_service(self) -> None:
        if self._service is not None:
            self._service.close()
            self._service = None

    def _watch_idle(self) -> None:
        while self._server is not None and not self._server.should_exit:
            time.sleep(_IDLE_CHECK_S)
            if self._pending == 0 and self.queued_writes():
                self._submit_drain()  # hooks that wrote their entry while the daemon could not answer
            if (self.active_requests == 0 and self._pending == 0 and self.job is None
                    and time.monotonic() - self.last_request > self.idle_seconds):
                log.info("idle for %.0f s: stopping", self.idle_seconds)
                self.stop()
            elif not self.paths.socket.exists():
                # Its home was deleted (a test's or an eval's temp folder): no client can reach it
                # again, and only this daemon's lock could have let another bind there.
                log.info("socket %s is gone: stopping", self.paths.socket)
                self.stop()

    # ------------------------------------------------------------------ the service thread
    def service(self) -> Any:
        """The service (made at its first use, on the service thread)."""
        if self._service is None:
            from jacked.service import Jacked

            self._service = Jacked(self.settings, scan=True, rescan_seconds=30.0, keep_index_open=True)
        return self._service

    def submit(self, fn: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        with self._pending_lock:
            self._pending += 1

        def run() -> Any:
            try:
                return fn()
            finally:
                with self._pending_lock:
                    self._pending -= 1
                self.last_request = time.monotonic()

        return self._executor.submit(run)

    def queued_writes(self) -> int:
        try:
            return sum(1 for _ in self.paths.queue.glob("*.json"))
        except OSError:
            return 0

    # ------------------------------------------------------------------ hooks' queue
    def enqueue_index(self, target: str) -> None:
        """Write the request to the queue folder, durably, and have it indexed in turn."""
        write_queue_entry(self.paths, target)
        self._submit_drain()

    def _submit_drain(self) -> None:
        if not self._drain_queued.is_set():
            self._drain_queued.set()
            self.submit(self._drain)

    def _drain(self) -> None:
        """Index every queued request, oldest first; each file goes once its session is indexed."""
        from jacked.surfaces.hook import log_problem

        self._drain_queued.clear()
        entries = sorted(self.paths.queue.glob("*.json"))
        if not entries:
            return
        self.job = {"method": "index", "started": time.time(), "queued": len(entries)}
        jk = self.service()
        done: dict[str, bool] = {}
        try:
            for entry in entries:
                try:
                    target = str(orjson.loads(entry.read_bytes())["target"])
                except (OSError, ValueError, KeyError, TypeError) as e:
                    log_problem(self.paths.home, f"daemon: unreadable queue entry {entry.name}: {e}")
                    entry.unlink(missing_ok=True)
                    continue
                if target not in done:  # a session named by several hooks is indexed once
                    try:
                        jk.scan_enabled = False
                        jk.index(target)
                    except Exception as e:
                        log_problem(self.paths.home, f"hook failed: {type(e).__name__}: {e}")
                    finally:
                        jk.scan_enabled = True
                    done[target] = True
                entry.unlink(missing_ok=True)
        finally:
            self.job = None

    # ------------------------------------------------------------------ calls
    def call(self, method: str, args: list[Any], kwargs: dict[str, Any], options: dict[str, Any],
             emit: Callable[[dict[str, Any]], None]) -> None:
        """Run one service call on the service thread, sending what it says through `emit`."""
        jk = self.service()
        self.job = {"method": method, "started": time.time()}
        jk.warn = lambda message: emit({"warn": message})
        jk.scan_enabled = bool(options.get("scan", True))
        if jk.scan_enabled:
            jk.rescan_before_next_call()
        backfill: _Backfill | None = None
        if method == "backfill":
            backfill = self.backfill = _Backfill()
            backfill.listeners.append(emit)
            send: Callable[[dict[str, Any]], None] = backfill.send
        else:
            send = emit
        if options.get("progress"):
            kwargs["progress"] = lambda stage, done, total: send({"progress": [stage, done, total]})
        try:
            result = getattr(jk, method)(*args, **kwargs)
            if method in STREAMS:
                for item in result:
                    send({"item": encode(item)})
                send({"end": True})
            else:
                send({"result": None if method in _UNSENT else encode(result)})
        except _Cancelled:
            pass
        except BaseException as e:
            kind = _kind(e)
            if kind == "internal":
                log.error("%s failed:\n%s", method, traceback.format_exc())
            send({"error": {"kind": kind, "message": str(e) or type(e).__name__,
                            "type": f"{type(e).__module__}:{type(e).__qualname__}"}})
        finally:
            jk.warn = None
            jk.scan_enabled = True
            self.job = None
            if backfill is not None:
                self.backfill = None

    def join_backfill(self, emit: Callable[[dict[str, Any]], None]) -> bool:
        """Have `emit` hear the running backfill's progress and report; False when none runs."""
        running = self.backfill
        if running is None:
            return False
        emit({"warn": "jacked: a backfill is running already: showing its progress"})
        running.join(emit)
        return True


def _kind(e: BaseException) -> str:
    """How a client re-raises a failure (see `jacked.surfaces.daemon.client._error`)."""
    if isinstance(e, (JackedError, sqlite3.DatabaseError)):
        return "user"
    if isinstance(e, OSError):
        return "os"
    if isinstance(e, ValueError):
        return "value"
    if isinstance(e, LookupError):
        return "lookup"
    return "internal"


# ---------------------------------------------------------------------------------- HTTP
class _Dispatch:
    """The daemon's ASGI app: `/mcp` to the MCP server, the rest to jacked's own routes."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self.routes = _routes(daemon)
        self._mcp: Any = None

    def mcp(self) -> Any:
        if self._mcp is None:
            from mcp.server.transport_security import TransportSecuritySettings

            from jacked.surfaces.mcp import build_server

            server = build_server(self.daemon.settings, jacked_factory=self.daemon.service,
                                  executor=self.daemon.submit)
            self._mcp = server.streamable_http_app(
                streamable_http_path="/mcp", json_response=True, stateless_http=True,
                transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
        return self._mcp

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self.mcp()(scope, receive, send)  # runs the MCP session manager for the daemon's life
            return
        if scope["type"] != "http":
            return
        daemon = self.daemon
        daemon.active_requests += 1
        daemon.last_request = time.monotonic()
        try:
            if scope["path"] == "/mcp" or scope["path"].startswith("/mcp/"):
                await self.mcp()(scope, receive, send)
            else:
                await self.routes(scope, receive, send)
        finally:
            daemon.active_requests -= 1
            daemon.last_request = time.monotonic()


def _routes(daemon: Daemon) -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    async def status(request: Request) -> Response:
        return JSONResponse(await asyncio.get_running_loop().run_in_executor(daemon._readers, _status, daemon))

    async def stop(request: Request) -> Response:
        daemon.stop()
        return JSONResponse({"stopping": True})

    async def enqueue(request: Request) -> Response:
        """`{"target": ...}`: a session to queue; `{}`: the queue holds new entries (a hook wrote them)."""
        try:
            body = await request.json()
            target = body.get("target")
        except (ValueError, AttributeError):
            return JSONResponse({"error": "give {\"target\": ...} or {}"}, status_code=400)
        if target is None:
            daemon._submit_drain()
        else:
            await asyncio.get_running_loop().run_in_executor(daemon._readers, daemon.enqueue_index, str(target))
        return JSONResponse({"queued": True}, status_code=202)

    async def rpc(request: Request) -> Response:
        method = request.path_params["method"]
        if method not in RPC_METHODS:
            return JSONResponse({"error": f"unknown method {method!r}"}, status_code=404)
        if request.headers.get("x-jacked-protocol") != str(PROTOCOL_VERSION):
            return JSONResponse({"error": "protocol version differs: restart the daemon"}, status_code=409)
        try:
            body = await request.json()
            args, kwargs = decode(body.get("args") or []), decode(body.get("kwargs") or {})
            options = dict(body.get("options") or {})
        except (ValueError, TypeError, AttributeError, ImportError) as e:
            return JSONResponse({"error": f"bad request: {e}"}, status_code=400)
        lines: queue.Queue[bytes | None] = queue.Queue(maxsize=_STREAM_BUFFER)
        cancelled = threading.Event()

        def emit(msg: dict[str, Any]) -> None:
            data = orjson.dumps(msg, option=orjson.OPT_NON_STR_KEYS) + b"\n"
            while True:
                if cancelled.is_set():
                    raise _Cancelled
                try:
                    lines.put(data, timeout=0.2)
                    return
                except queue.Full:
                    continue

        def finish() -> None:
            try:
                lines.put(None, timeout=5)
            except queue.Full:
                pass

        def emit_joined(msg: dict[str, Any]) -> None:
            emit(msg)
            if "result" in msg or "error" in msg:
                finish()

        optimizing = daemon._service.optimizing if daemon._service is not None else None
        if optimizing:
            emit({"warn": f"jacked: the index is being optimised (for {time.time() - optimizing['started']:.0f} s "
                          "so far): this answer waits for it"})
        if not (method == "backfill" and daemon.join_backfill(emit_joined)):
            def work() -> None:
                try:
                    daemon.call(method, args, kwargs, options, emit)
                finally:
                    finish()
            daemon.submit(work)

        async def body_lines() -> AsyncIterator[bytes]:
            loop = asyncio.get_running_loop()
            try:
                while True:
                    data = await loop.run_in_executor(daemon._readers, _get, lines, cancelled)
                    if data is None:
                        return
                    yield data
            finally:
                cancelled.set()

        return StreamingResponse(body_lines(), media_type="application/x-ndjson")

    return Starlette(routes=[
        Route("/daemon/status", status, methods=["GET"]),
        Route("/daemon/stop", stop, methods=["POST"]),
        Route("/queue/index", enqueue, methods=["POST"]),
        Route("/rpc/{method}", rpc, methods=["POST"]),
    ])


def _get(lines: queue.Queue[bytes | None], cancelled: threading.Event) -> bytes | None:
    """The next line of an answer; None at its end."""
    while not cancelled.is_set():
        try:
            return lines.get(timeout=0.5)
        except queue.Empty:
            continue
    return None


def _status(daemon: Daemon) -> dict[str, Any]:
    from jacked.index.indexer import backfill_state

    job = daemon.job
    return {
        "pid": os.getpid(), "socket": str(daemon.paths.socket), "build": daemon.build,
        "version": daemon.build.split("+")[0], "protocol": PROTOCOL_VERSION, "settings": daemon.fingerprint,
        "home": str(daemon.paths.home), "uptime_s": round(time.monotonic() - daemon.started, 1),
        "rss_mb": _rss_mb(), "queued_writes": daemon.queued_writes(),
        "job": dict(job) if job else None, "idle_minutes": daemon.idle_seconds / 60.0,
        "index": {"loaded": daemon._service is not None and daemon._service._indexer is not None,
                  "optimizing": daemon._service.optimizing if daemon._service is not None else None,
                  "backfill": backfill_state(daemon.paths.home)},
    }


def _rss_mb() -> float | None:
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            pages = int(fh.read().split()[1])
        return round(pages * os.sysconf("SC_PAGE_SIZE") / 1e6, 1)
    except (OSError, ValueError, IndexError):
        return None


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None


def _bind(paths: DaemonPaths) -> socket.socket:
    """The daemon's listening socket, owner-only (a stale one from a crash is replaced: the lock
    says no other daemon uses it)."""
    try:
        paths.socket.unlink()
    except FileNotFoundError:
        pass
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        with socket_address(paths) as address:
            sock.bind(address)
    except BaseException:
        sock.close()
        raise
    finally:
        os.umask(old_umask)
    os.chmod(paths.socket, 0o600)
    sock.listen(256)
    return sock


def _peer_uid(sock: socket.socket) -> int | None:
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        return None
    return int(struct.unpack("3i", creds)[1])


def _make_protocol() -> type:
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class PeerCheckedProtocol(H11Protocol):
        """uvicorn's h11 protocol that hangs up on a peer of another user."""

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            sock = transport.get_extra_info("socket")
            uid = _peer_uid(sock) if sock is not None else None
            if uid is not None and uid != os.getuid():
                log.warning("refused a connection from uid %d", uid)
                transport.close()
                return
            super().connection_made(transport)  # type: ignore[arg-type]  # uvicorn's protocol types it as a Transport

    return PeerCheckedProtocol


_PeerCheckedProtocol: Any = None


def _make_server_class() -> type:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, except that SIGTERM and Ctrl-C end it without being raised again once
        it has stopped: the daemon removes its socket and pid file and lets go of its lock first."""

        def handle_exit(self, sig: int, frame: Any) -> None:
            if self.should_exit and sig == signal.SIGINT:
                self.force_exit = True
            else:
                self.should_exit = True

    return Server


def serve(settings: Settings, claude_dir: Path | None = None, spawned: bool = False,
          home: Path | None = None) -> int:
    """Run the daemon in this process (`jacked daemon run`); its exit code. `home`: the JACKED_HOME
    the client that started it looked for (a daemon whose settings say another one does not serve)."""
    global _PeerCheckedProtocol
    _PeerCheckedProtocol = _make_protocol()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    assert settings.home is not None
    if home is not None and Path(home).resolve() != Path(settings.home).resolve():
        log.error("the settings say JACKED_HOME is %s, the client looked for %s: not serving", settings.home, home)
        return 1
    return Daemon(settings, claude_dir).run(quiet_if_running=spawned)
