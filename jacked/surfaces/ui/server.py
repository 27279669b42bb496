"""The HTTP server of `jacked ui`: stdlib `ThreadingHTTPServer`, JSON API routes, static files.

Why the stdlib: the page is a handful of static files and a small JSON API for one user (or a
few teammates behind a token); a framework would add a heavy dependency for nothing.

Safety, because transcripts are private:
- bound to 127.0.0.1 by default; binding anywhere else requires a token (`make_server` refuses
  to start without one), and then every request must carry it — `?token=`, the
  `X-Jacked-Token` header, `Authorization: Bearer`, or the cookie the page gets on first load;
- on a loopback bind, the `Host` header must name a loopback host too, so a web page on some
  other site cannot reach the API through DNS rebinding;
- POST bodies must be JSON (`Content-Type: application/json`), which a cross-site form cannot
  send without a CORS preflight this server never answers;
- a strict Content-Security-Policy: scripts, styles and data only from this server.
"""
from __future__ import annotations

import hmac
import ipaddress
import mimetypes
import re
import socket
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import orjson

from jacked.config import Settings
from jacked.errors import JackedError
from jacked.surfaces.ui.api import ApiError, UiApi

STATIC_DIR = Path(__file__).resolve().parent / "static"
MAX_BODY = 1 << 20  # a retrieve request is a few ids: 1 MiB is plenty
COOKIE = "jacked_token"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")

_SESSION_RE = re.compile(r"^/api/sessions/([^/]+)(/turns)?$")


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


