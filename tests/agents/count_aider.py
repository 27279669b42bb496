"""An independent count of Aider chat history files, straight from their text.

Standard library only and nothing from jacked, so jacked's reading of the same files is checked
against a second, deliberately plain reading rather than against itself.

    python tests/agents/count_aider.py FOLDER [--json]

Rules, as Aider writes `.aider.chat.history.md` (aider/io.py: `user_input`, `tool_output`,
`ai_output`, `append_chat_history`):
* every `.aider.chat.history.md` under FOLDER is read; `# aider chat started at <time>` opens a
  session; text before the first one is a session too;
* `#### ` lines are typed, `> ` lines are Aider's, other lines the model's; a `> ` message that
  does not end with two spaces goes on over the next lines until one that does (or until a
  `#### ` / `> ` line);
* a session with no typed text and no model text is not counted;
* a turn: a run of consecutive typed lines that is not blank;
* counted only once the session has a turn or model text (start-up notices are not): a tool call
  is a notice `Applied edit to …`, `## SearchReplaceNoExactMatch: …`, `The LLM did not conform
  to the edit format.`, `## Running: …`, `Running …`, or an `Add … to the chat?` question answered
  yes (answer y/a, or empty with a `[Y/n]`/`[Yes]` default); errors are the second, third and
  fourth kinds, and a `Running …` notice followed right away by `Error running command…`; tokens are the `Tokens: N sent[, N cache write][, N cache hit], N received`
  notices (k = thousand, M = million, commas dropped); a rejection is any `?`-question answered
  no; an interruption is a turn with a `^C` notice.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

START = re.compile(r"^# aider chat started at (\S+ \S+)\s*$")
TOK = re.compile(r"^Tokens: ([\d.,]+[kKmM]?) sent(, ([\d.,]+[kKmM]?) cache write)?(, ([\d.,]+[kKmM]?) cache hit)?, "
                 r"([\d.,]+[kKmM]?) received")
QUESTION = re.compile(r"^(.*?\?)\s*(\[Y/n\]|\[y/N\]|\(Y\)es/\(N\)o[^\[]*\[(Yes|No)\]:?)\s*(.*?)\s*$")


def number(s: str) -> int:
    s = s.replace(",", "")
    mult = {"k": 1000, "K": 1000, "m": 1000000, "M": 1000000}.get(s[-1], 1)
    if mult != 1:
        s = s[:-1]
    return int(round(float(s) * mult))


def classify(body: list[str]) -> list[tuple[str, str]]:
    """(kind, text) per line: 'u' typed, 'q' Aider's, 't' the model's."""
    out: list[tuple[str, str]] = []
    open_quote = False
    for raw in body:
        typed = raw == "####" or raw.startswith("#### ")
        quoted = raw == ">" or raw.startswith("> ")
        if open_quote and not typed and not quoted:
            out.append(("q", raw[:-2] if raw.endswith("  ") else raw))
            open_quote = not raw.endswith("  ")
            continue
        open_quote = False
        if typed:
            rest = raw[5:]
            out.append(("u", rest[:-2] if rest.endswith("  ") else rest))
        elif quoted:
            rest = raw[2:]
            out.append(("q", rest[:-2] if rest.endswith("  ") else rest))
            open_quote = rest.strip() != "" and not rest.endswith("  ")
        else:
            out.append(("t", raw))
    return out


def count_session(lines: list[tuple[str, str]]) -> dict[str, Any]:
    got = {"turns": 0, "tool_calls": 0, "errors": 0, "input_tokens": 0, "output_tokens": 0,
           "cache_read_tokens": 0, "cache_creation_tokens": 0, "rejections": 0, "interrupted_turns": 0,
           "edits_applied": 0}
    started = False
    prev = ""
    typed: list[str] = []
    turn_interrupted = False
    last_running = False  # the line before was `Running …`
    for kind, text in lines + [("end", "")]:
        if kind == "u":
            typed.append(text)
            prev = kind
            continue
        if typed:
            if "\n".join(typed).strip():
                got["turns"] += 1
                started = True
                turn_interrupted = False
            typed = []
        if kind == "t" and text.strip():
            started = True
        if kind != "q" or not started:
            prev = kind
            continue
        s = text.strip()
        if not s:
            continue
        running_before, last_running = last_running, False
        if s.startswith("Applied edit to "):
            got["tool_calls"] += 1
            got["edits_applied"] += 1
        elif s.startswith("## SearchReplaceNoExactMatch:") or s.startswith("The LLM did not conform to the edit format.") \
                or s.startswith("## Running: "):
            got["tool_calls"] += 1
            got["errors"] += 1
        elif s.startswith("Running "):
            got["tool_calls"] += 1
            last_running = True
            prev = kind
            continue
        elif s.startswith("Error running command") and running_before:
            got["errors"] += 1
        elif s.startswith("^C"):
            if not turn_interrupted:
                got["interrupted_turns"] += 1
                turn_interrupted = True
        else:
            t = TOK.match(s)
            if t:
                got["input_tokens"] += number(t.group(1))
                got["cache_creation_tokens"] += number(t.group(3)) if t.group(3) else 0
                got["cache_read_tokens"] += number(t.group(5)) if t.group(5) else 0
                got["output_tokens"] += number(t.group(6))
            else:
                q = QUESTION.match(s)
                if q:
                    answer = q.group(4).lower()
                    default = "y" if q.group(2) == "[Y/n]" or q.group(3) == "Yes" else "n"
                    yes = (answer or default)[0] in "ya"
                    if not yes:
                        got["rejections"] += 1
                    elif s.startswith("Add ") and " to the chat?" in s \
                            and not s.startswith(("Add command output", "Add URL", "Add http")):
                        got["tool_calls"] += 1
        prev = kind
    del prev
    return got


def sessions_of(text: str) -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = []
    name, body = "head", []
    for raw in text.splitlines():
        m = START.match(raw)
        if m:
            out.append((name, body))
            name, body = m.group(1), []
        else:
            body.append(raw)
    out.append((name, body))
    return out


def count(folder: Path) -> dict[str, Any]:
    total: dict[str, Any] = {"sessions": 0, "turns": 0, "tool_calls": 0, "errors": 0, "by_session": {}}
    for path in sorted(folder.rglob(".aider.chat.history.md")):
        text = path.read_bytes().decode("utf-8", errors="replace")
        seen: dict[str, int] = {}
        for name, body in sessions_of(text):
            lines = classify(body)
            if not any(k in "ut" and t.strip() for k, t in lines):
                continue
            n = seen.get(name, 0)
            seen[name] = n + 1
            got = count_session(lines)
            total["by_session"][f"{path.parent.name}/{name}#{n}"] = got
            total["sessions"] += 1
            for k in ("turns", "tool_calls", "errors"):
                total[k] += got[k]
    return total


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    result = count(Path(argv[0]))
    if "--json" in argv:
        print(json.dumps(result, indent=1))
    else:
        print(f"{result['sessions']} sessions, {result['turns']} turns, {result['tool_calls']} tool calls, "
              f"{result['errors']} errors")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
