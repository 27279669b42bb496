"""Recall on the prompt: what the UserPromptSubmit hook adds to a prompt, or nothing.

A prompt gets context only when it (a) refers to earlier work in words ("like we did last time",
"the bug from yesterday", "continue the migration"; "also ..." opening a session) and search finds
a session of this repo for it with at least medium confidence, or (b) holds a phrase of some length
that a past session of this repo holds verbatim (an error line, a quoted string, an identifier) and
that is about the prompt by its other words too, or (c) repeats a recent request or names code few
recent sessions hold, or (d) is about the repo's latest session (of the last day): the search ranks
it first and is sure of it by the prompt's words and meaning alone, or (e) is a short request (a few
words) whose best session of this repo ended in the last day and is graded as surely. A session of
another repo comes only from a verbatim match of several words (a quoted sentence, an error line;
one name is in every repo that uses it). The current session is never offered back. Silence is the default: a memory
that speaks on every prompt costs tokens for nothing and teaches the agent to ignore it.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from jacked.query.budget import Fitted, fit, settle
from jacked.query.budget import capacity as capacity_for
from jacked.query.search import exact_phrases
from jacked.util.time import age_days, now_utc, parse_ts, relative_age
from jacked.util.tokens import count_tokens

__all__ = ["PROMPT_RECALL_MAX_TOKENS", "FOLLOW_UP", "refers_to_earlier_work", "prompt_recall"]

PROMPT_RECALL_MAX_TOKENS = 300
MAX_SESSIONS = 3
SEARCH_RESULTS = 6  # what the hook asks the search for
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
# A session's first prompt that begins with "also" adds to work it cannot have done yet: the work
# of an earlier session ("also log edit_format in event()"). Later in a session the same word
# points at its own last turns.
OPENING_FOLLOW_UP = re.compile(r"^\W*(?:(?:and|now|then|ok|okay),? )?also\b", re.IGNORECASE)
# Hook input that is not a typed request: slash commands, shell escapes and their output.
_NOT_A_REQUEST = re.compile(r"^\s*(?:/[\w:-]+(?:\s|$)|<(?:bash|local-command|command)-)")
MIN_WORDS = 3
# A verbatim match speaks without follow-up words only for a phrase this long: a quoted `uv` or
# `-p` is in every repo; from another repo only for one of this many words or more.
VERBATIM_MIN_CHARS = 12
ELSEWHERE_MIN_WORDS = 2
# Cues beyond words, tuned on half the labelled Aider history and checked on the other half
# (docs/performance.md): the sessions of the repo active in the last RECENT_HOURS (at most
# RECENT_SESSIONS), a prompt that repeats one of their requests (the share of words in common), and
# code it names that few of them hold (the weight of `code_matches`).
RECENT_HOURS = 24
RECENT_SESSIONS = 50
REPEAT_MIN_WORDS = 4
REPEAT_MIN_SHARE = 0.5
CODE_MIN_WEIGHT = 4.0
CODE_SESSIONS = 2
# A prompt about the repo's latest session (LATEST_SESSIONS of them, of the last RECENT_HOURS): spoken
# for when the search ranks it first and grades it `high` by words and meaning alone; no score
# threshold, the best session's score is about 1 (chosen on the labelled histories replayed as the
# index stood then, docs/performance.md).
LATEST_SESSIONS = 1
# A short request (at most this many words) about any session of the repo's last RECENT_HOURS,
# graded `high` by its words and meaning alone: a terse next step ("add a test for /reset") says
# little else. Longer prompts graded so are as often new work in the same code (chosen on the
# labelled histories' tuning parts and checked on the others, docs/performance.md).
SHORT_REQUEST_WORDS = 8

SearchFn = Callable[[str, str | None], list[dict[str, Any]]]
# `recent(repo, until)`: what the repo's recent sessions worked on (catalog.retrieve_queries.recent_work).
RecentFn = Callable[[str, str, int], list[dict[str, Any]]]

# What a prompt names of the code: a `backticked` span, a --flag, a dotted name (self.coder.event),
# a snake_case or camelCase identifier, a file path. Plain words are left to the search.
_CODE = re.compile(
    r"`([^`\n]{3,80})`"
    r"|(?<![\w-])(--[a-zA-Z][\w-]{2,})"
    r"|(?<![\w.])((?:[a-zA-Z_]\w*\.)+[a-zA-Z_]\w*)(?:\(\))?(?![\w.])"
    r"|(?<![\w./-])(/?(?:[\w.-]+/)+[\w-]*\.[\w.-]+|(?:[\w.-]+/){2,}[\w.-]+|[\w-]+\.(?:py|md|js|jsx|ts|tsx|css|html|json|toml|ya?ml|txt|sh|rs|go"
    r"|java|rb|c|h|cpp))(?![\w/])"
    r"|\b([a-zA-Z]\w*_\w+|[a-z]+[A-Z]\w*|[A-Z][a-z0-9]+[A-Z]\w*)\b")
_NAME_MIN_CHARS = 4
_WORDS = re.compile(r"[a-z0-9_]+")


def refers_to_earlier_work(prompt: str) -> bool:
    """Whether the prompt's words point at work done in an earlier session."""
    return bool(FOLLOW_UP.search(prompt))


