"""Times as people read them: relative ages ("3 days ago") and `--since` values ("2w", "2026-01-01")."""
from __future__ import annotations

import re
from datetime import datetime, timedelta, UTC

from jacked.errors import JackedError


def now_utc() -> datetime:
    return datetime.now(UTC)


def catalog_iso(dt: datetime) -> str:
    """`dt` as the catalog's UTC `...Z` ISO form to the millisecond, so string comparison is time comparison."""
    dt = dt.astimezone(UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def parse_ts(ts: str | None) -> datetime | None:
    """An ISO-8601 timestamp as an aware datetime (UTC when it names no zone), or None."""
    if not ts:
        return None
    try:
        dt = datetime.fromisoformat(ts)
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def relative_age(ts: str | datetime | None, now: datetime | None = None) -> str:
    """"just now", "5 minutes ago", "3 days ago", "2 months ago"; "unknown" without a time."""
    dt = parse_ts(ts) if isinstance(ts, str) or ts is None else ts
    if dt is None:
        return "unknown"
    seconds = ((now or now_utc()) - dt).total_seconds()
    if seconds < 0:
        return "in the future"
    for limit, unit, size in ((60, "second", 1), (3600, "minute", 60), (86400, "hour", 3600),
                              (86400 * 14, "day", 86400), (86400 * 60, "week", 86400 * 7),
                              (86400 * 365 * 2, "month", 86400 * 30), (float("inf"), "year", 86400 * 365)):
        if seconds < limit:
            n = int(seconds // size)
            if unit == "second":
                return "just now" if n < 30 else f"{n} seconds ago"
            return f"{n} {unit}{'s' if n != 1 else ''} ago"
    return "long ago"


def age_days(ts: str | None, now: datetime | None = None) -> float | None:
    dt = parse_ts(ts)
    if dt is None:
        return None
    return ((now or now_utc()) - dt).total_seconds() / 86400


_SINCE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(h|d|w|m|y)\s*$", re.I)
_UNITS = {"h": 1 / 24, "d": 1, "w": 7, "m": 30, "y": 365}


class TimeParseError(JackedError, ValueError):
    """A `--since` value that is neither a duration nor a date, or out of the calendar's range."""


def parse_since(value: str, now: datetime | None = None, option: str = "--since") -> datetime:
    """`7d`, `2w`, `3m`, `1y`, `12h`, `today`, `yesterday` or an ISO date/time → a UTC datetime.

    A value that is neither, or that falls outside years 1 to 9999 (`99999y`; a date whose zone
    moves it out), raises `TimeParseError`, its message naming `option` (e.g. `until`)."""
    now = now or now_utc()
    v = value.strip().lower()
    m = _SINCE.match(v)
    try:
        if v == "today":
            return now.replace(hour=0, minute=0, second=0, microsecond=0)
        if v == "yesterday":
            return now.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=1)
        if m:
            return now - timedelta(days=float(m.group(1)) * _UNITS[m.group(2)])
        dt = parse_ts(value.strip())
        if dt is None:
            raise TimeParseError(f"cannot read {option} {value!r}: use e.g. 7d, 2w, 3m, 1y or a date like 2026-01-31")
        return dt.astimezone(UTC)
    except OverflowError:  # a duration too long, or a date's zone shifting it out of range
        raise TimeParseError(f"{option} {value!r} is out of range (dates run from year 1 to 9999): "
                             "use a shorter duration or a date like 2026-01-31") from None


def iso_utc(value: str | None, now: datetime | None = None, option: str = "--since") -> str | None:
    """A `parse_since` value as an ISO string comparable with the catalog's UTC `...Z` timestamps."""
    if not value:
        return None
    return catalog_iso(parse_since(value, now, option))


def time_bound(value: str, option: str, end_of_day: bool = False) -> str:
    """A `--since` / `--until` value (`7d`, `2w`, a date, a date-time) as the catalog's `...Z` ISO
    form, so string comparison is time comparison; `end_of_day`: a bare date includes that whole day
    (`--until 2026-01-31` keeps the sessions of the 31st)."""
    v = value.strip()
    dt = parse_since(v, option=option)
    if end_of_day and len(v) == 10:
        dt = dt.replace(hour=23, minute=59, second=59, microsecond=999000)
    return catalog_iso(dt)


def epoch(ts: str | None) -> float | None:
    """Epoch seconds of an ISO timestamp (None when it does not parse)."""
    dt = parse_ts(ts)
    return dt.timestamp() if dt else None
