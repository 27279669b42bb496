"""Recall on the prompt (issue 39): the UserPromptSubmit hook speaks only when a prompt follows up
earlier work of this repo, within its budget, never about the current session, never from another
repo without a verbatim match; `#nomem` and `exclude` silence it. Real fixtures, real model, Edge shard."""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from kit import REAL
from test_cli_history import jacked_cmd

from jacked.config import Settings, load_settings
from jacked.query.prompt_recall import refers_to_earlier_work
from jacked.service import Jacked
from jacked.util.tokens import count_tokens

CWD = "/src/experiments/claude_p"
FIRST = "2b4ed4c0-b905-41de-9238-273db3ec737a"  # "Search if claude -p can make use of WebSearch and Task tool…"
REPEAT = "256ba646-2c15-437a-98e9-4171aafd030e"  # the same prompt typed again six minutes later
TOOLS = "94604a7b-062f-4369-bdf0-da948381c3e5"  # "What are the tools that are available to you…"
FOLLOW_UP = "like last time, find out if claude -p can use WebSearch, this time with the Sonnet model"


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, dense_embedder: Any) -> Settings:
    root = tmp_path_factory.mktemp("prompt-recall")
    claude = root / "claude"
    for project in ("-src-experiments-claude_p", "-experiments-worktrees"):
        shutil.copytree(REAL / "projects" / project, claude / "projects" / project)
    settings = load_settings(claude, jacked_home=str(root / "home"), user_name="ada")
    with _service(settings) as svc:
        svc.backfill()
    return settings


@contextmanager
def _service(settings: Settings) -> Iterator[Jacked]:
    svc = Jacked(settings, scan=False)
    try:
        yield svc
    finally:
        svc.close()


def _recall(settings: Settings, prompt: str, cwd: str = CWD, **kw: Any) -> dict[str, Any]:
    with _service(settings) as svc:
        return svc.prompt_recall(prompt, cwd, **kw)


def _hook(settings: Settings, payload: dict[str, Any]) -> subprocess.CompletedProcess:
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(settings.claude_dir), JACKED_HOME=str(settings.home),
               JACKED_USER_NAME="ada", NO_COLOR="1")
    return subprocess.run(jacked_cmd() + ["recall", "--hook"], input=json.dumps(payload), capture_output=True,
                          text=True, env=env, timeout=180)


def test_the_added_aider_excerpt_is_the_recorded_bytes() -> None:
    """The labels' added Aider histories are the public file's bytes their README records. `aug05` may be
    absent (its README section says how to rebuild it): checked when present."""
    bench = Path(__file__).resolve().parents[1] / "benchmarks" / "prompt_recall"
    digests = re.findall(r"SHA-256 `([0-9a-f]{64})`", (bench / "README.md").read_text())
    assert len(digests) == 3
    for folder, digest in zip(("aug14", "aug09", "aug05"), digests, strict=True):
        path = bench / "aider" / folder / ".aider.chat.history.md"
        if folder == "aug05" and not path.exists():
            continue
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, folder


def test_follow_up_words_are_told_from_other_prompts() -> None:
    for said in ("like we did last time, add a test", "the bug from yesterday is back",
                 "continue the migration to AudioWorklet", "the workflow we tested with act before fails",
                 "pick up where we left off"):
        assert refers_to_earlier_work(said), said
    for said in ("add a --version flag", "we need to run the tests before merging", "try again",
                 "Wait, does it only run on main?", "write a haiku about autumn"):
        assert not refers_to_earlier_work(said), said


def test_hook_prints_the_sessions_a_follow_up_refers_to(indexed: Settings) -> None:
    p = _hook(indexed, {"hook_event_name": "UserPromptSubmit", "prompt": FOLLOW_UP, "cwd": CWD,
                        "session_id": "00000000-0000-4000-8000-000000000001", "transcript_path": "/nowhere.jsonl"})
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert list(out) == ["hookSpecificOutput"]
    assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    context = out["hookSpecificOutput"]["additionalContext"]
    assert FIRST in context or REPEAT in context
    assert "jacked retrieve" in context and "2026-01-23" in context
    assert count_tokens(context) <= 300


