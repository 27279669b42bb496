"""The HTTP server of `jacked ui`: a Starlette app (JSON API routes, static files) served by uvicorn.

Why not the stdlib `http.server`: it leaves request framing, keep-alive and timeouts to the
handler. A POST answered before its body was read left that body on a kept-alive connection,
to be parsed as the next request (a cross-site `text/plain` POST smuggled a `POST /api/scan`),
and it had no socket timeout, so half-sent requests held a thread each indefinitely. uvicorn
(h11) frames every request, discards an unread body instead of parsing it, answers malformed
requests with 400 and closes, and runs on one event loop: a slow client costs a socket, not a
thread. Both packages come with the MCP SDK.

Safety, because transcripts are private:
- bound to 127.0.0.1 by default; binding anywhere else requires a token (`make_server` refuses
  to start without one), and then every request must carry it — `?token=`, the
  `X-Jacked-Token` header, `Authorization: Bearer`, or the cookie the page gets on first load;
- on a loopback bind, the `Host` header must name a loopback host too, so a web page on some
  other site cannot reach the API through DNS rebinding;
- POST bodies must be JSON (`Content-Type: application/json`), which a cross-site form cannot
  send without a CORS preflight this server never answers;
- any answer given before the request's body was read (401, 403, 405, 413, 415, 408…) closes
  the connection, so what the client sent after it is never read as a request;
- limits (`Limits`): the request line and headers must arrive within `request_timeout` (uvicorn
  has no such timeout: `_Protocol` adds it), a body too (else 408); unfinished headers are held
  to 16 KiB (h11), a body to 64 KiB (413); idle kept-alive connections close after `keep_alive`
  seconds; beyond `max_connections` open connections, requests get 503; blocking API calls run
  on the thread pool (40 threads at most), never a thread per connection;
- a strict Content-Security-Policy: scripts, styles and data only from this server.
"""
from __future__ import annotations

import asyncio
import hmac
import ipaddress
import mimetypes
import re
import socket
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import anyio
import h11
import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers, MutableHeaders
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from jacked.config import Settings
from jacked.errors import JackedError
from jacked.schema import dumps
from jacked.surfaces.ui.api import ApiError, UiApi

STATIC_DIR = Path(__file__).resolve().parent / "static"
MAX_BODY = 64 * 1024  # a retrieve request is at most 50 ids: a few KiB
COOKIE = "jacked_token"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
SECURITY_HEADERS = {
    "cache-control": "no-store",
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",  # the token may be in the URL
    "x-frame-options": "DENY",
}

_SESSION_RE = re.compile(r"^/api/sessions/([^/]+)(/turns)?$")


@dataclass(frozen=True)
class Limits:
    """What one client may take: time to send a request, idle time, connections, sizes."""

    request_timeout: float = 10.0  # seconds for a request's line and headers, and again for its body
    keep_alive: float = 5.0  # seconds an idle kept-alive connection stays open
    max_connections: int = 256  # open connections beyond which requests get 503 (a browser uses ~6)
    max_header_bytes: int = 16 * 1024  # the request line and headers
    max_body: int = MAX_BODY


class UiConfigError(JackedError, ValueError):
    """The server cannot start as asked (e.g. a non-local host without a token)."""


def is_loopback(host: str) -> bool:
    """Whether `host` (a bind address or a Host header's name) is this machine only."""
    h = host.strip().strip("[]").lower()
    if h in ("localhost", "localhost.") or h.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def _host_name(host_header: str) -> str:
    """The name part of a Host header (`[::1]:8377` → `::1`, `127.0.0.1:80` → `127.0.0.1`)."""
    h = host_header.strip()
    if h.startswith("["):
        return h[1:h.find("]")] if "]" in h else h
    return h.rsplit(":", 1)[0] if h.count(":") == 1 else h


