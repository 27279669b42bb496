"""Token budgets: one margin rule and one fitting algorithm, for retrieve, restore, recall and MCP paging.

The margin rule (`capacity`): Claude's tokenizer can count more than cl100k, so of a budget of
`budget` Claude tokens only `capacity(budget, margin)` cl100k tokens are spent — the most that,
with the margin added (`with_margin`), stay within the budget.

The fitting algorithm (`fit`): items are offered in priority order and each is taken whole or
left out whole — nothing is ever cut. An item goes in when its cost fits what is left; one that
does not fit is left out and reported, and a smaller later item may still go in. What differs
between the callers are parameters of this one function, never a second implementation:

- `parts`: overhead several items share and only the first one taken pays (a session's header,
  a group's heading; a turn's facts, which its fuller prose version contains);
- `must`: items taken even when they do not fit (a brief's header, a page's first item); the
  result is then `over` the capacity and the caller decides (raise, or clip);
- `rank` and `size`: fairness between priority levels — an item is left out whenever an item
  that outranks it and is no larger was left out ("never keep a lower-priority item while
  leaving out a smaller higher-priority one");
- `contiguous`: keep a run from the start (a page of a list): after the first item left out,
  every later one is left out too.

Costs are estimates (each item counted alone; tokens can merge across joins), so a caller that
renders the whole calls `settle` with an exact count: the last items taken are given back until
the whole fits.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from jacked.util.tokens import with_margin

__all__ = ["capacity", "fit", "settle", "Fitted"]

T = TypeVar("T")
_NONE = 1 << 62  # "nothing left out yet" for the fairness floor


def capacity(budget: int, margin: float) -> int:
    """The most cl100k tokens that, with the safety margin added, stay within `budget`: the largest
    `n` with `with_margin(n, margin) <= budget` (1100 with 0.1 -> 1000; any budget with 0 -> itself)."""
    if budget <= 0:
        return 0
    cap = int(budget / (1 + margin))
    while cap > 0 and with_margin(cap, margin) > budget:
        cap -= 1
    while with_margin(cap + 1, margin) <= budget:
        cap += 1
    return cap


@dataclass
class Fitted(Generic[T]):
    """What `fit` chose: `kept` in the order taken, `left_out` in the order considered (then the
    ones `settle` gave back, last taken first); `used` is the estimate `fit` ended with (costs,
    shared parts and the starting `used`), which `settle` replaces with an exact count."""

    capacity: int
    used: int = 0
    kept: list[T] = field(default_factory=list)
    left_out: list[T] = field(default_factory=list)
    musts: list[T] = field(default_factory=list)  # the kept items taken as `must` (never given back)
    paid: set[Hashable] = field(default_factory=set)  # the shared parts paid for

    @property
    def over(self) -> bool:
        """The estimate exceeds the capacity: only `must` items can make it so."""
        return self.used > self.capacity


def fit(items: Iterable[T], capacity: int, cost: Callable[[T], int], *,
        parts: Callable[[T], Iterable[tuple[Hashable, int]]] | None = None,
        must: Callable[[T], bool] | None = None,
        rank: Callable[[T], Any] | None = None, size: Callable[[T], int] | None = None,
        contiguous: bool = False, used: int = 0) -> Fitted[T]:
    """Choose whole `items` (in priority order, best first) within `capacity` tokens.

    `cost(item)` is what the item adds on its own; `parts(item)` names shared overhead as
    `(key, tokens)`, paid by the first item taken that needs it. `used` is spent already (a
    header reserved by the caller). See the module doc for `must`, `rank`/`size` and
    `contiguous`; `rank` must not decrease along `items`, and `size` defaults to `cost`.
    """
    out: Fitted[T] = Fitted(capacity, used)
    floor = below = _NONE  # smallest left-out size at ranks better than the current one / at it
    current: Any = None
    for it in items:
        own = cost(it)
        shared = {k: t for k, t in (parts(it) if parts is not None else ()) if k not in out.paid}
        if must is not None and must(it):
            _take(out, it, own, shared)
            out.musts.append(it)
            continue
        n = 0
        if rank is not None:
            r = rank(it)
            if current is None or r != current:
                if current is not None and r < current:
                    raise ValueError(f"fit: items are not in rank order ({r!r} after {current!r})")
                floor, below, current = min(floor, below), _NONE, r
            n = size(it) if size is not None else own
        if not (contiguous and out.left_out) and floor > n and out.used + own + sum(shared.values()) <= capacity:
            _take(out, it, own, shared)
        else:
            out.left_out.append(it)
            below = min(below, n)
    return out


def _take(out: Fitted[T], it: T, own: int, shared: dict[Hashable, int]) -> None:
    out.paid.update(shared)
    out.used += own + sum(shared.values())
    out.kept.append(it)


def settle(fitted: Fitted[T], measure: Callable[[Fitted[T]], int]) -> int:
    """Give back the last items taken (never a `must`) until `measure(fitted)` — the exact count of
    the whole as rendered from `fitted` — is within its capacity; returns the last measure. It can
    stay over only when nothing but `must` items is left."""
    exact = measure(fitted)
    while exact > fitted.capacity:
        last = next((i for i in range(len(fitted.kept) - 1, -1, -1)
                     if not any(fitted.kept[i] is m for m in fitted.musts)), None)
        if last is None:
            break
        fitted.left_out.append(fitted.kept.pop(last))
        exact = measure(fitted)
    return exact
