"""Whether this process is one command that ends soon (the CLI, a hook) or a long-lived server.

A one-shot process leaves the index open for its exit to close (`jacked.index.store.edge`):
closing a Qdrant Edge shard drops its files from the OS page cache, and the next command would
read the index from disk again.
"""
from __future__ import annotations

_ENDS_SOON = False


def set_ends_soon(ends_soon: bool) -> None:
    """Declared by the console entry point (True) and by long-lived servers (False: MCP, web)."""
    global _ENDS_SOON
    _ENDS_SOON = ends_soon


def ends_soon() -> bool:
    """True in a process that runs one command and exits."""
    return _ENDS_SOON