def test_hook_is_silent_on_an_unrelated_prompt_and_on_garbage(indexed: Settings) -> None:
    p = _hook(indexed, {"hook_event_name": "UserPromptSubmit", "prompt": "write a haiku about autumn", "cwd": CWD,
                        "session_id": "s"})
    assert (p.returncode, p.stdout) == (0, "")
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(indexed.claude_dir), JACKED_HOME=str(indexed.home))
    bad = subprocess.run(jacked_cmd() + ["recall", "--hook"], input="{not json", capture_output=True, text=True,
                         env=env, timeout=120)
    assert (bad.returncode, bad.stdout) == (0, "")
    assert "recall hook failed" in (indexed.home / "logs" / "hook.log").read_text()


def test_unrelated_prompts_inject_nothing(indexed: Settings) -> None:
    # typed in the session that holds the second prompt, the one real prompt here that follows up nothing
    for prompt in ("write a haiku about autumn", "What are the tools that are available to you (allowed or not)?",
                   "explain how Python's asyncio event loop schedules coroutines", "/model", "please fix these"):
        said = _recall(indexed, prompt, session_id=TOOLS)
        assert said["text"] == "" and said["sessions"] == [], (prompt, said)


def test_nomem_and_exclude_turn_it_off(indexed: Settings) -> None:
    assert _recall(indexed, FOLLOW_UP)["sessions"]
    said = _recall(indexed, FOLLOW_UP + " #nomem")
    assert (said["text"], said["reason"]) == ("", "#nomem")
    excluded = indexed.model_copy(update={"exclude": ["claude_p"]})
    said = _recall(excluded, FOLLOW_UP)
    assert (said["text"], said["reason"]) == ("", "excluded")


def test_never_the_current_session_but_its_earlier_copy(indexed: Settings) -> None:
    prompt = ("Search if claude -p can make use of WebSearch and Task tool. Especially the Task with Haiku model. "
              "Summarize the findings.")
    said = _recall(indexed, prompt, session_id=REPEAT)
    assert REPEAT not in said["sessions"] and said["sessions"][:1] == [FIRST], said
    assert REPEAT not in said["text"]


def test_another_repo_only_on_a_verbatim_match(indexed: Settings) -> None:
    elsewhere = "/home/me/other-project"
    assert _recall(indexed, FOLLOW_UP, cwd=elsewhere)["text"] == ""
    assert _recall(indexed, "continue the overview of the code organization with Explore", cwd=elsewhere)["text"] == ""
    said = _recall(indexed, 'where did I see "can make use of WebSearch and Task tool" before?', cwd=elsewhere)
    assert set(said["sessions"]) & {FIRST, REPEAT}
    assert "repo claude_p" in said["text"]
    # one name, however long, is in every repo that uses it: no session of another repo for it
    # (in claude_p itself the same prompt gets TOOLS: the verbatim-name test below)
    said = _recall(indexed, "what are the tools that are available to you, `AskUserQuestion` included?",
                   cwd=elsewhere, session_id="new")
    assert said["sessions"] == [], said


def test_a_verbatim_name_speaks_only_for_a_session_about_the_prompt(indexed: Settings) -> None:
    # TOOLS lists every tool by name: it holds `NotebookEdit` verbatim but is no session about haiku
    said = _recall(indexed, "write a haiku about autumn and keep it in a notebook cell with `NotebookEdit`",
                   session_id="new")
    assert said["sessions"] == [], said
    # ... and is the session a question about the tools available, naming one, follows up
    said = _recall(indexed, "what are the tools that are available to you, `AskUserQuestion` included?",
                   session_id="new")
    assert (said["sessions"], said["reason"]) == ([TOOLS], "verbatim match"), said


