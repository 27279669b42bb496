"""Counts as people write them: "1 turn", "2 turns"."""
from __future__ import annotations


def noun(n: int, singular: str, plural: str | None = None) -> str:
    """`singular` for exactly one, else `plural` (default: `singular` + "s")."""
    return singular if n == 1 else (plural or singular + "s")


def counted(n: int, singular: str, plural: str | None = None) -> str:
    """`n` and its noun: counted(1, "turn") == "1 turn", counted(3, "turn") == "3 turns"."""
    return f"{n} {noun(n, singular, plural)}"
