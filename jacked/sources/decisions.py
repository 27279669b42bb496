"""Decisions, feedback and the user's corrections, read from what Claude Code writes.

Turn reconstruction (`jacked.sources.claude.turns`) records three more kinds of turn event with
the helpers here; the timeline, search and retrieve read them back:

- `decision`: what was chosen, with the alternatives. `data.kind`:
  - `question`: one question of an answered `AskUserQuestion` call: `question`, `header`,
    `options` (labels) and `descriptions`, the user's `answer` (`custom`: not one of the options),
    `multi_select`;
  - `plan`: an `ExitPlanMode` plan, `outcome` "approved" or "rejected" (with the user's `reason`
    when given), and the plan's `title`;
  - `plan_mode`: an `EnterPlanMode` call, `outcome` "entered" or "rejected";
  - `todos`: a `TodoWrite` list re-planned: items `added` or `removed` while the earlier list
    still had work open (a first list, or a fresh one after everything was done, is not a re-plan).
- `feedback`: the user's verdict on the agent's work. `data.kind`:
  - `tool_rejected` / `plan_rejected`: a call the user refused ("The user doesn't want to proceed
    with this tool use…"), with the `reason` when the user gave one. The "[Request interrupted by
    user for tool use]" line Claude Code writes right after it is the same act (`stopped_turn`),
    and parallel calls cancelled with it are counted (`cancelled`), not reported again;
  - `interrupted`: "[Request interrupted by user]" (`tool_name`: the call that was running, if any);
  - `correction`: a prompt that corrects the turn before it (`about_turn`, the `cue` that matched):
    a heuristic, measured by `scripts/corrections_eval.py` on hand-labelled prompts and emitted
    only while `CORRECTIONS_KEPT` (precision ≥ 0.9 there).
- `snapshot`: the state a turn started from: `cwd`, `git_branch`, Claude Code `version`, `model`,
  `permission_mode`, and the files Claude Code backed up in its `file-history-snapshot` lines
  (`files_backed_up`, `backups`).
"""
from __future__ import annotations

import hashlib
import re
from typing import Any

from jacked.sources.model import Invocation, Turn, TurnEvent

REJECT_PREFIX = "The user doesn't want to proceed with this tool use"
CANCEL_PREFIX = "The user doesn't want to take this action right now"  # a parallel call stopped with a rejection
INTERRUPT_PREFIX = "[Request interrupted by user"
PLAN_TOOL = "ExitPlanMode"
ENTER_PLAN_TOOL = "EnterPlanMode"
QUESTION_TOOL = "AskUserQuestion"
TODO_TOOL = "TodoWrite"
# Decisions indexed as the `decision` content type (and kept by `retrieve --mode smart`): what
# was asked and answered, and plans approved or rejected.
SEARCHABLE_DECISIONS = ("question", "plan")
# Event data keys holding text (redacted with the turn), and those holding lists of texts.
TEXT_KEYS = ("question", "header", "answer", "title", "reason", "prompt", "cue", "target")
LIST_KEYS = ("options", "descriptions", "added", "removed", "files_backed_up")

MAX_FIELD = 600  # a question, an answer, a reason: kept up to here
MAX_ITEMS = 50

_REASON = re.compile(r"(?:reason for the rejection:|the user said:)\s*(.*)\Z", re.S | re.I)
_ANSWER = re.compile(r'"((?:[^"\\]|\\.)*)"="((?:[^"\\]|\\.)*)"')


def _clip(text: Any, limit: int = MAX_FIELD) -> str | None:
    if not isinstance(text, str):
        return None
    text = text.strip()
    return text if len(text) <= limit else text[:limit].rstrip() + "…"


# (A result's head is enough: an error's output can be megabytes.)
def is_rejection(text: str) -> bool:
    return text[:200].lstrip().startswith(REJECT_PREFIX)


def is_cancellation(text: str) -> bool:
    return text[:200].lstrip().startswith(CANCEL_PREFIX)


def is_interruption(text: str) -> bool:
    return text[:200].lstrip().startswith(INTERRUPT_PREFIX)


def rejection_reason(text: str) -> str | None:
    """The reason the user typed when refusing a call, if any."""
    m = _REASON.search(text)
    return _clip(m.group(1)) if m and m.group(1).strip() else None


