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
    """Yield the JSON objects of `path` from byte `start`, filling `result` as it goes.

    Memory stays bounded by the longest line: the file is read in chunks.
    """
    res = result if result is not None else ReadResult()
    res.end_offset = start
    loads = orjson.loads
    with open(path, "rb", buffering=READ_CHUNK) as fh:
        fh.seek(start)
        pos = start
        for raw in fh:  # the buffered reader splits lines in C; memory is bounded by one line
            size = len(raw)
            res.bytes_read += size
            if raw[-1:] != b"\n":
                # A final line without newline: complete if it decodes, else a write in progress.
                if raw.strip():
                    obj = decode_line(raw)
                    if obj is None:
                        res.pending_tail_malformed = 1
                        break
                    res.lines += 1
                    res.end_offset = pos + size
                    yield obj
                break
            pos += size
            res.end_offset = pos
            try:
                obj = loads(raw)
            except orjson.JSONDecodeError:
                if raw.strip():  # blank lines are not lines of the transcript
                    res.lines += 1
                    res.malformed += 1
                continue
            res.lines += 1
            if type(obj) is not dict:
                res.malformed += 1
                continue
            yield obj


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
