"""Reading values out of another agent's JSON, whatever shape it has: every source's records may
be half-written, of an older release, or not what their type says."""
from __future__ import annotations

from typing import Any


def as_object(value: Any) -> dict[str, Any]:
    """The value when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def nonblank(value: Any) -> str | None:
    """The value when it is a string with something in it, else None."""
    return value if isinstance(value, str) and value.strip() else None


def as_count(value: Any) -> int:
    """A token count or the like: the number when it is a finite, sane one (not a bool), else 0."""
    return int(value) if value.__class__ in (int, float) and value == value and abs(value) < 1 << 62 else 0
