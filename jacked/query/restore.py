"""Restore: a brief for continuing an interrupted session, within a token budget.

The brief says what the session was for (goal, plan), the state after each turn (what was
asked, decisions, changes, artifacts read / edited / created, errors), the constraints the
user set, the questions left open, and where it stopped. It is made of whole items — a text
is never cut: when the budget is short, whole items are left out (older turns first, the
prose of a turn before its facts) and the brief says what was left out. The margin rule and
the fitting are jacked.query.budget's (`capacity`, `fit`, `settle`), shared with retrieve.

Decisions, constraints and open questions are picked out of the (redacted) texts by plain
rules — sentences with words such as "decided", "instead", "must", "don't", or ending in a
question mark — so the brief is offline and deterministic.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jacked.catalog import Catalog
from jacked.errors import JackedError
from jacked.index.summarize import turn_facts
from jacked.query.budget import Fitted, capacity, fit, settle
from jacked.util.tokens import count_tokens

if TYPE_CHECKING:  # the published shape (docs/schema.md); never imported at run time
    from jacked.schema.answers import BriefAnswer

DEFAULT_MAX_TOKENS = 4000
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
_DECISION = re.compile(r"\b(decided|decision|i'll|i will|we'll|we will|instead|chose|choose|going to|let's|"
                       r"the fix|approach|plan is|switch(ed)? to|use [a-z])", re.I)
# A constraint: an instruction at the start of a sentence ("Don't …", "Never …", "Only …"), or a
# binding word anywhere ("must", "make sure", "do not"); questions are never constraints.
_CONSTRAINT = re.compile(r"^(please\s+)?(don't|do not|never|always|avoid|keep|make sure|only|no need|stick to)\b|"
                         r"\b(must|mustn't|must not|do not|make sure|should not|shouldn't|without breaking|"
                         r"instead of)\b", re.I)


class RestoreError(JackedError, ValueError):
    """A restore request that cannot be met (a budget too small for even the header)."""


@dataclass
class Item:
    """One whole piece of the brief; `priority` decides what stays when the budget is short."""

    key: str
    text: str
    priority: int
    order: int
    tokens: int = 0


@dataclass
class Brief:
    session_id: str
    budget: int
    used: int = 0
    items: list[Item] = field(default_factory=list)
    omitted: list[dict[str, Any]] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n\n".join(i.text for i in sorted(self.items, key=lambda i: i.order))

    def to_json(self) -> BriefAnswer:
        return {"session_id": self.session_id, "budget": self.budget, "used": self.used,
                "remaining": self.budget - self.used,
                "sections": [{"key": i.key, "tokens": i.tokens, "text": i.text}
                             for i in sorted(self.items, key=lambda i: i.order)],
                "omitted": self.omitted, "text": self.text}


def sentences(text: str | None) -> list[str]:
    return [s.strip(" -*•\t") for s in _SENTENCES.split(text or "") if len(s.strip()) > 3]


def pick(text: str | None, rule: re.Pattern[str], limit: int = 3) -> list[str]:
    """Whole statements of `text` that match `rule` (at most `limit`, each at most 400 chars)."""
    return [s for s in sentences(text) if rule.search(s) and len(s) <= 400 and not s.endswith("?")][:limit]


def open_questions(text: str | None, limit: int = 3) -> list[str]:
    return [s for s in sentences(text) if s.endswith("?") and len(s) <= 400][-limit:]


def _bullets(label: str, items: list[str]) -> str:
    return f"{label}:\n" + "\n".join(f"  - {x}" for x in items) if items else ""


def turn_state(f: dict[str, Any], prose: bool, is_last: bool = False) -> str:
    """The state after one turn; with `prose`, its prompt, decisions and result in full.

    The last working turn's request and answer are in "Where it stopped": not repeated here.
    """
    lines = [f"### Turn {f['index']}" + (f" ({f['started_at'][:16].replace('T', ' ')})" if f["started_at"] else "")]
    if is_last and f["prompt"]:
        lines.append("Asked: (see Where it stopped)")
    elif prose and f["prompt"]:
        lines.append(f"Asked: {f['prompt']}")
    elif f["prompt"]:
        lines.append(f"Asked: ({len(f['prompt'])} characters; left out for the budget)")
    if f["tool_usage"]:
        lines.append("Tools: " + ", ".join(f"{k}×{v}" for k, v in sorted(f["tool_usage"].items(),
                                                                              key=lambda kv: (-kv[1], kv[0]))))
    for label, key in (("Read", "read"), ("Edited", "edited"), ("Created", "created")):
        if f[key]:
            lines.append(f"{label}: {', '.join(f[key])}")
    if f["lines_added"] or f["lines_removed"]:
        lines.append(f"Changes: +{f['lines_added']}/-{f['lines_removed']} lines")
    if f["commands"]:
        lines.append(f"Commands: {'; '.join(f['commands'])}")
    errors: dict[str, int] = {}
    for e in f["errors"]:
        line = (f"Error ({e['tool_name']} {e['target']}): {e['message']} — "
                f"{'fixed later' if e['resolved'] else 'NOT fixed'}")
        errors[line] = errors.get(line, 0) + 1
    lines += [f"{line} (×{k})" if k > 1 else line for line, k in errors.items()]
    if prose:
        decisions = pick(f["assistant_text"], _DECISION)
        if decisions:
            lines.append(_bullets("Decisions", decisions))
        if f["assistant_text"] and not is_last:
            lines.append(f"Result: {f['assistant_text']}")
    if f["interrupted"]:
        lines.append("Interrupted by the user.")
    return "\n".join(lines)


def restore_brief(catalog: Catalog, session_id: str, max_tokens: int = DEFAULT_MAX_TOKENS, margin: float = 0.0,
                  count: Callable[[str], int] = count_tokens) -> Brief:
    """The brief for continuing `session_id` within `max_tokens` (counted with `count`, cl100k).

    `margin` keeps room for Claude's tokenizer, which can count more than cl100k: the brief
    fills at most `budget.capacity(max_tokens, margin)` cl100k tokens.
    """
    if max_tokens < 1:
        raise RestoreError("--max-tokens must be at least 1")
    row = catalog.get_session_row(session_id)
    if row is None:
        raise RestoreError(f"no session {session_id} in the catalog")
    invs: dict[int, list[dict[str, Any]]] = {}
    for r in catalog.invocation_rows(session_id):
        invs.setdefault(r["turn_index"], []).append(r)
    turns = catalog.turn_rows(session_id)
    facts = [turn_facts(t, invs.get(t["turn_index"], []), row.get("cwd")) for t in turns]
    items: list[Item] = []
    n = len(facts)

    head = (f"# Restore brief: session {session_id}\n"
            f"Repo {row.get('repo_name') or '-'} ({row.get('cwd') or '?'}), branch {row.get('git_branch') or '-'}; "
            f"{row.get('started_at') or '?'} → {row.get('ended_at') or '?'}; {n} turns.\n"
            "Continue this session from where it stopped; the state after each turn follows.")
    items.append(Item("header", head, 0, 0))
    asks = [f for f in facts if f["prompt"] and not f["is_slash_command"]]
    if asks:
        items.append(Item("goal", f"## Goal\n{asks[0]['prompt']}", 1, 1))
    if row.get("title"):
        items.append(Item("title", f"Title: {row['title']}", 3, 2))
    if row.get("plan"):
        items.append(Item("plan", f"## Plan ({row.get('plan_source')})\n{row['plan']}", 5, 3))

    read = list(dict.fromkeys(p for f in facts for p in f["read"]))
    edited = list(dict.fromkeys(p for f in facts for p in f["edited"]))
    created = list(dict.fromkeys(p for f in facts for p in f["created"]))
    artifacts = "\n".join(x for x in (_bullets("Created", created), _bullets("Edited", edited),
                                      _bullets("Read", read)) if x)
    if artifacts:
        items.append(Item("artifacts", f"## Artifacts\n{artifacts}", 2, 4))
    constraints = list(dict.fromkeys(s for f in asks for s in pick(f["prompt"], _CONSTRAINT, 4)))
    if constraints:
        items.append(Item("constraints", "## Constraints (from the user)\n" + "\n".join(f"- {c}" for c in constraints),
                          2, 5))
    unresolved = [f"Turn {f['index']}: {e['tool_name']} {e['target']}: {e['message']}"
                  for f in facts for e in f["errors"] if not e["resolved"]]
    questions = [q for f in facts[-3:] for q in open_questions(f["assistant_text"])]
    if unresolved or questions:
        body = "\n".join(x for x in (_bullets("Errors not fixed", unresolved),
                                     _bullets("Questions left open", questions)) if x)
        items.append(Item("open", f"## Open\n{body}", 2, 6))

    # Each turn twice over: its facts (cheap) and its prose (prompt, decisions, result, facts
    # included), which replaces the facts when it goes in. The last turn (facts, then prose) comes
    # first, then every other turn's facts newest first, then older turns' prose newest first: a
    # long session keeps its whole shape before its detail.
    # "Last" means the last turn with substance: a closing /clear or /exit says little.
    substantive = [k for k, f in enumerate(facts) if (f["prompt"] and not f["is_slash_command"])
                   or f["assistant_text"] or f["tool_usage"]]
    last_k = substantive[-1] if substantive else n - 1
    for k, f in enumerate(facts):
        age = n - 1 - k
        items.append(Item(f"turn:{f['index']}", turn_state(f, prose=True, is_last=k == last_k),
                          11 if k == last_k else 1000 + age, 100 + k))
        items.append(Item(f"turn:{f['index']}:facts", turn_state(f, prose=False), 10 if k == last_k else 20 + age,
                          100 + k))
    if facts:
        last = facts[last_k]
        stop = [f"## Where it stopped\nLast working turn {last['index']}" + (" was interrupted by the user." if
                                                                             last["interrupted"] else ".")]
        if last["prompt"]:
            stop.append(f"Last request: {last['prompt']}")
        if last["assistant_text"]:
            stop.append(f"Last answer: {last['assistant_text']}")
        else:
            stop.append("No final answer was written for it.")
        later = [f["prompt"] for f in facts[last_k + 1:] if f["prompt"]]
        if later:
            stop.append(f"Then: {'; '.join(later)}")
        items.append(Item("stopped", "\n".join(stop), 1, 10_000))
    return _fit(session_id, items, max_tokens, capacity(max_tokens, margin), count)


def _fit(session_id: str, items: list[Item], max_tokens: int, cap: int, count: Callable[[str], int]) -> Brief:
    """Whole items by priority within `cap` (budget.fit); the header must fit. A turn's facts are a
    part its prose shares: the prose, taken after them, costs only what it adds, and replaces them."""
    sep = count("\n\n")
    for it in items:
        it.tokens = count(it.text)
    facts = {it.key: it for it in items if it.key.endswith(":facts")}

    def facts_of(it: Item) -> Item | None:  # a turn's facts, for its facts item and for its prose
        return facts.get(it.key if it.key in facts else it.key + ":facts")

    def parts(it: Item) -> list[tuple[str, int]]:
        f = facts_of(it)
        return [(f.key, f.tokens + sep)] if f else []

    def cost(it: Item) -> int:  # its own part: the facts' tokens are the shared part's
        f = facts_of(it)
        return it.tokens - f.tokens if f else it.tokens + sep

    # n items have n - 1 joins: the first (the header) pays none
    fitted = fit(sorted(items, key=lambda i: (i.priority, i.order)), cap, cost, parts=parts,
                 must=lambda it: it.key == "header", used=-sep)
    if fitted.over:
        raise RestoreError(f"--max-tokens {max_tokens} is too small for even the brief's header "
                           f"({fitted.kept[0].tokens} tokens)")

    def brief(f: Fitted[Item], note: bool = True) -> Brief:
        kept = {it.key for it in f.kept}

        def in_prose(it: Item) -> bool:  # a turn's facts, whose prose (holding them) is in
            return it.key in facts and it.key.removesuffix(":facts") in kept

        shown = [it for it in f.kept if not in_prose(it)]
        left = [it for it in f.left_out if not in_prose(it)]
        b = Brief(session_id, max_tokens, items=shown, omitted=[{"key": it.key, "tokens": it.tokens} for it in left])
        if left and note:
            b.items.append(Item("omitted", "(Left out for the budget: " + ", ".join(it.key for it in left) + ".)",
                                0, 20_000))
            b.items[-1].tokens = count(b.items[-1].text)
        b.used = count(b.text)
        return b

    def fitting(f: Fitted[Item]) -> Brief:  # with the note saying what was left out, when it fits
        b = brief(f)
        return b if b.used <= cap else brief(f, note=False)

    # Tokens can merge across the joins: should the whole come out over, give back the least wanted.
    settle(fitted, lambda f: fitting(f).used)
    return fitting(fitted)
