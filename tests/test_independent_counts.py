"""Issue 10 acceptance: jacked's reconstruction of the real fixtures against an independent count.

`independent_count.py` reads the same JSONL lines with the standard library only (no jacked
import) following DESIGN "Turn rules"; here jacked scans the fixtures into a temporary catalog
and every figure is compared, per session. A mismatch prints both sides, turn by turn.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import independent_count as ic
import pytest
from kit import REAL, scanned_real

from jacked.catalog import Catalog
from jacked.ingest.scan import Scanner
from jacked.query.history import list_sessions, turns_json

COUNTED = ic.count_dir(REAL)  # cheap (well under a second): done at import so tests parametrize by session
SESSIONS = sorted(COUNTED["sessions"])
QUEUED = Path(__file__).resolve().parent / "fixtures" / "claude_queued"
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Catalog]:
    tmp = tmp_path_factory.mktemp("independent")
    with pytest.MonkeyPatch.context() as mp:
        # a home and a Claude dir of its own: nothing may read or write the user's ~/.claude
        mp.setenv("JACKED_HOME", str(tmp / "home"))
        mp.setenv("CLAUDE_CONFIG_DIR", str(tmp / "claude"))
        yield scanned_real(tmp)


def _show(value: Any, other: Any) -> str:
    """A tuple field by field, long texts cut unless they are where the two sides differ."""
    if not (isinstance(value, tuple) and isinstance(other, tuple) and len(value) == len(other)):
        return repr(value)
    return "(" + ", ".join(_cut(v, o) for v, o in zip(value, other)) + ")"


def _cut(v: Any, o: Any) -> str:
    if not isinstance(v, str) or len(v) <= 60:
        return repr(v)
    if v == o:
        return repr(v[:60] + "…")
    at = next((i for i, (a, b) in enumerate(zip(v, o if isinstance(o, str) else "")) if a != b), 0)
    return ("…" if at > 40 else "") + repr(v[max(0, at - 40):at + 120]) + ("…" if len(v) > at + 120 else "")


def _diff(what: str, jacked: dict[Any, Any], mine: dict[Any, Any]) -> list[str]:
    """One entry per key whose values differ: `jacked` vs the independent count."""
    out = []
    for key in sorted(set(jacked) | set(mine), key=str):
        j, m = jacked.get(key, "<absent>"), mine.get(key, "<absent>")
        if j != m:
            out.append(f"  {what} {key}:\n    jacked      {_show(j, m)}\n    independent {_show(m, j)}")
    return out


def _check(sid: str, problems: list[str]) -> None:
    if problems:
        pytest.fail(f"session {sid}: jacked differs from the independent count\n" + "\n".join(problems), pytrace=False)


def test_sessions_are_the_same(catalog: Catalog) -> None:
    jacked = {r["session_id"]: r["turn_count"] for r in list_sessions(catalog)}
    mine = {sid: s["turn_count"] for sid, s in COUNTED["sessions"].items()}
    problems = _diff("session", jacked, mine)
    assert not problems, "sessions (id: turn count) differ\n" + "\n".join(problems)


def test_first_prompts_are_what_was_typed(catalog: Catalog) -> None:
    """Issue 37: a session's first prompt is the user's words, not the IDE's wrappers or a
    command's markup (a list shows the head of a long one)."""
    jacked = {r["session_id"]: (r["first_prompt"] or "")[:200] for r in list_sessions(catalog)}
    mine = {sid: ANSI.sub("", s["first_prompt"] or "")[:200] for sid, s in COUNTED["sessions"].items()}
    problems = _diff("first prompt", jacked, mine)
    assert not problems, "first prompts differ\n" + "\n".join(problems)


@pytest.mark.parametrize("sid", SESSIONS)
def test_turns(catalog: Catalog, sid: str) -> None:
    """Per turn: what started it, its prompt, main-chain tool calls and errors, API calls, tokens."""
    _check(sid, _turn_problems(catalog, sid, COUNTED["sessions"][sid]))