def named_code(prompt: str) -> set[str]:
    """The code a prompt names (identifiers, paths, flags), as typed: code is case-sensitive."""
    names = set()
    for m in _CODE.finditer(prompt):
        name = next(g for g in m.groups() if g).strip()
        if len(name) >= _NAME_MIN_CHARS:
            names.add(name)
    return names


def _holds(text: str, name: str) -> bool:
    """Whether `text` holds `name` as a whole (`event` is not in `events`)."""
    return re.search(("(?<![\\w])" if name[0].isalnum() or name[0] == "_" else "") + re.escape(name)
                     + ("(?![\\w])" if name[-1].isalnum() or name[-1] == "_" else ""), text) is not None


def code_matches(names: set[str], works: list[dict[str, Any]]) -> dict[str, tuple[float, list[str]]]:
    """session id -> (weight, the names it holds) for the `works` holding any of `names`. A name
    held by few of them weighs more (log((n + 1) / (sessions holding it + 0.5))): a name every
    session holds (`main.py`) points at none."""
    if not names or not works:
        return {}
    held = {w["session_id"]: {n for n in names if _holds(w["text"], n)} for w in works}
    n = len(works)
    weight = {name: math.log((n + 1) / (sum(name in h for h in held.values()) + 0.5)) for name in names}
    return {sid: (sum(weight[x] for x in h), sorted(h)) for sid, h in held.items() if h}


def repeated_prompt(prompt: str, works: list[dict[str, Any]]) -> dict[str, float]:
    """session id -> how close its nearest prompt is to `prompt` (the share of their words in common,
    Jaccard), for the sessions holding one."""
    words = set(_WORDS.findall(prompt.lower()))
    out = {}
    for w in works:
        best = max((len(words & other) / len(words | other) for other in
                    (set(_WORDS.findall(p.lower())) for p in w["prompts"]) if other), default=0.0)
        if best:
            out[w["session_id"]] = best
    return out


def _one_line(text: str | None, limit: int) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _why(result: dict[str, Any]) -> str:
    if result.get("why"):
        return _one_line(result["why"], WHY_CHARS)
    m = (result.get("matches") or [{}])[0]
    kind = (m.get("content_type") or "match").replace("_", " ")
    return f"{'verbatim ' if result.get('exact') else ''}{kind}: {_one_line(m.get('text'), WHY_CHARS)}"


def _date(result: dict[str, Any]) -> str:
    return str(result.get("started_at") or result.get("timestamp") or "")[:10] or "?"