def plan_title(plan: Any) -> str | None:
    """A plan's first line, without its heading marks: its title."""
    if not isinstance(plan, str):
        return None
    for line in plan.splitlines():
        line = line.strip().lstrip("#").replace("**", "").replace("__", "").strip()
        if line:
            return _clip(line, 160)
    return None


def question_decisions(questions: Any, tur: Any, result_text: str) -> list[dict[str, Any]]:
    """One decision per question of an answered AskUserQuestion call. The answers come from the
    result's `toolUseResult.answers` ({question: answer}), else from its text
    (`"question"="answer", …`)."""
    # The result's own copy of the questions is the one its answers are keyed by; the call's
    # (already redacted) input serves when the result has none.
    if isinstance(tur, dict) and isinstance(tur.get("questions"), list):
        questions = tur["questions"]
    qs = [q for q in questions if isinstance(q, dict) and isinstance(q.get("question"), str)] \
        if isinstance(questions, list) else []
    answers: dict[str, str] = {}
    if isinstance(tur, dict) and isinstance(tur.get("answers"), dict):
        answers = {str(k): str(v) for k, v in tur["answers"].items() if isinstance(v, (str, int, float))}
    if not answers:
        answers = {q.replace('\\"', '"'): a.replace('\\"', '"') for q, a in _ANSWER.findall(result_text)}
    in_order = list(answers.values()) if len(answers) == len(qs) else None
    out = []
    for i, q in enumerate(qs):
        answer = answers.get(q["question"])
        if answer is None and in_order is not None:  # keys that differ (a redacted question): by position
            answer = in_order[i]
        if answer is None:
            continue
        opts = [o for o in q.get("options") or [] if isinstance(o, dict) and isinstance(o.get("label"), str)]
        labels = [o["label"] for o in opts][:MAX_ITEMS]
        chosen = [a.strip() for a in answer.split(",")] if q.get("multiSelect") else [answer.strip()]
        out.append({
            "kind": "question", "question": _clip(q["question"]), "header": _clip(q.get("header"), 100),
            "options": [_clip(x, 200) for x in labels],
            "descriptions": [_clip(o.get("description"), 300) or "" for o in opts][:MAX_ITEMS],
            "answer": _clip(answer), "custom": not all(c in labels for c in chosen),
            "multi_select": bool(q.get("multiSelect")),
        })
    return out


