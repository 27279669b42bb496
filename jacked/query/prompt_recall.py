"""Recall on the prompt: what the UserPromptSubmit hook adds to a prompt, or nothing.

A prompt gets context only when it (a) refers to earlier work in words ("like we did last time",
"the bug from yesterday", "continue the migration") and search finds a session of this repo for
it, or (b) matches a past session of this repo strongly without such words. A session of another
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
    r"|(?:we|you) (?:did|had|discussed|tried|decided|agreed|started|built|began|worked on) (?:\w+ ){0,4}"
    r"(?:before|earlier|last|yesterday|already)"
    r"|where (?:we|you|i) left off|pick (?:it |this |that )?(?:back )?up|left off"
    r"|continue (?:the|with|working|where|our|that|this|on)|resume (?:the|our|work|working)"
    r"|remember (?:when|how|what|the|that|we)|do you recall|as before|same (?:as|way as) (?:before|last)"
    r"|the (?:\w+ ){0,3}(?:from|of) (?:yesterday|last (?:time|week|session)|earlier|before)"
    r"|(?:that|the) (?:same )?(?:bug|issue|error|problem|fix|migration|refactor(?:ing)?) (?:we|you) "
    r")",
    re.IGNORECASE)
# Hook input that is not a typed request: slash commands, shell escapes and their output.
_NOT_A_REQUEST = re.compile(r"^\s*(?:/[\w:-]+(?:\s|$)|<(?:bash|local-command|command)-)")
MIN_WORDS = 3

SearchFn = Callable[[str, str | None], list[dict[str, Any]]]


def refers_to_earlier_work(prompt: str) -> bool:
    """Whether the prompt's words point at work done in an earlier session."""
    return bool(FOLLOW_UP.search(prompt))


def _strong(result: dict[str, Any]) -> bool:
    """A match worth speaking up for without being asked: verbatim, or high by both legs."""
    return bool(result.get("exact")) or result.get("confidence") == "high"


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
    phrases = exact_phrases(text[:QUERY_CHARS])
    if not cue and not phrases and len(text.split()) < MIN_WORDS:
        return silent("too short to match")

    def wanted(r: dict[str, Any]) -> bool:
        if r.get("session_id") == session_id:
            return False
        return not (until and str(r.get("started_at") or "") > until)

    query = text[:QUERY_CHARS]
    chosen: list[dict[str, Any]] = []
    if repo:
        found = [r for r in search(query, repo) if wanted(r)]
        keep = (lambda r: r.get("confidence") in ("high", "medium")) if cue else _strong
        chosen = [r for r in found if keep(r)][:MAX_SESSIONS]
    if phrases and len(chosen) < MAX_SESSIONS:
        seen = {r["session_id"] for r in chosen}
        elsewhere = [r for r in search(query, None) if wanted(r) and r.get("exact")
                     and r.get("repo_name") != repo and r["session_id"] not in seen]
        chosen += elsewhere[: MAX_SESSIONS - len(chosen)]
    if not chosen:
        return silent("follow-up words, no matching session" if cue else "no strong match")

    now = now or now_utc()
    head = ("jacked memory: past sessions this prompt may refer to "
            "(load one with `jacked retrieve <id>`):")
    entries = []
    for r in chosen:
        where = "" if r.get("repo_name") == repo else f" · repo {r.get('repo_name') or '?'}"
        title = _one_line(r.get("title") or r.get("first_prompt"), 80) or "(untitled)"
        entries.append((r["session_id"], f"- {r['session_id']} · {_date(r)} ({r.get('age') or relative_age(r.get('timestamp'), now)})"
                                         f"{where} · {title}\n  why: {_why(r)}"))

    def render(f: Fitted[tuple[str, str]]) -> str:
        return "\n".join([head, *(block for _, block in f.kept)])

    fitted = fit(entries, capacity_for(max_tokens, margin), lambda e: count_tokens(e[1]) + 1,
                 used=count_tokens(head))
    settle(fitted, lambda f: count_tokens(render(f)))
    if not fitted.kept:
        return silent("nothing fits the budget")
    out = render(fitted)
    return {"text": out, "sessions": [sid for sid, _ in fitted.kept], "tokens": count_tokens(out),
            "reason": "follow-up words" if cue else "strong match"}
