"""Recall on the prompt: what the UserPromptSubmit hook adds to a prompt, or nothing.

A prompt gets context only when it (a) refers to earlier work in words ("like we did last time",
"the bug from yesterday", "continue the migration") and search finds a session of this repo for
it with at least medium confidence, or (b) holds a phrase of some length that a past session of
this repo holds verbatim (an error line, a quoted string, an identifier). A session of another
repo comes only from a verbatim match (a quoted phrase, an identifier, an error line). The current
session is never offered back. Silence is the default: a memory that speaks on every prompt costs
tokens for nothing and teaches the agent to ignore it.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from jacked.query.budget import Fitted, fit, settle
from jacked.query.budget import capacity as capacity_for
from jacked.query.search import exact_phrases
from jacked.util.time import now_utc, relative_age
from jacked.util.tokens import count_tokens

__all__ = ["PROMPT_RECALL_MAX_TOKENS", "FOLLOW_UP", "refers_to_earlier_work", "prompt_recall"]

PROMPT_RECALL_MAX_TOKENS = 300
MAX_SESSIONS = 3
QUERY_CHARS = 2000
WHY_CHARS = 140

# Words by which a prompt points at work done before this session. Loose words ("again",
# "before") are left out: inside a session they point at its own last turns.
FOLLOW_UP = re.compile(
    r"\b(?:"
    r"last (?:time|session|conversation|chat|night|week|month|(?:mon|tue|wednes|thurs|fri|satur|sun)day)"
    r"|yesterday|the other day|earlier today|this morning"
    r"|previous(?:ly)?|prior (?:session|conversation|work)"
    r"|(?:like|as|what) (?:we|you|i) (?:did|had|discussed|tried|decided|agreed|built|wrote|used|set up|fixed)"
    r"|(?:we|you|i) (?:already|previously|once) \w+"
    r"|(?:we|you) (?:\w+ ){0,3}(?:(?!(?:need|feed|speed|proceed|succeed)\b)\w+ed"
    r"|did|had|made|built|wrote|set|began|found|got|saw|ran|went|thought)"
    r" (?:\w+ ){0,4}(?:before|earlier|last (?:time|week|session)|yesterday)"
    r"|(?:now|since) (?:that )?(?:we|you) (?:have|added|got|fixed|built)\b"
    r"|where (?:we|you|i) left off|pick (?:it |this |that )?(?:back )?up|left off"
    r"|continue (?:the|with|working|where|our|that|this|on|\w+ing)|resume (?:the|our|work|working)"
    r"|remember (?:when|how|what|the|that|we)|do you recall|as before|same (?:as|way as) (?:before|last)"
    r"|the (?:\w+ ){0,3}(?:from|of) (?:yesterday|last (?:time|week|session)|earlier|before)"
    r"|(?:that|the) (?:same )?(?:bug|issue|error|problem|fix|migration|refactor(?:ing)?) (?:we|you) "
    r")",
    re.IGNORECASE)
# Hook input that is not a typed request: slash commands, shell escapes and their output.
_NOT_A_REQUEST = re.compile(r"^\s*(?:/[\w:-]+(?:\s|$)|<(?:bash|local-command|command)-)")
MIN_WORDS = 3
# A verbatim match speaks without follow-up words (or from another repo) only for a phrase this
# long: a quoted `uv` or `-p` is in every repo.
VERBATIM_MIN_CHARS = 12

SearchFn = Callable[[str, str | None], list[dict[str, Any]]]


def refers_to_earlier_work(prompt: str) -> bool:
    """Whether the prompt's words point at work done in an earlier session."""
    return bool(FOLLOW_UP.search(prompt))


def _one_line(text: str | None, limit: int) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _why(result: dict[str, Any]) -> str:
    m = (result.get("matches") or [{}])[0]
    kind = (m.get("content_type") or "match").replace("_", " ")
    return f"{'verbatim ' if result.get('exact') else ''}{kind}: {_one_line(m.get('text'), WHY_CHARS)}"


