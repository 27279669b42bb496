"""A Claude Code turn's raw text holds what its transcript holds and a person greps for (issue 39's
"exact strings held by one session at rank 1"): a name in the middle of a long file read (past the
10,000 + 5,000 characters each piece kept before), a line only in the copy of a file an edit changed
(`toolUseResult.originalFile`), and a failed call's result as Claude Code recorded it ("Error: …",
in `toolUseResult` only). Each is found verbatim; a file's lines already read are not kept twice;
a secret in the recorded copy is redacted like the rest."""
from __future__ import annotations

from typing import Any

import pytest
from kit import SID, assistant, claude_dir_with, prompt, result, text, tool_use

from jacked.config import load_settings
from jacked.index.indexer import Indexer
from jacked.query.search import SearchOptions, Searcher

BIG = "/home/dev/projects/demo/big_module.py"
OTHER = "/home/dev/projects/demo/settings_loader.py"
SECRET = "ghp_" + "Zq7Xv2Lm9Rt4Kp8Wn3Hs6Jd1Fb5Gc0Ya2Ue7Io"  # synthetic, in a GitHub token's form
MIDDLE = "def zz_reconcile_ledger_rows(batch):"  # line 601 of 1,200: 47,000 characters into a 95,000-character read
ORIGINAL_ONLY = 'FALLBACK_REGION = "qq-north-7"'  # a line of the changed file the session never read
TRACEBACK = "Traceback (most recent call last):"
RECORDED = "Error: " + TRACEBACK  # only Claude Code's record of the result holds the prefix


def _file(lines: int) -> str:
    body = [f"value_{i:04d} = compute_step({i}, scale=1.0)  # padding line of the module" for i in range(lines)]
    body[600] = MIDDLE
    return "\n".join(body)


def _numbered(content: str) -> str:
    """A file as Claude Code's Read returns it to the model (`cat -n`, "→" after the number)."""
    return "\n".join(f"{n:>6}→{line}" for n, line in enumerate(content.splitlines(), 1))


def _records() -> list[dict[str, Any]]:
    big = _file(1200)
    other = f'import os\nTOKEN = "{SECRET}"\n{ORIGINAL_ONLY}\nTIMEOUT = 30\n'
    error = f'{TRACEBACK}\n  File "/app/run.py", line 3, in <module>\nValueError: no ledger rows'
    return [
        prompt("tidy the ledger module", t=0),
        assistant("m1", tool_use("t1", "Read", file_path=BIG), t=1),
        result("t1", _numbered(big), t=2, tur={"type": "text", "file": {"filePath": BIG, "content": big}}),
        # an edit of the file read: its copy before the change holds nothing new
        assistant("m2", tool_use("t2", "Edit", file_path=BIG, old_string="value_0001", new_string="step_0001"), t=3),
        result("t2", f"The file {BIG} has been updated.", t=4,
               tur={"filePath": BIG, "oldString": "value_0001", "newString": "step_0001", "originalFile": big,
                    "structuredPatch": []}),
        # an edit of a file never read in the session: only its copy before the change holds its lines
        assistant("m3", tool_use("t3", "Edit", file_path=OTHER, old_string="TIMEOUT = 30", new_string="TIMEOUT = 60"), t=5),
        result("t3", f"The file {OTHER} has been updated.", t=6,
               tur={"filePath": OTHER, "oldString": "TIMEOUT = 30", "newString": "TIMEOUT = 60", "originalFile": other,
                    "structuredPatch": []}),
        assistant("m4", tool_use("t4", "Bash", command="python /app/run.py"), t=7),
        result("t4", error, is_error=True, t=8, tur="Error: " + error),
        assistant("m5", text("The ledger has no rows to reconcile."), t=9),
    ]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, dense_embedder: Any) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("raw-claude")
    claude = claude_dir_with(tmp / "claude", _records())
    settings = load_settings(claude, jacked_home=str(tmp / "home"), user_name="ada")
    indexer = Indexer(settings)
    assert indexer.backfill().errors == []
    with indexer.open_store(must_exist=True) as store:
        searcher = Searcher(settings, store, indexer.dense, indexer.sparse, indexer.catalog)
        answers = {q: searcher.search(f'"{q}"', SearchOptions(limit=3)) for q in (MIDDLE, ORIGINAL_ONLY, RECORDED)}
    return {"raw": "\n".join(indexer.catalog.turn_texts(SID).values()), "answers": answers}


def test_the_strings_sit_where_the_old_caps_lost_them() -> None:
    read = _numbered(_file(1200))
    assert len(read) > 15000 + 10000 and 10000 < read.find(MIDDLE) < len(read) - 5000  # past head and tail
    assert RECORDED not in "\n".join(str(r["message"]) for r in _records())  # in `toolUseResult` only


@pytest.mark.parametrize("query", [MIDDLE, ORIGINAL_ONLY, RECORDED])
def test_a_string_the_transcript_holds_is_found_verbatim(indexed: dict[str, Any], query: str) -> None:
    assert query in indexed["raw"]
    top = indexed["answers"][query]["results"][0]
    assert (top["session_id"], top["exact"]) == (SID, True)
    assert query.lower() in " ".join(top["matches"][0]["text"].split()).lower()  # the line is shown


def test_a_files_lines_already_read_are_kept_once(indexed: dict[str, Any]) -> None:
    raw = indexed["raw"]
    assert raw.count(MIDDLE) == 1  # in the read; the edit's copy of the file adds none of its lines
    assert raw.count("TIMEOUT = 30") == 2  # the edit's argument, and the copy's line (not held before)
    assert raw.count(TRACEBACK) == 2  # the result as sent, and the recorded one's first line only
    assert raw.count("ValueError: no ledger rows") == 1


def test_a_secret_in_the_recorded_copy_is_redacted(indexed: dict[str, Any]) -> None:
    assert SECRET not in indexed["raw"] and 'TOKEN = "[REDACTED' in indexed["raw"]