def load_static() -> dict[str, tuple[bytes, str]]:
    """Every static file, read once: path → (bytes, content type)."""
    files: dict[str, tuple[bytes, str]] = {}
    for f in sorted(STATIC_DIR.rglob("*")):
        if f.is_file():
            ctype = mimetypes.guess_type(f.name)[0] or "application/octet-stream"
            if ctype.startswith("text/") or ctype in ("application/javascript", "image/svg+xml"):
                ctype += "; charset=utf-8"
            files["/static/" + f.relative_to(STATIC_DIR).as_posix()] = (f.read_bytes(), ctype)
    return files


def _json(status: int, obj: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(dumps(obj), status_code=status,
                    media_type="application/json", headers=headers)


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return _json(status, {"error": message}, headers)


# --------------------------------------------------------------------------- the guard
class _Guard:
    """Outermost ASGI layer: host and token checks, security headers, and closing the connection
    when an answer goes out before the request's body was read."""

    def __init__(self, app: ASGIApp, token: str | None, local: bool) -> None:
        self.app = app
        self.token = token
        self.local = local

    def _token_given(self, request: Request) -> str | None:
        if request.query_params.get("token"):
            return request.query_params["token"]
        if request.headers.get("x-jacked-token"):
            return request.headers["x-jacked-token"]
        auth = request.headers.get("authorization") or ""
        if auth.lower().startswith("bearer "):
            return auth[7:].strip()
        return request.cookies.get(COOKIE)

    def _refusal(self, request: Request) -> Response | None:
        if self.local and not is_loopback(_host_name(request.headers.get("host") or "")):
            return _error(403, "this server answers only to localhost / 127.0.0.1")
        if self.token:
            given = self._token_given(request)
            if not given or not hmac.compare_digest(given.encode(), self.token.encode()):
                return _error(401, "a token is required: open the URL `jacked ui` printed (…?token=…)")
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # no websockets, no lifespan events
            return
        headers = Headers(scope=scope)
        length = headers.get("content-length", "0")
        has_body = "transfer-encoding" in headers or (length.isdigit() and int(length) > 0)
        body_read = False

        async def receive_() -> Message:
            nonlocal body_read
            message = await receive()
            if message["type"] == "http.request" and not message.get("more_body", False):
                body_read = True
            return message

        async def send_(message: Message) -> None:
            if message["type"] == "http.response.start":
                out = MutableHeaders(scope=message)
                for k, v in SECURITY_HEADERS.items():
                    if k not in out:
                        out[k] = v
                if has_body and not body_read:
                    # What follows on this connection is the rest of an unread body: never a request.
                    out["connection"] = "close"
            await send(message)

        refusal = self._refusal(Request(scope))
        if refusal is not None:
            await refusal(scope, receive_, send_)
            return
        await self.app(scope, receive_, send_)


# --------------------------------------------------------------------------- the app
Handler = Callable[[Request], Awaitable[Any]]


def _answer(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """An endpoint: the handler's JSON answer, or its error as `{"error": one line}`."""

    async def endpoint(request: Request) -> Response:
        try:
            result = await handler(request)
        except ApiError as e:
            return _error(e.status, str(e))
        except JackedError as e:  # a problem the user can fix: one line, never a traceback
            return _error(400, str(e))
        except ClientDisconnect:
            return Response(status_code=400)  # nobody is listening
        except Exception as e:
            return _error(500, f"{type(e).__name__}: {e}")
        return result if isinstance(result, Response) else _json(200, result)

    return endpoint


async def read_json_body(request: Request, limits: Limits) -> dict[str, Any]:
    """The request's JSON object: 415 unless sent as JSON, 413 when too large, 408 when too slow."""
    ctype = (request.headers.get("content-type") or "").split(";")[0].strip().lower()
    if ctype != "application/json":
        raise ApiError(415, "send the body as JSON (Content-Type: application/json)")
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > limits.max_body:
        raise ApiError(413, f"request body too large (at most {limits.max_body:,} bytes)")
    raw = bytearray()
    try:
        with anyio.fail_after(limits.request_timeout):
            async for chunk in request.stream():
                raw += chunk
                if len(raw) > limits.max_body:
                    raise ApiError(413, f"request body too large (at most {limits.max_body:,} bytes)")
    except TimeoutError:
        raise ApiError(408, f"the request body did not arrive within {limits.request_timeout:g} s") from None
    try:
        body = orjson.loads(bytes(raw) or b"{}")
    except orjson.JSONDecodeError:
        raise ApiError(400, "the body is not valid JSON") from None
    if not isinstance(body, dict):
        raise ApiError(400, "the body must be a JSON object")
    return body


def build_app(api: UiApi, token: str | None, local: bool, limits: Limits | None = None) -> ASGIApp:
    """The whole web view as an ASGI app: routes for the API and the page, behind `_Guard`."""
    limits = limits or Limits()
    static = load_static()

    def get(fn: Callable[[dict[str, str]], Any]) -> Callable[[Request], Awaitable[Response]]:
        async def handler(request: Request) -> Any:
            return await run_in_threadpool(fn, dict(request.query_params))  # SQLite and search block
        return _answer(handler)

    def post(fn: Callable[[dict[str, Any]], Any]) -> Callable[[Request], Awaitable[Response]]:
        async def handler(request: Request) -> Any:
            body = await read_json_body(request, limits)
            return await run_in_threadpool(fn, body)
        return _answer(handler)

    async def session(request: Request) -> Any:
        # Matched on the raw path: an id with an encoded `/` must reach `_resolve` (a 400), not
        # be decoded into another route.
        m = _SESSION_RE.match(request.scope.get("raw_path", b"").decode("ascii", "replace"))
        if not m:
            raise ApiError(404, f"no API endpoint {request.url.path}")
        ref, params = unquote(m.group(1)), dict(request.query_params)
        return await run_in_threadpool(api.turns if m.group(2) else api.session, ref, params)

    async def page(request: Request) -> Response:
        # Every page route is the one-page app; the app reads the route from the URL hash.
        path = request.url.path
        key = {"/": "/static/index.html", "/index.html": "/static/index.html",
               "/favicon.ico": "/static/favicon.svg"}.get(path, path)
        found = static.get(key)
        if found is None:
            return _error(404, f"not found: {path}")
        body, ctype = found
        headers: dict[str, str] = {}
        if token and request.query_params.get("token") and key.endswith("index.html"):
            # The page got the token in its URL: keep it in a cookie so assets and API calls carry it.
            headers["set-cookie"] = f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"
        return Response(body, media_type=ctype, headers=headers)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        path = request.url.path
        if exc.status_code == 405:
            allowed = (exc.headers or {}).get("Allow", "")
            verb = "POST" if "POST" in allowed else "GET"
            return _error(405, f"use {verb} for {path}", dict(exc.headers or {}))
        if exc.status_code == 404:
            return _error(404, f"no API endpoint {path}" if path.startswith("/api/") else f"not found: {path}")
        return _error(exc.status_code, str(exc.detail))

    routes = [
        Route("/api/health", get(api.health), methods=["GET"]),
        Route("/api/repos", get(api.repos), methods=["GET"]),
        Route("/api/sessions", get(api.sessions), methods=["GET"]),
        Route("/api/sessions/{ref:path}", _answer(session), methods=["GET"]),
        Route("/api/search", get(api.search), methods=["GET"]),
        Route("/api/stats", get(api.stats), methods=["GET"]),
        Route("/api/retrieve", post(api.retrieve), methods=["POST"]),
        Route("/api/scan", post(api.scan), methods=["POST"]),
        Route("/", page, methods=["GET"]),
        Route("/index.html", page, methods=["GET"]),
        Route("/favicon.ico", page, methods=["GET"]),
        Route("/static/{name:path}", page, methods=["GET"]),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error})
    return _Guard(app, token, local)


# --------------------------------------------------------------------------- the server
class _Protocol(H11Protocol):
    """uvicorn's h11 protocol plus a deadline for each request's line and headers.

    uvicorn times out only idle kept-alive connections, and any byte received cancels that; a
    client sending a header line now and then would hold its connection forever. Here the
    request line and headers must be complete within `request_timeout` seconds of the connection
    opening (or of the previous response), or the connection is closed.
    """

    request_timeout = 10.0
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]  # uvicorn's protocol types it as a Transport
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = None
        if not self.transport.is_closing():
            self._deadline = self.loop.call_later(self.request_timeout, self._expired)

    def _expired(self) -> None:
        self._deadline = None
        waiting = self.conn.their_state is h11.IDLE and (self.cycle is None or self.cycle.response_complete)
        if waiting and not self.transport.is_closing():
            self.transport.close()


