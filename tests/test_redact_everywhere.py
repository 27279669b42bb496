"""No planted secret reaches any store or output (issue 14).

A hand-written Claude directory plants synthetic secrets in every place a transcript carries
text: the prompt, a tool's input and output, a `.env` read, a patch, a subagent's file and
its `.meta.json` (`description`, `agentType`), a plan file in plans/, an ExitPlanMode plan,
a thinking block, a compaction summary and the final answer. After a scan and an index
through the service, the test walks every column of every table of catalog.db, every payload
of every point of the store, the raw bytes of every file under JACKED_HOME (the archive
keeps raw transcripts by design and is left out) and the service's answers (sessions, turns,
export, show, retrieve, restore, timeline, stats, search for each secret).
"""
from __future__ import annotations

import dataclasses
import json
import random
import sqlite3
import string
from pathlib import Path
from typing import Any

import pytest
from kit import assistant, base, prompt, result, system, text, tool_use, write_jsonl

from jacked.config import load_settings
from jacked.query.search import SearchOptions
from jacked.query.stats import StatsQuery
from jacked.query.timeline import TimelineQuery
from jacked.service import Jacked

SID = "5e5e5e5e-1111-4222-8333-444444444444"
PROJECT = "-home-dev-projects-vault"
CWD = "/home/dev/projects/vault"
SLUG = "brave-quiet-otter"
AGENT = "a1b2c3d4e5f60718a"

_R = random.Random(1414)
_ALNUM = string.ascii_letters + string.digits


def _rnd(n: int, alphabet: str = _ALNUM) -> str:
    """n random characters; from a mixed alphabet, holding a digit and both letter cases."""
    while True:
        s = "".join(_R.choice(alphabet) for _ in range(n))
        if not alphabet.startswith(_ALNUM) or (
                any(c.isdigit() for c in s) and any(c.islower() for c in s) and any(c.isupper() for c in s)):
            return s


# Every value synthetic; each of a different form, so a leak names its path.
S = {
    "prompt_token": "ghp_" + _rnd(36),
    "prompt_cli": _rnd(14) + "!",                        # docker login -p X
    "tool_input": _rnd(16),                              # curl -u admin:X
    "tool_output": _rnd(40, _ALNUM + "+/"),              # AWS_SECRET_ACCESS_KEY=X
    "env_password": _rnd(18),                            # DB_PASSWORD=X in a .env read
    "env_bare": _rnd(44),                                # a bare high-entropy line of the .env
    "patch": "sk-proj-" + _rnd(40),                      # in an Edit's new_string and its patch
    "agent_prompt": "sk-ant-api03-" + _rnd(93, _ALNUM + "_-") + "AA",
    "sub_output": _rnd(32),                              # Cookie: sessionid=X in the subagent
    "sub_answer": "glpat-" + _rnd(20),                   # the subagent's report
    "meta_description": _rnd(16),                        # --password X in .meta.json description
    "meta_agent_type": "xoxb-" + _rnd(11, "0123456789") + "-" + _rnd(13, "0123456789") + "-" + _rnd(24),
    "plan": _rnd(86, _ALNUM + "+/") + "==",              # AccountKey=X in the plan
    "thinking": _rnd(14),                                # mysql -pX in a thinking block
    "compact": _rnd(48),                                 # bare token in the compaction summary
    "answer": _rnd(18),                                  # postgres://app:X@db in the final text
    "hf": "hf_" + _rnd(34, string.ascii_letters),        # --token hf_ in a later prompt
}