def _date(result: dict[str, Any]) -> str:
    return str(result.get("started_at") or result.get("timestamp") or "")[:10] or "?"


def prompt_recall(prompt: str, repo: str | None, search: SearchFn, *, session_id: str | None = None,
                  max_tokens: int = PROMPT_RECALL_MAX_TOKENS, margin: float = 0.0,
                  until: str | None = None, now: datetime | None = None) -> dict[str, Any]:
    """The context to add to `prompt` typed in `repo`, or none.

    `search(query, repo_or_None)` returns `search --json` results (in `repo` only, or everywhere).
    `until`: ignore sessions that started after it (ISO time; replaying a history). Returns
    `{"text", "sessions": [ids], "tokens", "reason"}`; `text` is "" when the hook stays silent,
    and `reason` says why it spoke or not.
    """
    def silent(reason: str) -> dict[str, Any]:
        return {"text": "", "sessions": [], "tokens": 0, "reason": reason}

    text = (prompt or "").strip()
    if not text or _NOT_A_REQUEST.match(text):
        return silent("not a typed request")
    cue = refers_to_earlier_work(text)
    verbatim = any(len(p) >= VERBATIM_MIN_CHARS for p in exact_phrases(text[:QUERY_CHARS]))
    if not cue and not verbatim:
        return silent("no follow-up words, no verbatim phrase")

    def candidates(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The results minus the current session and sessions after `until`; a result that is the
        current session stands for its copies (`also`: a fork or resume of it), so the first other
        copy takes its place."""
        out = []
        for r in results:
            if r.get("session_id") == session_id:
                others = [sid for sid in r.get("also") or [] if sid != session_id]
                if not others:
                    continue
                r = {**r, "session_id": others[0]}
            if not (until and str(r.get("started_at") or "") > until):
                out.append(r)
        return out

    query = text[:QUERY_CHARS]
    chosen: list[dict[str, Any]] = []
    if repo:
        found = candidates(search(query, repo))
        # Follow-up words: the search's own grade decides; without them only a verbatim match speaks.
        chosen = [r for r in found if (r.get("confidence") in ("high", "medium") if cue else r.get("exact"))]
        # The best one speaks on medium confidence; the ones after it must be sure, or they cost
        # tokens for a session the prompt is not about.
        chosen = [r for i, r in enumerate(chosen) if i == 0 or r.get("exact") or r.get("confidence") == "high"]
        chosen = chosen[:MAX_SESSIONS]
    if verbatim and len(chosen) < MAX_SESSIONS:
        seen = {r["session_id"] for r in chosen}
        elsewhere = [r for r in candidates(search(query, None))
                     if r.get("exact") and r.get("repo_name") != repo and r["session_id"] not in seen]
        chosen += elsewhere[: MAX_SESSIONS - len(chosen)]
    if not chosen:
        return silent("follow-up words, no matching session" if cue else "no verbatim match")

    now = now or now_utc()
    head = ("jacked memory: past sessions this prompt may refer to "
            "(load one with `jacked retrieve <id>`):")
    entries = []
    for r in chosen:
        where = "" if r.get("repo_name") == repo else f" · repo {r.get('repo_name') or '?'}"
        title = _one_line(r.get("title") or r.get("first_prompt"), 80) or "(untitled)"
        age = r.get("age") or relative_age(r.get("timestamp"), now)
        entries.append((r["session_id"], f"- {r['session_id']} · {_date(r)} ({age}){where} · {title}\n"
                                         f"  why: {_why(r)}"))

    def render(f: Fitted[tuple[str, str]]) -> str:
        return "\n".join([head, *(block for _, block in f.kept)])

    fitted = fit(entries, capacity_for(max_tokens, margin), lambda e: count_tokens(e[1]) + 1,
                 used=count_tokens(head))
    settle(fitted, lambda f: count_tokens(render(f)))
    if not fitted.kept:
        return silent("nothing fits the budget")
    out = render(fitted)
    return {"text": out, "sessions": [sid for sid, _ in fitted.kept], "tokens": count_tokens(out),
            "reason": "follow-up words" if cue else "verbatim match"}
