"""Tolerant, streaming JSONL reading of Claude Code transcripts.

Reads bytes from an offset, yields one decoded record per complete line, and reports
the offset just past the last line it consumed so a grown file can be resumed there.
A line that does not decode is skipped and counted; a last line without a newline that
does not decode (a session still being written) is left unconsumed for the next read.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

READ_CHUNK = 1 << 20


@dataclass(slots=True)
class ReadResult:
    """What a read consumed: `end_offset` is where the next read resumes."""

    end_offset: int = 0
    lines: int = 0
    malformed: int = 0
    # 1 when the file ends in a partial line that does not decode yet; it is re-read later,
    # so it is reported but not added to the consumed counts.
    pending_tail_malformed: int = 0
    bytes_read: int = 0


def decode_line(raw: bytes) -> dict[str, Any] | None:
    """One JSON object from a line, or None when it is not one."""
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def iter_records(path: Path, start: int = 0, result: ReadResult | None = None) -> Iterator[dict[str, Any]]:
    """Yield the JSON objects of `path` from byte `start`; `result` is filled when the
    iteration ends (or is abandoned).

    Memory stays bounded by the longest line: the file is read in chunks. This loop runs
    once per transcript line, so its counters are locals.
    """
    res = result if result is not None else ReadResult()
    loads = orjson.loads
    decode_error = orjson.JSONDecodeError
    pos = start
    lines = malformed = 0
    tail = 0  # bytes of a last line left unconsumed for the next read
    with open(path, "rb", buffering=READ_CHUNK) as fh:
        fh.seek(start)
        try:
            for raw in fh:  # the buffered reader splits lines in C; memory is bounded by one line
                if raw[-1] != 10:  # no newline: a final line, complete only if it decodes
                    obj = decode_line(raw) if raw.strip() else None
                    if obj is None:
                        tail = len(raw)
                        res.pending_tail_malformed = 1 if raw.strip() else 0
                        break
                    lines += 1
                    pos += len(raw)
                    yield obj
                    break
                pos += len(raw)
                try:
                    obj = loads(raw)
                except decode_error:
                    if raw.strip():  # blank lines are not lines of the transcript
                        lines += 1
                        malformed += 1
                    continue
                lines += 1
                if obj.__class__ is not dict:
                    malformed += 1
                    continue
                yield obj
        finally:
            res.end_offset = pos
            res.lines += lines
            res.malformed += malformed
            res.bytes_read += pos - start + tail


def first_record(path: Path, max_lines: int = 50) -> dict[str, Any] | None:
    """The first decodable record that carries a `sessionId`, reading at most `max_lines`."""
    try:
        with open(path, "rb") as fh:
            for i, raw in enumerate(fh):
                if i >= max_lines:
                    break
                obj = decode_line(raw)
                if obj is not None and obj.get("sessionId"):
                    return obj
    except OSError:
        return None
    return None