class UiServer:
    """A bound listening socket and the uvicorn server that will serve the app on it.

    The shape of the stdlib server it replaced: `server_address`, `url`, `serve_forever()`
    (blocks; Ctrl-C stops it), `shutdown()` (from another thread: stop and wait) and
    `server_close()`.
    """

    def __init__(self, sock: socket.socket, app: ASGIApp, limits: Limits,
                 on_stop: Callable[[], None] | None = None) -> None:
        self.socket = sock
        self.on_stop = on_stop  # run when serving stops (the API closes the index it holds)
        self.server_address: tuple[Any, ...] = sock.getsockname()[:2]
        self.app = app
        self.limits = limits
        protocol = type("UiProtocol", (_Protocol,), {"request_timeout": limits.request_timeout})
        config = uvicorn.Config(
            app, http=protocol, ws="none", lifespan="off", loop="asyncio", interface="asgi3",
            log_config=None, log_level="error",  # quiet: URLs may carry the token, the terminal is the user's
            access_log=False, proxy_headers=False, server_header=False,
            timeout_keep_alive=limits.keep_alive,  # type: ignore[arg-type]  # seconds: uvicorn says int, uses a float
            limit_concurrency=limits.max_connections,
            h11_max_incomplete_event_size=limits.max_header_bytes,
            timeout_graceful_shutdown=3,
        )
        self._server = uvicorn.Server(config)
        self._stopped = threading.Event()
        self._stopped.set()  # not serving yet: shutdown() has nothing to wait for

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        shown = "127.0.0.1" if host in ("0.0.0.0", "") else (f"[{host}]" if ":" in str(host) else host)
        return f"http://{shown}:{port}/"

    def serve_forever(self) -> None:
        """Serve until `shutdown()` or Ctrl-C (then KeyboardInterrupt is raised here, as before)."""
        self._stopped.clear()
        try:
            self._server.run(sockets=[self.socket])
        finally:
            try:
                if self.on_stop is not None:
                    self.on_stop()
            finally:
                self._stopped.set()

    def shutdown(self) -> None:
        """Stop serving (open requests get a few seconds to finish) and wait until it has."""
        self._server.should_exit = True
        self._stopped.wait(timeout=30)

    def server_close(self) -> None:
        self.socket.close()


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, so that asyncio sets TCP_NODELAY on each connection: without it a response
    # written as headers then body waits out the peer's delayed ACK (40 ms per kept-alive request).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def make_server(settings: Settings, host: str = "127.0.0.1", port: int = 8377,
                token: str | None = None, limits: Limits | None = None,
                remote: Callable[[Any], Any] | None = None) -> UiServer:
    """A bound (not yet serving) server. A non-loopback `host` without a token is refused."""
    local = is_loopback(host)
    if token is not None and not token.strip():
        raise UiConfigError("--token must not be empty")
    if not local and not token:
        raise UiConfigError(f"--host {host} is reachable from other machines: give --token (or let "
                            f"`jacked ui` generate one)")
    limits = limits or Limits()
    sock = _listen(host, port)
    api = UiApi(settings, remote=remote)
    return UiServer(sock, build_app(api, token, local, limits), limits, on_stop=api.close)


def serve_in_thread(server: UiServer) -> threading.Thread:
    """Serve on a daemon thread (tests, benchmarks); stop with `server.shutdown()`."""
    server._stopped.clear()  # so that a shutdown() right after this waits for the server to stop
    t = threading.Thread(target=server.serve_forever, name="jacked-ui", daemon=True)
    t.start()
    return t