def todo_items(todos: Any) -> list[list[str]]:
    """[content, status, key] of each item of a TodoWrite list; `key` (a hash of the content as
    written) compares items whether or not their text was redacted since."""
    out = []
    for t in todos if isinstance(todos, list) else []:
        if isinstance(t, dict) and isinstance(t.get("content"), str) and t["content"].strip():
            content = " ".join(t["content"].split())
            key = hashlib.blake2b(content.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
            out.append([content, str(t.get("status") or ""), key])
    return out


def todo_replan(before: list[list[str]] | None, after: list[list[str]]) -> dict[str, Any] | None:
    """A re-plan: the list gained or lost items while the one before still had work open."""
    if not before or all(item[1] == "completed" for item in before):
        return None
    old, new = {item[2] for item in before}, {item[2] for item in after}
    added = [item[0] for item in after if item[2] not in old]
    removed = [item[0] for item in before if item[2] not in new]
    if not added and not removed:
        return None
    return {"kind": "todos", "added": [_clip(c, 300) for c in added][:MAX_ITEMS],
            "removed": [_clip(c, 300) for c in removed][:MAX_ITEMS], "count": len(after)}


# ---------------------------------------------------------------------------------- corrections
# A prompt that corrects the turn before it, by the words it starts with. The cue groups were
# written from the examples ("no, don't…", "that broke…", "revert that") and common ways
# people push back, before the prompts of the real fixtures were labelled by hand
# (tests/fixtures/corrections_labels.jsonl). `scripts/corrections_eval.py` measures each group
# there: a group is kept only while its precision is at least 0.9 (`DROPPED_CUES` lists the
# ones that failed), and `correction` feedback is emitted only while the kept rule as a whole
# reaches 0.9 (`CORRECTIONS_KEPT`).
CORRECTIONS_KEPT = True
CORRECTION_RULE_VERSION = 1
_V = re.I | re.X
CUE_GROUPS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("lead", re.compile(r"^(?:(?:no+|nope|nah)\s*[,.!:;]|(?:stop|wait|hold\ on|hang\ on|oops|ugh|oh\ no)\b)", _V)),
    ("still_not_working", re.compile(r"\bstill\ (?:doesn'?t|does\ not|don'?t|isn'?t|is\ not|not)\ (?:work|working|help|fix)"
                                     r"\b", _V)),
    ("not_working", re.compile(r"\b(?:doesn'?t|does\ not|didn'?t|did\ not|isn'?t|is\ not)\ (?:work|working|help|fix)\b", _V)),
    ("revert", re.compile(r"\b(?:revert|undo|roll\ ?back)\ (?:that|this|it|the|your|those|these|what|all)\b", _V)),
    ("broke", re.compile(r"\b(?:you|that|this|it)\ (?:broke|(?:has|have|'ve)\ broken)\b", _V)),
    ("lost", re.compile(r"\b(?:we\ lost|(?:is|are)\ (?:gone|missing)\ now)\b", _V)),
    ("are_you_sure", re.compile(r"\bare\ you\ sure\b", _V)),
    ("wrong", re.compile(r"\b(?:(?:that'?s|that\ is|this\ is)\ (?:not\ (?:right|correct|what)|wrong)|not\ what\ I\ "
                         r"(?:asked|meant|wanted))\b", _V)),
    ("i_said", re.compile(r"\bI\ (?:said|told\ you|already\ said)\b", _V)),
    ("i_dont", re.compile(r"\bI\ don'?t\ (?:think|want)\b", _V)),
    ("dont_verb", re.compile(r"\bdon'?t\ (?:do|use|change|add|touch|remove|delete|create|make|run|commit|push)\b", _V)),
    ("why_did_you", re.compile(r"\b(?:why\ did\ you|you\ shouldn'?t|shouldn'?t\ have|you\ forgot|you\ missed)\b", _V)),
    ("failing_now", re.compile(r"\b(?:(?:failing|broken|unhappy)\ now|now\ (?:fails|failing|broken))\b", _V)),
)
# Measured below 0.9: "don't do" describes code as often as it forbids ("in case of BadZipFile we
# don't do anything"; real labels 0 of 1); a bare "doesn't work" opens bug reports as often as it
# reports a failed fix ("Reordering todos by dragging doesn't work on my phone": every one of the
# generated bank's firings; "still doesn't work" presupposes an attempt and is kept).
DROPPED_CUES = frozenset({"dont_verb", "not_working"})
_WRAPPERS = re.compile(r"<(ide_opened_file|ide_selection|system-reminder)>.*?</\1>", re.S)
_IMAGE = re.compile(r"\[Image #\d+\]")
# "!": a command run in bash mode, as a turn's prompt shows it (Claude Code, Gemini CLI and Aider
# all take a leading "!" as a shell escape)
NOT_TYPED = ("!", "<bash-input>", "<bash-stdout>", "<bash-stderr>", "<command-name>", "<command-message>",
             "<local-command", "<task-notification>", "Caveat:")
CUE_WINDOW = 300  # the user's own words lead; a pasted log after them is not searched


def typed_text(prompt: str, limit: int | None = None) -> str | None:
    """What the user typed: the IDE context and reminders it starts with and image markers dropped
    (of its first `limit` characters, when given); None for a shell escape, a slash command or a
    notification."""
    text = prompt.lstrip()
    while text.startswith("<"):
        m = _WRAPPERS.match(text)
        if m is None:
            break
        text = text[m.end():].lstrip()
    if limit is not None:
        text = text[:limit * 2]
    text = _IMAGE.sub("", text).strip() if "[Image #" in text else text.strip()
    if not text or text.startswith(NOT_TYPED):
        return None
    return text[:limit] if limit is not None else text


def correction_cues(prompt: str | None, dropped: frozenset[str] | set[str] = DROPPED_CUES) -> list[tuple[str, str]]:
    """(group, matched words) of every cue group, but `dropped`, that `prompt` matches."""
    text = typed_text(prompt or "", CUE_WINDOW)
    if text is None:
        return []
    head = " ".join(text.split())
    out = []
    for name, rx in CUE_GROUPS:
        if name not in dropped:
            m = rx.search(head)
            if m:
                out.append((name, m.group(0).strip()))
    return out


# The kept groups as one pattern: one search per prompt (every prompt of every scan is checked).
_KEPT = re.compile("|".join(f"(?P<{name}>{rx.pattern})" for name, rx in CUE_GROUPS if name not in DROPPED_CUES), _V)


