"""A table read a few keys at a time, then whole once many keys were asked.

A hook reads one session: loading every file's scan state or archive entry to look up three
of them cost it 0.9 s and ~20 MB at 10,000 sessions. A scan looks up every file: one read of
the whole table is cheaper than thousands of small ones. `Lookup` serves both.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

#: Keys looked up one by one before the whole table is read instead.
WHOLE_AFTER = 64


class Lookup(Generic[K, V]):
    """A mapping of what `read_some(keys)` (the rows of those keys) or `read_all()` return, read
    lazily; keys set or dropped here stay as set or dropped (the table is not read again)."""

    def __init__(self, read_some: Callable[[list[K]], dict[K, V]], read_all: Callable[[], dict[K, V]],
                 whole_after: int = WHOLE_AFTER) -> None:
        self._read_some, self._read_all = read_some, read_all
        self._whole_after = whole_after
        self._rows: dict[K, V] = {}
        self._asked: set[K] | None = set()  # None: the whole table is read

    def fetch(self, keys: Iterable[K]) -> None:
        """Read the rows of `keys` not read yet (one call for all of them)."""
        if self._asked is None:
            return
        missing = [k for k in dict.fromkeys(keys) if k not in self._asked]
        if not missing:
            return
        if len(self._asked) + len(missing) > self._whole_after:
            whole = self._read_all()
            for k in self._asked:  # what was read, set or dropped here stands
                if k in self._rows:
                    whole[k] = self._rows[k]
                else:
                    whole.pop(k, None)
            self._rows, self._asked = whole, None
            return
        self._rows.update(self._read_some(missing))
        self._asked.update(missing)

    def get(self, key: K, default: V | None = None) -> V | None:
        self.fetch((key,))
        return self._rows.get(key, default)

    def __contains__(self, key: object) -> bool:
        self.fetch((key,))  # type: ignore[arg-type]  # `in` takes any object; a key of another type is simply absent
        return key in self._rows

    def __setitem__(self, key: K, value: V) -> None:
        self._rows[key] = value
        if self._asked is not None:
            self._asked.add(key)

    def pop(self, key: K, default: V | None = None) -> V | None:
        if self._asked is not None:
            self._asked.add(key)  # dropped: not read again
        return self._rows.pop(key, default)
