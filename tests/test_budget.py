"""The one budget module: the margin rule (`capacity`) and the fitting algorithm (`fit`, `settle`)
that retrieve, restore, recall and MCP paging share."""
from __future__ import annotations

import random

import pytest

from jacked.query.budget import capacity, fit, settle
from jacked.util.tokens import count_tokens, with_margin


# ---------------------------------------------------------------- the margin rule
def test_capacity_is_the_most_that_with_the_margin_stays_within_the_budget() -> None:
    assert capacity(1100, 0.1) == 1000  # not 999: 1100 / 1.1 is 999.999… in floating point
    assert capacity(110, 0.1) == 100 and capacity(777, 0.1) == 706
    assert capacity(5000, 0.0) == 5000 and capacity(10, 1.0) == 5
    assert capacity(0, 0.1) == 0 and capacity(1, 0.5) == 0
    rng = random.Random(5)
    for _ in range(500):
        budget, margin = rng.randint(1, 200_000), rng.choice([0.0, 0.05, 0.1, 0.15, 0.2, 0.33, 1.0])
        cap = capacity(budget, margin)
        assert with_margin(cap, margin) <= budget < with_margin(cap + 1, margin), (budget, margin)


def test_capacity_rejects_a_margin_out_of_range() -> None:
    with pytest.raises(ValueError):
        capacity(1000, 1.5)


# ---------------------------------------------------------------- fitting
def test_whole_items_in_priority_order_and_a_smaller_later_one_still_goes_in() -> None:
    items = ["a" * 40, "b" * 70, "c" * 20, "d" * 50, "e" * 10]
    f = fit(items, 100, len)
    assert f.kept == ["a" * 40, "c" * 20, "e" * 10]  # b (70) and then d (50) no longer fit; e does
    assert f.left_out == ["b" * 70, "d" * 50]  # what was left out, in the order considered
    assert f.used == 70 and not f.over


def test_nothing_is_cut_and_every_item_is_either_kept_or_reported() -> None:
    rng = random.Random(11)
    for _ in range(200):
        items = [f"item {i}: " + "word " * rng.randint(0, 300) for i in range(rng.randint(0, 30))]
        cap = rng.randint(0, 3000)
        f = fit(items, cap, lambda t: count_tokens(t) + 1)
        assert all(any(k is it for it in items) for k in f.kept)  # the very items: none shortened
        assert sorted(f.kept + f.left_out) == sorted(items) and len(f.kept) + len(f.left_out) == len(items)
        assert f.kept == [it for it in items if it in f.kept]  # in priority order
        assert f.used == sum(count_tokens(t) + 1 for t in f.kept) <= cap
        exact = settle(f, lambda g: count_tokens("\n".join(g.kept)))
        assert exact == count_tokens("\n".join(f.kept)) <= cap


def test_an_exact_fit_is_kept_and_one_token_less_leaves_the_last_out() -> None:
    items = [30, 50, 20]
    assert fit(items, 100, lambda n: n).kept == [30, 50, 20]
    f = fit(items, 99, lambda n: n)
    assert f.kept == [30, 50] and f.left_out == [20] and f.used == 80
    assert fit(items, 100, lambda n: n, used=1).left_out == [20]  # what is spent already counts
    assert fit([], 0, lambda n: n).kept == [] and fit([0], 0, lambda n: n).kept == [0]


def test_shared_parts_are_paid_once_by_the_first_item_taken() -> None:
    # (name, group, cost): the first item of a group also pays the group's heading (5)
    items = [("a", "g1", 10), ("b", "g2", 10), ("c", "g1", 10), ("d", "g2", 10), ("e", "g3", 1), ("f", "g1", 2)]
    f = fit(items, 42, lambda it: it[2], parts=lambda it: [(it[1], 5)])
    # a 15, b 15, c 10 (its heading is in): 40; d (10) is over; e costs 1 + a heading not yet paid
    # (5): over; f costs 2 under a heading already paid: exactly 42
    assert [it[0] for it in f.kept] == ["a", "b", "c", "f"] and [it[0] for it in f.left_out] == ["d", "e"]
    assert f.used == 42 and f.paid == {"g1", "g2"}  # g3 was never paid: nothing of it went in


def test_a_must_item_goes_in_even_over_and_is_never_given_back() -> None:
    f = fit(["HEAD" * 10, "x" * 5, "y" * 5], 30, len, must=lambda t: t.startswith("HEAD"))
    assert f.kept == ["HEAD" * 10] and f.over and f.left_out == ["x" * 5, "y" * 5]
    g = fit(["HEAD", "x" * 5, "y" * 5], 30, len, must=lambda t: t.startswith("HEAD"))
    assert g.kept == ["HEAD", "x" * 5, "y" * 5] and not g.over
    # settle gives back the last taken, never the must, and returns the count it could not get under
    assert settle(g, lambda h: 10 * sum(map(len, h.kept))) == 40
    assert g.kept == ["HEAD"] and g.left_out == ["y" * 5, "x" * 5]


def test_rank_never_keeps_a_lower_item_while_a_smaller_higher_one_is_left_out() -> None:
    # (name, rank, size, cost): size is what the rule compares (a text's tokens), cost what it takes
    # (the text with its title and headings). b (rank 1, size 20) is left out, so no lower-ranked
    # item of size >= 20 goes in though it would fit (c); a smaller one still may (d); an item of
    # the same rank is not blocked (b2).
    items = [("a", 0, 10, 80), ("b", 1, 20, 30), ("b2", 1, 20, 5), ("c", 2, 25, 15), ("d", 2, 15, 10)]
    f = fit(items, 100, lambda it: it[3], rank=lambda it: it[1], size=lambda it: it[2])
    assert [it[0] for it in f.kept] == ["a", "b2", "d"] and [it[0] for it in f.left_out] == ["b", "c"]
    plain = fit(items, 100, lambda it: it[3])  # without rank, c would have gone in (and d not)
    assert [it[0] for it in plain.kept] == ["a", "b2", "c"]
    f = fit(items, 100, lambda it: it[3], rank=lambda it: it[1], size=lambda it: 0)
    assert [it[0] for it in f.kept] == ["a", "b2"]  # all one size: a left-out item blocks every lower rank
    with pytest.raises(ValueError, match="rank order"):
        fit(items[::-1], 100, lambda it: it[3], rank=lambda it: it[1])


def test_contiguous_keeps_a_run_from_the_start() -> None:
    items = [10, 20, 90, 5, 5]
    f = fit(items, 100, lambda n: n, contiguous=True)
    assert f.kept == [10, 20] and f.left_out == [90, 5, 5]  # a page: the rest is on the next one
    assert fit(items, 100, lambda n: n).kept == [10, 20, 5, 5]


def test_settle_gives_back_the_last_taken_until_the_exact_count_fits() -> None:
    f = fit(["a", "b", "c", "d"], 4, lambda t: 1)
    calls: list[int] = []

    def measure(g: object) -> int:  # the whole counts one more per join than the estimate
        calls.append(len(f.kept))
        return len(f.kept) + max(0, len(f.kept) - 1)

    assert settle(f, measure) == 3 and f.kept == ["a", "b"] and f.left_out == ["d", "c"]
    assert calls == [4, 3, 2]
    assert settle(f, measure) == 3 and calls[-1] == 2  # already within: nothing given back