def test_queued_and_delivered_case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 37: a real 2.1.114 turn with a message queued and handed to the model inside it
    (tests/fixtures/claude_queued): the same turns by both readings, the queued one among them."""
    monkeypatch.setenv("JACKED_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    counted = ic.count_dir(QUEUED)
    cat = Catalog(tmp_path / "catalog.db")
    Scanner(cat, QUEUED).scan()
    assert [t["started_by"] for s in counted["sessions"].values() for t in s["turns"]] == ["prompt", "queued", "prompt"]
    for sid, mine in counted["sessions"].items():
        _check(sid, _turn_problems(cat, sid, mine))


def _turn_problems(catalog: Catalog, sid: str, mine: dict[str, Any]) -> list[str]:
    turns = turns_json(catalog, sid)["turns"]

    def shape(started_by: Any, prompt: Any, *figures: int) -> tuple[Any, ...]:
        # DESIGN: terminal escapes are stripped before anything is shown; a notification has no prompt
        return (started_by, ANSI.sub("", prompt) if prompt else None, *figures)

    jt = {t["index"]: shape(t["started_by"], t["prompt"], *(t["metrics"][k] for k in (
        "tool_call_count", "tool_error_count", "api_calls", "input_tokens", "cache_read_tokens",
        "cache_creation_tokens", "output_tokens"))) for t in turns}
    mt = {t["index"]: shape(t["started_by"], t["prompt"], *(t[k] for k in (
        "tool_calls", "tool_errors", "api_calls", "input_tokens", "cache_read_tokens", "cache_creation_tokens",
        "output_tokens"))) for t in mine["turns"]}
    problems = _diff("turn (started_by, prompt, calls, errors, api_calls, in, cache read, cache write, out)", jt, mt)
    # the session totals `sessions` shows (the fixtures hold no turn repeated from another file,
    # which jacked would leave out of the totals)
    row = catalog.get_session_row(sid) or {}
    keys = {"turn_count": "turn_count", "tool_call_count": "tool_calls", "tool_error_count": "tool_errors",
            "output_tokens": "output_tokens"}
    problems += _diff("session", {k: row.get(k) for k in keys}, {k: mine[v] for k, v in keys.items()})
    # the session row's input_tokens is everything the model read: fresh input plus cache reads and writes
    problems += _diff("session", {"input_tokens (incl. cache)": row.get("input_tokens")},
                      {"input_tokens (incl. cache)": mine["input_tokens"] + mine["cache_read_tokens"]
                       + mine["cache_creation_tokens"]})
    problems += _diff("session", {"api_calls": sum(t["metrics"]["api_calls"] for t in turns)},
                      {"api_calls": mine["api_calls"]})
    return problems


@pytest.mark.parametrize("sid", SESSIONS)
def test_subagents(catalog: Catalog, sid: str) -> None:
    """Each subagent linked to the Task/Agent call that started it, with its own calls and errors;
    files no call names (Warmups, orphans) are never linked."""
    mine = COUNTED["sessions"][sid]["subagents"]
    subs = turns_json(catalog, sid)["subagents"]
    linked = {a["tool_use_id"]: (a["agent_id"], a["turn_index"], a["tool_call_count"], a["tool_error_count"])
              for a in subs if a["tool_use_id"]}
    expect = {a["tool_use_id"]: (a["agent_id"], a["turn_index"], a["tool_calls"], a["tool_errors"])
              for a in mine if a["tool_use_id"]}
    problems = _diff("call -> (agent, turn, calls, errors)", linked, expect)
    # files no call names: jacked may keep them (flagged) or not, but never linked, and a Warmup
    # is one by the same reading
    loose = {a["agent_id"]: a["warmup"] for a in COUNTED["unlinked_agent_files"] if a["parent"] == sid}
    for a in subs:
        if a["tool_use_id"] or not a["agent_id"]:
            continue
        if a["agent_id"] not in loose:
            problems.append(f"  agent {a['agent_id']}: jacked keeps it unlinked; independent: not a loose file here")
        elif bool(a["is_warmup"]) != loose[a["agent_id"]]:
            problems.append(f"  agent {a['agent_id']}: warmup jacked {bool(a['is_warmup'])}, "
                            f"independent {loose[a['agent_id']]}")
    # 1.0.x inline sidechains that match no call's prompt
    problems += _diff("inline sidechains unpaired", {"count": sum(1 for a in subs if not a["tool_use_id"]
                                                                  and not a["agent_id"])},
                      {"count": sum(1 for a in mine if a["layout"] == "inline" and not a["tool_use_id"])})
    _check(sid, problems)


def test_loose_agent_files_everywhere(catalog: Catalog) -> None:
    """Agent files whose parent transcript is empty or missing (kept by jacked in hidden session
    rows): still never linked, and Warmup by the same reading."""
    loose = {a["agent_id"]: a for a in COUNTED["unlinked_agent_files"]}
    problems = []
    for sid in sorted({a["parent"] for a in loose.values() if a["parent"]}):
        for a in turns_json(catalog, sid)["subagents"]:
            mine = loose.get(a["agent_id"])
            if mine is None:
                continue
            if a["tool_use_id"] or bool(a["is_warmup"]) != mine["warmup"] or sid != mine["parent"]:
                problems.append(f"  agent {a['agent_id']}: jacked (session {sid}, call {a['tool_use_id']}, warmup "
                                f"{bool(a['is_warmup'])}); independent (parent {mine['parent']}, unlinked, "
                                f"warmup {mine['warmup']})")
    assert not problems, "loose agent files differ\n" + "\n".join(problems)


def test_titles(catalog: Catalog) -> None:
    """A title comes from the session's own custom/ai title or from a `summary` line naming a leaf
    in its file (wherever that line sits); a session with neither has no title."""
    problems = []
    for sid, s in sorted(COUNTED["sessions"].items()):
        title = (catalog.get_session_row(sid) or {}).get("title") or None
        allowed = s["own_titles"] + s["labels"]
        if (title is None) != (not allowed) or (title is not None and title not in allowed):
            problems.append(f"  {sid}: jacked title {title!r}; independent candidates {allowed!r}")
    assert not problems, "titles differ\n" + "\n".join(problems)


def test_summary_prints(capsys: pytest.CaptureFixture[str]) -> None:
    assert ic.main([str(REAL)]) == 0
    out = capsys.readouterr().out
    assert f"sessions        {len(SESSIONS)}" in out