def prompt_recall(prompt: str, repo: str | None, search: SearchFn, *, recent: RecentFn | None = None,
                  opens: Callable[[], bool] | None = None, session_id: str | None = None,
                  max_tokens: int = PROMPT_RECALL_MAX_TOKENS, margin: float = 0.0,
                  until: str | None = None, now: datetime | None = None) -> dict[str, Any]:
    """The context to add to `prompt` typed in `repo`, or none.

    `search(query, repo_or_None)` returns `search --json` results (in `repo` only, or everywhere);
    `recent(repo, since)` what the repo's sessions active since then worked on (`recent_work`);
    `opens()` whether the prompt is its session's first (asked only of a prompt beginning "also").
    `until`: ignore sessions that started after it (ISO time; replaying a history). Returns
    `{"text", "sessions": [ids], "tokens", "reason"}`; `text` is "" when the hook stays silent,
    and `reason` says why it spoke or not.
    """
    def silent(reason: str) -> dict[str, Any]:
        return {"text": "", "sessions": [], "tokens": 0, "reason": reason}

    text = (prompt or "").strip()
    if not text or _NOT_A_REQUEST.match(text):
        return silent("not a typed request")
    now = now or (parse_ts(until) if until else None) or now_utc()
    cue = refers_to_earlier_work(text) or bool(opens and OPENING_FOLLOW_UP.match(text) and opens())
    phrases = [p for p in exact_phrases(text[:QUERY_CHARS]) if len(p) >= VERBATIM_MIN_CHARS]
    verbatim = bool(phrases)
    works = _recent_works(recent, repo, session_id, now)
    named = _named_work(text, works)
    latest = [w["session_id"] for w in works[:LATEST_SESSIONS]]
    if not (cue or verbatim or named or latest):
        return silent("no follow-up words, no verbatim phrase, no recent work")

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
        return out[:SEARCH_RESULTS]

    query = text[:QUERY_CHARS]
    chosen: list[dict[str, Any]] = list(named)
    about_latest = about_recent = False
    if repo:
        found = candidates(search(query, repo))
        if found and _words_grade(found[0]) == "high":
            ended_days_ago = age_days(found[0].get("timestamp"), now)
            if found[0]["session_id"] in latest:
                chosen.append(found[0])
                about_latest = True
            elif (len(text.split()) <= SHORT_REQUEST_WORDS and ended_days_ago is not None
                  and ended_days_ago <= RECENT_HOURS / 24):
                chosen.append(found[0])
                about_recent = True
        # Follow-up words: the search's own grade decides; without them only a verbatim match speaks.
        said = [r for r in found if (r.get("confidence") in ("high", "medium") if cue else
                                     verbatim and _verbatim_match(r))]
        # The best one speaks on medium confidence; the ones after it must be sure, or they cost
        # tokens for a session the prompt is not about.
        chosen += [r for i, r in enumerate(said) if i == 0 or r.get("exact") or r.get("confidence") == "high"]
    chosen = _unique(chosen)[:MAX_SESSIONS]
    if any(len(p.split()) >= ELSEWHERE_MIN_WORDS for p in phrases) and len(chosen) < MAX_SESSIONS:
        seen = {r["session_id"] for r in chosen}
        elsewhere = [r for r in candidates(search(query, None))
                     if _verbatim_match(r) and r.get("repo_name") != repo and r["session_id"] not in seen]
        chosen += elsewhere[: MAX_SESSIONS - len(chosen)]
    if not chosen:
        return silent("follow-up words, no matching session" if cue else "no matching session")
    reason = ("follow-up words" if cue else "verbatim match" if any(r.get("exact") for r in chosen)
              else "names recent work" if named else "about its latest work" if about_latest
              else "a short request about recent work" if about_recent else "recent work")

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
    return {"text": out, "sessions": [sid for sid, _ in fitted.kept], "tokens": count_tokens(out), "reason": reason}


def _verbatim_match(result: dict[str, Any]) -> bool:
    """A session holding the prompt's phrase verbatim that is also about the prompt by its words
    and meaning alone (graded `high` without the verbatim match). A name of the code (`return_coder`,
    `for fname in fnames`) is in every session that touched that code, down to a listing of it in a
    tool's output; only the session the prompt is about also holds the rest of its words. Not
    `medium`: the phrase's own words already give a session holding it half the coverage."""
    return bool(result.get("exact")) and _words_grade(result) == "high"


def _words_grade(result: dict[str, Any]) -> str | None:
    """The result's grade by its words and meaning alone, a verbatim match left out."""
    return result.get("words_confidence", result.get("confidence"))


def _recent_works(recent: RecentFn | None, repo: str | None, session_id: str | None,
                  now: datetime) -> list[dict[str, Any]]:
    """What the repo's sessions of the last RECENT_HOURS worked on, the current one left out."""
    if recent is None or not repo:
        return []
    since = (now - timedelta(hours=RECENT_HOURS)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    return [w for w in recent(repo, since, RECENT_SESSIONS + 1) if w["session_id"] != session_id][:RECENT_SESSIONS]


def _named_work(prompt: str, works: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Recent sessions the prompt points at without saying so: the one whose request it repeats,
    those holding the code it names (weighed by how few sessions hold it), as result-like dicts."""
    out = []
    if len(prompt.split()) >= REPEAT_MIN_WORDS:
        repeats = repeated_prompt(prompt, works)
        best = max((w for w in works if repeats.get(w["session_id"], 0) >= REPEAT_MIN_SHARE),
                   key=lambda w: repeats[w["session_id"]], default=None)
        if best is not None:
            out.append(_as_result(best, "the same request"))
    by_code = code_matches(named_code(prompt), works)
    strong = sorted((w for w in works if by_code.get(w["session_id"], (0.0, []))[0] >= CODE_MIN_WEIGHT),
                    key=lambda w: -by_code[w["session_id"]][0])
    out += [_as_result(w, "names " + ", ".join(by_code[w["session_id"]][1])) for w in strong[:CODE_SESSIONS]]
    return _unique(out)


def _as_result(work: dict[str, Any], why: str) -> dict[str, Any]:
    return {"session_id": work["session_id"], "repo_name": work.get("repo_name"), "title": work.get("title"),
            "first_prompt": work.get("first_prompt"), "started_at": work.get("started_at"),
            "timestamp": work.get("ended_at") or work.get("started_at"), "why": why}


def _unique(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first result of each session, in order."""
    first: dict[str, dict[str, Any]] = {}
    for r in results:
        first.setdefault(r["session_id"], r)
    return list(first.values())
