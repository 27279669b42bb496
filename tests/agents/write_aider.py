"""Write Aider sessions from a neutral spec, as Aider appends them to a repository's history.

    write_session(root, spec) -> the session id jacked gives it (see below)
    expected_calls(turn)      -> (calls, errors) Aider's file can tell of that turn

`root` is the folder searched for chat histories (`JACKED_AIDER_ROOT`); the session goes to
`<root>/<last part of the cwd>/.aider.chat.history.md` (appended, after a blank line, as Aider
does) and its prompts, with their times, to `.aider.input.history` beside it. The spec is the
one of `write_gemini.py`.

As Aider writes them (aider/io.py, aider/coders/base_coder.py): a `# aider chat started at
<local time>` header and start-up notices; each prompt as `#### ` lines; the answer, its edit
blocks (a SEARCH/REPLACE block per edit, the whole file per write), then the `> Tokens:` report
and what Aider did, each as a `> ` notice ending with two spaces: `Applied edit to PATH`
(an edit or write), `## SearchReplaceNoExactMatch: …` (a failed edit), `The LLM did not conform
to the edit format.` (a failed write), `Add file to the chat?` answered `y` after the path (a
read), a shell command, `Run shell command? [Y/n] y` and `Running CMD` (its output is printed, not written). Aider
has no search tool (the model sees the repo map) and records neither a failed read nor a
shell command's exit code: those calls are left out, or written without their error.

The session id is jacked's documented rule (`jacked/sources/aider/source.py`): `aider-` and the
first 24 hex digits of BLAKE2b-96 of `<file's absolute path>\\0<header time>#<n>`, n counting the
sessions of that file with the same header time.

Standard library only; imports nothing from jacked.
"""
from __future__ import annotations

import hashlib
import re
from datetime import datetime, UTC
from pathlib import Path
from typing import Any

CHAT = ".aider.chat.history.md"
INPUT = ".aider.input.history"


def _local(ts: str) -> datetime:
    d = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    d = d if d.tzinfo else d.replace(tzinfo=UTC)
    return d.astimezone()  # Aider writes this machine's local time


def _note(*lines: str) -> str:
    return "".join(f"> {line}  \n" for line in lines)


def expected_calls(turn: dict[str, Any]) -> tuple[int, int]:
    calls = errors = 0
    for c in turn["calls"]:
        if c["kind"] == "search" or (c["kind"] == "read" and c["error"]):
            continue
        calls += 1
        errors += bool(c["error"]) and c["kind"] in ("edit", "write")
    return calls, errors


def _name(cwd: str) -> str:
    return re.split(r"[\\/]", cwd.rstrip("/\\"))[-1] or "project"


def write_session(root: Path, spec: dict[str, Any]) -> str:
    folder = root / _name(spec["cwd"])
    folder.mkdir(parents=True, exist_ok=True)
    chat = folder / CHAT
    started = _local(spec["started_at"]).strftime("%Y-%m-%d %H:%M:%S")
    before = chat.read_text(encoding="utf-8") if chat.exists() else ""
    ordinal = before.count(f"\n# aider chat started at {started}\n")
    out = [f"\n# aider chat started at {started}\n\n",
           _note(f"aider --model {spec.get('model') or 'gpt-4o'}", "Aider v0.86.1",
                 f"Main model: {spec.get('model') or 'gpt-4o'} with diff edit format", "Git repo: .git with 12 files")]
    inputs = []
    for turn in spec["turns"]:
        prompt = turn["prompt"].strip()
        out.append("\n" + "".join(f"#### {line}  \n" if line.strip() else "####   \n" for line in prompt.split("\n")))
        inputs.append(f"\n# {_local(turn['at']).strftime('%Y-%m-%d %H:%M:%S.%f')}\n"
                      + "".join(f"+{line}\n" for line in prompt.split("\n")))
        reply = [turn.get("assistant") or "Done."]
        notes: list[str] = []
        for c in turn["calls"]:
            path = c.get("path") or "file.txt"
            if c["kind"] == "edit":
                reply.append(f"{path}\n```\n<<<<<<< SEARCH\n{c.get('old') or ''}\n=======\n{c.get('new') or ''}\n"
                             ">>>>>>> REPLACE\n```")
                notes.append(f"## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in {path}"
                             if c["error"] else f"Applied edit to {path}")
            elif c["kind"] == "write":
                reply.append(f"{path}\n```\n{c.get('content') or ''}\n```")
                notes.append("The LLM did not conform to the edit format." if c["error"] else f"Applied edit to {path}")
            elif c["kind"] == "read" and not c["error"]:
                notes += [path, "Add file to the chat? (Y)es/(N)o/(A)ll/(S)kip all/(D)on't ask again [Yes]: y"]
            elif c["kind"] == "shell":
                command = (c.get("command") or "true").split("\n")[0]
                # the output goes to the terminal only (aider/run_cmd.py), never to the history
                notes += [command, "Run shell command? [Y/n] y", f"Running {command}"]
        out.append("\n" + "\n\n".join(r for r in reply if r).rstrip() + "\n\n")
        out.append(_note(f"Tokens: {turn.get('input_tokens') or 0} sent, {turn.get('output_tokens') or 0} received.",
                         *notes))
    with chat.open("a", encoding="utf-8") as fh:
        fh.write("".join(out))
    with (folder / INPUT).open("a", encoding="utf-8") as fh:
        fh.write("".join(inputs))
    key = f"{chat.absolute()}\0{started}#{ordinal}"
    return "aider-" + hashlib.blake2b(key.encode(), digest_size=12).hexdigest()