def correction_cue(prompt: str | None) -> str | None:
    """The words by which `prompt` corrects the turn before it (kept cue groups), or None."""
    text = typed_text(prompt or "", CUE_WINDOW)
    if text is None:
        return None
    m = _KEPT.search(" ".join(text.split()))
    return m.group(0).strip() if m else None


# ---------------------------------------------------------------------------------- the other agents
def tool_rejected(ts: str | None, call: Invocation, reason: str | None = None) -> TurnEvent:
    """A `feedback` event: the user refused `call` (the agents' readers other than Claude Code's)."""
    return TurnEvent("feedback", ts, {"kind": "tool_rejected", "tool_name": call.tool_name,
                                      "tool_use_id": call.tool_use_id, "target": call.command or call.file_path,
                                      "reason": _clip(reason)})


def tool_approved(ts: str | None, call: Invocation) -> TurnEvent:
    """A `decision` event: the user let `call` run when asked."""
    return TurnEvent("decision", ts, {"kind": "approval", "outcome": "approved", "tool_name": call.tool_name,
                                      "tool_use_id": call.tool_use_id, "target": call.command or call.file_path})


def interrupted(ts: str | None, running: Invocation | None = None) -> TurnEvent:
    """A `feedback` event: the user stopped the turn (while `running` ran, when one did)."""
    return TurnEvent("feedback", ts, {"kind": "interrupted", "tool_name": running.tool_name if running else None,
                                      "tool_use_id": running.tool_use_id if running else None})


def mark_interrupted(turn: Turn, ts: str | None, running: Invocation | None = None) -> None:
    """The user stopped `turn`: marked so, with one `interrupted` feedback however many records say it."""
    if not turn.interrupted:
        turn.interrupted = True
        turn.events.append(interrupted(ts, running))


# ---------------------------------------------------------------------------------- texts
def decision_text(data: dict[str, Any]) -> str | None:
    """A decision in one line of prose (what search indexes and retrieve shows)."""
    kind = data.get("kind")
    if kind == "question":
        answer = data.get("answer") or ""
        labels = data.get("options") or []
        descs = data.get("descriptions") or []
        chosen = dict(zip(labels, descs)).get(answer)
        others = [x for x in labels if x and x != answer and x not in answer.split(", ")]
        head = f"[{data['header']}] " if data.get("header") else ""
        text = f"{head}{data.get('question') or ''} → {answer}"
        if chosen:
            text += f" ({chosen})"
        if others:
            text += f". Alternatives: {'; '.join(others)}"
        return text
    if kind == "plan":
        title = data.get("title") or "(untitled plan)"
        if title[:5].lower() == "plan:" and title[5:].strip():  # "Plan approved: Plan: …"
            title = title[5:].strip()
        if data.get("outcome") == "rejected":
            return f"Plan rejected: {title}" + (f". Reason: {data['reason']}" if data.get("reason") else "")
        return f"Plan approved: {title}"
    if kind == "approval":  # the other agents' permission prompts, answered yes
        if data.get("question"):
            return f"Approved: {data['question']}" + (f" → {data['answer']}" if data.get("answer") else "")
        target = f" {data['target']}" if data.get("target") else ""
        return f"Approved {data.get('tool_name') or 'tool call'}{target}"
    if kind == "plan_mode":
        return "Entered plan mode" if data.get("outcome") == "entered" else "Declined to enter plan mode"
    if kind == "todos":
        parts = []
        if data.get("added"):
            parts.append("added " + "; ".join(data["added"]))
        if data.get("removed"):
            parts.append("dropped " + "; ".join(data["removed"]))
        return "Re-planned the todo list: " + ", ".join(parts)
    return None


def feedback_text(data: dict[str, Any]) -> str:
    """A feedback event in one line."""
    kind = data.get("kind")
    tool = data.get("tool_name")
    if kind in ("tool_rejected", "plan_rejected"):
        what = "plan" if kind == "plan_rejected" else (tool or "tool call")
        target = f" {data['target']}" if data.get("target") else ""
        return f"rejected {what}{target}" + (f": {data['reason']}" if data.get("reason") else "")
    if kind == "interrupted":
        return "interrupted" + (f" during {tool}" if tool else "")
    if kind == "correction":
        return f"corrected turn {data.get('about_turn')}: {data.get('prompt') or ''}"
    return str(kind)