class UiServer(ThreadingHTTPServer):
    """The server: holds the API, the token and the static files for its handlers."""

    daemon_threads = True  # a stuck browser connection must not keep `jacked ui` from exiting
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], api: UiApi, token: str | None, local: bool) -> None:
        self.api = api
        self.token = token
        self.local = local
        self.static = load_static()
        if ":" in address[0]:  # an IPv6 bind address
            self.address_family = socket.AF_INET6
        super().__init__(address, UiHandler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        shown = "127.0.0.1" if host in ("0.0.0.0", "") else (f"[{host}]" if ":" in str(host) else host)
        return f"http://{shown}:{port}/"


class UiHandler(BaseHTTPRequestHandler):
    """One request: check host and token, then route to the API or a static file."""

    server: UiServer
    protocol_version = "HTTP/1.1"
    server_version = "jacked-ui"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        # Quiet by default: URLs may carry the token, and the terminal is the user's.
        return

    # ------------------------------------------------------------------ verbs
    def do_GET(self) -> None:  # noqa: N802 - stdlib names
        self._dispatch("GET")

    def do_HEAD(self) -> None:  # noqa: N802
        self._dispatch("HEAD")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")

    # ------------------------------------------------------------------ checks
    def _token_given(self, query: dict[str, str]) -> str | None:
        if query.get("token"):
            return query["token"]
        if self.headers.get("X-Jacked-Token"):
            return self.headers["X-Jacked-Token"]
        auth = self.headers.get("Authorization") or ""
        if auth.lower().startswith("bearer "):
            return auth[7:].strip()
        cookie = SimpleCookie()
        try:
            cookie.load(self.headers.get("Cookie") or "")
        except Exception:  # noqa: BLE001 - a malformed cookie is just no token
            return None
        return cookie[COOKIE].value if COOKIE in cookie else None

    def _allowed(self, query: dict[str, str]) -> tuple[bool, str]:
        if self.server.local and not is_loopback(_host_name(self.headers.get("Host") or "")):
            return False, "this server answers only to localhost / 127.0.0.1"
        if self.server.token:
            given = self._token_given(query)
            if not given or not hmac.compare_digest(given.encode(), self.server.token.encode()):
                return False, "a token is required: open the URL `jacked ui` printed (…?token=…)"
        return True, ""

    # ------------------------------------------------------------------ routing
    def _dispatch(self, method: str) -> None:
        parts = urlsplit(self.path)
        path = parts.path
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        ok, why = self._allowed(query)
        if not ok:
            self._send_json(HTTPStatus.FORBIDDEN if "localhost" in why else HTTPStatus.UNAUTHORIZED,
                            {"error": why})
            return
        try:
            if path.startswith("/api/"):
                self._api(method, path, query)
            elif method in ("GET", "HEAD"):
                self._static(path, query)
            else:
                self._send_json(HTTPStatus.METHOD_NOT_ALLOWED, {"error": f"{method} is not allowed on {path}"})
        except ApiError as e:
            self._send_json(e.status, {"error": str(e)})
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception as e:  # noqa: BLE001 - one failed request must never take the server down
            self._send_json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"{type(e).__name__}: {e}"})

    def _api(self, method: str, path: str, query: dict[str, str]) -> None:
        api = self.server.api
        get_routes: dict[str, Callable[[dict[str, str]], Any]] = {
            "/api/health": api.health, "/api/repos": api.repos, "/api/sessions": api.sessions,
            "/api/search": api.search, "/api/stats": api.stats,
        }
        post_routes: dict[str, Callable[[dict[str, Any]], Any]] = {"/api/retrieve": api.retrieve,
                                                                    "/api/scan": api.scan}
        if path in get_routes or _SESSION_RE.match(path):
            if method not in ("GET", "HEAD"):
                raise ApiError(405, f"use GET for {path}")
            m = _SESSION_RE.match(path)
            if m:
                ref = unquote(m.group(1))
                result = api.turns(ref, query) if m.group(2) else api.session(ref, query)
            else:
                result = get_routes[path](query)
            self._send_json(HTTPStatus.OK, result, head=method == "HEAD")
            return
        if path in post_routes:
            if method != "POST":
                raise ApiError(405, f"use POST for {path}")
            self._send_json(HTTPStatus.OK, post_routes[path](self._json_body()))
            return
        raise ApiError(404, f"no API endpoint {path}")

    def _json_body(self) -> dict[str, Any]:
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype != "application/json":
            raise ApiError(415, "send the body as JSON (Content-Type: application/json)")
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise ApiError(400, "bad Content-Length") from None
        if length > MAX_BODY:
            raise ApiError(413, "request body too large")
        raw = self.rfile.read(length) if length else b"{}"
        try:
            body = orjson.loads(raw or b"{}")
        except orjson.JSONDecodeError:
            raise ApiError(400, "the body is not valid JSON") from None
        if not isinstance(body, dict):
            raise ApiError(400, "the body must be a JSON object")
        return body

    def _static(self, path: str, query: dict[str, str]) -> None:
        # Every page route is the one-page app; the app reads the route from the URL hash.
        key = "/static/index.html" if path in ("/", "/index.html") else path
        if key == "/favicon.ico":
            key = "/static/favicon.svg"
        found = self.server.static.get(key)
        if found is None:
            self._send_json(HTTPStatus.NOT_FOUND, {"error": f"not found: {path}"})
            return
        body, ctype = found
        extra: dict[str, str] = {}
        if self.server.token and query.get("token") and key.endswith("index.html"):
            # The page got the token in its URL: keep it in a cookie so assets and API calls carry it.
            extra["Set-Cookie"] = f"{COOKIE}={self.server.token}; Path=/; HttpOnly; SameSite=Strict"
        self._send(HTTPStatus.OK, body, ctype, head=self.command == "HEAD", extra=extra)

    # ------------------------------------------------------------------ responses
    def _send_json(self, status: int, obj: Any, head: bool = False) -> None:
        body = orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS)
        self._send(status, body, "application/json", head=head)

    def _send(self, status: int, body: bytes, ctype: str, head: bool = False,
              extra: dict[str, str] | None = None) -> None:
        self.send_response(int(status))
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")  # the token may be in the URL
        self.send_header("X-Frame-Options", "DENY")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if not head:
            self.wfile.write(body)


def make_server(settings: Settings, host: str = "127.0.0.1", port: int = 8377,
                token: str | None = None) -> UiServer:
    """A bound (not yet serving) server. A non-loopback `host` without a token is refused."""
    local = is_loopback(host)
    if token is not None and not token.strip():
        raise UiConfigError("--token must not be empty")
    if not local and not token:
        raise UiConfigError(f"--host {host} is reachable from other machines: give --token (or let "
                            f"`jacked ui` generate one)")
    return UiServer((host, port), UiApi(settings), token, local)


def serve_in_thread(server: UiServer) -> threading.Thread:
    """Serve on a daemon thread (tests, benchmarks); stop with `server.shutdown()`."""
    t = threading.Thread(target=server.serve_forever, name="jacked-ui", daemon=True)
    t.start()
    return t
