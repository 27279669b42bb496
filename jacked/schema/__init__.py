"""The one way every surface turns a service answer into JSON, and the answers' published schema.

The CLI's `--json`, the MCP tools and the web API all print `to_json(answer)`; the daemon's socket
carries the same answers (`jacked.surfaces.daemon.protocol`, versioned by its `PROTOCOL_VERSION`).
Each answer's JSON shape is a `TypedDict` of `jacked.schema.answers`; `jacked schema [NAME]` prints
their JSON Schema and the tests validate every surface's output against it (docs/schema.md).

Light on purpose (the standard library and orjson): every client imports it. The types and pydantic, which
makes their JSON Schema, are imported by `json_schema` alone, never on a command's hot path.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path
from typing import Any

#: Bumped when an answer's JSON changes shape (a key renamed, removed or retyped; a new key too,
#: as the schemas are closed). Printed by `jacked schema` as each schema's `version`.
SCHEMA_VERSION = 1


def to_json(obj: Any) -> Any:
    """A service answer as JSON values: what every surface prints or sends.

    An answer with a `to_json()` (a report, a brief) gives its own shape; another dataclass its
    fields; a Path, a date or a time its text (ISO 8601); tuples and sets become lists; None stays
    null (keys are never dropped: an absent value is null, so every surface has the same keys)."""
    if obj is None or isinstance(obj, (str, bool, int, float)):
        return obj
    if isinstance(obj, dict):
        return {k if isinstance(k, str) else str(k): to_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_json(v) for v in obj]
    own = getattr(obj, "to_json", None)
    if callable(own):
        return to_json(own())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_json(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (dt.datetime, dt.date)):
        return obj.isoformat()
    if isinstance(obj, (set, frozenset)):
        return sorted(to_json(v) for v in obj)
    raise TypeError(f"no JSON form for a {type(obj).__name__}")


def dumps(obj: Any, indent: bool = False) -> bytes:
    """`to_json(obj)` as JSON bytes, written by orjson in one pass (no copy of a long answer is made
    first): the text every surface sends."""
    import orjson

    option = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS | (orjson.OPT_INDENT_2 if indent else 0)
    return orjson.dumps(obj, default=_json_default, option=option)


def _json_default(obj: Any) -> Any:
    """What orjson cannot write by itself, as `to_json` gives it (one level: orjson goes on below)."""
    own = getattr(obj, "to_json", None)
    if callable(own):
        return own()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    raise TypeError(f"no JSON form for a {type(obj).__name__}")


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of the answer `name` (a key of `jacked.schema.answers.ANSWERS`), with the
    schema `version`; its objects are closed (a key the type does not name is an error). Imports
    pydantic."""
    from pydantic import TypeAdapter

    from jacked.schema.answers import ANSWERS

    schema: dict[str, Any] = TypeAdapter(ANSWERS[name]).json_schema()
    _close(schema)
    schema.setdefault("title", name)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "version": SCHEMA_VERSION, **schema}


def _close(node: Any) -> None:
    """Forbid keys a TypedDict does not name (pydantic leaves its objects open)."""
    if isinstance(node, dict):
        if node.get("type") == "object" and "properties" in node:
            node.setdefault("additionalProperties", False)
        for value in node.values():
            _close(value)
    elif isinstance(node, list):
        for value in node:
            _close(value)