def test_time_words_cue_a_follow_up_but_do_not_narrow_the_search(indexed: Settings) -> None:
    # "yesterday" is the day before today, when the sessions are older: they are still found
    said = _recall(indexed, "the WebSearch check with claude -p we did yesterday, redo it with Sonnet",
                   session_id="new")
    assert set(said["sessions"]) & {FIRST, REPEAT}, said
    said = _recall(indexed, "the Kubernetes ingress we set up yesterday broke again", session_id="new")
    assert said["sessions"] == [] and said["reason"] == "follow-up words, no matching session", said


def test_also_opening_a_session_refers_to_earlier_work(indexed: Settings) -> None:
    prompt = "also check whether claude -p can use WebSearch with the Sonnet model"
    said = _recall(indexed, prompt, session_id="00000000-0000-4000-8000-000000000002")
    assert set(said["sessions"]) & {FIRST, REPEAT} and said["reason"] == "follow-up words", said
    # typed after a session's first prompt, "also" adds to that session's own work
    assert _recall(indexed, prompt, session_id=TOOLS)["sessions"] == []


def test_the_context_fits_its_budget(indexed: Settings) -> None:
    full = _recall(indexed, FOLLOW_UP)
    assert full["sessions"] and full["tokens"] == count_tokens(full["text"]) <= 300
    small = _recall(indexed, FOLLOW_UP, max_tokens=100)
    assert count_tokens(small["text"]) <= 100
    assert len(small["sessions"]) < len(full["sessions"]) or full["tokens"] <= 100


