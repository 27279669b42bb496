"""`jacked mcp` as a light client: it relays the MCP messages Claude Code writes on stdin to the
daemon's MCP server and writes its answers on stdout. The tools, the model and the index are the
daemon's, shared by every window's `jacked mcp`; a relay holds only the standard library.

The daemon serves MCP statelessly, so a daemon that restarted (an upgrade, a crash) goes on
answering the same conversation: the relay reconnects, starting it when needed.
"""
from __future__ import annotations

import json
import sys
import threading
from typing import IO, Any

from jacked.surfaces.daemon.client import DaemonClient, DaemonUnavailable, connect
from jacked.surfaces.daemon.protocol import Where

#: How long a relay waits at the end of its input for answers still on their way.
DRAIN_TIMEOUT_S = 30.0


class Relay:
    """Relays newline-delimited JSON-RPC messages between `stdin` and the daemon, one thread per
    message (a slow tool call does not hold up a ping); answers are written whole, one per line."""

    def __init__(self, where: Where, client: DaemonClient, stdin: IO[bytes], stdout: IO[bytes]) -> None:
        self.where = where
        self.client = client
        self.stdin = stdin
        self.stdout = stdout
        self.protocol_version: str | None = None
        self._out = threading.Lock()

    def run(self) -> int:
        threads = []
        for line in self.stdin:
            if not line.strip():
                continue
            t = threading.Thread(target=self._handle, args=(line.strip(),), daemon=True)
            t.start()
            threads.append(t)
            threads = [t for t in threads if t.is_alive()]
        for t in threads:
            t.join(DRAIN_TIMEOUT_S)
        return 0

    def _handle(self, line: bytes) -> None:
        try:
            msg = json.loads(line)
        except ValueError:
            self._write({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
            return
        request_id = msg.get("id") if isinstance(msg, dict) and "method" in msg else None
        try:
            status, body = self._post(line)
        except (DaemonUnavailable, OSError) as e:
            if request_id is not None:
                self._write({"jsonrpc": "2.0", "id": request_id,
                             "error": {"code": -32603, "message": f"jacked daemon unavailable: {e}"}})
            return
        if not body.strip():
            return  # a notification or a response: nothing comes back
        try:
            answer = json.loads(body)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            if request_id is not None:
                self._write({"jsonrpc": "2.0", "id": request_id,
                             "error": {"code": -32603, "message": f"jacked daemon answered {status}"}})
            return
        result = answer.get("result")
        if isinstance(msg, dict) and msg.get("method") == "initialize" and isinstance(result, dict):
            self.protocol_version = result.get("protocolVersion") or self.protocol_version
        self._write(answer)

    def _post(self, line: bytes) -> tuple[int, bytes]:
        try:
            return self.client.post_mcp(line, self.protocol_version)
        except OSError:
            self.client = connect(self.where)  # the daemon went away: start it again, once
            return self.client.post_mcp(line, self.protocol_version)

    def _write(self, obj: Any) -> None:
        data = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        with self._out:
            self.stdout.write(data)
            self.stdout.flush()


def relay(where: Where, stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None) -> int:
    """Relay stdin to the daemon of `where` until stdin ends; `DaemonUnavailable` when none can be had."""
    client = connect(where)
    return Relay(where, client, stdin or sys.stdin.buffer, stdout or sys.stdout.buffer).run()
