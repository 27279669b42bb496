"""Terminal escapes out of captured text.

Tool output (lefthook, create-next-app, test runners) carries ANSI colours and cursor moves;
printed back they recolour the user's terminal, indexed they are noise. They are removed
once, where text is captured, before anything is stored, shown or searched.
"""
from __future__ import annotations

import re

# CSI sequences (ESC [ … final byte, or the one-byte C1 CSI), OSC strings (ESC ] … BEL/ST),
# other two-byte escapes, and the control characters a terminal acts on (not \t \n \r).
_ESCAPES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[@-Z\\-_]"
    r"|[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]"
)


# Any character that could start one: most texts have none, and one C-level search says so.
_ANY = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x9b]")


def strip_ansi(text: str) -> str:
    """`text` without terminal escape sequences and stray control characters."""
    if _ANY.search(text) is None:
        return text
    return _ESCAPES.sub("", text).replace("\x1b", "")
