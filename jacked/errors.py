"""The base of every error jacked shows to its user.

A `JackedError` is a problem the user can fix (a bad argument, a missing index, a busy
lock, a broken install): `str(e)` is a one-line, actionable message. Every surface shows
it as that line — the CLI on stderr with exit code 1, the MCP server as a tool error, the
UI as an error status — never as a traceback. Anything else is a bug.

This module sits below every layer: it imports nothing from jacked.
"""
from __future__ import annotations

__all__ = ["JackedError"]


class JackedError(Exception):
    """A problem the user can fix; str(e) is a one-line, actionable message."""