def _write_claude_dir(claude: Path) -> None:
    pdir = claude / "projects" / PROJECT
    kw: dict[str, Any] = {"sessionId": SID, "cwd": CWD, "slug": SLUG}
    env_text = (f"APP_ENV=dev\nDB_PASSWORD={S['env_password']}\n# old backup key, keep for now\n"
                f"{S['env_bare']}\nLOG_LEVEL=debug\n")
    old, new = "API_KEY = ''", f"API_KEY = '{S['patch']}'"
    patch = [{"oldStart": 3, "oldLines": 1, "newStart": 3, "newLines": 1, "lines": [f"-{old}", f"+{new}"]}]
    plan = (f"# Plan\n1. Move storage to the new account: DefaultEndpointsProtocol=https;AccountName=vaultprod;"
            f"AccountKey={S['plan']};EndpointSuffix=core.windows.net\n2. Rotate the key after the move.\n")
    sub_result = f"Rotated it. The new deploy token is {S['sub_answer']}."
    records = [
        prompt(f"my token is {S['prompt_token']} and the registry login is "
               f"`docker login -u me -p {S['prompt_cli']} registry.example.com` - why does the push fail?",
               t=1, **kw),
        assistant("msg_01think", {"type": "thinking", "thinking": f"Maybe they ran mysql -uroot -p{S['thinking']} "
                                  "earlier; check the registry first.", "signature": "EqQBCkYIBhgCKkA" + _rnd(200)},
                  t=2, **kw),
        assistant("msg_01a", tool_use("toolu_01curl", "Bash",
                                      command=f"curl -u admin:{S['tool_input']} https://registry.example.com/v2/",
                                      description="Check the registry"), t=3, **kw),
        result("toolu_01curl", "AWS_REGION=eu-west-1\nAWS_SECRET_ACCESS_KEY=" + S["tool_output"] + "\n", t=4,
               tur={"stdout": "AWS_SECRET_ACCESS_KEY=" + S["tool_output"], "stderr": "", "interrupted": False},
               **kw),
        assistant("msg_01b", tool_use("toolu_01read", "Read", file_path=f"{CWD}/.env"), t=5, **kw),
        result("toolu_01read", env_text, t=6,
               tur={"type": "text", "file": {"filePath": f"{CWD}/.env", "content": env_text, "numLines": 5}}, **kw),
        assistant("msg_01c", tool_use("toolu_01edit", "Edit", file_path=f"{CWD}/app/settings.py",
                                      old_string=old, new_string=new), t=7, **kw),
        result("toolu_01edit", "The file has been updated.", t=8,
               tur={"filePath": f"{CWD}/app/settings.py", "oldString": old, "newString": new,
                    "originalFile": f"import os\n\n{old}\n", "structuredPatch": patch, "userModified": False},
               **kw),
        assistant("msg_01d", tool_use("toolu_01agent", "Agent", description="Rotate the deploy token",
                                      subagent_type="general-purpose",
                                      prompt=f"Rotate the token; the admin key is {S['agent_prompt']}"), t=9, **kw),
        result("toolu_01agent", [{"type": "text", "text": sub_result}], t=30,
               tur={"status": "completed", "agentId": AGENT, "prompt": "Rotate the token",
                    "content": [{"type": "text", "text": sub_result}], "totalDurationMs": 20000}, **kw),
        assistant("msg_01e", tool_use("toolu_01plan", "ExitPlanMode", plan=plan), t=31, **kw),
        result("toolu_01plan", "User has approved your plan.", t=32, tur={"plan": plan, "isAgent": False}, **kw),
        system("compact_boundary", t=40, content="Conversation compacted", level="info",
               compactMetadata={"trigger": "auto", "preTokens": 150000}, **kw),
        prompt("This session is being continued from a previous conversation that ran out of context. "
               f"Summary: the user shared the key {S['compact']} and asked to rotate it.", t=41,
               isCompactSummary=True, **kw),
        prompt(f"also log in to the hub: huggingface-cli login --token {S['hf']}", t=42, **kw),
        assistant("msg_01f", text(f"Done. The app now uses postgres://app:{S['answer']}@db.internal:5432/app "
                                  "and the registry login works."), t=43,
                  usage={"input_tokens": 10, "output_tokens": 20}, **kw),
    ]
    write_jsonl(pdir / f"{SID}.jsonl", records)
    sub = [
        base(10, type="user", isSidechain=True, agentId=AGENT, sessionId=SID, cwd=CWD,
             message={"role": "user", "content": f"Rotate the token; the admin key is {S['agent_prompt']}"}),
        assistant("msg_01s1", tool_use("toolu_01sub", "Bash", command="curl -sI https://app.example.com/login"),
                  t=11, isSidechain=True, agentId=AGENT, sessionId=SID, cwd=CWD),
        result("toolu_01sub", f"HTTP/2 200\nSet-Cookie: theme=dark\nCookie: sessionid={S['sub_output']}; lang=en\n",
               t=12, isSidechain=True, agentId=AGENT, sessionId=SID, cwd=CWD),
        assistant("msg_01s2", text(sub_result), t=13, isSidechain=True, agentId=AGENT, sessionId=SID, cwd=CWD,
                  usage={"input_tokens": 5, "output_tokens": 9}),
    ]
    write_jsonl(pdir / SID / "subagents" / f"agent-{AGENT}.jsonl", sub)
    (pdir / SID / "subagents" / f"agent-{AGENT}.meta.json").write_text(json.dumps({
        "agentType": S["meta_agent_type"],
        "description": f"deploy with --password {S['meta_description']}",
    }))
    (claude / "plans").mkdir(parents=True, exist_ok=True)
    (claude / "plans" / f"{SLUG}.md").write_text(plan)


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, dense_embedder: Any) -> Jacked:
    claude = tmp_path_factory.mktemp("leaky-claude")
    _write_claude_dir(claude)
    home = tmp_path_factory.mktemp("leaky-home")
    j = Jacked(load_settings(claude, jacked_home=str(home), user_name="ada"))
    report = j.backfill()
    assert not report.errors, report.errors
    return j


