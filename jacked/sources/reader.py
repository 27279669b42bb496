"""Tolerant, streaming JSONL reading of Claude Code transcripts.

Reads bytes from an offset, yields one decoded record per complete line, and reports
the offset just past the last line it consumed so a grown file can be resumed there.
A line that does not decode is skipped and counted; a last line without a newline that
does not decode (a session still being written) is left unconsumed for the next read.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import orjson

READ_CHUNK = 1 << 20
# A line longer than this is passed over unread (counted in `oversized`): 2.1.x writes
# `file-history-snapshot` lines of hundreds of MB, and decoding one would hold it all
# in memory several times over. Real prompts, results and base64 images stay far below.
MAX_LINE_BYTES = 8 << 20


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
    oversized: int = 0  # lines over MAX_LINE_BYTES, skipped (also counted in `malformed`)


def decode_line(raw: bytes) -> dict[str, Any] | None:
    """One JSON object from a line, or None when it is not one."""
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def _skip_line(readline: Any, size: int) -> tuple[int, bool]:
    """Read past the rest of a line in pieces: (bytes passed over, whether its newline came)."""
    skipped = 0
    while True:
        piece = readline(size)
        skipped += len(piece)
        if not piece or piece[-1] == 10:
            return skipped, bool(piece)


def iter_records(path: Path, start: int = 0, result: ReadResult | None = None,
                 max_line: int = MAX_LINE_BYTES) -> Iterator[dict[str, Any]]:
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
        readline = fh.readline
        try:
            # The buffered reader splits lines in C; with a size limit, memory is bounded by it.
            for raw in iter(partial(fh.readline, max_line), b""):
                if len(raw) == max_line and raw[-1] != 10:  # an oversized line: pass over the rest
                    skipped, ended = _skip_line(readline, max_line)
                    if not ended:  # still being written: re-read from its start next time
                        tail = len(raw) + skipped
                        break
                    pos += len(raw) + skipped
                    lines += 1
                    malformed += 1
                    res.oversized += 1
                    continue
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


def complete_array_items(text: str, start: int) -> Iterator[Any]:
    """The complete elements of the JSON array whose `[` is at `start`, up to where the text was
    cut short (an agent rewriting a whole file was read mid-write)."""
    decoder = json.JSONDecoder()
    pos = start + 1
    while pos < len(text):
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            return
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except ValueError:
            return
        yield obj