def _eval_script() -> Any:
    spec = importlib.util.spec_from_file_location(
        "prompt_recall_eval", Path(__file__).resolve().parents[1] / "scripts" / "prompt_recall_eval.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_eval_script_counts_hits_and_false_injections(indexed: Settings) -> None:
    module = _eval_script()
    labels = [lab for lab in module.load_labels(module.LABELS) if lab["cwd"] == CWD]
    # 3 prompts that follow up a claude_p session (1 real, 2 written), 3 that follow up nothing (2 real)
    assert sorted((bool(lab["expect"]), lab["source"].split(":")[0]) for lab in labels) == [
        (False, "real"), (False, "real"), (False, "written"), (True, "real"), (True, "written"), (True, "written")]
    with _service(indexed) as svc:
        figures = module.evaluate(svc, labels)["figures"]
    assert (figures["follow_up_prompts"], figures["other_prompts"]) == (3, 3)
    assert figures["hits"] == 3 and figures["false_injections"] == 0
    assert figures["max_tokens_used"] <= 300


# Aider's own public history (tests/fixtures/aider/real/shell, 2024-08-21): its author asks for the
# same change three times in three sessions and names the code he works on, never saying "again".
SHELL_HISTORY = Path(__file__).resolve().parent / "fixtures" / "aider" / "real" / "shell"
RETRIED = ("if the shell command is more than 1 line, after confirmation issue each command on its own. "
           "ask for the approval once, then run all the commands.")


@pytest.fixture(scope="module")
def aider_indexed(tmp_path_factory: pytest.TempPathFactory, dense_embedder: Any) -> tuple[Settings, Path]:
    root = tmp_path_factory.mktemp("prompt-recall-aider")
    shutil.copytree(SHELL_HISTORY, root / "aider" / "shell")
    (root / "claude").mkdir()
    settings = load_settings(root / "claude", jacked_home=str(root / "home"), user_name="ada")
    before = os.environ.get("JACKED_AIDER_ROOT")
    os.environ["JACKED_AIDER_ROOT"] = str(root / "aider")
    try:
        with _service(settings) as svc:
            svc.backfill()
    finally:
        if before is None:
            del os.environ["JACKED_AIDER_ROOT"]
        else:
            os.environ["JACKED_AIDER_ROOT"] = before
    return settings, root / "aider" / "shell"


def _aider_session(repo: Path, started: str) -> str:
    from jacked.sources.aider.history import Block
    from jacked.sources.aider.source import session_id_of

    return session_id_of(repo / ".aider.chat.history.md", Block(started, 0, "", 0))


def test_a_request_retried_in_a_new_session_gets_the_earlier_one(aider_indexed: tuple[Settings, Path]) -> None:
    settings, repo = aider_indexed
    first, retry = _aider_session(repo, "2024-08-21 13:08:07"), _aider_session(repo, "2024-08-21 13:11:09")
    said = _recall(settings, RETRIED, cwd=str(repo), session_id=retry, until="2024-08-21T13:11:09.000Z")
    assert first in said["sessions"] and retry not in said["sessions"], said
    assert said["tokens"] <= 300 and "the same request" in said["text"]


def test_code_named_by_few_recent_sessions_weighs_most(aider_indexed: tuple[Settings, Path]) -> None:
    """A name one session holds outweighs a name several hold; the weight grows with the history, so
    four sessions are too few for any to reach CODE_MIN_WEIGHT (silence, below)."""
    from jacked.catalog.retrieve_queries import recent_work
    from jacked.query.prompt_recall import code_matches, named_code

    settings, repo = aider_indexed
    prompt = "make handle_shell_commands in EditBlockCoder print each command before apply_edits runs it"
    assert named_code(prompt) == {"handle_shell_commands", "EditBlockCoder", "apply_edits"}
    assert named_code("run `pytest tests/basic` with --verbose on aider/main.py and self.io.tool_output()") == {
        "pytest tests/basic", "--verbose", "aider/main.py", "self.io.tool_output"}
    with _service(settings) as svc:
        works = recent_work(svc.catalog, "shell", "2024-08-20T15:20:00.000Z", "2024-08-21T15:20:00.000Z")
    weights = code_matches(named_code(prompt), works)
    refactor = _aider_session(repo, "2024-08-21 13:11:44")  # moved handle_shell_commands into EditBlockCoder
    best = max(weights, key=lambda sid: weights[sid][0])
    assert best == refactor and weights[refactor][1] == ["EditBlockCoder", "apply_edits", "handle_shell_commands"]
    assert all(w < weights[refactor][0] for sid, (w, _) in weights.items() if sid != refactor)


def test_code_few_sessions_hold_in_a_short_history_stays_silent(aider_indexed: tuple[Settings, Path]) -> None:
    settings, repo = aider_indexed
    for prompt in ("add frobnicate_widgets to the WidgetRegistry class", "write a haiku about autumn"):
        said = _recall(settings, prompt, cwd=str(repo), session_id="new", until="2024-08-21T15:20:00.000Z")
        assert said["sessions"] == [], (prompt, said)
    # (two hours after it, the refactor's names carry on that session: the next test)
    # a day later the sessions are out of the window: the same names point at nothing recent
    said = _recall(settings, "make handle_shell_commands in EditBlockCoder print each command before apply_edits runs it",
                   cwd=str(repo), session_id="new", until="2024-08-23T15:20:00.000Z")
    assert said["sessions"] == [], said


def test_a_prompt_about_the_latest_work_gets_it(aider_indexed: tuple[Settings, Path]) -> None:
    """No follow-up words, no verbatim phrase: the repo's latest session, ended minutes ago, is what
    the search ranks first and is sure of by the prompt's words, so it speaks; an unrelated prompt, or
    the same one typed once that session lies a day back, stays silent."""
    from jacked.query.prompt_recall import RECENT_HOURS

    settings, repo = aider_indexed
    refactor = _aider_session(repo, "2024-08-21 13:11:44")  # moved the shell commands into a method
    prompt = "the method that runs the shell commands should print each command before it runs it"
    said = _recall(settings, prompt, cwd=str(repo), session_id="new", until="2024-08-21T13:40:00.000Z")
    assert said["sessions"] == [refactor] and said["reason"] == "about its latest work", said
    said = _recall(settings, "write a haiku about autumn leaves falling", cwd=str(repo), session_id="new",
                   until="2024-08-21T13:40:00.000Z")
    assert said["sessions"] == [], said
    later = f"2024-08-{21 + RECENT_HOURS // 24 + 1}T13:40:00.000Z"
    said = _recall(settings, prompt, cwd=str(repo), session_id="new", until=later)
    assert refactor not in said["sessions"], said


def test_a_replayed_prompt_searches_the_index_as_it_stood_then(indexed: Settings) -> None:
    """`as_of` (set by a replay's `until`) leaves out every text written at or after it: later
    sessions neither show nor set the scale the scores are read on."""
    from jacked.query.options import SearchOptions
    from jacked.util.time import parse_ts

    query = "what are the tools that are available to you"
    with _service(indexed) as svc:
        today = svc.search(query, SearchOptions(limit=10))["results"]
        then = parse_ts("2026-01-23T17:25:00.000Z")  # after FIRST and REPEAT, before TOOLS began
        back = svc.search(query, SearchOptions(limit=10, as_of=then))["results"]
        # the verbatim check of turns' raw text reads only the turns begun before then
        assert svc.catalog.raw_texts_of([FIRST], "WebSearch")
        assert svc.catalog.raw_texts_of([FIRST], "WebSearch", before="2026-01-23T17:13:00.000Z") == []
    score_today = {r["session_id"]: r["score"] for r in today}
    assert today[0]["session_id"] == TOOLS
    assert back and TOOLS not in {r["session_id"] for r in back}
    # the best of what was there leads the scale: it scores more than beside the later session
    best = back[0]["session_id"]
    assert best in (FIRST, REPEAT) and back[0]["score"] > score_today[best], (back[0], score_today)


def test_a_short_request_about_a_session_of_the_day_gets_it(aider_indexed: tuple[Settings, Path]) -> None:
    """A terse next step about a session of the day that is not the repo's latest (the refactor came
    after it): the search is sure of it by the prompt's few words, so it speaks. The same words in a
    longer prompt, or a day later, do not: a longer prompt graded so is as often new work."""
    from jacked.query.prompt_recall import RECENT_HOURS, SHORT_REQUEST_WORDS

    settings, repo = aider_indexed
    tried = {_aider_session(repo, "2024-08-21 13:08:07"), _aider_session(repo, "2024-08-21 13:11:09")}
    prompt = "split multi-line shell commands into separate commands"
    assert len(prompt.split()) <= SHORT_REQUEST_WORDS
    said = _recall(settings, prompt, cwd=str(repo), session_id="new", until="2024-08-21T15:30:00.000Z")
    assert said["sessions"] and set(said["sessions"]) <= tried, said
    assert said["reason"] == "a short request about recent work", said
    longer = prompt + " and print each one before it runs"
    said = _recall(settings, longer, cwd=str(repo), session_id="new", until="2024-08-21T15:30:00.000Z")
    assert not tried & set(said["sessions"]), said
    later = f"2024-08-{21 + RECENT_HOURS // 24 + 1}T15:30:00.000Z"
    said = _recall(settings, prompt, cwd=str(repo), session_id="new", until=later)
    assert said["sessions"] == [], said


def test_a_label_holding_its_prompts_hash_reads_the_prompt_from_the_history() -> None:
    """Labels on histories without a licence hold the prompt's SHA-256: the eval reads the session's
    first typed prompt from the history (not a /command; the model's own `#### ` headings, which lack
    Aider's two trailing spaces, are not typed) and refuses a history that does not hold it."""
    module = _eval_script()
    history = SHELL_HISTORY / ".aider.chat.history.md"
    asked = "if the shell command is more than 1 line, after confirmation issue each command on its own"
    assert module.first_prompt(history, "2024-08-21 13:08:07") == asked
    assert module.first_prompt(history, "2024-08-21 12:32:16") is None  # /add, /tok and /ex only
    assert module.first_prompt(history, "2024-08-21 13:11:44").startswith("if the shell command is more")
    label = {"agent": "aider", "cwd": "aider/shell", "session_id": "aider:shell@2024-08-21 13:08:07",
             "prompt_sha256": hashlib.sha256(asked.encode()).hexdigest()}
    assert module.fill_prompts([label], SHELL_HISTORY.parent)[0]["prompt"] == asked
    with pytest.raises(SystemExit, match="not the labelled one"):
        module.fill_prompts([{**label, "prompt_sha256": "0" * 64}], SHELL_HISTORY.parent)
