"""jacked's own labels, kept out of what the lexical leg and the verbatim match see.

Indexed texts are shaped for people: a chunk begins `prompt: …`, a turn summary says `Asked: …
Used Bash ×3. Outcome: …`, a decision `Plan approved: …`. Those words are jacked's, not the
user's: a query holding one ("The required parameter `prompt` is missing") must not match every
session through them. The stored and shown text keeps its shape; `searchable` is the same text
with the labels taken out, what BM25 embeds and the phrase match reads. It works on the stored
text alone, so a point read back from the store is judged as it was indexed.

Every label is written by `extract.py` (chunks), `summarize.py` (turn and session summaries) or
`jacked.sources.decisions.decision_text`: a label added there is added here too
(tests/test_labels.py checks each writer's output).
"""
from __future__ import annotations

import re
from collections.abc import Callable

# Chunks (`extract._chunks`, `extract._work_lines`): the turn's prompt line, a subagent's head line
# and the error mark of a tool line.
CHUNK_PROMPT = "prompt: "
_CHUNK_SUBAGENT_COLON = re.compile(r"\A([^\n:]*?): ")
_TOOL_ERROR = re.compile(r"(?m)^([\w.-]+) \(error\): ")
# What the sources write in place of what they leave out (`jacked.sources.briefs`, the readers): a
# shortened output's mark, an image, a tool reference's bracket word.
_PLACEHOLDERS = re.compile(r"… \[\+\d+ chars\]|(?m:^… \[\d+ chars\] …$)|\[image\]|(?<=\[)tool_reference (?=[^\]\n]*\])")

# Extractive summaries (`summarize.extractive_turn_summary`, `extractive_session_summary`): the
# words that open each sentence, the counts in brackets, and the fixed sentences.
_WORD_START = r"(?:(?<=\s)|^)"
_SUMMARY_LABELS = re.compile(
    _WORD_START + r"(?:Asked:|Outcome:|Last outcome:|Title:|Goal:|Then:|Session in|Error in|Used|Edited|Created"
    r"|Read|Ran|Changed)(?=\s)")
_SUMMARY_SENTENCES = re.compile(
    r"Work before the first prompt\.|Interrupted by the user\.|Empty turn\."
    r"|\d+ tool errors, \d+ fixed later\.")
_SUMMARY_COUNTS = re.compile(
    r" ×\d+| \(\d+ failed\)| \(\+\d+/-\d+ lines\)| \(\+\d+ more(?: errors| turns)?\)\.?"
    r"| \((?:later fixed|not fixed in this session)\)|, \d+ turns,|\(branch |(?<=\d) to (?=[\d?])")

# Decisions (`decision_text`).
_DECISION_LABELS = re.compile(
    r"\A(?:Plan approved: |Plan rejected: |Re-planned the todo list: |Entered plan mode\Z|Declined to enter plan "
    r"mode\Z)|\. Reason: |\. Alternatives: |(?<=: )added |(?<=, )dropped |(?<=: )dropped |\(untitled plan\)")


def _chunk(text: str) -> str:
    if text.startswith("subagent "):
        # "subagent <type>: <description>": the type is the transcript's, the word and colon are jacked's.
        text = _CHUNK_SUBAGENT_COLON.sub(r"\1 ", text[len("subagent "):], count=1)
    elif text.startswith(CHUNK_PROMPT):
        text = text[len(CHUNK_PROMPT):]
    if " (error): " in text:
        text = _TOOL_ERROR.sub(r"\1: ", text)
    return _prompt(text)


def _prompt(text: str) -> str:
    # The regex tries every position of a 3,000-character chunk, and a search reads dozens of them:
    # the plain `in` tests (each alternative's fixed part) pass over a text without any mark at once.
    if "…" in text or "[image]" in text or "tool_reference " in text:
        return _PLACEHOLDERS.sub("", text)
    return text


def _summary(text: str) -> str:
    text = _SUMMARY_SENTENCES.sub(" ", text)
    text = _SUMMARY_COUNTS.sub(" ", text)
    return _SUMMARY_LABELS.sub("", text)


def _decision(text: str) -> str:
    return _DECISION_LABELS.sub(" ", text)


_BY_TYPE: dict[str, Callable[[str], str]] = {
    "chunk": _chunk,
    "user_message": _prompt,
    "turn_summary": _summary,
    "session_summary": _summary,
    "decision": _decision,
}


def searchable(content_type: str | None, text: str) -> str:
    """`text` as the lexical leg and the verbatim match see it: jacked's labels left out."""
    strip = _BY_TYPE.get(content_type or "")
    return strip(text) if strip is not None else text