def _planted_in_source(claude: Path) -> None:
    raw = b"".join(p.read_bytes() for p in claude.rglob("*") if p.is_file())
    for name, value in S.items():
        assert value.encode() in raw, f"{name} is not planted"


def _leaks(blob: str) -> list[str]:
    return [name for name, value in S.items() if value in blob]


def test_the_secrets_are_planted(service: Jacked) -> None:
    _planted_in_source(service.settings.claude_dir)
    # the places the test means to cover are really read: a subagent, a plan, a compaction
    turns = service.turns(SID)
    blob = json.dumps(turns)
    assert "Rotate the deploy token" in blob and "[REDACTED:" in blob


def test_every_catalog_column_is_clean(service: Jacked) -> None:
    service.close()
    con = sqlite3.connect(service.settings.catalog_path)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        assert len(tables) >= 5, tables
        leaks: list[tuple[str, str, str]] = []
        cells = 0
        for table in tables:
            cur = con.execute(f'SELECT * FROM "{table}"')
            cols = [d[0] for d in cur.description]
            for row in cur:
                for col, value in zip(cols, row):
                    cells += 1
                    if isinstance(value, bytes):
                        value = value.decode("utf-8", "replace")
                    if isinstance(value, str):
                        leaks += [(table, col, name) for name in _leaks(value)]
        assert cells > 100
        assert not leaks, leaks
    finally:
        con.close()


def test_every_point_payload_is_clean(service: Jacked) -> None:
    with service.indexer.open_store(must_exist=True) as store:
        points = list(store.scroll(None, None))
    assert len(points) >= 3
    keys: set[str] = set()
    leaks = []
    for p in points:
        keys.update(p.payload)
        leaks += [(p.id, name) for name in _leaks(json.dumps(p.payload, default=str))]
    assert keys  # every payload key was read (json.dumps walks all of them)
    assert not leaks, leaks


def test_no_file_under_jacked_home_holds_a_secret(service: Jacked) -> None:
    home = service.settings.home
    files = [p for p in home.rglob("*") if p.is_file() and "archive" not in p.relative_to(home).parts]
    assert files
    leaks = []
    for p in files:
        data = p.read_bytes()
        leaks += [(str(p.relative_to(home)), name) for name, value in S.items() if value.encode() in data]
    assert not leaks, leaks


def _dump(obj: Any) -> str:
    def default(o: Any) -> Any:
        if dataclasses.is_dataclass(o) and not isinstance(o, type):
            return dataclasses.asdict(o)
        return str(o)
    return json.dumps(obj, default=default)


def test_no_answer_of_the_service_prints_a_secret(service: Jacked) -> None:
    answers: dict[str, Any] = {
        "sessions": service.sessions(),
        "turns": service.turns(SID),
        "show": service.session_view(SID),
        "export": service.export(),
        "retrieve": service.retrieve([SID], mode="full", budget=50_000, check_git=False),
        "restore": service.restore(SID, 4000),
        "timeline": list(service.timeline(TimelineQuery(session_id=SID))),
        "stats": service.stats(StatsQuery()),
    }
    for name, value in S.items():
        found = service.search(value, SearchOptions(limit=10))
        answers[f"search {name}"] = found.get("results", [])
    leaks = [(where, name) for where, answer in answers.items() for name in _leaks(_dump(answer))]
    assert not leaks, leaks
