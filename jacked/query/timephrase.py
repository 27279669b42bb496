"""Time words in a search query ("the bug I fixed last week") read as the date range a person means.

`find_time_phrase` finds at most one phrase and gives its range as [since, until): calendar
units in the zone of `now` ("last week" is the Monday-to-Monday week before this one, "in March"
the latest March that has begun), rolling ranges for "past N days". It is conservative: a
month name counts only after "in", "during", "since", "from", "back in" or before a year, so "the
march function" or "May I…" are words, not dates; bare numbers and weekday names without "on" /
"last" are words too.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
_MONTH_ABBR = {m[:3]: i + 1 for i, m in enumerate(MONTHS)} | {"sept": 9}
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "couple of": 2,
            "a few": 3, "few": 3}
_UNIT = r"(?P<unit>day|week|month|year)s?"
_COUNT = r"(?P<n>\d{1,3}|a\ couple\ of|couple\ of|a\ few|few|an?|one|two|three|four|five|six|seven|eight|nine|ten|" \
         r"eleven|twelve)"
_MONTH = r"(?P<month>" + "|".join(MONTHS) + r"|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_ROLLING_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_X = re.I | re.X
# (kind, pattern): the first pattern that matches wins; each match is a whole-word phrase.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("ago", re.compile(rf"\b{_COUNT}\ {_UNIT}\ ago\b", _X)),
    ("past", re.compile(rf"\b(?:in\ |over\ |during\ |within\ )?(?:the\ )?(?:past|last)\ {_COUNT}\ {_UNIT}\b", _X)),
    ("past1", re.compile(r"\b(?:in\ |over\ |during\ |within\ )?the\ (?:past|last)\ (?P<unit>day|week|month|year)\b", _X)),
    ("last", re.compile(r"\b(?:last|previous)\ (?P<unit>week|month|year)\b", _X)),
    ("this", re.compile(r"\b(?:this|current)\ (?P<unit>week|month|year)\b", _X)),
    ("today", re.compile(r"\b(?:earlier\ )?today\b|\bthis\ (?:morning|afternoon|evening)\b", _X)),
    ("yesterday", re.compile(r"\byesterday\b|\blast\ night\b", _X)),
    ("weekday", re.compile(r"\b(?:on\ |last\ )(?P<weekday>" + "|".join(WEEKDAYS) + r")\b", _X)),
    ("month", re.compile(rf"\b(?:(?:back\ )?in|during|since|from)\ (?:early\ |late\ |mid-?)?{_MONTH}(?:\ {_YEAR})?\b",
                         _X)),
    ("month", re.compile(rf"\b{_MONTH}\ {_YEAR}\b", _X)),
)


@dataclass(frozen=True)
class TimePhrase:
    """A time phrase found in a query: its words as written and the range it means, [since, until)."""

    phrase: str
    since: datetime
    until: datetime
    start: int  # where the phrase stands in the query
    end: int

    def rest(self, query: str) -> str:
        """The query without the phrase (whitespace folded)."""
        return " ".join((query[:self.start] + " " + query[self.end:]).split())

    def as_json(self) -> dict[str, Any]:
        return {"phrase": self.phrase, "since": self.since.isoformat(), "until": self.until.isoformat()}


def find_time_phrase(query: str, now: datetime) -> TimePhrase | None:
    """The first time phrase of `query` and its range, in `now`'s zone; None when there is none.
    Text inside quotes or backticks is the user's verbatim words and is not read."""
    masked = re.sub(r'"[^"]*"|`[^`]*`', lambda m: " " * len(m.group(0)), query)
    for kind, rx in _PATTERNS:
        m = rx.search(masked)
        if m is None:
            continue
        found = _range(kind, m, now)
        if found is not None:
            return TimePhrase(query[m.start():m.end()], found[0], found[1], m.start(), m.end())
    return None


def _day(dt: datetime) -> datetime:
    return dt.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_start(year: int, month: int, like: datetime) -> datetime:
    year, month = year + (month - 1) // 12, (month - 1) % 12 + 1
    return _day(like).replace(year=year, month=month, day=1)


def _unit_start(unit: str, dt: datetime) -> datetime:
    """The start of the calendar day, week (Monday), month or year holding `dt`."""
    if unit == "day":
        return _day(dt)
    if unit == "week":
        return _day(dt) - timedelta(days=dt.weekday())
    if unit == "month":
        return _month_start(dt.year, dt.month, dt)
    return _day(dt).replace(month=1, day=1)


def _shift(unit: str, start: datetime, n: int) -> datetime:
    """`start` (a unit start) moved by `n` units."""
    if unit == "day":
        return start + timedelta(days=n)
    if unit == "week":
        return start + timedelta(weeks=n)
    if unit == "month":
        return _month_start(start.year, start.month + n, start)
    return start.replace(year=start.year + n)


def _count(text: str) -> int | None:
    text = " ".join(text.lower().split())
    n = int(text) if text.isdigit() else _NUMBERS.get(text)
    return n if n is not None and 0 < n <= 200 else None


def _range(kind: str, m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    g = m.groupdict()
    unit = (g.get("unit") or "").lower()
    try:
        if kind == "ago":  # the one unit that long ago: "two days ago" is that day
            n = _count(g["n"])
            if n is None:
                return None
            start = _shift(unit, _unit_start(unit, now), -n)
            return start, _shift(unit, start, 1)
        if kind in ("past", "past1"):  # a rolling range up to now
            n = _count(g["n"]) if kind == "past" else 1
            if n is None:
                return None
            return now - timedelta(days=n * _ROLLING_DAYS[unit]), now
        if kind == "last":
            this = _unit_start(unit, now)
            return _shift(unit, this, -1), this
        if kind == "this":
            return _unit_start(unit, now), now
        if kind == "today":
            return _day(now), now
        if kind == "yesterday":
            return _day(now) - timedelta(days=1), _day(now)
        if kind == "weekday":  # the latest such day before today
            back = (now.weekday() - WEEKDAYS.index(g["weekday"].lower())) % 7 or 7
            start = _day(now) - timedelta(days=back)
            return start, start + timedelta(days=1)
        if kind == "month":
            name = g["month"].lower().rstrip(".")
            month = MONTHS.index(name) + 1 if name in MONTHS else _MONTH_ABBR[name[:4] if name == "sept" else name[:3]]
            year = int(g["year"]) if g.get("year") else now.year - (month > now.month)
            start = _month_start(year, month, now)
            if m.group(0).lower().startswith(("since", "from")):  # from that month on
                return start, now
            return start, _month_start(year, month + 1, now)
    except (OverflowError, ValueError):  # a count that leaves the calendar
        return None
    return None
