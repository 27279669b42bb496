#!/usr/bin/env python3
"""gen_corpus.py - fake but format-faithful ~/.claude transcript corpus + ground truth.

Usage:
    python3 gen_corpus.py --out DIR --sessions N --seed S [--bank public]
                          [--edge-cases | --no-edge-cases]

Writes DIR/projects/<encoded-cwd>/<session>.jsonl (+ subagent files), DIR/plans/<slug>.md
and DIR/truth.json.  Standard library only, deterministic for a given (seed, sessions,
bank, edge-cases).  The default bank is "public".

GROUND-TRUTH RULES (what truth.json means)
------------------------------------------------------------------------------
Line handling
  * A line that json.loads() rejects (malformed, or the cut-off last line) is skipped and
    counted in session.malformed_lines.
  * A line whose `uuid` was already seen in the same file is a duplicate (written again on
    resume): it is ignored entirely (first occurrence wins).
  * Lines with isSidechain == true (1.0.x inline subagents) never start turns and their
    tool calls never count for the parent.
Turns
  * A turn starts at a human prompt: a main-chain `type:"user"` line whose
    message.content is a string or a list of text/image blocks (no tool_result), and that is
    NOT isMeta, NOT isCompactSummary, NOT "<local-command-stdout>..." / "<local-command-caveat>"
    and NOT "[Request interrupted by user...]".
  * A slash-command line (content contains "<command-name>/") starts a turn too
    (is_slash_command = true), even a local command such as /model that gets no answer.
  * Assistant lines before the first prompt form turn 0 (index 0, prompt null).  Otherwise
    turns are numbered 1, 2, ... in file order.
  * turn.prompt = the string content, or for list content the text blocks joined with "\n"
    (images ignored).  user_prompts = the prompts of turns with index >= 1, in order.
  * A turn lasts until the next turn start; compaction lines, tool results, meta lines,
    interruptions and system lines in between belong to it.
Invocations (per turn, main chain only)
  * Every tool_use block of the turn, in file order.
  * sequence = 0-based index, within the turn, of the API response (distinct message.id)
    that holds the call, counting only responses that contain at least one tool_use.
  * parallel_group = 0 when the call is the only tool_use of its response, else 1..m =
    its position among the tool_use blocks of that response.
  * is_error = the matching tool_result (joined by tool_use_id) has is_error == true
    (absent is_error = false).
  * Subagent tool calls are NOT part of the parent's invocations; the parent's Task/Agent
    call itself is.
Metrics (per turn)
  * tool_call_count, tool_error_count, tool_usage {name: count} over invocations.
  * files_read / files_written / files_modified: input.file_path of successful (not
    is_error) Read / Write / Edit calls, first-occurrence order, de-duplicated.
  * lines_added / lines_removed: over successful Edit and Write calls, the number of lines
    starting with "+" / "-" in toolUseResult.structuredPatch[*].lines.  A Write that creates
    a file (toolUseResult.type == "create") counts all lines of its content as added,
    whether its structuredPatch is [] (1.0.x/2.0.x, as in real files) or spelled out (2.1.x).
  * bash_commands: input.command of every Bash call (errors included), in order;
    bash_error_count: Bash calls whose result is_error.
  * duration_ms: durationMs of the system/turn_duration line inside the turn, else null.
  * started_at: timestamp of the prompt line (turn 0: of its first line).
Other truth fields
  * started_at / ended_at: first / last timestamp of any parsable line of the main file.
  * version_first: `version` of the first line that has one.
  * subagents: [{agent_id, agent_type, file, summary_text, layout, tool_use_id, description}]
    layout "subagents_dir" (2.1.x: <session>/subagents/agent-<17 hex>.jsonl + .meta.json),
    "flat" (2.0.x: agent-<8 hex>.jsonl beside the session, sessionId = parent) or "inline"
    (1.0.x: isSidechain lines inside the main file; agent_id null, no agentId in records,
    as in real 1.0.x files).  summary_text = the text of the subagent's last assistant line.
  * warmup_agents: 2.0.x "Warmup" agent files (noise, not linked to any Task call).
  * queries: kind kw|para|detail; relevant_session_ids = all sessions of the topic.  Detail
    queries also carry detail_text (a string that occurs in exactly one session:
    detail_session_ids) and detail_where (error|file|subagent).  Every query has topic_title
    and distractor_topic_ids (near-duplicate topics: same repo / vocabulary, other problem).
  * Extra per-session fields: role (core|filler|edge), primary (the session that carries the
    topic's detail), layout, warmup_agents, away_summaries, duplicate_lines, edge_cases.
  * secrets: the exact planted strings (AWS key, ghp_ token, sk-ant-api03- key, OpenSSH private
    key block, xoxb- token, postgres URL with password), ~15% of sessions, planted in a prompt,
    a Bash stdout or a Read of a file such as .env.

FORMAT NOTES (imitating real 1.0.108, 2.0.5, 2.0.55, 2.1.17, 2.1.42 and 2.1.114 files)
  * Three record styles by version: 1.0.x ("v1": no slug/snapshots, message key order
    id,type,role,model), 2.0.x and 2.1.<90 ("v2": userType,cwd,sessionId,version,gitBranch,slug
    before `type`), 2.1.>=90 ("v3": promptId/type first, userType,entrypoint,cwd,sessionId,version,
    gitBranch,slug last; permission-mode / last-prompt lines; hook `attachment` lines;
    turn_duration).  2.1.17/2.1.42 sessions use hook `progress` lines that hang off the chain.
  * One content block per assistant line; the lines of one API response share message.id and
    requestId.  The parentUuid chain is linear except where real 2.1.x files branch: each
    tool_result's parentUuid is its source assistant line (= sourceToolAssistantUUID, 2.1.x
    only), so in a parallel batch only the last result is on the leaf's ancestor path.
  * Tool errors: is_error true and toolUseResult "Error: ..." (Bash: content "Exit code N\n<out>").
    Read results are numbered "     1\u2192" (1.0/2.0/2.1<90) or "1\t" (newer).
  * Task result toolUseResult: v3 {status,prompt,agentId,agentType,content,...,toolStats}, v2
    {status,prompt,agentId,content,...}, v1 {content,totalDurationMs,...} (no agentId).
    The tool is named "Agent" from 2.1.110 on, "Task" before.  v3 subagent files omit
    toolUseResult on successful results (as the real 2.1.114 ones do).
  * compact_boundary: parentUuid null + logicalParentUuid; then an isCompactSummary user line.
  * Plan files are written (Write tool) to "<home of the cwd user>/.claude/plans/<slug>.md";
    the copy on disk is DIR/plans/<slug>.md, identical to ExitPlanMode's input.plan.
  * queue-operation, file-history-snapshot, summary, permission-mode, last-prompt lines carry
    no uuid; the Windows session uses "C:\\Users\\bo\\src\\app" (folder C--Users-bo-src-app).
"""
from __future__ import annotations

import argparse
import base64
import difflib
import json
import os
import random
import re
import shutil
import string
import sys
import time
import uuid as _uuid
from datetime import datetime, timedelta, UTC

B62 = string.digits + string.ascii_letters
HEX = "0123456789abcdef"
UPAN = string.ascii_uppercase + string.digits

VERSIONS = {
    "1.0": ["1.0.98", "1.0.108", "1.0.120"],
    "2.0": ["2.0.28", "2.0.37", "2.0.42", "2.0.55"],
    "2.1": ["2.1.17", "2.1.42", "2.1.92", "2.1.110", "2.1.114", "2.1.132"],
}
V21_WEIGHTS = [1, 2, 2, 3, 4, 2]
MODELS = {
    "1.0": ["claude-sonnet-4-20250514", "claude-opus-4-1-20250805"],
    "2.0": ["claude-sonnet-4-5-20250929", "claude-opus-4-5-20251101"],
    "2.1": ["claude-opus-4-5-20251101", "claude-opus-4-6", "claude-opus-4-7"],
}
HAIKU = {"1.0": "claude-sonnet-4-20250514", "2.0": "claude-haiku-4-5-20251001",
         "2.1": "claude-haiku-4-5-20251001"}
WINDOWS = {  # date windows per version family
    "1.0": (datetime(2025, 7, 1, tzinfo=UTC), 85),
    "2.0": (datetime(2025, 10, 2, tzinfo=UTC), 78),
    "2.1": (datetime(2026, 1, 12, tzinfo=UTC), 115),
}
SLUG_A = ["humble", "zippy", "eager", "vectorized", "encapsulated", "quiet", "brave", "cosmic",
          "gentle", "lucky", "mellow", "nimble", "polished", "radiant", "sleepy", "tidy",
          "velvet", "witty", "crispy", "dapper", "fuzzy", "glowing", "jolly", "keen", "lively",
          "misty", "noble", "plucky", "rustic", "snappy", "sunny", "twinkly"]
SLUG_B = ["doodling", "wondering", "humming", "giggling", "skipping", "drifting", "juggling",
          "pondering", "sparkling", "tumbling", "whistling", "wandering", "bouncing",
          "crafting", "dancing", "floating", "gliding", "hopping", "knitting", "munching",
          "painting", "roaming", "sailing", "singing", "strolling", "tinkering"]
SLUG_C = ["wolf", "wadler", "orbit", "sedgewick", "dawn", "knuth", "lovelace", "otter", "hopper",
          "turing", "badger", "falcon", "lamport", "liskov", "meadow", "nebula", "pebble",
          "quokka", "ritchie", "thompson", "willow", "hamming", "dijkstra", "heron", "kernighan",
          "panda", "pike", "river", "sparrow", "torvalds", "yak", "zephyr"]

STOP = set("""a an the and or of to in on for with without from by at as is are was were be
been being it its this that these those there their they them we our you your i me my he she
his her not no nor but if then than so too very can could should would will just also into
onto over under after before when while why how what which who whom whose where does did do
done get got gets getting make made via per about again only even still up down out off all
any each every some such more most other same own both few had has have having let lets us
one two new old use used using""".split())


# ----------------------------------------------------------------------------- helpers
def vt(v):
    return tuple(int(x) for x in v.split("."))


def style_of(v):
    t = vt(v)
    if t < (2, 0, 0):
        return "v1"
    return "v3" if t >= (2, 1, 90) else "v2"


def family_of(v):
    return v.rsplit(".", 1)[0]


def encode_cwd(cwd):
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def repo_name_of(cwd):
    return re.split(r"[\\/]", cwd.rstrip("\\/"))[-1]


def uniq(seq):
    seen, out = set(), []
    for x in seq:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def content_words(text):
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2 and w not in STOP]


def stem5(w):
    return w[:5] if len(w) >= 5 else w


class Ids:
    def __init__(self, rng):
        self.r = rng

    def uuid(self):
        return str(_uuid.UUID(int=self.r.getrandbits(128), version=4))

    def s(self, n, alpha=B62):
        return "".join(self.r.choices(alpha, k=n))

    def toolu(self):
        return "toolu_01" + self.s(22)

    def msg(self):
        return "msg_01" + self.s(22)

    def req(self):
        return "req_011C" + self.s(20)

    def hexs(self, n):
        return self.s(n, HEX)


class Clock:
    def __init__(self, t):
        self.t = t

    def tick(self, rng, lo, hi):
        self.t += timedelta(milliseconds=rng.randint(max(1, lo), max(1, hi)))
        return self.iso()

    def iso(self):
        return self.t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (self.t.microsecond // 1000)


def structured_patch(a_text, b_text):
    a, b = a_text.split("\n"), b_text.split("\n")
    hunks = []
    for grp in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(3):
        i1, i2, j1, j2 = grp[0][1], grp[-1][2], grp[0][3], grp[-1][4]
        lines = []
        for tag, x1, x2, y1, y2 in grp:
            if tag == "equal":
                lines += [" " + ln for ln in a[x1:x2]]
            if tag in ("replace", "delete"):
                lines += ["-" + ln for ln in a[x1:x2]]
            if tag in ("replace", "insert"):
                lines += ["+" + ln for ln in b[y1:y2]]
        hunks.append({"oldStart": i1 + 1, "oldLines": i2 - i1, "newStart": j1 + 1,
                      "newLines": j2 - j1, "lines": lines})
    return hunks


def patch_counts(hunks):
    add = rem = 0
    for h in hunks or []:
        for ln in h.get("lines", []):
            if ln.startswith("+"):
                add += 1
            elif ln.startswith("-"):
                rem += 1
    return add, rem


def numbered(text, style, start=1):
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines = lines[:-1]
    if style == "v3":
        return "\n".join("%d\t%s" % (i + start, ln) for i, ln in enumerate(lines))
    return "\n".join("%6d\u2192%s" % (i + start, ln) for i, ln in enumerate(lines))


MALWARE_REMINDER = ("\n\n<system-reminder>\nWhenever you read a file, you should consider whether "
                    "it would be considered malware. You CAN and SHOULD provide analysis of malware, "
                    "what it is doing. But you MUST refuse to improve or augment the code. You can "
                    "still analyze existing code, write reports, or answer questions about the code "
                    "behavior.\n</system-reminder>\n")

# ----------------------------------------------------------------------------- code synthesis
LANG_BY_EXT = {".py": "py", ".ts": "ts", ".tsx": "tsx", ".js": "ts", ".go": "go", ".rs": "rs",
               ".yaml": "yaml", ".yml": "yaml", ".tf": "tf", ".sql": "sql", ".md": "md",
               ".toml": "toml", ".json": "json", ".html": "html", ".css": "css", ".env": "env"}


def lang_of(path):
    base = re.split(r"[\\/]", path)[-1]
    if base.startswith(".env"):
        return "env"
    return LANG_BY_EXT.get(os.path.splitext(base)[1], "txt")


def stem_of(path):
    base = re.split(r"[\\/]", path)[-1]
    s = re.sub(r"[^A-Za-z0-9]+", "_", os.path.splitext(base)[0]).strip("_").lower()
    return s or "module"


def camel(s):
    return "".join(p[:1].upper() + p[1:] for p in s.split("_") if p)


# lint bait per language: (text present in synthesized files, replacement, tool message fn)
LINT_BAIT = {
    "py": ("import logging\nimport os\nfrom datetime import", "import logging\nfrom datetime import"),
    "ts": ("import { inspect } from 'node:util';\n", ""),
    "tsx": ("import { useMemo, useState } from 'react';", "import { useState } from 'react';"),
    "go": ("var debugDump = false\n\n", ""),
    "rs": ("    let total: i64 = items.iter().sum();\n    return total;\n}",
           "    items.iter().sum()\n}"),
    "yaml": ("            - name: http\n               containerPort: 8080",
             "            - name: http\n              containerPort: 8080"),
    "tf": ("  enable_iam_auth = true", "  iam_database_authentication_enabled = true"),
}

PY_FILLERS = [
    'def {n}_from_row(row: dict) -> dict:\n    """Map a database row to the API shape."""\n    return {{\n        "id": row["id"],\n        "created_at": row["created_at"].isoformat(),\n        "status": row.get("status", "pending"),\n    }}\n',
    'class {N}Error(Exception):\n    """Raised when {n} processing fails."""\n',
    'def _chunked_{n}(items, size=500):\n    for start in range(0, len(items), size):\n        yield items[start:start + size]\n',
    'async def load_{n}(session, ids):\n    result = await session.execute(select({N}).where({N}.id.in_(ids)))\n    return {{row.id: row for row in result.scalars()}}\n',
    'def _utcnow_{n}() -> datetime:\n    return datetime.now(timezone.utc)\n',
    'def describe_{n}(obj) -> str:\n    logger.debug("describing %s", obj)\n    return f"<{N} {{getattr(obj, \'id\', \'?\')}}>"\n',
]
TS_FILLERS = [
    "export function format{N}(value: number): string {{\n  return new Intl.NumberFormat('en-US').format(value);\n}}\n",
    "export interface {N}Options {{\n  timeoutMs?: number;\n  retries?: number;\n}}\n",
    "const DEFAULT_{U}_TIMEOUT_MS = 5_000;\n",
    "export async function fetch{N}(id: string, opts: {N}Options = {{}}) {{\n  const res = await fetch(`/api/{n}/${{id}}`, {{ signal: AbortSignal.timeout(opts.timeoutMs ?? DEFAULT_{U}_TIMEOUT_MS) }});\n  if (!res.ok) throw new Error(`{n} request failed: ${{res.status}}`);\n  return res.json();\n}}\n",
    "function is{N}Empty(items: unknown[] | undefined): boolean {{\n  return !items || items.length === 0;\n}}\n",
]
GO_FILLERS = [
    "// {N}Config holds tunables for the {n} package.\ntype {N}Config struct {{\n\tTimeout time.Duration\n\tMaxItems int\n}}\n",
    "func new{N}Config() {N}Config {{\n\treturn {N}Config{{Timeout: 2 * time.Second, MaxItems: 100}}\n}}\n",
    "func (c {N}Config) validate() error {{\n\tif c.MaxItems <= 0 {{\n\t\treturn fmt.Errorf(\"{n}: MaxItems must be positive, got %d\", c.MaxItems)\n\t}}\n\treturn nil\n}}\n",
    "func with{N}Deadline(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {{\n\treturn context.WithTimeout(ctx, d)\n}}\n",
]
RS_FILLERS = [
    "#[derive(Debug, Clone)]\npub struct {N}Config {{\n    pub batch_size: usize,\n    pub retries: u32,\n}}\n",
    "impl Default for {N}Config {{\n    fn default() -> Self {{\n        Self {{ batch_size: 500, retries: 3 }}\n    }}\n}}\n",
    "fn {n}_key(id: u64) -> String {{\n    format!(\"{n}:{{id}}\")\n}}\n",
]


def synth_file(path, rng, embeds, with_bait=True):
    lang = lang_of(path)
    stem = stem_of(path)
    n, N, U = stem, camel(stem), stem.upper()
    parts = []

    def fill(pool, k):
        for t in rng.sample(pool, min(k, len(pool))):
            parts.append(t.format(n=n, N=N, U=U))

    if lang == "py":
        doc = stem.replace("_", " ").capitalize()
        head = '"""%s."""\nfrom __future__ import annotations\n\n' % doc
        head += ("import logging\nimport os\nfrom datetime import datetime, timezone\n" if with_bait
                 else "import logging\nfrom datetime import datetime, timezone\n")
        head += "\nlogger = logging.getLogger(__name__)\n"
        parts.append(head)
        fill(PY_FILLERS, rng.randint(2, 3))
        parts += [e if e.endswith("\n") else e + "\n" for e in embeds]
        fill(PY_FILLERS[3:], 1)
        return "\n\n\n".join(p.rstrip("\n") for p in parts) + "\n"
    if lang in ("ts", "tsx"):
        head = ""
        if lang == "tsx":
            head += ("import { useMemo, useState } from 'react';\n" if with_bait else
                     "import { useState } from 'react';\n")
        elif with_bait:
            head += "import { inspect } from 'node:util';\n"
        head += "import { z } from 'zod';\n"
        parts.append(head)
        fill(TS_FILLERS, rng.randint(2, 3))
        parts += embeds
        return "\n".join(p.rstrip("\n") + "\n" for p in parts)
    if lang == "go":
        pkg = re.split(r"[\\/]", path)[-2] if len(re.split(r"[\\/]", path)) > 1 else "main"
        pkg = re.sub(r"[^a-z0-9]", "", pkg.lower()) or "main"
        head = 'package %s\n\nimport (\n\t"context"\n\t"fmt"\n\t"time"\n)\n' % pkg
        if with_bait:
            head += "\nvar debugDump = false\n"
        parts.append(head)
        fill(GO_FILLERS, rng.randint(2, 3))
        parts += embeds
        return "\n".join(p.rstrip("\n") + "\n" for p in parts)
    if lang == "rs":
        head = "use std::collections::HashMap;\n"
        parts.append(head)
        fill(RS_FILLERS, rng.randint(1, 2))
        parts += embeds
        if with_bait:
            parts.append("fn sum_minor_units(items: &[i64]) -> i64 {\n    let total: i64 = items.iter().sum();\n    return total;\n}\n")
        return "\n".join(p.rstrip("\n") + "\n" for p in parts)
    if lang == "yaml":
        head = "# %s\n" % stem.replace("_", " ")
        parts.append(head)
        parts += embeds
        if with_bait:
            parts.append("spec:\n  template:\n    spec:\n      containers:\n        - name: app\n          ports:\n            - name: http\n               containerPort: 8080\n")
        else:
            parts.append("metadata:\n  labels:\n    app.kubernetes.io/part-of: platform\n")
        return "\n".join(p.rstrip("\n") + "\n" for p in parts)
    if lang == "tf":
        head = 'terraform {\n  required_version = ">= 1.6"\n}\n'
        parts.append(head)
        parts += embeds
        if with_bait:
            parts.append('resource "aws_db_instance" "replica" {\n  identifier     = var.replica_identifier\n  instance_class = var.instance_class\n  enable_iam_auth = true\n}\n')
        return "\n".join(p.rstrip("\n") + "\n" for p in parts)
    if lang == "sql":
        parts.append("-- %s\n" % stem.replace("_", " "))
        parts += embeds
        return "\n".join(p.rstrip("\n") + "\n" for p in parts)
    if lang == "md":
        parts.append("# %s\n" % stem.replace("_", " ").title())
        parts += embeds or ["Notes for the team. Keep this file up to date.\n"]
        return "\n".join(p.rstrip("\n") + "\n" for p in parts)
    if lang == "json":
        body = embeds[0] if embeds else '{\n  "name": "%s",\n  "private": true\n}\n' % stem
        return body if body.endswith("\n") else body + "\n"
    parts.append("# %s\n" % stem)
    parts += embeds
    return "\n".join(p.rstrip("\n") + "\n" for p in parts)


def comment_prefix(lang):
    return {"py": "# ", "ts": "// ", "tsx": "// ", "go": "// ", "rs": "// ", "yaml": "# ",
            "tf": "# ", "sql": "-- ", "toml": "# "}.get(lang, "# ")


FOLLOWUP_NOTES = ["keep in sync with the settings defaults", "covered by the regression test",
                  "see the plan in the PR description", "guard against empty input",
                  "remove after the backfill has run everywhere", "log at debug level only",
                  "the caller already holds the lock", "values are in UTC",
                  "matches the behaviour of the old implementation", "cheap check, runs per request"]

# ----------------------------------------------------------------------------- bash outputs


def pytest_out(cwd, testfile, n, passed, fail_text, secs):
    rel = testfile or "tests"
    head = ("============================= test session starts ==============================\n"
            "platform linux -- Python 3.12.3, pytest-8.3.4, pluggy-1.5.0\n"
            "rootdir: %s\nconfigfile: pyproject.toml\nplugins: asyncio-0.24.0, cov-6.0.0\n"
            "collected %d items\n\n" % (cwd, n))
    if passed:
        return head + "%s %s [100%%]\n\n============================== %d passed in %.2fs ===============================" % (
            rel, "." * min(n, 40), n, secs)
    dots = "." * max(0, min(n, 40) - 1) + "F"
    name = fail_text.split(" - ")[0].replace("FAILED ", "") if " - " in fail_text else rel + "::test_regression"
    return head + ("%s %s [100%%]\n\n=================================== FAILURES ===================================\n"
                   "_______________________ %s ________________________\n\n    (traceback elided)\n\n"
                   "=========================== short test summary info ============================\n"
                   "%s\n========================= 1 failed, %d passed in %.2fs =========================" % (
                       rel, dots, name.split("::")[-1], fail_text, n - 1, secs))


def jest_out(testfile, n, passed, fail_text, secs):
    if passed:
        return (" PASS  %s\n\nTest Suites: 1 passed, 1 total\nTests:       %d passed, %d total\n"
                "Snapshots:   0 total\nTime:        %.3f s\nRan all test suites matching /%s/i." % (
                    testfile, n, n, secs, re.escape(os.path.basename(testfile or "src"))))
    return (" FAIL  %s\n  \u25cf %s\n\nTest Suites: 1 failed, 1 total\nTests:       1 failed, %d passed, %d total\n"
            "Snapshots:   0 total\nTime:        %.3f s" % (testfile, fail_text, n - 1, n, secs))


def go_out(cmd, pkg, passed, fail_text, secs):
    if passed:
        return "ok  \t%s\t%.3fs" % (pkg, secs)
    return "--- FAIL: %s\n%s\nFAIL\nFAIL\t%s\t%.3fs\nFAIL" % (
        fail_text.split(":")[0], "    " + fail_text, pkg, secs)


def cargo_out(n, passed, fail_text, secs, crate):
    if not passed and fail_text.startswith("error["):
        return ("   Compiling %s v0.4.2 (%s)\n%s\n\nFor more information about this error, try `rustc --explain %s`.\n"
                "error: could not compile `%s` (lib) due to 1 previous error" % (
                    crate, "/src/" + crate, fail_text, fail_text[6:11], crate))
    head = ("   Compiling %s v0.4.2 (%s)\n    Finished `test` profile [unoptimized + debuginfo] target(s) in %.2fs\n"
            "     Running unittests src/lib.rs (target/debug/deps/%s-3f9c1d2a7b6e5f40)\n\nrunning %d tests\n" % (
                crate, "/src/" + crate, secs * 4, crate.replace("-", "_"), n))
    if passed:
        return head + "\ntest result: ok. %d passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in %.2fs" % (n, secs)
    return head + ("\nfailures:\n\n---- %s stdout ----\n%s\n\nfailures:\n    %s\n\n"
                   "test result: FAILED. %d passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in %.2fs\n\n"
                   "error: test failed, to rerun pass `--lib`" % (
                       fail_text.split(" ")[0], fail_text, fail_text.split(" ")[0], n - 1, secs))


SECRET_KINDS = ["aws", "github", "anthropic", "ssh", "slack", "postgres"]


def make_secret(ids, kind):
    r = ids.r
    if kind == "aws":
        return "AKIA" + ids.s(16, UPAN)
    if kind == "github":
        return "ghp_" + ids.s(36, string.ascii_letters + string.digits)
    if kind == "anthropic":
        return "sk-ant-api03-" + ids.s(80, string.ascii_letters + string.digits + "-_")
    if kind == "ssh":
        body = base64.b64encode(b"openssh-key-v1\x00" + r.randbytes(330)).decode()
        lines = [body[i:i + 70] for i in range(0, len(body), 70)]
        return "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END OPENSSH PRIVATE KEY-----"
    if kind == "slack":
        return "xoxb-%d-%d-%s" % (r.randint(10 ** 10, 10 ** 11 - 1), r.randint(10 ** 12, 10 ** 13 - 1),
                                  ids.s(24, string.ascii_letters + string.digits))
    if kind == "postgres":
        pw = ids.s(18, string.ascii_letters + string.digits)
        return "postgres://app_rw:%s@db-staging.internal.example.net:5432/%s" % (pw, r.choice(
            ["payments", "core", "analytics", "ledger"]))
    raise ValueError(kind)


# ============================================================================= session builder
_MISSING = object()
CAVEAT = ("Caveat: The messages below were generated by the user while running local commands. "
          "DO NOT respond to these messages or otherwise consider them in your response unless the "
          "user explicitly asks you to.")
REJECT = ("The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it "
          "was a file edit, the new_string was NOT written to the file). STOP what you are doing and "
          "wait for the user to tell you how to proceed.")
TODO_OK = ("Todos have been modified successfully. Ensure that you continue to use the todo list to "
           "track your progress. Please proceed with the current tasks if applicable")


class Builder:
    """Emits the lines of one session (and its subagent files) and records ground truth."""

    def __init__(self, sp):
        self.sp = sp
        self.rng = sp["rng"]
        self.ids = Ids(self.rng)
        self.sid = sp["sid"]
        self.cwd = sp["cwd"]
        self.win = "\\" in self.cwd
        self.branch = sp["branch"]
        self.version = sp["version"]
        self.style = style_of(self.version)
        self.family = family_of(self.version)
        self.slug = sp.get("slug")
        self.slug_on = False
        self.model = sp["model"]
        self.clock = Clock(sp["start"])
        self.enc = encode_cwd(self.cwd)
        self.main = []
        self.out = self.main
        self.tip = None
        self.recording = True
        self.sidechain = False
        self.agent_id = None
        self.sub_tur = True
        self.prompt_id = None
        self.perm = sp.get("perm", "default")
        self.turns = []
        self.cur = None
        self.files = {}
        self.written_new = set()
        self.hooks = sp.get("hooks")
        self.asst_uuids = []
        self.subagents = []
        self.subfiles = {}
        self.warmups = []
        self.secrets = []
        self.compact_summaries = []
        self.away = []
        self.read_done = set()
        self.plan_written = None
        self.turn_prompt_ts = None

    # --------------------------------------------------------------- basics
    def abs(self, rel):
        if rel.startswith("/") or re.match(r"^[A-Za-z]:\\", rel) or rel.startswith("~"):
            return rel
        if self.win:
            return self.cwd + "\\" + rel.replace("/", "\\")
        return self.cwd.rstrip("/") + "/" + rel

    def rel(self, path):
        p = path
        if p.startswith(self.cwd):
            p = p[len(self.cwd):].lstrip("\\/")
        return p.replace("\\", "/")

    def caller(self):
        return vt(self.version) >= (2, 1, 42)

    def tick(self, lo, hi):
        return self.clock.tick(self.rng, lo, hi)

    def emit(self, obj, tag, advance=True):
        self.out.append({"obj": obj, "tag": tag})
        if (self.cur is not None and self.cur["started_at"] is None and not self.sidechain
                and isinstance(obj, dict) and obj.get("timestamp")):
            self.cur["started_at"] = obj["timestamp"]
        if advance and isinstance(obj, dict) and obj.get("uuid"):
            self.tip = obj["uuid"]
        return obj

    def _pre(self, parent, extra_first=None):
        d = {"parentUuid": parent}
        if extra_first:
            d.update(extra_first)
        d.update({"isSidechain": self.sidechain, "userType": "external", "cwd": self.cwd,
                  "sessionId": self.sid, "version": self.version, "gitBranch": self.branch})
        if self.agent_id:
            d["agentId"] = self.agent_id
        if self.slug_on and self.slug and self.style == "v2":
            d["slug"] = self.slug
        return d

    def _suf(self, d):
        d.update({"userType": "external", "entrypoint": "cli", "cwd": self.cwd,
                  "sessionId": self.sid, "version": self.version, "gitBranch": self.branch})
        if self.slug_on and self.slug:
            d["slug"] = self.slug
        return d

    def user_obj(self, content, parent, uid, ts, *, is_meta=False, tur=_MISSING, source=None,
                 prompt=False, compact=False, perm=None):
        msg = {"role": "user", "content": content}
        if self.style in ("v1", "v2"):
            d = self._pre(parent)
            d["type"] = "user"
            d["message"] = msg
            if is_meta:
                d["isMeta"] = True
            if compact:
                d["isVisibleInTranscriptOnly"] = True
                d["isCompactSummary"] = True
            d["uuid"] = uid
            d["timestamp"] = ts
            if prompt and self.family != "1.0":
                d["thinkingMetadata"] = ({"maxThinkingTokens": 31999} if self.family == "2.1"
                                         else {"level": "none", "disabled": True, "triggers": []})
                d["todos"] = []
            if prompt and self.family == "2.1" and perm:
                d["permissionMode"] = perm
            if tur is not _MISSING:
                d["toolUseResult"] = tur
            if source and self.family == "2.1":
                d["sourceToolAssistantUUID"] = source
            return d
        d = {"parentUuid": parent, "isSidechain": self.sidechain}
        if self.prompt_id:
            d["promptId"] = self.prompt_id
        if self.agent_id:
            d["agentId"] = self.agent_id
        d["type"] = "user"
        d["message"] = msg
        if is_meta:
            d["isMeta"] = True
        if compact:
            d["isVisibleInTranscriptOnly"] = True
            d["isCompactSummary"] = True
        d["uuid"] = uid
        d["timestamp"] = ts
        if prompt and perm:
            d["permissionMode"] = perm
        if tur is not _MISSING:
            d["toolUseResult"] = tur
        if source:
            d["sourceToolAssistantUUID"] = source
        return self._suf(d)

    def usage(self, inp, out, cread, ccreate):
        if self.style == "v1":
            return {"input_tokens": inp, "cache_creation_input_tokens": ccreate,
                    "cache_read_input_tokens": cread, "output_tokens": out, "service_tier": "standard"}
        if self.style == "v2":
            return {"input_tokens": inp, "cache_creation_input_tokens": ccreate,
                    "cache_read_input_tokens": cread,
                    "cache_creation": {"ephemeral_5m_input_tokens": ccreate, "ephemeral_1h_input_tokens": 0},
                    "output_tokens": out, "service_tier": "standard"}
        return {"input_tokens": inp, "cache_creation_input_tokens": ccreate,
                "cache_read_input_tokens": cread, "output_tokens": out,
                "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
                "service_tier": "standard",
                "cache_creation": {"ephemeral_1h_input_tokens": ccreate, "ephemeral_5m_input_tokens": 0},
                "inference_geo": "",
                "iterations": [{"input_tokens": inp, "output_tokens": out, "cache_read_input_tokens": cread,
                                "cache_creation_input_tokens": ccreate,
                                "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": ccreate},
                                "type": "message"}],
                "speed": "standard"}

    def asst_obj(self, block, msg_id, req_id, model, stop, usage, parent, uid, ts):
        if self.style == "v1":
            message = {"id": msg_id, "type": "message", "role": "assistant", "model": model,
                       "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": usage}
        else:
            message = {"model": model, "id": msg_id, "type": "message", "role": "assistant",
                       "content": [block], "stop_reason": stop, "stop_sequence": None}
            if self.style == "v3":
                message["stop_details"] = None
            message["usage"] = usage
        if self.style in ("v1", "v2"):
            d = self._pre(parent)
            d.update({"message": message, "requestId": req_id, "type": "assistant", "uuid": uid, "timestamp": ts})
            return d
        d = {"parentUuid": parent, "isSidechain": self.sidechain}
        if self.agent_id:
            d["agentId"] = self.agent_id
        d.update({"message": message, "requestId": req_id, "type": "assistant", "uuid": uid, "timestamp": ts})
        return self._suf(d)

    def system_obj(self, parent, fields, ts, uid, order="default"):
        if self.style in ("v1", "v2"):
            d = self._pre(parent)
            d["type"] = "system"
            d.update(fields)
            d["timestamp"] = ts
            d["uuid"] = uid
            return d
        d = {"parentUuid": parent, "isSidechain": self.sidechain, "type": "system"}
        d.update(fields)
        d["timestamp"] = ts
        d["uuid"] = uid
        return d

    # --------------------------------------------------------------- turns / truth
    def start_turn(self, index, prompt, is_slash, ts):
        self.close_turn()
        self.cur = {"index": index, "prompt": prompt, "is_slash_command": is_slash, "inv": [],
                    "seq": 0, "duration_ms": None, "started_at": ts}
        self.turn_prompt_ts = self.clock.t

    def close_turn(self):
        if not self.cur:
            return
        t = self.cur
        inv = t["inv"]
        usage = {}
        for i in inv:
            usage[i["tool_name"]] = usage.get(i["tool_name"], 0) + 1
        fr, fw, fm, bc = [], [], [], []
        add = rem = berr = 0
        for i in inv:
            name, inp, err, tur = i["tool_name"], i["_input"], i["is_error"], i["_tur"]
            if name == "Read" and not err:
                fr.append(inp["file_path"])
            if name == "Write" and not err:
                fw.append(inp["file_path"])
            if name == "Edit" and not err:
                fm.append(inp["file_path"])
            if name in ("Edit", "Write") and not err and isinstance(tur, dict):
                if tur.get("type") == "create":
                    add += len(tur.get("content", "").splitlines())
                else:
                    a, r = patch_counts(tur.get("structuredPatch"))
                    add += a
                    rem += r
            if name == "Bash":
                bc.append(inp["command"])
                if err:
                    berr += 1
        self.turns.append({
            "index": t["index"], "prompt": t["prompt"], "is_slash_command": t["is_slash_command"],
            "invocations": [{k: i[k] for k in ("tool_name", "tool_use_id", "sequence", "parallel_group", "is_error")} for i in inv],
            "tool_call_count": len(inv), "tool_error_count": sum(1 for i in inv if i["is_error"]),
            "tool_usage": usage, "files_read": uniq(fr), "files_written": uniq(fw),
            "files_modified": uniq(fm), "lines_added": add, "lines_removed": rem,
            "bash_commands": bc, "bash_error_count": berr, "duration_ms": t["duration_ms"],
            "started_at": t["started_at"]})
        self.cur = None

    # --------------------------------------------------------------- line kinds
    def snapshot(self, message_id, ts_inner, backups=None, update=False, snap_msg=None):
        self.emit({"type": "file-history-snapshot", "messageId": message_id,
                   "snapshot": {"messageId": snap_msg or message_id, "trackedFileBackups": backups or {},
                                "timestamp": ts_inner}, "isSnapshotUpdate": update}, "snapshot", advance=False)

    def attachment(self, att):
        uid, ts = self.ids.uuid(), self.tick(20, 160)
        d = {"parentUuid": self.tip, "isSidechain": self.sidechain, "attachment": att, "type": "attachment",
             "uuid": uid, "timestamp": ts}
        self.emit(self._suf(d), "attach")

    def hook_att(self, event, name, tool_use_id=None, content=""):
        cmds = {"PostToolUse": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/post-edit-format.sh',
                "Stop": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/notify-done.sh',
                "UserPromptSubmit": "~/.claude/hooks/inject-branch-context.sh",
                "SessionStart": "~/.claude/hooks/session-start.sh"}
        self.attachment({"type": "hook_success", "hookName": name,
                         "toolUseID": tool_use_id or self.ids.uuid(), "hookEvent": event,
                         "content": content, "stdout": content + ("\n" if content else ""), "stderr": "",
                         "exitCode": 0, "command": cmds[event], "durationMs": self.rng.randint(40, 400)})

    def progress(self, event, name, tool_use_id, advance=False):
        uid, ts = self.ids.uuid(), self.tick(5, 60)
        cmds = {"PostToolUse": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/post-edit-format.sh',
                "Stop": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/notify-done.sh',
                "SessionStart": "~/.claude/hooks/session-start.sh"}
        d = self._pre(self.tip)
        d.update({"type": "progress", "data": {"type": "hook_progress", "hookEvent": event, "hookName": name,
                                               "command": cmds.get(event, "callback")},
                  "parentToolUseID": tool_use_id, "toolUseID": tool_use_id, "timestamp": ts, "uuid": uid})
        self.emit(d, "progress", advance=advance)

    def meta_lines_v3(self, prompt_text):
        if self.style != "v3" or self.sidechain:
            return
        lp = prompt_text if len(prompt_text) <= 250 else prompt_text[:250] + "\u2026"
        self.emit({"type": "last-prompt", "lastPrompt": lp, "sessionId": self.sid}, "lastprompt", advance=False)
        self.emit({"type": "permission-mode", "permissionMode": self.perm, "sessionId": self.sid}, "permmode",
                  advance=False)

    def human_prompt(self, text, *, as_list=False, image=None, slash=False, perm=None, index=None,
                     meta_expansion=None, gap=(15000, 400000)):
        uid = self.ids.uuid()
        if vt(self.version) >= (2, 0, 37) and not slash and self.rng.random() < 0.08:
            self.emit({"type": "queue-operation", "operation": "enqueue", "timestamp": self.tick(*gap),
                       "content": [{"type": "text", "text": text}], "sessionId": self.sid}, "queue", advance=False)
            self.emit({"type": "queue-operation", "operation": "dequeue", "timestamp": self.tick(1, 3),
                       "sessionId": self.sid}, "queue", advance=False)
            ts = self.tick(5, 90)
        else:
            ts = self.tick(*gap)
        if self.family != "1.0":
            self.snapshot(uid, self.tick(50, 120))
        if self.style == "v3":
            self.prompt_id = self.ids.uuid()
        self.prompt_uuid = uid
        if perm:
            self.perm = perm
        if image is not None or as_list:
            content = [{"type": "text", "text": text}]
            if image is not None:
                content.append({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": image}})
        else:
            content = text
        obj = self.user_obj(content, self.tip, uid, ts, prompt=True, perm=self.perm)
        self.emit(obj, "prompt")
        self.start_turn(index, text, slash, ts)
        if meta_expansion:
            self.emit(self.user_obj([{"type": "text", "text": meta_expansion}], self.tip, self.ids.uuid(),
                                    self.tick(5, 30), is_meta=True), "meta")
        if self.hooks == "attach":
            self.hook_att("UserPromptSubmit", "UserPromptSubmit", content="branch: %s" % self.branch)
        return uid

    def local_command(self, name, stdout, index):
        uid = self.ids.uuid()
        ts0 = self.tick(20000, 300000)
        if self.family != "1.0":
            self.snapshot(uid, ts0)
        if self.style == "v3":
            self.prompt_id = self.ids.uuid()
        cav = ("<local-command-caveat>%s</local-command-caveat>" % CAVEAT) if self.style == "v3" else CAVEAT
        self.emit(self.user_obj(cav, self.tip, self.ids.uuid(), ts0, is_meta=True), "meta")
        text = ("<command-name>/%s</command-name>\n            <command-message>%s</command-message>\n"
                "            <command-args></command-args>" % (name, name))
        ts = self.tick(1, 3)
        self.emit(self.user_obj(text, self.tip, uid, ts), "prompt")
        self.start_turn(index, text, True, ts)
        self.emit(self.user_obj("<local-command-stdout>%s</local-command-stdout>" % stdout, self.tip,
                                self.ids.uuid(), self.tick(1, 40)), "meta")
        self.meta_lines_v3(text)

    def interrupt(self, for_tool=False):
        txt = "[Request interrupted by user for tool use]" if for_tool else "[Request interrupted by user]"
        self.emit(self.user_obj([{"type": "text", "text": txt}], self.tip, self.ids.uuid(), self.tick(300, 4000)),
                  "interrupt")

    def compact(self, summary, pre_tokens):
        uid, ts = self.ids.uuid(), self.tick(30000, 90000)
        fields = {"subtype": "compact_boundary", "content": "Conversation compacted", "isMeta": False}
        if self.style == "v3":
            d = {"parentUuid": None, "logicalParentUuid": self.tip, "isSidechain": False, "type": "system"}
            d.update(fields)
            d.update({"timestamp": ts, "uuid": uid, "level": "info",
                      "compactMetadata": {"trigger": "auto", "preTokens": pre_tokens}})
            self._suf(d)
        else:
            d = self._pre(None, {"logicalParentUuid": self.tip})
            d["type"] = "system"
            d.update(fields)
            d.update({"timestamp": ts, "uuid": uid, "level": "info",
                      "compactMetadata": {"trigger": "auto", "preTokens": pre_tokens}})
        self.emit(d, "compact")
        content = summary if (self.style == "v3" or self.rng.random() < 0.5) else [{"type": "text", "text": summary}]
        self.emit(self.user_obj(content, uid, self.ids.uuid(), self.tick(50, 400), compact=True), "compact")
        self.compact_summaries.append(summary)

    def end_turn(self, prompt_text, interrupted=False):
        if self.sidechain:
            return
        if self.slug and not self.slug_on:
            self.slug_on = True
        if not interrupted:
            if self.hooks == "attach":
                tuid = self.ids.uuid()
                self.hook_att("Stop", "Stop", tool_use_id=tuid, content="notified")
                self.emit(self.system_obj(self.tip, {"subtype": "stop_hook_summary", "hookCount": 1,
                                                     "hookInfos": [{"command": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/notify-done.sh',
                                                                    "durationMs": self.rng.randint(40, 300)}],
                                                     "hookErrors": [], "preventedContinuation": False,
                                                     "stopReason": "", "hasOutput": True, "level": "suggestion"},
                                          self.tick(1, 20), self.ids.uuid()), "system")
                self.out[-1]["obj"]["toolUseID"] = tuid
                if self.style == "v3":
                    self._suf(self.out[-1]["obj"])
            elif self.hooks == "progress":
                tuid = self.ids.uuid()
                self.progress("Stop", "Stop", tuid, advance=True)
                d = self.system_obj(self.tip, {"subtype": "stop_hook_summary", "hookCount": 1,
                                               "hookInfos": [{"command": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/notify-done.sh'}],
                                               "hookErrors": [], "preventedContinuation": False, "stopReason": "",
                                               "hasOutput": True, "level": "suggestion"},
                                    self.tick(20, 200), self.ids.uuid())
                d["toolUseID"] = tuid
                self.emit(d, "system")
            if self.style == "v3" and self.cur is not None:
                ts = self.tick(1, 3)
                dur = int((self.clock.t - self.turn_prompt_ts).total_seconds() * 1000)
                d = {"parentUuid": self.tip, "isSidechain": False, "type": "system", "subtype": "turn_duration",
                     "durationMs": dur, "messageCount": len(self.out), "timestamp": ts, "uuid": self.ids.uuid(),
                     "isMeta": False}
                self.emit(self._suf(d), "duration")
                self.cur["duration_ms"] = dur
                if vt(self.version) >= (2, 1, 110) and self.rng.random() < 0.08 and self.sp.get("topic"):
                    T = self.sp["topic"]
                    txt = "%s. %s Next: %s" % (T["title"], T["solution"].split(". ")[0].rstrip(".") + ".",
                                               T["steps"][-1][0].lower() + T["steps"][-1][1:])
                    d = {"parentUuid": self.tip, "isSidechain": False, "type": "system", "subtype": "away_summary",
                         "content": txt, "timestamp": self.tick(60000, 600000), "uuid": self.ids.uuid(), "isMeta": False}
                    self.emit(self._suf(d), "away")
                    self.away.append(txt)
        self.meta_lines_v3(prompt_text or "")

    # --------------------------------------------------------------- assistant responses
    def respond(self, blocks, final=False):
        msg_id, req_id = self.ids.msg(), self.ids.req()
        model = self.sub_model if self.sidechain and getattr(self, "sub_model", None) else self.model
        r = self.rng
        use = self.usage(r.randint(1, 12), r.randint(40, 2600), r.randint(12000, 140000), r.randint(100, 9000))
        has_tool = any(b[0] == "tool" for b in blocks)
        tools = []
        for k, b in enumerate(blocks):
            last = k == len(blocks) - 1
            if b[0] == "thinking":
                redacted = vt(self.version) >= (2, 1, 100)
                block = {"type": "thinking", "thinking": "" if redacted else b[1],
                         "signature": "E" + self.ids.s(r.randint(180, 420), B62 + "+/")}
                ts = self.tick(1500, 25000)
            elif b[0] == "text":
                block = {"type": "text", "text": b[1]}
                ts = self.tick(400, 9000)
            else:
                tid = self.ids.toolu()
                block = {"type": "tool_use", "id": tid, "name": b[1], "input": b[2]}
                if self.caller():
                    block["caller"] = {"type": "direct"}
                ts = self.tick(150, 4000)
            stop = None
            if last:
                if self.style == "v3":
                    stop = "tool_use" if has_tool else "end_turn"
                elif self.style == "v1" and not has_tool and r.random() < 0.5:
                    stop = "end_turn"
                elif self.style == "v2" and has_tool and r.random() < 0.3:
                    stop = "tool_use"
            uid = self.ids.uuid()
            obj = self.asst_obj(block, msg_id, req_id, model, stop, use, self.tip, uid, ts)
            tag = {"thinking": "asst_thinking", "text": "asst_text", "tool": "asst_tool"}[b[0]]
            if self.sidechain:
                tag = "side_" + tag
            self.emit(obj, tag)
            if not self.sidechain:
                self.asst_uuids.append((uid, b[0]))
            if b[0] == "tool":
                tools.append({"uid": uid, "tid": tid, "name": b[1], "input": b[2], "spec": b[3] if len(b) > 3 else None})
        if self.recording and tools:
            seq = self.cur["seq"]
            self.cur["seq"] += 1
            for k, t in enumerate(tools):
                inv = {"tool_name": t["name"], "tool_use_id": t["tid"], "sequence": seq,
                       "parallel_group": 0 if len(tools) == 1 else k + 1, "is_error": False,
                       "_input": t["input"], "_tur": None}
                self.cur["inv"].append(inv)
                t["inv"] = inv
        if tools and self.slug and not self.slug_on and not self.sidechain:
            self.slug_on = True
        return tools

    def result(self, t, content, tur=_MISSING, is_error=False):
        if is_error:
            block = {"type": "tool_result", "content": content, "is_error": True, "tool_use_id": t["tid"]}
        else:
            block = {"tool_use_id": t["tid"], "type": "tool_result", "content": content}
            if t["name"] == "Bash":
                block["is_error"] = False
        if self.hooks == "progress" and not self.sidechain and t["name"] in ("Edit", "Write", "Read", "Bash"):
            save = self.tip
            self.tip = t["uid"]
            self.progress("PostToolUse", "PostToolUse:%s" % t["name"], t["tid"])
            self.tip = save
        parent = t["uid"] if self.family == "2.1" else self.tip
        if self.sidechain and not self.sub_tur and not is_error:
            tur = _MISSING
        obj = self.user_obj([block], parent, self.ids.uuid(), self.tick(30, 2500), tur=tur,
                            source=t["uid"] if self.family == "2.1" else None)
        self.emit(obj, "side_result" if self.sidechain else "result")
        if "inv" in t:
            t["inv"]["is_error"] = bool(is_error)
            t["inv"]["_tur"] = None if tur is _MISSING else tur
        if self.hooks == "attach" and not self.sidechain:
            self.hook_att("PostToolUse", "PostToolUse:%s" % t["name"], tool_use_id=t["tid"],
                          content="formatted" if t["name"] in ("Edit", "Write") else "")

    # --------------------------------------------------------------- file state + tool sims
    def get_file(self, path):
        if path not in self.files:
            rel = self.rel(path)
            embeds = [e[1] for e in self.sp.get("edits_all", []) if e[0] == rel]
            extra = self.sp.get("file_extra", {}).get(rel)
            if extra:
                embeds = embeds + [extra]
            self.files[path] = synth_file(rel, self.rng, embeds, with_bait=True)
        return self.files[path]

    def sim_read(self, path):
        text = self.get_file(path)
        self.read_done.add(path)
        n = len(text.split("\n")) - (1 if text.endswith("\n") else 0)
        content = numbered(text, self.style)
        if self.family == "2.0":
            content += MALWARE_REMINDER
        return content, {"type": "text", "file": {"filePath": path, "content": text, "numLines": n,
                                                  "startLine": 1, "totalLines": n}}, False

    def edit_snippet_msg(self, path, new_text, new_string):
        if self.style == "v3":
            return "The file %s has been updated successfully." % path
        idx = new_text.find(new_string)
        line = new_text[:idx].count("\n") + 1 if idx >= 0 else 1
        lines = new_text.split("\n")
        lo, hi = max(0, line - 5), min(len(lines), line + new_string.count("\n") + 4)
        snippet = "\n".join(lines[lo:hi])
        return ("The file %s has been updated. Here's the result of running `cat -n` on a snippet of the "
                "edited file:\n%s" % (path, numbered(snippet, "v2", lo + 1)))

    def sim_edit(self, path, old, new):
        text = self.get_file(path)
        if old not in text:
            msg = "String to replace not found in file.\nString: %s" % old
            return "<tool_use_error>%s</tool_use_error>" % msg, "Error: " + msg, True
        new_text = text.replace(old, new, 1)
        patch = structured_patch(text, new_text)
        self.files[path] = new_text
        tur = {"filePath": path, "oldString": old, "newString": new, "originalFile": text,
               "structuredPatch": patch, "userModified": False, "replaceAll": False}
        return self.edit_snippet_msg(path, new_text, new), tur, False

    def sim_write(self, path, content):
        existed = path in self.files
        if existed:
            old = self.files[path]
            patch = structured_patch(old, content)
            tur = {"type": "update", "filePath": path, "content": content, "structuredPatch": patch}
            if vt(self.version) >= (2, 0, 50):
                tur["originalFile"] = old
            msg = self.edit_snippet_msg(path, content, content[:200])
        else:
            if self.family == "2.1":
                lines = content.splitlines()
                patch = [{"oldStart": 0, "oldLines": 0, "newStart": 1, "newLines": len(lines),
                          "lines": ["+" + ln for ln in lines]}] if lines else []
            else:
                patch = []
            tur = {"type": "create", "filePath": path, "content": content, "structuredPatch": patch}
            if vt(self.version) >= (2, 0, 50):
                tur["originalFile"] = None
            msg = "File created successfully at: %s" % path
            self.written_new.add(path)
        self.files[path] = content
        return msg, tur, False

    def sim_bash(self, cmd, spec):
        ok, out = spec["ok"], spec["out"]
        if ok:
            tur = {"stdout": out, "stderr": "", "interrupted": False, "isImage": False}
            if self.style == "v3":
                tur["noOutputExpected"] = False
            return out, tur, False
        content = "Exit code %d\n%s" % (spec.get("code", 1), out)
        return content, "Error: " + content, True

    def run_tools(self, tools):
        """Produce results for a batch of tool_use lines (runs subagents first)."""
        pre = {}
        for t in tools:
            if t["name"] in ("Task", "Agent"):
                pre[t["tid"]] = self.run_subagent(t)
        order = list(tools)
        if self.family in ("1.0", "2.0") and len(order) > 1 and self.rng.random() < 0.35:
            self.rng.shuffle(order)
        if len(order) > 1 and any(t["name"] in ("Task", "Agent") for t in order) and self.rng.random() < 0.5:
            self.rng.shuffle(order)
        for t in order:
            name, inp, spec = t["name"], t["input"], t["spec"] or {}
            if spec.get("reject"):
                self.result(t, REJECT, "Error: " + REJECT, True)
                continue
            if name == "Read":
                c, tur, err = self.sim_read(inp["file_path"])
            elif name == "Edit":
                c, tur, err = self.sim_edit(inp["file_path"], inp["old_string"], inp["new_string"])
            elif name == "Write":
                c, tur, err = self.sim_write(inp["file_path"], inp["content"])
            elif name == "Bash":
                c, tur, err = self.sim_bash(inp["command"], spec)
            elif name == "Grep":
                fl = spec.get("files", [])
                if inp.get("output_mode") == "content":
                    body = spec.get("content", "")
                    c = body or "No matches found"
                    tur = {"mode": "content", "numFiles": 0, "filenames": [], "content": body,
                           "numLines": body.count("\n") + 1 if body else 0}
                else:
                    c = ("Found %d file%s\n%s" % (len(fl), "" if len(fl) == 1 else "s", "\n".join(fl))) if fl else "No files found"
                    tur = {"mode": "files_with_matches", "filenames": fl, "numFiles": len(fl)}
                err = False
            elif name == "Glob":
                fl = spec.get("files", [])
                c = "\n".join(fl) if fl else "No files found"
                tur = {"filenames": fl, "durationMs": self.rng.randint(3, 400), "numFiles": len(fl), "truncated": False}
                err = False
            elif name == "TodoWrite":
                c, tur, err = TODO_OK, {"oldTodos": spec.get("old", []), "newTodos": inp["todos"]}, False
            elif name == "ExitPlanMode":
                fp = spec.get("file")
                if fp:
                    c = ("User has approved your plan. You can now start coding. Start with updating your todo "
                         "list if applicable\n\nYour plan has been saved to: %s\nYou can refer back to it if "
                         "needed during implementation.\n\n## Approved Plan:\n%s" % (fp, inp["plan"]))
                    tur = {"plan": inp["plan"], "isAgent": False, "filePath": fp}
                else:
                    c = ("User has approved your plan. You can now start coding. Start with updating your todo "
                         "list if applicable")
                    tur = {"plan": inp["plan"], "isAgent": False}
                err = False
            elif name == "WebFetch":
                if spec.get("ok"):
                    c = spec["out"]
                    tur = {"bytes": len(c) * 7, "code": 200, "codeText": "OK", "result": c,
                           "durationMs": self.rng.randint(800, 9000), "url": inp["url"]}
                    err = False
                else:
                    c, tur, err = "Request failed with status code 403", "Error: Request failed with status code 403", True
            elif name in ("Task", "Agent"):
                c, tur, err = pre[t["tid"]]
            else:
                c, tur, err = "ok", {}, False
            if err:
                self.result(t, c, tur, True)
            else:
                self.result(t, c, tur, False)
            if name in ("Edit", "Write") and not err and self.family != "1.0" and not self.sidechain \
                    and self.rng.random() < 0.25 and self.cur is not None:
                self.snapshot(t["uid"], self.clock.iso(), {self.rel(inp["file_path"]): {
                    "backupFileName": "%s@v1" % self.ids.hexs(16), "version": 1, "backupTime": self.clock.iso()}},
                    update=True, snap_msg=getattr(self, "prompt_uuid", None) or t["uid"])

    def step(self, blocks):
        tools = self.respond(blocks)
        if tools:
            self.run_tools(tools)
        return tools

    # --------------------------------------------------------------- subagents
    def run_subagent(self, t):
        spec = t["spec"]
        layout = self.sp["layout"]
        atype, desc, prompt, report = spec["agent_type"], t["input"]["description"], t["input"]["prompt"], spec["report"]
        save = (self.out, self.tip, self.recording, self.sidechain, self.agent_id, self.sub_tur, self.slug_on)
        if layout == "subagents_dir":
            aid = "a" + self.ids.hexs(16)
            rel = "projects/%s/%s/subagents/agent-%s.jsonl" % (self.enc, self.sid, aid)
            sink = []
        elif layout == "flat":
            aid = self.ids.hexs(8)
            rel = "projects/%s/agent-%s.jsonl" % (self.enc, aid)
            sink = []
        else:
            aid = None
            rel = "projects/%s/%s.jsonl" % (self.enc, self.sid)
            sink = self.main
        self.out, self.tip, self.recording, self.sidechain = sink, None, False, True
        self.agent_id = aid
        self.sub_tur = not (layout == "subagents_dir" and self.style == "v3")
        self.sub_model = HAIKU[self.family] if atype == "Explore" else self.model
        t0 = self.clock.t
        self.emit(self.user_obj(prompt, None, self.ids.uuid(), self.tick(300, 2000)), "side_prompt")
        ntools = 0
        counts = {"read": 0, "search": 0, "bash": 0}
        for blocks in spec["steps"]:
            tools = self.respond(blocks)
            ntools += len(tools)
            for x in tools:
                if x["name"] == "Read":
                    counts["read"] += 1
                elif x["name"] in ("Grep", "Glob"):
                    counts["search"] += 1
                elif x["name"] == "Bash":
                    counts["bash"] += 1
            if tools:
                self.run_tools(tools)
        self.respond([("text", report)])
        dur = int((self.clock.t - t0).total_seconds() * 1000)
        (self.out, self.tip, self.recording, self.sidechain, self.agent_id, self.sub_tur, self.slug_on) = save
        if layout != "inline":
            self.subfiles[rel] = sink
            if layout == "subagents_dir":
                self.subfiles[rel[:-6] + ".meta.json"] = {"agentType": atype, "description": desc}
        self.subagents.append({"agent_id": aid, "agent_type": atype, "file": rel, "summary_text": report,
                               "layout": layout, "tool_use_id": t["tid"], "description": desc})
        tokens = self.rng.randint(9000, 60000)
        u = self.usage(self.rng.randint(1, 9), self.rng.randint(300, 2600), self.rng.randint(9000, 50000),
                       self.rng.randint(100, 8000))
        if self.style == "v3":
            content = [{"type": "text", "text": report},
                       {"type": "text", "text": "agentId: %s (use SendMessage with to: '%s' to continue this agent)\n"
                        "<usage>total_tokens: %d\ntool_uses: %d\nduration_ms: %d</usage>" % (aid, aid, tokens, ntools, dur)}]
            tur = {"status": "completed", "prompt": prompt, "agentId": aid, "agentType": atype,
                   "content": [{"type": "text", "text": report}], "totalDurationMs": dur, "totalTokens": tokens,
                   "totalToolUseCount": ntools, "usage": u,
                   "toolStats": {"readCount": counts["read"], "searchCount": counts["search"],
                                 "bashCount": counts["bash"], "editFileCount": 0, "linesAdded": 0,
                                 "linesRemoved": 0, "otherToolCount": 0}}
        elif self.family == "1.0":
            content = [{"type": "text", "text": report}]
            tur = {"content": [{"type": "text", "text": report}], "totalDurationMs": dur, "totalTokens": tokens,
                   "totalToolUseCount": ntools, "usage": u}
        else:
            content = [{"type": "text", "text": report}]
            tur = {"status": "completed", "prompt": prompt, "agentId": aid,
                   "content": [{"type": "text", "text": report}], "totalDurationMs": dur, "totalTokens": tokens,
                   "totalToolUseCount": ntools, "usage": u}
        return content, tur, False

    def warmup_agent(self):
        aid = self.ids.hexs(8)
        rel = "projects/%s/agent-%s.jsonl" % (self.enc, aid)
        save = (self.out, self.tip, self.recording, self.sidechain, self.agent_id, self.slug_on)
        self.out, self.tip, self.recording, self.sidechain, self.agent_id = [], None, False, True, aid
        self.sub_model = HAIKU[self.family]
        if vt(self.version) < (2, 0, 50):
            self.emit(self.user_obj("Warmup", None, self.ids.uuid(), self.tick(10, 200)), "side_prompt")
        self.respond([("text", "I'm Claude Code, Anthropic's official CLI for Claude. I'm ready to help you search "
                                "and explore this codebase.\n\nI can see we're in the `%s` repository on the `%s` "
                                "branch.\n\nWhat would you like me to search for or explore?" % (self.cwd, self.branch))])
        self.subfiles[rel] = self.out
        self.warmups.append({"agent_id": aid, "file": rel})
        (self.out, self.tip, self.recording, self.sidechain, self.agent_id, self.slug_on) = save


# ============================================================================= topic helpers
RESUME = ["Let's pick up the {t} work from yesterday. Where did we leave it?",
          "continuing on {t} - can you check the current state of the branch first?",
          "Back to {t}. What's left from the plan?",
          "resuming: {t}. remind me what we changed so far"]
GENERIC = [("test", "run the tests"), ("test", "run the full test suite again"),
           ("lint", "now fix the lint errors"), ("short", "yes"), ("short", "continue"),
           ("short", "go ahead"), ("commit", "commit this"), ("short", "ok do it"),
           ("explain", "why did that only show up in production and not locally?"),
           ("test", "can you run the tests one more time to be sure"),
           ("commit", "looks good, commit and push the branch")]
LOCAL_CMDS = [("model", "Set model to \x1b[1mopus (claude-opus-4-5-20251101)\x1b[22m"),
              ("cost", "Total cost:            $1.84\nTotal duration (API):  6m 12.4s\nTotal duration (wall): 41m 3.0s"),
              ("context", "Context Usage\nclaude-opus-4-5-20251101 \u00b7 71k/200k tokens (36%)"),
              ("mcp", "No MCP servers configured. Please run /doctor if this is unexpected.")]
CUSTOM_SLASH = [("review", "the changes on this branch", "review",
                 "Review the current diff for bugs, missing tests and style problems. Report the findings "
                 "as a prioritized list with file and line references."),
                ("fix-lint", "", "lint",
                 "Run the linters configured for this repository and fix every reported problem. Re-run "
                 "them until they pass.")]


def plan_md(T):
    s = "# Plan: %s\n\n## Problems\n" % T["title"]
    s += "".join("- %s\n" % p for p in T["problems"])
    s += "\n## Solution\n%s\n\n## Files to Modify\n" % T["solution"]
    s += "".join("- `%s` \u2014 %s\n" % (p, r) for p, r in T["files"])
    s += "\n## Implementation Steps\n" + "".join("%d. %s\n" % (i + 1, st) for i, st in enumerate(T["steps"]))
    s += "\n## Verification\n" + "".join("- %s\n" % v for v in T["verify"])
    return s


def symbol_of(T):
    for _, old, _new in T["edits"]:
        m = re.search(r"(?:def|function|func|fn|class|const|let|resource)\s+(?:\([^)]*\)\s*)?\"?([A-Za-z_][A-Za-z0-9_]*)", old)
        if m:
            return m.group(1)
    words = [w for w in re.findall(r"[a-z_]{5,}", T["title"].lower()) if w not in STOP]
    return words[0] if words else "config"


PROPER = {"German", "Stripe", "Terraform", "Airflow", "Parquet", "Safari", "Discord", "Markdown", "Playwright",
          "Fahrenheit", "Emails", "Django", "Redis", "Postgres"}


def short_title(T):
    t = T["title"]
    first = t.split()[0]
    if first in PROPER - {"Emails"} or first.isupper() or any(c.isupper() for c in first[1:]) or first[:1].isdigit():
        return t
    return t[0].lower() + t[1:]


def test_count(T):
    return 6 + sum(ord(c) for c in T["id"]) % 55


def test_file_content(T, rel):
    lang = lang_of(rel)
    stem = stem_of(rel)
    sym = symbol_of(T)
    if lang == "py":
        return ('import pytest\n\n\n@pytest.fixture\ndef {s}_case():\n    return {{"id": 1, "note": "regression for {t}"}}\n\n\n'
                'def test_{s}_happy_path({s}_case):\n    assert {s}_case["id"] == 1\n\n\n'
                'def test_{s}_regression({s}_case):\n    # {t}\n    assert "{sym}" in {s}_case["note"] or True\n').format(
                    s=stem.replace("test_", ""), t=short_title(T), sym=sym)
    if lang in ("ts", "tsx"):
        return (f"import {{ describe, expect, it }} from 'vitest';\n\ndescribe('{short_title(T)}', () => {{\n"
                "  it('keeps the happy path working', () => {\n    expect(1 + 1).toBe(2);\n  });\n\n"
                f"  it('covers the regression', () => {{\n    expect('{sym}').toContain('{sym[:3]}');\n  }});\n}});\n")
    if lang == "go":
        pkg = re.split(r"[\\/]", rel)[-2] if "/" in rel else "main"
        pkg = re.sub(r"[^a-z0-9]", "", pkg.lower()) or "main"
        return ('package {p}\n\nimport "testing"\n\nfunc Test{S}Regression(t *testing.T) {{\n\t// {t}\n'
                '\tif got := 1 + 1; got != 2 {{\n\t\tt.Fatalf("got %d", got)\n\t}}\n}}\n').format(
                    p=pkg, S=camel(stem.replace("_test", "")), t=short_title(T))
    if lang == "rs":
        return (f"use super::*;\n\n#[test]\nfn {stem}_regression() {{\n    // {short_title(T)}\n    assert_eq!(2 + 2, 4);\n}}\n")
    return "# %s\n\n- regression notes for %s\n" % (stem, short_title(T))


def lint_cmd(T, lang):
    if T.get("lint"):
        return T["lint"]
    return {"py": "ruff check .", "ts": "npx eslint src --ext .ts,.tsx", "tsx": "npx eslint src --ext .ts,.tsx",
            "go": "golangci-lint run ./...", "rs": "cargo clippy --all-targets -- -D warnings",
            "yaml": "helm lint charts/app", "tf": "terraform validate"}.get(lang, "make lint")


def lint_fail_out(b, path, lang):
    text = b.get_file(path)
    rel = b.rel(path)
    bait = LINT_BAIT[lang][0]
    line = text[:text.find(bait)].count("\n") + 1
    if lang == "py":
        line += 1
        return ("%s:%d:8: F401 [*] `os` imported but unused\n  |\n%d | import logging\n%d | import os\n  |        ^^ F401\n"
                "  |\n  = help: Remove unused import: `os`\n\nFound 1 error.\n[*] 1 fixable with the `--fix` option." % (
                    rel, line, line - 1, line))
    if lang in ("ts", "tsx"):
        name = "inspect" if lang == "ts" else "useMemo"
        return ("\n%s\n  %d:10  error  '%s' is defined but never used  @typescript-eslint/no-unused-vars\n\n"
                "\u2716 1 problem (1 error, 0 warnings)\n" % (path, line, name))
    if lang == "go":
        return "%s:%d:5: var `debugDump` is unused (unused)\nvar debugDump = false\n    ^" % (rel, line)
    if lang == "rs":
        line += 1
        return ("warning: unneeded `return` statement\n  --> %s:%d:5\n   |\n%d |     return total;\n   |     ^^^^^^^^^^^^^\n"
                "   |\n   = help: for further information visit https://rust-lang.github.io/rust-clippy/master/index.html#needless_return\n"
                "   = note: `-D clippy::needless-return` implied by `-D warnings`\nhelp: remove `return`\n\n"
                "error: could not compile due to 1 previous error" % (rel, line, line))
    if lang == "yaml":
        return ("==> Linting charts/app\n[ERROR] %s: unable to parse YAML: error converting YAML to JSON: yaml: "
                "line %d: did not find expected key\n\nError: 1 chart(s) linted, 1 chart(s) failed" % (rel, line + 1))
    if lang == "tf":
        return ('\nError: Unsupported argument\n\n  on %s line %d, in resource "aws_db_instance" "replica":\n'
                '  %d:   enable_iam_auth = true\n\nAn argument named "enable_iam_auth" is not expected here. Did you '
                'mean "iam_database_authentication_enabled"?' % (rel, line, line))
    return "lint failed"


def lint_ok_out(lang):
    return {"py": "All checks passed!", "go": "", "rs": "    Checking crate v0.4.2\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 3.41s",
            "yaml": "==> Linting charts/app\n[INFO] Chart.yaml: icon is recommended\n\n1 chart(s) linted, 0 chart(s) failed",
            "tf": "Success! The configuration is valid."}.get(lang, "")


def test_out(b, T, cmd, passed, fail_text):
    r = b.rng
    n = test_count(T)
    secs = r.uniform(0.4, 38.0)
    tf = T.get("testfile") or "tests"
    if "pytest" in cmd:
        return pytest_out(b.cwd, tf, n, passed, fail_text, secs)
    if "manage.py test" in cmd:
        if passed:
            return "Found %d test(s).\nCreating test database for alias 'default'...\nSystem check identified no issues (0 silenced).\n%s\n----------------------------------------------------------------------\nRan %d tests in %.3fs\n\nOK\nDestroying test database for alias 'default'..." % (n, "." * min(n, 60), n, secs)
        return "Found %d test(s).\nCreating test database for alias 'default'...\nSystem check identified no issues (0 silenced).\n%sF\n======================================================================\nFAIL: %s\n----------------------------------------------------------------------\nRan %d tests in %.3fs\n\nFAILED (failures=1)\nDestroying test database for alias 'default'..." % (n, "." * min(n - 1, 60), fail_text, n, secs)
    if any(x in cmd for x in ("npm test", "vitest", "jest", "pnpm test", "npm run test")):
        return jest_out(tf, n, passed, fail_text, secs)
    if "go test" in cmd:
        pkg = "github.com/ana/%s/%s" % (repo_name_of(b.cwd), os.path.dirname(tf) or "internal")
        return go_out(cmd, pkg, passed, fail_text, secs)
    if "cargo test" in cmd:
        return cargo_out(n, passed, fail_text, secs, repo_name_of(b.cwd))
    if "playwright test" in cmd:
        if passed:
            return "\nRunning %d tests using 4 workers\n\n  %d passed (%.1fs)\n\nTo open last HTML report run:\n\n  npx playwright show-report" % (n, n, secs)
        return ("\nRunning %d tests using 4 workers\n\n  1) [chromium] \u203a %s\n\n  1 failed\n    [chromium] \u203a %s\n  %d passed (%.1fs)"
                % (n, fail_text, fail_text.split(":")[0], n - 1, secs))
    if passed:
        return T.get("pass_out", "ok")
    return fail_text


def git_status_out(b, modified, untracked):
    s = "On branch %s\nChanges not staged for commit:\n  (use \"git add <file>...\" to update what will be committed)\n" % b.branch
    s += "".join("\tmodified:   %s\n" % m for m in modified) or "\tmodified:   README.md\n"
    if untracked:
        s += "\nUntracked files:\n  (use \"git add <file>...\" to include in what will be committed)\n"
        s += "".join("\t%s\n" % u for u in untracked)
    s += "\nno changes added to commit (use \"git add\" and/or \"git commit -a\")"
    return s


# ============================================================================= session script
class Script:
    """Drives a Builder through the turns of one session."""

    def __init__(self, b, sp):
        self.b = b
        self.sp = sp
        self.T = sp["topic"]
        self.r = b.rng
        self.edits = [e for e in self.T["edits"]]
        self.pending_agents = list(sp["agents"])
        self.detail = sp.get("detail")
        self.detail_done = False
        self.secret = sp.get("secret")
        self.tested = 0
        self.test_written = False
        self.touched = []
        self.created = []
        self.todo = []

    # ------------------------------------------------------------ helpers
    def A(self, rel):
        return self.b.abs(rel)

    def src_files(self):
        return [p for p, _ in self.T["files"] if not p.startswith("tests/") and "test" not in os.path.basename(p)] \
            or [p for p, _ in self.T["files"]]

    def maybe_think(self, text):
        if self.b.family != "1.0" and self.r.random() < 0.35:
            return [("thinking", text)]
        return []

    def read_blocks(self, rels):
        return [("tool", "Read", {"file_path": self.A(p)}) for p in rels]

    def ensure_read(self, rel):
        if self.A(rel) not in self.b.read_done:
            self.b.step(self.read_blocks([rel]))

    def next_edit(self, allow_generic=True, only_path=None):
        while self.edits:
            path, old, new = self.edits.pop(0)
            if only_path and path != only_path:
                continue
            if old in self.b.get_file(self.A(path)):
                return path, old, new
        if not allow_generic:
            return None
        return self.generic_edit(only_path or self.r.choice(self.src_files()))

    def generic_edit(self, rel):
        text = self.b.get_file(self.A(rel))
        lines = text.split("\n")
        counts = {}
        for ln in lines:
            counts[ln] = counts.get(ln, 0) + 1
        cands = [ln for ln in lines if ln.strip() and counts[ln] == 1 and len(ln.strip()) > 8 and text.count(ln) == 1
                 and not ln.strip().startswith(("#", "//", "--", "import", "from", "use ", "package"))]
        lang = lang_of(rel)
        if lang == "json":
            old = '  "private": true'
            if old in text:
                return rel, old, old + ',\n  "description": "%s"' % self.r.choice(FOLLOWUP_NOTES)
        if not cands:
            cands = [ln for ln in lines if ln.strip() and text.count(ln) == 1] or [lines[0]]
        line = self.r.choice(cands)
        indent = re.match(r"\s*", line).group(0)
        note = comment_prefix(lang) + self.r.choice(FOLLOWUP_NOTES)
        return rel, line, line + "\n" + indent + note

    def do_edit(self, edit, with_read=True, parallel_read=None):
        rel, old, new = edit
        if with_read:
            self.ensure_read(rel)
        if self.r.random() < 0.06:
            bad = old.replace("    ", "  ", 1) if "    " in old else old + " "
            if bad not in self.b.get_file(self.A(rel)):
                self.b.step([("text", "Let me update `%s`." % rel), ("tool", "Edit", {"file_path": self.A(rel), "old_string": bad, "new_string": new})])
                self.b.step([("text", "The indentation didn't match; re-reading the file."), ("tool", "Read", {"file_path": self.A(rel)})])
        inp = {"file_path": self.A(rel), "old_string": old, "new_string": new}
        if self.b.style == "v3" and self.r.random() < 0.5:
            inp = {"replace_all": False, "file_path": self.A(rel), "old_string": old, "new_string": new}
        self.b.step(self.maybe_think("Apply the change to %s." % rel) + [("tool", "Edit", inp)])
        if rel not in self.touched:
            self.touched.append(rel)

    def run_test(self, force_fail=None, fail_text=None):
        T = self.T
        cmd = T["test"]
        fail = force_fail if force_fail is not None else (self.r.random() < 0.4)
        if force_fail is None and self.detail and self.detail[0] == "error" and not self.detail_done:
            fail = True
        ft = fail_text or T["fail"]
        if fail and self.detail and self.detail[0] == "error" and not self.detail_done:
            ft = self.detail[1]
            self.detail_done = True
        out = test_out(self.b, T, cmd, not fail, ft)
        code = 1
        desc = "Run the %s tests" % repo_name_of(self.b.cwd)
        self.b.step([("tool", "Bash", {"command": cmd, "description": desc, "timeout": 300000} if self.r.random() < 0.2
                      else {"command": cmd, "description": desc}, {"ok": not fail, "out": out, "code": code})])
        self.tested += 1
        return fail, ft

    def agent_step(self, types, lead_text=None):
        blocks = []
        if lead_text:
            blocks.append(("text", lead_text))
        for at in types:
            desc, prompt, spec = self.agent_spec(at)
            name = "Agent" if vt(self.b.version) >= (2, 1, 110) else "Task"
            if self.b.style == "v3":
                inp = {"description": desc, "subagent_type": at, "prompt": prompt}
            else:
                inp = {"description": desc, "prompt": prompt, "subagent_type": at}
            blocks.append(("tool", name, inp, spec))
        self.b.step(blocks)

    def agent_spec(self, at):
        T = self.T
        b = self.b
        repo = repo_name_of(b.cwd)
        files = [p for p, _ in T["files"]]
        sym = symbol_of(T)
        findings = list(T["findings"])
        if self.detail and self.detail[0] == "subagent" and not self.detail_done and at in ("Explore", "general-purpose", "Plan"):
            findings.insert(0, self.detail[1])
            self.detail_done = True
        if at == "Explore":
            desc = "Explore %s" % short_title(T)
            prompt = ("Explore the %s codebase to understand %s. Focus on:\n\n%s\n\nReport the relevant functions, "
                      "how they interact, and anything that looks wrong. Do not modify files." % (
                          repo, short_title(T), "\n".join("%d. %s" % (i + 1, f) for i, f in enumerate(files[:4]))))
            steps = [[("text", "I'll explore the codebase to understand %s." % short_title(T)),
                      ("tool", "Glob", {"pattern": os.path.dirname(files[0]) + "/**/*" + os.path.splitext(files[0])[1]},
                       {"files": [self.A(p) for p in files[:3]]})],
                     [("tool", "Grep", {"pattern": sym, "output_mode": "files_with_matches"},
                       {"files": [self.A(p) for p in files[:2]]})],
                     self.read_blocks(files[:2])]
        elif at == "Plan":
            desc = "Plan %s" % short_title(T)
            prompt = ("Design an implementation plan for: %s.\n\nRead the relevant code (%s) and propose concrete "
                      "steps, the files to change and how to verify the change." % (T["title"], ", ".join(files[:3])))
            steps = [self.read_blocks(files[:1]),
                     [("tool", "Grep", {"pattern": sym, "output_mode": "content", "-n": True},
                       {"content": "%s:%d:%s" % (files[0], self.r.randint(10, 90), sym)})],
                     self.read_blocks(files[1:3])]
        elif at == "code-reviewer":
            desc = "Review %s changes" % short_title(T)
            prompt = ("Review the uncommitted changes in %s for %s. Check correctness, edge cases, tests and style. "
                      "Report issues by severity." % (repo, short_title(T)))
            steps = [[("tool", "Bash", {"command": "git diff --stat", "description": "Show changed files"},
                       {"ok": True, "out": "\n".join(" %s | %d %s" % (p, self.r.randint(2, 40), "+" * self.r.randint(2, 9) + "-" * self.r.randint(0, 4)) for p in (self.touched or files[:2])) + "\n %d files changed" % len(self.touched or files[:2])}),
                      ("tool", "Bash", {"command": "git diff -- %s" % (self.touched or files[:1])[0], "description": "Show the diff"},
                       {"ok": True, "out": "diff --git a/{0} b/{0}\n--- a/{0}\n+++ b/{0}\n@@ -12,6 +12,9 @@\n ...".format((self.touched or files[:1])[0])})],
                     self.read_blocks(files[:1])]
            findings = ["No blocking issues in the main change; the logic matches the plan.",
                        T["findings"][-1], "Consider adding a test for: %s" % T["problems"][0][0].lower() + T["problems"][0][1:]]
        else:
            desc = "Investigate %s" % short_title(T)
            prompt = ("Investigate %s in %s. Look at the recent history of %s and explain the root cause." % (
                short_title(T), repo, files[0]))
            steps = [[("tool", "Bash", {"command": "git log --oneline -8 -- %s" % files[0], "description": "Recent history of %s" % files[0]},
                       {"ok": True, "out": "\n".join("%s %s" % (self.b.ids.hexs(7), m) for m in
                                                   ["fix typo in %s" % os.path.basename(files[0]), "bump deps",
                                                    "refactor %s helpers" % stem_of(files[0]), "initial %s" % stem_of(files[0])])})],
                     self.read_blocks(files[:2])]
        report = self.make_report(desc, findings, files)
        return desc, prompt, {"agent_type": at, "report": report, "steps": steps}

    def make_report(self, desc, findings, files):
        T = self.T
        intro = self.r.choice(["I now have a clear picture of the code involved.",
                               "Here is what I found after reading the relevant modules.",
                               "Investigation complete. Summary below."])
        for nf in range(len(findings), 0, -1):
            for nfiles in range(min(4, len(T["files"])), 0, -1):
                s = "## Summary Report: %s\n\n%s\n\n### Findings\n" % (desc, intro)
                s += "".join("%d. %s\n" % (i + 1, f) for i, f in enumerate(findings[:nf]))
                s += "\n### Relevant files\n" + "".join("- `%s` \u2014 %s\n" % (p, role) for p, role in T["files"][:nfiles])
                s += "\n### Recommendation\n%s" % T["solution"]
                if len(s) <= 2000:
                    if len(s) < 300:
                        s += "\n\n### Notes\n" + " ".join(T["problems"])
                    return s
        return s[:1990]

    # ------------------------------------------------------------ turn kinds
    def turn(self, kind, text, extras):
        getattr(self, "t_" + kind)(text, extras)

    def extra_steps(self, extras):
        """secret-revealing tool calls and agents attached to this turn"""
        if extras.get("secret_tool"):
            kind, where, val = self.secret
            if where == "bash":
                cmd, out = self.secret_bash(kind, val)
                self.b.step([("text", "Let me check how the environment is configured."),
                             ("tool", "Bash", {"command": cmd, "description": "Inspect configuration"}, {"ok": True, "out": out})])
            else:
                rel, extra = self.secret_file(kind, val)
                self.b.files[self.A(rel)] = extra
                self.b.step([("text", "Let me look at the local configuration."), ("tool", "Read", {"file_path": self.A(rel)})])
        ag = extras.get("agents") or []
        if ag:
            if len(ag) > 1 and self.r.random() < 0.5:
                self.agent_step(ag, "I'll run these investigations in parallel.")
            else:
                for a in ag:
                    self.agent_step([a], self.r.choice([None, "I'll delegate the exploration to a subagent.",
                                                        "Let me get a second pair of eyes on this."]))

    def secret_bash(self, kind, val):
        return {"aws": ("env | grep -i aws", "AWS_PROFILE=staging\nAWS_REGION=eu-west-1\nAWS_ACCESS_KEY_ID=%s" % val),
                "github": ("cat ~/.npmrc", "//npm.pkg.github.com/:_authToken=%s\n@acme:registry=https://npm.pkg.github.com" % val),
                "anthropic": ("printenv | grep -i anthropic", "ANTHROPIC_API_KEY=%s" % val),
                "ssh": ("cat deploy/keys/ci_deploy_ed25519", val),
                "slack": ("grep -rn SLACK_BOT_TOKEN .env*", ".env:7:SLACK_BOT_TOKEN=%s" % val),
                "postgres": ("grep -rn DATABASE_URL .env* config/ 2>/dev/null", ".env.staging:3:DATABASE_URL=%s" % val)}[kind]

    def secret_file(self, kind, val):
        if kind == "ssh":
            return "deploy/keys/ci_deploy_ed25519", val + "\n"
        key = {"aws": "AWS_ACCESS_KEY_ID", "github": "GITHUB_TOKEN", "anthropic": "ANTHROPIC_API_KEY",
               "slack": "SLACK_BOT_TOKEN", "postgres": "DATABASE_URL"}[kind]
        return ".env", "# local overrides - do not commit\nAPP_ENV=development\nLOG_LEVEL=debug\n%s=%s\nFEATURE_FLAGS_URL=http://localhost:8089\n" % (key, val)

    def t_inv(self, text, ex):
        T = self.T
        files = [p for p, _ in T["files"]]
        intro = self.r.choice(["I'll start by looking at how %s is implemented." % short_title(T),
                               "Let me look at the relevant code first.",
                               "Let me trace the code path involved."])
        self.extra_steps(ex)
        mode = self.r.random()
        if mode < 0.4:
            self.b.step(self.maybe_think("Find the relevant symbols first.") + [("text", intro),
                        ("tool", "Grep", {"pattern": symbol_of(T), "output_mode": "files_with_matches"}, {"files": [self.A(p) for p in files[:2]]}),
                        ("tool", "Glob", {"pattern": "**/*%s" % os.path.splitext(files[0])[1]}, {"files": [self.A(p) for p in files[:4]]})])
            self.b.step(self.read_blocks(files[:2]))
        elif mode < 0.8:
            self.b.step([("text", intro)] + self.read_blocks(files[:2]))
        else:
            self.b.step([("text", intro)] + self.read_blocks(files[:1]))
            if len(files) > 2:
                self.b.step(self.read_blocks(files[2:3]))
        if ex.get("webfetch"):
            url = {"py": "https://docs.python.org/3/library/datetime.html", "ts": "https://nextjs.org/docs/app/api-reference",
                   "go": "https://pkg.go.dev/context", "rs": "https://docs.rs/sqlx/latest/sqlx/"}.get(T["lang"], "https://kubernetes.io/docs/concepts/")
            ok = self.r.random() < 0.6
            self.b.step([("tool", "WebFetch", {"url": url, "prompt": "Summarize the parts relevant to %s" % short_title(T)},
                          {"ok": ok, "out": "The page documents the API; the relevant section says behaviour depends on configuration."})])
        if self.detail and self.detail[0] == "file" and not self.detail_done and ex.get("detail_here"):
            self.detail_file_steps()
        f = T["findings"]
        msg = "Here's what I found:\n\n1. %s\n2. %s\n\n%s" % (f[0], f[1 % len(f)], self.r.choice(
            ["The fix is straightforward: " + T["solution"][0].lower() + T["solution"][1:],
             "Want me to put together a plan for the fix?", "I'd suggest we start with the first point."]))
        self.b.respond([("text", msg)])

    def detail_file_steps(self):
        rel = self.detail[1]
        self.b.step([("text", "There's also an older helper involved."), ("tool", "Read", {"file_path": self.A(rel)})])
        e = self.generic_edit(rel)
        self.b.step([("tool", "Edit", {"file_path": self.A(rel), "old_string": e[1], "new_string": e[2]})])
        self.detail_done = True

    def t_plan(self, text, ex):
        T = self.T
        b = self.b
        files = [p for p, _ in T["files"]]
        self.extra_steps(ex)
        b.step(self.maybe_think("Read the code before proposing a plan.") +
               [("text", "I'll read the relevant code before proposing a plan.")] + self.read_blocks(files[:2]))
        plan = plan_md(T)
        self.sp["plan_text"] = plan
        fp = None
        if b.slug:
            fp = self.plan_path()
            if self.sp.get("plan_write"):
                b.step([("text", "Writing the plan to the plan file."), ("tool", "Write", {"file_path": fp, "content": plan})])
                b.plan_written = fp
        b.step([("tool", "ExitPlanMode", {"plan": plan}, {"file": fp})])
        b.perm = "acceptEdits" if b.style == "v3" else b.perm
        todos = [{"content": s, "status": "in_progress" if i == 0 else "pending", "activeForm": s}
                 for i, s in enumerate(T["steps"][:5])]
        self.todo = todos
        b.step([("tool", "TodoWrite", {"todos": todos})])
        self.do_edit(self.next_edit())
        b.respond([("text", "Plan approved. I've started with step 1 (%s). Next: %s" % (
            T["steps"][0].rstrip("."), T["steps"][1 % len(T["steps"])][0].lower() + T["steps"][1 % len(T["steps"])][1:]))])

    def plan_path(self):
        home = self.sp["home"]
        if "\\" in home:
            return home + "\\.claude\\plans\\%s.md" % self.b.slug
        return home + "/.claude/plans/%s.md" % self.b.slug

    def t_impl(self, text, ex, short=False):
        T = self.T
        b = self.b
        self.extra_steps(ex)
        e1 = self.next_edit()
        self.do_edit(e1)
        if not short and self.r.random() < 0.6:
            e2 = self.next_edit()
            self.do_edit(e2)
        if self.detail and self.detail[0] == "file" and not self.detail_done:
            self.detail_file_steps()
        if not self.test_written and T.get("testfile") and self.r.random() < 0.5:
            tf = T["testfile"]
            content = test_file_content(T, tf)
            if self.A(tf) in b.files:
                content = b.files[self.A(tf)].rstrip("\n") + "\n\n" + content.split("\n\n", 1)[-1]
            b.step([("text", "Adding a regression test."), ("tool", "Write", {"file_path": self.A(tf), "content": content})])
            self.test_written = True
            self.created.append(tf)
        if self.r.random() < 0.5 or (self.detail and self.detail[0] == "error" and not self.detail_done):
            fail, ft = self.run_test()
            if fail:
                self.do_edit(self.next_edit(), with_read=True)
                self.run_test(force_fail=False)
        changed = self.touched[-2:] or [e1[0]]
        msg = "Done. Changes:\n\n" + "".join("- `%s`: %s\n" % (p, dict(T["files"]).get(p, "follow-up adjustment")) for p in changed if not (self.detail and p == self.detail[1]))
        msg += "\n" + self.r.choice(["Want me to run the full test suite?", "Next I'd run the linters.",
                                     "Let me know if you want the regression test extended."])
        b.respond([("text", msg)])

    def t_short(self, text, ex):
        self.t_impl(text, ex, short=True)

    def t_test(self, text, ex):
        T = self.T
        self.extra_steps(ex)
        force = None
        if self.detail and self.detail[0] == "error" and not self.detail_done:
            force = True
        fail, ft = self.run_test(force_fail=force)
        if fail:
            rel = self.r.choice(self.src_files())
            self.b.respond([("text", self.r.choice(["That failed. Let me look at the code involved.",
                                                     "One check fails. Let me look at the relevant code.",
                                                     "Failure reproduced; reading the code under test."]))])
            self.ensure_read(rel)
            self.do_edit(self.next_edit(only_path=None), with_read=True)
            self.run_test(force_fail=False)
            short = ft.split("\n")[0]
            msg = "The first run failed with:\n\n```\n%s\n```\n\nI fixed the cause and the suite is green now (%d passed)." % (
                short[:300], test_count(T))
        else:
            msg = "All %d tests pass." % test_count(T)
        self.b.respond([("text", msg)])

    def t_lint(self, text, ex):
        T = self.T
        b = self.b
        self.extra_steps(ex)
        cands = [p for p in (self.touched + self.src_files()) if lang_of(p) in LINT_BAIT]
        target = cands[0] if cands else None
        lang = lang_of(target) if target else T["lang"]
        cmd = lint_cmd(T, lang)
        if target and LINT_BAIT[lang][0] in b.get_file(self.A(target)):
            out = lint_fail_out(b, self.A(target), lang)
            b.step([("tool", "Bash", {"command": cmd, "description": "Run the linter"}, {"ok": False, "out": out, "code": 1})])
            old, new = LINT_BAIT[lang]
            self.do_edit((target, old, new))
            b.step([("tool", "Bash", {"command": cmd, "description": "Re-run the linter"}, {"ok": True, "out": lint_ok_out(lang)})])
            b.respond([("text", "Lint is clean now. The only problem was in `%s` (%s)." % (
                target, {"py": "unused `os` import", "ts": "unused import", "tsx": "unused `useMemo` import",
                         "go": "unused `debugDump` variable", "rs": "needless `return`", "yaml": "mis-indented `containerPort`",
                         "tf": "renamed `enable_iam_auth` argument"}.get(lang, "formatting")))])
        else:
            b.step([("tool", "Bash", {"command": cmd, "description": "Run the linter"}, {"ok": True, "out": lint_ok_out(lang)})])
            b.respond([("text", "The linter reports no problems.")])

    def t_commit(self, text, ex):
        T = self.T
        b = self.b
        self.extra_steps(ex)
        mod = self.touched or [self.src_files()[0]]
        st = git_status_out(b, mod, self.created)
        stat = "\n".join(" %s | %d %s" % (p, self.r.randint(2, 40), "+" * self.r.randint(1, 9) + "-" * self.r.randint(0, 5)) for p in mod + self.created)
        b.step([("tool", "Bash", {"command": "git status", "description": "Show working tree status"}, {"ok": True, "out": st}),
                ("tool", "Bash", {"command": "git diff --stat", "description": "Summarize changes"}, {"ok": True, "out": stat})])
        msg = T.get("commit") or ("fix: " + short_title(T))
        sha = b.ids.hexs(7)
        files = " ".join(mod + self.created)
        cmd = "git add %s && git commit -m \"%s\"" % (files, msg)
        out = "[%s %s] %s\n %d files changed, %d insertions(+), %d deletions(-)" % (
            b.branch, sha, msg, len(mod) + len(self.created), self.r.randint(5, 120), self.r.randint(0, 40))
        if "push" in text:
            cmd += " && git push -u origin %s" % b.branch
            out += "\nbranch '%s' set up to track 'origin/%s'." % (b.branch, b.branch)
        b.step([("tool", "Bash", {"command": cmd, "description": "Commit the changes"}, {"ok": True, "out": out})])
        b.respond([("text", "Committed `%s` on `%s`:\n\n```\n%s\n```" % (sha, b.branch, msg))])

    def t_explain(self, text, ex):
        T = self.T
        self.extra_steps(ex)
        blocks = self.maybe_think("Explain the root cause simply.")
        blocks.append(("text", "%s\n\n%s" % (T["problems"][0], T["problems"][-1] if len(T["problems"]) > 1 else T["solution"])))
        self.b.respond(blocks)

    def t_review(self, text, ex):
        T = self.T
        self.extra_steps(ex)
        if not ex.get("agents"):
            files = self.touched or [p for p, _ in T["files"]][:1]
            self.b.step([("tool", "Bash", {"command": "git diff", "description": "Show the full diff"},
                          {"ok": True, "out": "diff --git a/{0} b/{0}\n--- a/{0}\n+++ b/{0}\n@@ -3,7 +3,9 @@\n ...".format(files[0])})])
            self.ensure_read(files[0])
        self.b.respond([("text", "Review summary:\n\n- The change addresses the root cause.\n- %s\n- Suggest one more test: %s" % (
            T["findings"][-1], T["steps"][-1]))])


# ============================================================================= build one session
def build_session(G, sp):
    T = sp["topic"]
    b = Builder(sp)
    sc = Script(b, sp)
    r = b.rng
    turns = sp["turns"]
    if sp.get("parent_hint"):
        b.tip = sp["parent_hint"]
    # ---- header
    if sp.get("leading_assistant"):
        b.start_turn(0, None, False, None)
        b.turn_prompt_ts = b.clock.t
        b.step([("text", "Continuing from where we left off \u2014 checking the working tree first."),
                ("tool", "Bash", {"command": "git status --short", "description": "Check working tree"},
                 {"ok": True, "out": " M %s" % T["files"][0][0]})])
        b.respond([("text", "There are uncommitted changes in `%s` from the previous session. Ready to continue." % T["files"][0][0])])
    else:
        if b.style == "v3":
            b.emit({"type": "permission-mode", "permissionMode": b.perm, "sessionId": b.sid}, "permmode", advance=False)
            if b.hooks == "attach":
                b.hook_att("SessionStart", "SessionStart:startup", content="")
        elif b.hooks == "progress":
            b.progress("SessionStart", "SessionStart:startup", b.ids.uuid(), advance=True)
    for _ in range(sp.get("warmups", 0)):
        b.warmup_agent()
    # ---- turns
    idx = 1
    for tspec in turns:
        kind, text = tspec["kind"], tspec["text"]
        if tspec.get("compact_before"):
            b.compact(sp["compact_text"], r.randint(150000, 172000))
        if tspec.get("version_change"):
            b.version = tspec["version_change"]
        if kind == "local":
            name, out = tspec["cmd"]
            b.local_command(name, out, idx)
            idx += 1
            continue
        perm = "plan" if kind == "plan" and b.family == "2.1" else (b.perm if b.family == "2.1" else None)
        if tspec.get("slash"):
            name, args, _k, expansion = tspec["slash"]
            text = "<command-name>/%s</command-name>\n<command-message>%s</command-message>\n<command-args>%s</command-args>" % (name, name, args)
            b.human_prompt(text, perm=perm, index=idx, meta_expansion=expansion, slash=True)
        else:
            b.human_prompt(text, as_list=tspec.get("as_list", False), image=tspec.get("image"), perm=perm, index=idx)
        idx += 1
        if tspec.get("interrupt"):
            b.respond([("text", r.choice(["Let me start by reading the relevant files.", "I'll take a look."]))])
            b.interrupt(False)
            b.end_turn(text, interrupted=True)
            continue
        if tspec.get("reject"):
            rel = sc.src_files()[0]
            sc.ensure_read(rel)
            e = sc.generic_edit(rel)
            b.step([("text", "I'll make the change."), ("tool", "Edit", {"file_path": b.abs(rel), "old_string": e[1], "new_string": e[2]}, {"reject": True})])
            b.interrupt(True)
            b.end_turn(text, interrupted=True)
            continue
        sc.turn(kind, text, tspec.get("extras", {}))
        b.end_turn(text)
    # make sure the detail of a primary session really got written somewhere
    if sc.detail and not sc.detail_done:
        kind = sc.detail[0]
        text = {"error": "run the tests again please", "file": "also clean up the old helper while you're in there",
                "subagent": "can you get a second opinion from an agent before we merge?"}[kind]
        b.human_prompt(text, perm=b.perm if b.family == "2.1" else None, index=idx)
        if kind == "error":
            sc.t_test(text, {})
        elif kind == "file":
            sc.detail_file_steps()
            b.respond([("text", "Done, the old helper is updated too.")])
        else:
            sc.agent_step(["general-purpose"], "I'll ask a subagent to double-check.")
            b.respond([("text", "The agent confirmed the analysis; details are in its report above.")])
        b.end_turn(text)
    b.close_turn()
    if b.slug and not b.slug_on:
        b.slug = None
    return b


# ============================================================================= corpus planning
KIND_OF_AGENT_TURN = {"Explore": ("plan", "inv"), "Plan": ("plan", "inv"), "general-purpose": ("inv", "impl", "test"),
                      "code-reviewer": ("review", "commit", "impl", "short")}


def home_of(cwd):
    if "\\" in cwd:
        parts = cwd.split("\\")
        return "\\".join(parts[:3])
    parts = cwd.split("/")
    return "/".join(parts[:3])


def pick_version(rng, fam):
    if fam == "2.1":
        return rng.choices(VERSIONS["2.1"], V21_WEIGHTS)[0]
    return rng.choice(VERSIONS[fam])


def split_chunks(rng, items, c):
    n = len(items)
    if c <= 1 or n < 2:
        return [items]
    c = min(c, n)
    cuts = sorted(rng.sample(range(1, n), c - 1))
    out, prev = [], 0
    for x in cuts + [n]:
        out.append(items[prev:x])
        prev = x
    return out


def make_compact_text(T, sp):
    files = "\n".join("   - %s: %s" % (p, role) for p, role in T["files"])
    return ("This session is being continued from a previous conversation that ran out of context. The "
            "conversation is summarized below:\nAnalysis:\nThe user is working in %s on %s. The earlier part of the "
            "conversation investigated the problem, agreed on an approach and started implementing it.\n\n"
            "Summary:\n1. Primary Request and Intent:\n   %s\n\n2. Key Technical Concepts:\n   - %s\n   - %s\n\n"
            "3. Files and Code Sections:\n%s\n\n4. Errors and fixes:\n   - %s\n\n5. Pending Tasks:\n   - %s\n\n"
            "6. Current Work:\n   %s\n\n7. Optional Next Step:\n   %s" % (
                repo_name_of(sp["cwd"]), short_title(T), T["prompts"][0][1], T["problems"][0], T["solution"].split(". ")[0],
                files, T["fail"], "\n   - ".join(T["steps"][-2:]), T["steps"][len(T["steps"]) // 2], T["verify"][0]))


def plan_corpus(n, seed, bank_name, bank, edge):
    g = random.Random("corpus:%d:%s:%d" % (seed, bank_name, n))
    reserved = []
    if edge and n >= 8:
        reserved = ["empty", "summary_only"]
    regular = n - len(reserved)
    order = list(bank)
    g.shuffle(order)
    assign = []
    topic_fam = {}
    for T in order:
        c = g.choice([1, 1, 2, 2, 3])
        fam = g.choices(["2.1", "2.0", "1.0"], [70, 20, 10])[0]
        topic_fam[T["id"]] = fam
        for k in range(c):
            if len(assign) < regular:
                assign.append({"topic": T, "core": k, "ncore": c})
    i = 0
    while len(assign) < regular:
        assign.append({"topic": order[i % len(order)], "core": None, "ncore": None})
        i += 1
    # interleave the edge sessions deterministically
    slots = list(range(n))
    edge_pos = sorted(g.sample(slots, len(reserved))) if reserved else []
    plans = []
    ai = 0
    for idx in range(n):
        if idx in edge_pos:
            plans.append({"edge_only": reserved[edge_pos.index(idx)]})
        else:
            plans.append(assign[ai])
            ai += 1
    # per-session family / version
    for idx, a in enumerate(plans):
        if "edge_only" in a:
            continue
        T = a["topic"]
        if a["core"] is not None:
            fam = topic_fam[T["id"]]
        else:
            fam = g.choices(["2.1", "2.0", "1.0"], [70, 20, 10])[0]
        a["family"] = fam
        a["idx"] = idx
    regular_idx = [i for i, a in enumerate(plans) if "edge_only" not in a]
    flags = {i: set() for i in regular_idx}
    if edge and regular_idx:
        def take(pred, k=1, tag=None):
            cands = [i for i in regular_idx if pred(plans[i]) and tag not in flags[i]]
            for i in g.sample(cands, min(k, len(cands))):
                flags[i].add(tag)
        take(lambda a: True, 1, "leading_assistant")
        take(lambda a: a["family"] == "2.1" and a["core"] != 0, 1, "windows_cwd")
        take(lambda a: a["family"] == "2.1", 1, "version_change")
        take(lambda a: True, 1, "large_image")
        take(lambda a: True, max(1, round(0.03 * n)), "malformed_line")
        take(lambda a: True, max(1, round(0.02 * n)), "truncated_last_line")
        take(lambda a: True, max(1, round(0.03 * n)), "duplicate_lines")
    for i in regular_idx:
        plans[i]["flags"] = flags[i]
        plans[i]["secret"] = g.random() < 0.15
    return plans, g


def session_plan(G, a, seed, bank_name, prev):
    """Turn an assignment into a full session plan (sp) with its own rng."""
    idx = a["idx"]
    r = random.Random("session:%d:%s:%d" % (seed, bank_name, idx))
    ids = Ids(r)
    T = a["topic"]
    fam = a["family"]
    flags = a["flags"]
    version = pick_version(r, fam)
    if a["core"] and prev.get(T["id"]):
        version = prev[T["id"]]["version"]
    if "version_change" in flags:
        version = r.choice(["2.1.110", "2.1.114"])
    elif "windows_cwd" in flags and style_of(version) != "v3":
        version = r.choice(["2.1.110", "2.1.114", "2.1.132"])
    cwd = T["repo"]
    if "windows_cwd" in flags:
        cwd = "C:\\Users\\bo\\src\\app"
    sp = {"rng": r, "sid": ids.uuid(), "topic": T, "cwd": cwd, "home": home_of(cwd), "version": version,
          "branch": T["branch"] if r.random() < 0.8 else r.choice(["main", "develop"]),
          "model": r.choice(MODELS[fam]), "edits_all": T["edits"], "flags": flags, "role": "filler" if a["core"] is None else "core",
          "core": a["core"], "perm": r.choice(["default", "default", "acceptEdits"])}
    style = style_of(version)
    # ---- start time
    if a["core"] and prev.get(T["id"]):
        start = prev[T["id"]]["end"] + timedelta(hours=r.uniform(2, 60))
    else:
        base, days = WINDOWS[fam]
        start = base + timedelta(days=r.uniform(0, days), hours=r.uniform(7, 12))
    sp["start"] = start
    # ---- hooks
    if style == "v3":
        sp["hooks"] = "attach" if r.random() < 0.7 else None
    elif version in ("2.1.17", "2.1.42"):
        sp["hooks"] = "progress" if r.random() < 0.8 else None
    else:
        sp["hooks"] = None
    sp["layout"] = {"2.1": "subagents_dir", "2.0": "flat", "1.0": "inline"}[fam]
    # ---- prompts
    P = [{"kind": k, "text": t} for k, t in T["prompts"]]
    turns = []
    if a["core"] is not None:
        chunks = split_chunks(random.Random("chunks:%d:%s:%s" % (seed, bank_name, T["id"])), P, a["ncore"])
        mine = chunks[a["core"]] if a["core"] < len(chunks) else chunks[-1]
        if a["core"] > 0:
            turns.append({"kind": "inv", "text": r.choice(RESUME).format(t=short_title(T))})
        turns += [dict(x) for x in mine]
    else:
        if r.random() < 0.3:
            turns.append({"kind": "inv", "text": r.choice(RESUME).format(t=short_title(T))})
        k = r.randint(2, min(5, len(P)))
        picks = sorted(r.sample(range(len(P)), k))
        if 0 not in picks and not turns:
            picks = [0] + picks[:-1]
        turns += [dict(P[i]) for i in picks]
    for _ in range(r.choice([0, 0, 1, 1, 2])):
        gk, gt = r.choice(GENERIC)
        first_work = next((i for i, t in enumerate(turns) if t["kind"] in ("impl", "plan", "short")), None)
        if gk == "commit":
            pos = len(turns)
        elif gk in ("test", "lint", "short"):
            lo = first_work + 1 if first_work is not None else len(turns)
            pos = r.randint(lo, len(turns))
        else:
            pos = r.randint(1, len(turns))
        turns.insert(pos, {"kind": gk, "text": gt})
    if r.random() < 0.18:
        turns.insert(r.randint(1, len(turns)), {"kind": "local", "text": None, "cmd": r.choice(LOCAL_CMDS)})
    if r.random() < 0.12:
        cs = r.choice(CUSTOM_SLASH)
        turns.insert(r.randint(1, len(turns)), {"kind": cs[2], "text": None, "slash": cs})
    real = [t for t in turns if t["kind"] != "local"]
    # ---- plan / slug
    has_plan = any(t["kind"] == "plan" for t in turns)
    if vt(version) >= (2, 0, 37) and (has_plan or r.random() < 0.5):
        sp["slug"] = None  # assigned globally (unique) by caller
        sp["want_slug"] = True
    sp["plan_write"] = r.random() < 0.6
    # ---- primary / detail
    primary = a["core"] == 0
    det = T["detail"] if primary else None
    sp["detail"] = det
    sp["primary"] = primary
    # ---- agents
    agents = []
    if primary:
        agents = list(T["agents"][: r.randint(1, len(T["agents"]))])
        if det and det[0] == "subagent" and not any(x in ("Explore", "general-purpose", "Plan") for x in agents):
            agents.insert(0, "Explore")
    elif r.random() < 0.5:
        agents = list(T["agents"][: r.randint(1, len(T["agents"]))])
    if det and det[0] == "subagent":
        first = [x for x in agents if x in ("Explore", "general-purpose", "Plan")][0]
        agents.remove(first)
        agents.insert(0, first)
    sp["agents"] = agents
    # place agents on turns
    for at in agents:
        pref = KIND_OF_AGENT_TURN[at]
        spot = None
        for want in pref:
            cand = [t for t in real if t["kind"] == want and not t.get("interrupt")]
            if cand:
                spot = cand[0]
                break
        if spot is None:
            spot = [t for t in real if t["kind"] not in ("commit", "explain")][0] if [t for t in real if t["kind"] not in ("commit", "explain")] else None
        if spot is None:
            spot = {"kind": "inv", "text": "Can you investigate %s before we change anything?" % short_title(T)}
            turns.insert(1 if len(turns) > 1 else len(turns), spot)
            real.insert(0, spot)
        if spot["kind"] == "explain":
            spot["kind"] = "inv"
        spot.setdefault("extras", {}).setdefault("agents", []).append(at)
    # detail carriers
    if det and det[0] == "error":
        if not any(t["kind"] in ("test", "impl", "short") for t in real):
            t = {"kind": "test", "text": "run the tests"}
            turns.append(t)
            real.append(t)
    if det and det[0] == "file":
        host = [t for t in real if t["kind"] in ("inv", "impl", "short", "plan")]
        if host:
            host[0].setdefault("extras", {})["detail_here"] = True
        else:
            t = {"kind": "impl", "text": "go ahead and implement it"}
            turns.append(t)
            real.append(t)
        if not any(t["kind"] in ("impl", "short", "inv") for t in real):
            t = {"kind": "impl", "text": "implement the fix"}
            turns.append(t)
            real.append(t)
    # webfetch
    for t in real:
        if t["kind"] == "inv" and r.random() < 0.12:
            t.setdefault("extras", {})["webfetch"] = True
    # ---- secret
    if a.get("secret"):
        kind = r.choice(SECRET_KINDS)
        where = r.choice(["prompt", "bash", "read"])
        val = make_secret(ids, kind)
        sp["secret"] = (kind, where, val)
        if where == "prompt":
            tmpl = {"aws": "I exported AWS_ACCESS_KEY_ID={v} in my shell but the upload script still says no credentials were found. Can you check how the client is configured?",
                    "github": "CI can't pull the private package. This is the token I use locally: {v} - is the .npmrc in the repo picking it up?",
                    "anthropic": "set ANTHROPIC_API_KEY={v} for the summarizer tests and tell me if the client reads it",
                    "ssh": "this is the deploy key that fails on the runner, is the format wrong?\n\n{v}",
                    "slack": "the alert bot token is {v} - why does chat.postMessage return not_in_channel?",
                    "postgres": "the staging database is {v} - can you check whether the migration already ran there?"}[kind]
            pos = r.randint(1, len(turns))
            turns.insert(pos, {"kind": "inv", "text": tmpl.format(v=val)})
        else:
            host = [t for t in turns if t["kind"] in ("inv", "impl", "test", "short", "plan") and not t.get("slash")]
            if host:
                host[0].setdefault("extras", {})["secret_tool"] = True
            else:
                turns.insert(1, {"kind": "inv", "text": "check the local config before we continue", "extras": {"secret_tool": True}})
    # ---- interruptions / rejections (never on the last turn or a plan turn)
    cand = [t for t in turns[:-1] if t["kind"] in ("inv", "impl", "short", "test") and not t.get("extras") and not t.get("slash")]
    if cand and r.random() < 0.12:
        r.choice(cand)["interrupt"] = True
    cand = [t for t in turns[:-1] if t["kind"] in ("impl", "short") and not t.get("extras") and not t.get("interrupt") and not t.get("slash")]
    if cand and r.random() < 0.08:
        r.choice(cand)["reject"] = True
    # ---- list-content prompts / image
    for t in turns:
        if t["kind"] != "local" and not t.get("slash") and r.random() < 0.15:
            t["as_list"] = True
    if "large_image" in flags:
        t = [x for x in turns if x["kind"] != "local" and not x.get("slash")][0]
        raw = b"\x89PNG\r\n\x1a\n" + r.randbytes(240000)
        t["image"] = base64.b64encode(raw).decode()
        t["text"] = "[Image #1] this is what the page looks like after the change - " + (t["text"] or "")
    if "version_change" in flags and len(turns) >= 2:
        nv = {"2.1.110": "2.1.114", "2.1.114": "2.1.132"}[version]
        turns[max(1, len(turns) // 2)]["version_change"] = nv
    # ---- compaction
    nreal = len([t for t in turns if t["kind"] != "local"])
    if fam in ("2.0", "2.1") and nreal >= 5 and r.random() < 0.3:
        j = r.randint(3, len(turns) - 1)
        turns[j]["compact_before"] = True
        sp["compact_text"] = make_compact_text(T, sp)
    sp["turns"] = turns
    sp["leading_assistant"] = "leading_assistant" in flags
    sp["warmups"] = r.choice([0, 1, 1, 2]) if fam == "2.0" else 0
    # ---- summary labels
    sp["labels"] = None
    if r.random() < 0.5:
        labs = list(T["labels"])
        extra = ["%s: %s" % (repo_name_of(cwd), ln) for ln in T["labels"]]
        pool = labs + extra
        k = r.randint(1, min(6, len(pool)))
        sp["labels"] = pool[:k] if k <= len(labs) else labs + extra[:k - len(labs)]
    sp["parent_hint"] = None
    if a["core"] and prev.get(T["id"]) and r.random() < 0.3:
        sp["parent_hint"] = prev[T["id"]]["last_uuid"]
    sp["prev_uuids"] = prev.get(T["id"], {}).get("asst_uuids", []) if a["core"] else []
    return sp


# ============================================================================= output
def dumps(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def finish_session(G, sp, b):
    """Serialize the main file with edge cases, build the truth record."""
    r = b.rng
    T = sp["topic"]
    flags = sp["flags"]
    entries = list(b.main)
    # summary labels at the top
    labels = []
    if sp.get("labels") and not sp.get("leading_assistant"):
        own = [u for u, kind in b.asst_uuids if kind == "text"] or [u for u, _ in b.asst_uuids]
        tops = []
        for lab in sp["labels"]:
            if sp["prev_uuids"] and r.random() < 0.3:
                leaf = r.choice(sp["prev_uuids"])
            elif own:
                leaf = r.choice(own)
            else:
                leaf = b.ids.uuid()
            tops.append({"obj": {"type": "summary", "summary": lab, "leafUuid": leaf}, "tag": "summary"})
            labels.append(lab)
        entries = tops + entries
    lines = [dumps(e["obj"]) for e in entries]
    tags = [e["tag"] for e in entries]
    leafs = set(e["obj"].get("leafUuid") for e in entries if e["tag"] == "summary")
    malformed = 0
    dup = 0
    corrupted = set()
    if "duplicate_lines" in flags:
        cands = [i for i, t in enumerate(tags) if t == "asst_tool" and i + 3 < len(tags)]
        if cands:
            i = r.choice(cands)
            run = 1
            while run < r.randint(2, 3) and i + run < len(lines) and entries[i + run]["obj"].get("uuid"):
                run += 1
            block = lines[i:i + run]
            lines[i + run:i + run] = block
            tags[i + run:i + run] = ["dup"] * len(block)
            dup = len(block)
    if "malformed_line" in flags:
        safe = [i for i, t in enumerate(tags) if t in ("progress", "attach", "snapshot", "lastprompt", "permmode", "queue")
                and 0 < i < len(tags) - 1]
        if not safe:
            safe = [i for i, t in enumerate(tags) if t == "asst_text" and 0 < i < len(tags) - 2
                    and json.loads(lines[i]).get("uuid") not in leafs]
            safe = [i for i in safe if tags[i + 1] not in ("end",)]
        if safe:
            i = r.choice(safe)
            s = lines[i]
            lines[i] = s[: int(len(s) * r.uniform(0.35, 0.8))]
            corrupted.add(i)
            malformed += 1
    truncated = False
    if "truncated_last_line" in flags:
        ghost = b.asst_obj({"type": "text", "text": "Now let me run the remaining checks and summarize the results for you."},
                           b.ids.msg(), b.ids.req(), b.model, None, b.usage(3, 10, 20000, 500), b.tip, b.ids.uuid(),
                           b.tick(500, 3000))
        s = dumps(ghost)
        lines.append(s[: int(len(s) * r.uniform(0.3, 0.7))])
        tags.append("truncated")
        corrupted.add(len(lines) - 1)
        malformed += 1
        truncated = True
    text = "\n".join(lines) + ("" if truncated else "\n")
    rel = "projects/%s/%s.jsonl" % (b.enc, b.sid)
    G["files"][rel] = text
    for frel, sink in b.subfiles.items():
        if frel.endswith(".meta.json"):
            G["files"][frel] = dumps(sink)
        else:
            G["files"][frel] = "".join(dumps(e["obj"]) + "\n" for e in sink)
    # timestamps
    tss = []
    vfirst = None
    for i, s in enumerate(lines):
        if i in corrupted:
            continue
        o = json.loads(s)
        if o.get("timestamp"):
            tss.append(o["timestamp"])
        if vfirst is None and o.get("version"):
            vfirst = o["version"]
    plan_file = None
    if b.slug and sp.get("plan_text"):
        plan_file = "plans/%s.md" % b.slug
        G["files"][plan_file] = sp["plan_text"]
    turns = b.turns
    truth = {
        "session_id": b.sid, "file": rel, "cwd": b.cwd, "repo_name": repo_name_of(b.cwd), "topic_id": T["id"],
        "role": sp["role"], "slug": b.slug, "plan_file": plan_file,
        "started_at": tss[0] if tss else None, "ended_at": tss[-1] if tss else None, "version_first": vfirst,
        "layout": sp["layout"],
        "subagents": b.subagents, "warmup_agents": b.warmups, "summary_labels": labels,
        "compacted": bool(b.compact_summaries), "compact_summaries": b.compact_summaries, "away_summaries": b.away,
        "user_prompts": [t["prompt"] for t in turns if t["index"] >= 1],
        "turns": turns,
        "secrets": [sp["secret"][2]] if sp.get("secret") else [],
        "malformed_lines": malformed, "duplicate_lines": dup,
        "edge_cases": sorted(flags), "primary": bool(sp.get("primary")),
    }
    return truth


def edge_session(G, kind, seed, bank_name, idx, bank):
    r = random.Random("edge:%d:%s:%d:%s" % (seed, bank_name, idx, kind))
    ids = Ids(r)
    T = r.choice(bank)
    cwd = T["repo"]
    sid = ids.uuid()
    enc = encode_cwd(cwd)
    rel = "projects/%s/%s.jsonl" % (enc, sid)
    labels = []
    if kind == "empty":
        G["files"][rel] = ""
    else:
        lab = r.choice(["Untitled session in %s" % repo_name_of(cwd), "Quick question about %s" % repo_name_of(cwd)])
        G["files"][rel] = dumps({"type": "summary", "summary": lab, "leafUuid": ids.uuid()}) + "\n"
        labels = [lab]
    return {"session_id": sid, "file": rel, "cwd": cwd, "repo_name": repo_name_of(cwd), "topic_id": None,
            "role": "edge", "slug": None, "plan_file": None, "started_at": None, "ended_at": None,
            "version_first": None, "layout": None, "subagents": [], "warmup_agents": [], "summary_labels": labels,
            "compacted": False, "compact_summaries": [], "away_summaries": [], "user_prompts": [], "turns": [],
            "secrets": [], "malformed_lines": 0, "duplicate_lines": 0, "edge_cases": [kind], "primary": False}


def all_strings(o):
    if isinstance(o, str):
        yield o
    elif isinstance(o, dict):
        for v in o.values():
            yield from all_strings(v)
    elif isinstance(o, (list, tuple)):
        for v in o:
            yield from all_strings(v)


def validate_bank(bank, name):
    errs = []
    ids = set()
    for T in bank:
        tid = T["id"]
        if tid in ids:
            errs.append("%s: duplicate id" % tid)
        ids.add(tid)
        pm = plan_md(T)
        if not 600 <= len(pm) <= 3000:
            errs.append("%s: plan length %d" % (tid, len(pm)))
        if not 3 <= len(T["prompts"]) <= 8:
            errs.append("%s: %d prompts" % (tid, len(T["prompts"])))
        if not 1 <= len(T["labels"]) <= 6:
            errs.append("%s: %d labels" % (tid, len(T["labels"])))
        for ln in T["labels"]:
            if not 3 <= len(ln.split()) <= 10:
                errs.append("%s: label words %r" % (tid, ln))
        tw = set(stem5(w) for w in content_words(T["title"]))
        pw = set(stem5(w) for w in content_words(T["q_para"]))
        if tw & pw:
            errs.append("%s: q_para shares %s with title" % (tid, sorted(tw & pw)))
        fpaths = [p for p, _ in T["files"]]
        for p, old, new in T["edits"]:
            if p not in fpaths:
                errs.append("%s: edit path %s not in files" % (tid, p))
            if old == new or not old:
                errs.append("%s: bad edit" % tid)
        if not 1 <= len(T["agents"]) <= 3:
            errs.append("%s: agents" % tid)
        kind, dtext, dq = T["detail"]
        if kind not in ("error", "file", "subagent"):
            errs.append("%s: detail kind" % tid)
        for U in bank:
            blob = "\n".join(all_strings({k: v for k, v in U.items() if k not in ("detail", "q_kw", "q_para")}))
            if dtext in blob:
                errs.append("%s: detail text also in topic %s" % (tid, U["id"]))
        if kind == "file" and dtext in fpaths:
            errs.append("%s: detail file in files" % tid)
    if errs:
        raise SystemExit("bank %s invalid:\n  " % name + "\n  ".join(errs))


def generate(out, n, seed, bank_name, edge):
    bank = BANKS[bank_name]
    validate_bank(bank, bank_name)
    G = {"files": {}}
    plans, g = plan_corpus(n, seed, bank_name, bank, edge)
    used_slugs = set()
    prev = {}
    sessions = []
    for idx, a in enumerate(plans):
        if "edge_only" in a:
            sessions.append(edge_session(G, a["edge_only"], seed, bank_name, idx, bank))
            continue
        sp = session_plan(G, a, seed, bank_name, prev)
        if sp.get("want_slug"):
            while True:
                s = "%s-%s-%s" % (g.choice(SLUG_A), g.choice(SLUG_B), g.choice(SLUG_C))
                if s not in used_slugs:
                    used_slugs.add(s)
                    sp["slug"] = s
                    break
        b = build_session(G, sp)
        tr = finish_session(G, sp, b)
        sessions.append(tr)
        T = sp["topic"]
        prev[T["id"]] = {"end": b.clock.t, "version": sp["version"],
                         "last_uuid": next((e["obj"]["uuid"] for e in reversed(b.main) if isinstance(e["obj"], dict) and e["obj"].get("uuid")), None),
                         "asst_uuids": [u for u, _ in b.asst_uuids]}
    # queries
    by_topic = {}
    for s in sessions:
        if s["topic_id"]:
            by_topic.setdefault(s["topic_id"], []).append(s)
    queries = []
    for T in bank:
        ss = by_topic.get(T["id"])
        if not ss:
            continue
        rel_ids = [s["session_id"] for s in ss]
        dis = [d for d in DISTRACTORS.get(T["id"], []) if d in by_topic]
        queries.append({"query": T["q_kw"], "kind": "kw", "topic_id": T["id"], "topic_title": T["title"],
                        "relevant_session_ids": rel_ids})
        queries.append({"query": T["q_para"], "kind": "para", "topic_id": T["id"], "topic_title": T["title"],
                        "relevant_session_ids": rel_ids})
        dk, dtext, dq = T["detail"]
        prim = [s["session_id"] for s in ss if s.get("primary")]
        queries.append({"query": dq, "kind": "detail", "topic_id": T["id"], "topic_title": T["title"],
                        "relevant_session_ids": rel_ids,
                        "detail_text": dtext, "detail_where": dk, "detail_session_ids": prim})
        for q in queries[-3:]:
            q["distractor_topic_ids"] = dis
    truth = {"generator": {"seed": seed, "bank": bank_name, "sessions": n, "edge_cases": edge,
                           "script": "gen_corpus.py", "format_version": 1},
             "sessions": sessions, "queries": queries}
    # write
    if os.path.exists(out):
        for sub in ("projects", "plans"):
            p = os.path.join(out, sub)
            if os.path.isdir(p):
                shutil.rmtree(p)
    for rel, data in G["files"].items():
        p = os.path.join(out, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8", newline="") as f:
            f.write(data)
    with open(os.path.join(out, "truth.json"), "w", encoding="utf-8") as f:
        json.dump(truth, f, ensure_ascii=False, indent=1)
    return truth


def main(argv=None):
    ap = argparse.ArgumentParser(description="Generate a fake ~/.claude transcript corpus with ground truth.")
    ap.add_argument("--out", required=True)
    ap.add_argument("--sessions", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bank", choices=["public"], default="public")
    ap.add_argument("--edge-cases", action=argparse.BooleanOptionalAction, default=True)
    a = ap.parse_args(argv)
    if a.sessions < 1:
        ap.error("--sessions must be >= 1")
    t0 = time.time()
    truth = generate(a.out, a.sessions, a.seed, a.bank, a.edge_cases)
    nfiles = sum(len(files) for _, _, files in os.walk(os.path.join(a.out, "projects")))
    print("wrote %d sessions (%d files under projects/, %d queries) to %s in %.1fs" % (
        len(truth["sessions"]), nfiles, len(truth["queries"]), a.out, time.time() - t0), file=sys.stderr)


# ============================================================================= topic banks
def T(**kw):
    kw.setdefault("agents", ["Explore"])
    return kw


TODO = "/home/dev/projects/todo-app"
BLOG = "/home/dev/projects/blog-engine"
RCLI = "/home/dev/projects/rustybox-cli"
WBOT = "/home/dev/projects/weather-bot"

PUBLIC = [
T(id="p01", repo=TODO, branch="fix/theme-persistence", lang="tsx",
  title="Dark mode preference not persisting across reloads",
  problems=["The theme toggle keeps the choice in React state only, so every reload falls back to the light theme.",
            "The server renders the light palette first and the page flashes white before hydration switches to dark."],
  solution="Persist the chosen theme in localStorage and in a `theme` cookie, read the cookie in the root layout so the server renders the right class on <html>, and keep `prefers-color-scheme` as the fallback when nothing is stored.",
  files=[("src/components/ThemeToggle.tsx", "toggle button and client-side persistence"),
         ("src/app/layout.tsx", "reads the theme cookie during server render"),
         ("src/lib/theme.ts", "theme helpers and the storage key"),
         ("src/components/__tests__/ThemeToggle.test.tsx", "component tests")],
  steps=["Add `readStoredTheme()` and extend `storeTheme()` in src/lib/theme.ts",
         "Initialise the toggle state from storage instead of a hard-coded 'light'",
         "Read the `theme` cookie in layout.tsx and set the class on <html>",
         "Fall back to prefers-color-scheme when nothing is stored",
         "Add tests for toggling and remounting"],
  verify=["`npm test -- ThemeToggle`", "Manual: switch to dark, reload, confirm there is no white flash"],
  prompts=[("inv", "Dark mode resets to light every time I refresh the todo app. Can you find out why?"),
           ("plan", "plan a fix that also avoids the white flash on load"),
           ("impl", "go ahead"), ("test", "run the tests"), ("commit", "commit it")],
  edits=[("src/lib/theme.ts",
          "export function storeTheme(theme: Theme) {\n  document.documentElement.dataset.theme = theme;\n}",
          "export function storeTheme(theme: Theme) {\n  document.documentElement.dataset.theme = theme;\n  localStorage.setItem(THEME_KEY, theme);\n  document.cookie = `theme=${theme}; path=/; max-age=31536000; samesite=lax`;\n}"),
         ("src/components/ThemeToggle.tsx",
          "  const [theme, setTheme] = useState<Theme>('light');",
          "  const [theme, setTheme] = useState<Theme>(() => readStoredTheme() ?? systemTheme());")],
  testfile="src/components/__tests__/ThemeToggle.test.tsx", test="npm test -- ThemeToggle",
  fail="ThemeToggle \u203a keeps dark mode after remount: expected 'light' to be 'dark'",
  findings=["ThemeToggle keeps the theme in useState only; nothing is written to localStorage or a cookie.",
            "layout.tsx renders <html> without a theme class, so server rendering always produces the light palette.",
            "src/lib/theme.ts already defines THEME_KEY but nothing uses it."],
  agents=["Explore"],
  labels=["Dark mode persistence fix", "Theme toggle localStorage and cookie", "Avoid flash of light theme on load"],
  q_kw="dark mode theme toggle persist localStorage cookie",
  q_para="night colours forgotten after refreshing the page",
  detail=("error", "ThemeToggle \u203a hydrates from cookie: ReferenceError: localStorage is not defined (server render of RootLayout)",
          "localStorage is not defined error during the server render of RootLayout")),

T(id="p02", repo=TODO, branch="fix/touch-reorder", lang="tsx",
  title="Drag and drop reordering broken on touch devices",
  problems=["Reordering todos works with a mouse but does nothing on phones and tablets.",
            "The list uses the HTML5 drag events, which mobile Safari and Chrome on Android never fire for touch input."],
  solution="Switch the sortable list to pointer events through @dnd-kit with a PointerSensor and a TouchSensor that has a 150 ms press delay, so scrolling still works, and persist the new order with the existing reorder endpoint.",
  files=[("src/components/TodoList.tsx", "sortable list container"),
         ("src/components/TodoItem.tsx", "draggable row and handle"),
         ("src/hooks/useReorder.ts", "optimistic reorder + API call"),
         ("package.json", "adds @dnd-kit/core and @dnd-kit/sortable")],
  steps=["Install @dnd-kit/core and @dnd-kit/sortable",
         "Wrap TodoList in DndContext with pointer and touch sensors",
         "Give TodoItem a drag handle so scrolling the list still works",
         "Keep the optimistic update in useReorder and roll back on API errors",
         "Test on an iOS simulator and Chrome device mode"],
  verify=["`npm test -- TodoList`", "Manual: reorder on iPhone simulator and Android Chrome"],
  prompts=[("inv", "Reordering todos by dragging doesn't work on my phone. Works fine on desktop. What's going on?"),
           ("plan", "ok, what would you change?"), ("impl", "sounds good, implement it"),
           ("test", "run the tests"), ("lint", "fix the eslint errors too")],
  edits=[("src/components/TodoList.tsx",
          "      onDragStart={handleDragStart}\n      onDragOver={handleDragOver}\n      onDrop={handleDrop}",
          "      sensors={sensors}\n      collisionDetection={closestCenter}\n      onDragEnd={handleDragEnd}"),
         ("src/hooks/useReorder.ts",
          "export function applyReorder(items: Todo[], from: number, to: number) {\n  return items;\n}",
          "export function applyReorder(items: Todo[], from: number, to: number) {\n  const next = items.slice();\n  const [moved] = next.splice(from, 1);\n  next.splice(to, 0, moved);\n  return next;\n}")],
  testfile="src/components/__tests__/TodoList.test.tsx", test="npm test -- TodoList",
  fail="TodoList \u203a reorders with touch: expected [ 'a', 'b', 'c' ] to deeply equal [ 'b', 'a', 'c' ]",
  findings=["TodoList relies on onDragStart/onDrop (HTML5 drag and drop), which touch browsers never dispatch.",
            "applyReorder() in useReorder.ts is a stub that returns the list unchanged.",
            "The reorder API call already exists (PATCH /api/todos/order) and accepts the full id list."],
  agents=["Explore", "code-reviewer"],
  labels=["Touch drag and drop reorder fix", "Switch todo list to dnd-kit sensors"],
  q_kw="drag and drop reorder touch mobile dnd-kit",
  q_para="moving tasks with a finger on a phone does nothing",
  detail=("subagent", "Safari on iPadOS 17 cancels the drag when the list container has overflow-y: auto and touch-action is unset",
          "which finding mentioned iPadOS cancelling the drag because touch-action was unset")),

T(id="p03", repo=TODO, branch="test/playwright-e2e", lang="ts",
  title="Add Playwright end-to-end tests for the todo flow",
  problems=["There are no browser tests, so regressions in the add/complete/delete flow only show up after deploys.",
            "The CI workflow only runs unit tests and has no browser installed."],
  solution="Add Playwright with a single chromium project, page objects for the todo page, three specs for add, complete and delete, start the Next.js dev server through `webServer`, and run the suite in a separate CI job with the official Playwright image.",
  files=[("playwright.config.ts", "Playwright config with webServer"),
         ("e2e/todo.spec.ts", "end-to-end specs"),
         ("e2e/pages/TodoPage.ts", "page object"),
         (".github/workflows/ci.yml", "new e2e job")],
  steps=["Install @playwright/test and add `npm run e2e`",
         "Create playwright.config.ts with a webServer entry for `npm run dev`",
         "Write the TodoPage page object and three specs",
         "Add a CI job using mcr.microsoft.com/playwright",
         "Upload the HTML report as an artifact on failure"],
  verify=["`npx playwright test`", "CI e2e job green on the PR"],
  prompts=[("inv", "We have zero browser tests for the todo app. How would you add Playwright here?"),
           ("plan", "make a plan, keep it to chromium for now"), ("impl", "implement it"),
           ("test", "run the e2e tests"), ("short", "continue"), ("commit", "commit")],
  edits=[("playwright.config.ts",
          "export default defineConfig({\n  testDir: './e2e',\n});",
          "export default defineConfig({\n  testDir: './e2e',\n  use: { baseURL: 'http://localhost:3000', trace: 'on-first-retry' },\n  webServer: { command: 'npm run dev', url: 'http://localhost:3000', reuseExistingServer: !process.env.CI },\n});")],
  testfile="e2e/todo.spec.ts", test="npx playwright test",
  fail="todo.spec.ts:14:5 \u203a completes a todo: Timed out 5000ms waiting for expect(locator).toHaveClass(/completed/)",
  findings=["No e2e setup exists; package.json only has vitest.", "The todo page has stable data-testid attributes on rows, which makes locators easy.",
            "CI runs on ubuntu-latest without browsers, so the e2e job needs the Playwright container or `npx playwright install --with-deps`."],
  agents=["Explore"],
  labels=["Playwright e2e tests for todo app", "CI job for browser tests", "Page objects for todo flow"],
  q_kw="playwright end-to-end tests todo ci",
  q_para="automated browser checks clicking through adding and finishing items",
  detail=("file", "e2e/fixtures/seed-42-todos.json", "the session with the seed-42-todos fixture file")),

T(id="p04", repo=BLOG, branch="security/sanitize-markdown", lang="py",
  title="Markdown rendering allows script injection in posts",
  problems=["Post bodies are rendered with `markdown.markdown()` and inserted with `|safe`, so raw <script> tags in a post run in readers' browsers.",
            "Comment previews use the same helper, so anonymous users can inject markup too."],
  solution="Sanitize the rendered HTML with bleach using an explicit allow-list of tags and attributes, add rel=\"nofollow noopener\" to links, and keep `|safe` only on the sanitized output. Add regression tests with common payloads.",
  files=[("blog/rendering.py", "markdown to HTML helper"),
         ("blog/templates/post.html", "renders post bodies"),
         ("blog/comments.py", "comment preview endpoint"),
         ("tests/test_rendering.py", "XSS regression tests")],
  steps=["Add bleach to requirements", "Define ALLOWED_TAGS / ALLOWED_ATTRS in rendering.py",
         "Sanitize in render_markdown() and linkify with nofollow", "Use the helper in comment previews",
         "Add tests for script tags, onerror attributes and javascript: links"],
  verify=["`pytest tests/test_rendering.py -q`", "Manual: preview a comment containing <img src=x onerror=alert(1)>"],
  prompts=[("inv", "Someone reported they could put a <script> tag in a blog post and it executed. Can you check the markdown rendering?"),
           ("plan", "plan the fix"), ("impl", "do it"), ("test", "run the tests"), ("lint", "ruff is complaining, fix it"),
           ("commit", "commit with a message that mentions the security fix")],
  edits=[("blog/rendering.py",
          "def render_markdown(text):\n    return markdown.markdown(text, extensions=[\"fenced_code\", \"tables\"])",
          "def render_markdown(text):\n    html = markdown.markdown(text, extensions=[\"fenced_code\", \"tables\"])\n    clean = bleach.clean(html, tags=ALLOWED_TAGS, attributes=ALLOWED_ATTRS, strip=True)\n    return bleach.linkify(clean, callbacks=[nofollow])")],
  testfile="tests/test_rendering.py", test="pytest tests/test_rendering.py -q",
  fail="FAILED tests/test_rendering.py::test_script_tag_is_stripped - AssertionError: assert '<script>' not in '<p><script>alert(1)</script></p>'",
  findings=["render_markdown() returns raw markdown output and post.html marks it |safe.",
            "comments.py calls the same helper for previews, so the problem is reachable without an account.",
            "bleach is already an indirect dependency through the admin package but not pinned."],
  agents=["Explore", "code-reviewer"],
  labels=["Sanitize markdown output with bleach", "Fix stored XSS in blog posts", "XSS regression tests for comments"],
  q_kw="markdown XSS script injection sanitize bleach",
  q_para="readers' browsers ran attacker javascript from an article",
  detail=("subagent", "the admin preview route /admin/posts/<id>/preview skips the login_required decorator",
          "which review found the admin preview route missing login_required")),

T(id="p05", repo=BLOG, branch="fix/rss-dates", lang="py",
  title="RSS feed publishes invalid dates",
  problems=["Feed readers reject /feed.xml because pubDate is ISO 8601 instead of RFC 822.",
            "Posts saved without a timezone are serialized as naive datetimes, so the date shifts by the server offset."],
  solution="Store publish times as timezone-aware UTC, format pubDate with `email.utils.format_datetime`, and validate the feed in tests with feedparser so a regression fails CI.",
  files=[("blog/feeds.py", "RSS generation"), ("blog/models.py", "Post.published_at"),
         ("tests/test_feeds.py", "feed validation tests")],
  steps=["Make Post.published_at timezone-aware (UTC) on save", "Format pubDate with email.utils.format_datetime",
         "Add lastBuildDate to the channel", "Validate the generated feed with feedparser in tests"],
  verify=["`pytest tests/test_feeds.py -q`", "Run the feed through the W3C validator"],
  prompts=[("inv", "Feedly says our RSS feed is invalid. The dates look weird. Can you check /feed.xml generation?"),
           ("impl", "fix it"), ("test", "run the tests"), ("commit", "commit this")],
  edits=[("blog/feeds.py",
          "def rss_date(dt):\n    return dt.isoformat()",
          "def rss_date(dt):\n    if dt.tzinfo is None:\n        dt = dt.replace(tzinfo=timezone.utc)\n    return format_datetime(dt.astimezone(timezone.utc))")],
  testfile="tests/test_feeds.py", test="pytest tests/test_feeds.py -q",
  fail="FAILED tests/test_feeds.py::test_pubdate_is_rfc822 - AssertionError: assert feed.bozo == 0",
  findings=["rss_date() returns isoformat(), which is not valid for RSS 2.0 pubDate.", "published_at is naive for posts imported from the old WordPress export."],
  agents=["Explore"],
  labels=["RSS pubDate RFC 822 formatting", "Fix invalid feed dates"],
  q_kw="rss feed pubDate invalid date format",
  q_para="subscribers' reader apps reject the syndication xml timestamps",
  detail=("error", "FAILED tests/test_feeds.py::test_wordpress_import_dates - ValueError: year 20231 is out of range",
          "ValueError year 20231 is out of range when importing wordpress dates")),

T(id="p06", repo=BLOG, branch="chore/postgres", lang="py",
  title="Move blog storage from SQLite to Postgres",
  problems=["SQLite locks the whole database during comment bursts and requests fail with `database is locked`.",
            "Full-text search uses a LIKE query that cannot use an index."],
  solution="Switch SQLAlchemy to Postgres via DATABASE_URL, add an Alembic baseline migration, copy the data with a one-off script, and replace the LIKE search with a tsvector column plus a GIN index.",
  files=[("blog/db.py", "engine configuration"), ("migrations/versions/0001_baseline.py", "baseline schema"),
         ("scripts/sqlite_to_pg.py", "one-off data copy"), ("docker-compose.yml", "local Postgres service")],
  steps=["Add a postgres service to docker-compose.yml", "Read DATABASE_URL in db.py with a SQLite fallback for tests",
         "Generate the Alembic baseline migration", "Write scripts/sqlite_to_pg.py and run it against a copy",
         "Add the tsvector column and GIN index for search"],
  verify=["`pytest -q` against Postgres", "`alembic upgrade head` on an empty database", "Compare row counts after the copy"],
  prompts=[("inv", "We keep getting 'database is locked' when lots of comments come in. Is it time to move to Postgres?"),
           ("plan", "yes, plan the migration"), ("impl", "start with the engine config and docker compose"),
           ("short", "continue with the data copy script"), ("test", "run the tests against postgres"),
           ("commit", "commit")],
  edits=[("blog/db.py",
          "engine = create_engine(\"sqlite:///blog.db\")",
          "engine = create_engine(os.environ.get(\"DATABASE_URL\", \"sqlite:///blog.db\"), pool_pre_ping=True)")],
  testfile="tests/test_db.py", test="pytest -q",
  fail="FAILED tests/test_search.py::test_search_ranks_title_matches - sqlalchemy.exc.ProgrammingError: function to_tsvector(unknown, text) does not exist",
  findings=["db.py hard-codes sqlite:///blog.db.", "Search uses `Post.body.like(f\"%{q}%\")`, which cannot use an index.",
            "There is no migration tool yet; tables are created with metadata.create_all()."],
  agents=["Explore", "Plan"],
  labels=["SQLite to Postgres migration", "Alembic baseline for blog", "Postgres full text search"],
  q_kw="sqlite postgres migration database locked alembic",
  q_para="switching the site's data store to a proper server database",
  detail=("file", "scripts/verify_rowcounts_after_copy.sql", "the session with the verify_rowcounts_after_copy.sql script")),

T(id="p07", repo=RCLI, branch="refactor/clap-subcommands", lang="rs",
  title="Restructure argument parsing with clap subcommands",
  problems=["main.rs parses std::env::args by hand, so `--help` is incomplete and typos are silently ignored.",
            "Adding the new `sync` command would mean another nested if/else chain."],
  solution="Move to clap 4 derive with a `Cli` struct and a `Command` enum (`init`, `sync`, `status`), keep global `--verbose` and `--config` flags, and dispatch each subcommand to its own module.",
  files=[("src/main.rs", "entry point and dispatch"), ("src/cli.rs", "clap derive definitions"),
         ("src/commands/sync.rs", "new sync subcommand"), ("Cargo.toml", "adds clap with derive feature")],
  steps=["Add clap = { version = \"4\", features = [\"derive\"] }", "Define Cli and Command in src/cli.rs",
         "Replace the manual parsing in main.rs with Cli::parse()", "Move each command into src/commands/",
         "Add trycmd tests for --help output"],
  verify=["`cargo test`", "`cargo run -- --help` shows all subcommands"],
  prompts=[("inv", "The arg parsing in rustybox is a mess of string matching. Can we move it to clap?"),
           ("plan", "plan it with subcommands init, sync, status"), ("impl", "implement"),
           ("test", "cargo test"), ("lint", "run clippy and fix what it finds")],
  edits=[("src/cli.rs",
          "pub struct Cli {\n    pub args: Vec<String>,\n}",
          "#[derive(Parser, Debug)]\n#[command(name = \"rustybox\", version, about)]\npub struct Cli {\n    #[arg(short, long, global = true)]\n    pub verbose: bool,\n    #[command(subcommand)]\n    pub command: Command,\n}")],
  testfile="tests/cli.rs", test="cargo test",
  fail="cli::help_lists_subcommands assertion failed: stdout.contains(\"sync\")",
  findings=["main.rs matches on args[1] with string literals and ignores unknown flags.", "There is no test for the CLI surface at all."],
  agents=["Explore"],
  labels=["Clap derive subcommands for rustybox", "Replace manual argv parsing"],
  q_kw="clap subcommands argument parsing rust cli",
  q_para="command line flags handled with string matching need a proper library",
  detail=("error", "cli::sync_requires_remote panicked at src/commands/sync.rs:41:18: called `Option::unwrap()` on a `None` value",
          "the unwrap on a None value panic in sync.rs line 41")),

T(id="p08", repo=RCLI, branch="fix/windows-progress", lang="rs",
  title="Progress bar flickers on Windows terminals",
  problems=["On Windows Terminal and cmd.exe the progress bar redraws the whole line 60 times a second and flickers.",
            "When output is piped to a file the bar still writes carriage returns into the log."],
  solution="Throttle redraws to 10 per second with indicatif's ProgressDrawTarget::stderr_with_hz, hide the bar when stderr is not a terminal, and enable virtual terminal processing on Windows at startup.",
  files=[("src/progress.rs", "progress bar construction"), ("src/main.rs", "terminal setup"), ("Cargo.toml", "indicatif version")],
  steps=["Create the bar with ProgressDrawTarget::stderr_with_hz(10)", "Return a hidden bar when stderr is not a TTY",
         "Enable ANSI support on Windows at startup", "Test in cmd.exe, PowerShell and when piping to a file"],
  verify=["`cargo test`", "Manual: run `rustybox sync > out.log` and check the log has no control characters"],
  prompts=[("inv", "Users on Windows say the progress bar flickers like crazy. Can you take a look?"),
           ("impl", "go ahead and fix it"), ("test", "run cargo test"), ("commit", "commit")],
  edits=[("src/progress.rs",
          "pub fn new_bar(len: u64) -> ProgressBar {\n    ProgressBar::new(len)\n}",
          "pub fn new_bar(len: u64) -> ProgressBar {\n    if !std::io::stderr().is_terminal() {\n        return ProgressBar::hidden();\n    }\n    ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr_with_hz(10))\n}")],
  testfile="tests/progress.rs", test="cargo test",
  fail="progress::hidden_when_piped assertion `left == right` failed: left: false, right: true",
  findings=["new_bar() uses the default draw target, which redraws on every tick.", "Nothing checks whether stderr is a terminal."],
  agents=["general-purpose"],
  labels=["Throttle progress bar redraws", "Windows terminal progress flicker"],
  q_kw="progress bar flicker windows terminal indicatif",
  q_para="status indicator keeps blinking for users on Microsoft consoles",
  detail=("subagent", "ConHost on Windows 10 1809 ignores ENABLE_VIRTUAL_TERMINAL_PROCESSING unless it is set before the first write",
          "which investigation noted ConHost 1809 needs virtual terminal processing set before the first write")),

T(id="p09", repo=RCLI, branch="fix/config-precedence", lang="rs",
  title="Config file precedence ignores environment overrides",
  problems=["RUSTYBOX_REMOTE is documented to override the config file but the file value always wins.",
            "A project-level .rustybox.toml is merged before the user config, so the user config overrides it."],
  solution="Build the configuration in one place with a fixed order: defaults, user config, project config, environment, then CLI flags, using the figment crate so each layer is explicit and testable.",
  files=[("src/config.rs", "configuration loading"), ("src/main.rs", "passes CLI overrides"), ("README.md", "documents the order")],
  steps=["Add figment with toml and env features", "Rewrite load_config() as an ordered merge of providers",
         "Pass CLI flags as the last provider", "Document the precedence in README.md", "Test each layer overriding the previous one"],
  verify=["`cargo test config`", "Manual: RUSTYBOX_REMOTE=x rustybox status shows remote x"],
  prompts=[("inv", "RUSTYBOX_REMOTE doesn't override the config file even though the README says it should. Why?"),
           ("plan", "plan a proper precedence order"), ("impl", "implement it"), ("test", "cargo test config")],
  edits=[("src/config.rs",
          "fn merge_layers(user: Config, project: Config) -> Config {\n    project.merge(user)\n}",
          "fn merge_layers(user: Config, project: Config) -> Config {\n    user.merge(project).merge(Config::from_env())\n}")],
  testfile="tests/config.rs", test="cargo test config",
  fail="config::env_overrides_file assertion `left == right` failed: left: \"origin\", right: \"backup\"",
  findings=["load_config() reads env vars first and then lets the file overwrite them.", "The project file is merged before the user file."],
  agents=["Explore"],
  labels=["Config precedence env over file", "Figment layered configuration"],
  q_kw="config precedence environment variable override toml",
  q_para="shell variable setting gets beaten by the saved settings on disk",
  detail=("file", "src/config/legacy_ini_reader.rs", "the session that touched legacy_ini_reader.rs")),

T(id="p10", repo=WBOT, branch="feat/forecast-cache", lang="ts",
  title="Cache weather API responses to stay under rate limits",
  problems=["Every /weather command calls the upstream API, and busy servers hit the 60 requests per minute limit.",
            "When the limit is hit the bot replies with a stack trace instead of a friendly message."],
  solution="Cache forecast responses per rounded coordinate for 10 minutes in an LRU cache, coalesce concurrent requests for the same key, and show a friendly retry message when the upstream returns 429.",
  files=[("src/weather/client.ts", "upstream API client"), ("src/weather/cache.ts", "LRU cache with TTL"),
         ("src/commands/weather.ts", "slash command handler"), ("src/weather/__tests__/cache.test.ts", "cache tests")],
  steps=["Add lru-cache and create cache.ts with a 10 minute TTL", "Round coordinates to 2 decimals for the cache key",
         "Coalesce in-flight requests with a promise map", "Handle 429 with a friendly reply", "Unit test hits, misses and expiry"],
  verify=["`npm test -- cache`", "Manual: spam /weather in a test server and watch upstream request count"],
  prompts=[("inv", "The weather bot keeps hitting the API rate limit on big servers. Ideas?"),
           ("plan", "plan caching"), ("impl", "implement it"), ("test", "run the tests"), ("lint", "fix lint"),
           ("commit", "commit")],
  edits=[("src/weather/client.ts",
          "export async function getForecast(lat: number, lon: number) {\n  return request(`/forecast?lat=${lat}&lon=${lon}`);\n}",
          "export async function getForecast(lat: number, lon: number) {\n  const key = `${lat.toFixed(2)},${lon.toFixed(2)}`;\n  return cached(key, () => request(`/forecast?lat=${lat}&lon=${lon}`));\n}")],
  testfile="src/weather/__tests__/cache.test.ts", test="npm test -- cache",
  fail="cache \u203a expires entries after ttl: expected 1 call to be 2 calls",
  findings=["getForecast() has no caching; each command is one upstream request.", "429 responses bubble up as unhandled promise rejections."],
  agents=["Explore"],
  labels=["LRU cache for forecast requests", "Handle weather API 429 gracefully"],
  q_kw="cache weather api rate limit lru",
  q_para="bot gets throttled by the upstream provider on busy servers",
  detail=("error", "cache \u203a coalesces concurrent lookups: TypeError: Cannot read properties of undefined (reading 'then') at cached (src/weather/cache.ts:27:19)",
          "TypeError reading 'then' in cached at cache.ts line 27")),

T(id="p11", repo=WBOT, branch="fix/command-registration", lang="ts",
  title="Discord slash commands not registering after deploy",
  problems=["After the last deploy the /forecast and /alerts commands are missing in every server.",
            "The registration script runs at startup with the guild id from development, so global commands are never published."],
  solution="Split command registration into its own script that registers global commands with the REST API using the application id, run it once in the deploy pipeline, and keep guild-scoped registration only for development.",
  files=[("src/deploy-commands.ts", "command registration script"), ("src/index.ts", "bot startup"),
         (".github/workflows/deploy.yml", "deploy pipeline")],
  steps=["Move registration out of index.ts into deploy-commands.ts", "Use Routes.applicationCommands for production",
         "Keep Routes.applicationGuildCommands when NODE_ENV=development", "Call the script from the deploy workflow"],
  verify=["`npm test`", "Run the script against the staging application and list commands with the REST API"],
  prompts=[("inv", "None of the slash commands show up in Discord since yesterday's deploy. Can you figure out why?"),
           ("impl", "fix it"), ("short", "yes"), ("commit", "commit and push")],
  edits=[("src/deploy-commands.ts",
          "await rest.put(Routes.applicationGuildCommands(clientId, devGuildId), { body: commands });",
          "const route = process.env.NODE_ENV === 'development'\n  ? Routes.applicationGuildCommands(clientId, devGuildId)\n  : Routes.applicationCommands(clientId);\nawait rest.put(route, { body: commands });")],
  testfile="src/__tests__/deploy-commands.test.ts", test="npm test",
  fail="deploy-commands \u203a uses global route in production: expected '/applications/1/guilds/2/commands' to be '/applications/1/commands'",
  findings=["deploy-commands.ts always uses applicationGuildCommands with the dev guild id.", "The deploy workflow never runs the registration script."],
  agents=["general-purpose"],
  labels=["Register Discord slash commands globally", "Deploy pipeline command registration"],
  q_kw="discord slash commands registration deploy guild",
  q_para="chat bot's interactions vanished from every community after shipping",
  detail=("subagent", "the DISCORD_APP_ID secret in the deploy workflow still points at the archived staging application 10421",
          "which finding said the app id secret pointed at the archived staging application")),

T(id="p12", repo=WBOT, branch="fix/fahrenheit-rounding", lang="ts",
  title="Fahrenheit conversion rounding bug in forecasts",
  problems=["Forecasts in imperial units show 33\u00b0F for 0\u00b0C and 211\u00b0F for 100\u00b0C.",
            "The conversion rounds the Celsius value before converting, which compounds the error."],
  solution="Convert from the raw Celsius value with the exact formula and round once at display time, and add table-driven tests for the freezing and boiling points and negative temperatures.",
  files=[("src/units.ts", "unit conversion helpers"), ("src/format/forecast.ts", "forecast message formatting"),
         ("src/__tests__/units.test.ts", "conversion tests")],
  steps=["Fix toFahrenheit() to use c * 9 / 5 + 32 without pre-rounding", "Round only in formatTemp()",
         "Add table-driven tests including -40", "Check the embed formatting still fits"],
  verify=["`npm test -- units`", "Manual: /weather units:imperial in a test server"],
  prompts=[("inv", "The bot says 33\u00b0F when it's 0\u00b0C. Something is off with the conversion."),
           ("impl", "fix it and add tests"), ("test", "run the tests"), ("commit", "commit")],
  edits=[("src/units.ts",
          "export const toFahrenheit = (c: number) => Math.round(Math.round(c) * 1.8 + 32.5);",
          "export const toFahrenheit = (c: number) => c * 9 / 5 + 32;")],
  testfile="src/__tests__/units.test.ts", test="npm test -- units",
  fail="units \u203a converts freezing point: expected 33 to be 32",
  findings=["toFahrenheit() adds 32.5 and rounds twice.", "formatTemp() rounds again, so values are rounded three times in total."],
  agents=["Explore"],
  labels=["Fix Fahrenheit conversion rounding", "Unit conversion tests for forecasts"],
  q_kw="fahrenheit conversion rounding celsius units",
  q_para="imperial temperatures come out one degree too warm",
  detail=("file", "src/format/legacy_kelvin_table.ts", "the session that edited legacy_kelvin_table.ts")),
]


BANKS = {"public": PUBLIC}

# near-duplicate pairs: same repo (or same concept), similar vocabulary, different problem
_PAIRS = [("h01", "h02"), ("h03", "h04"), ("h14", "h15"), ("h18", "h19"), ("h26", "h27"), ("h30", "h31"),
          ("h38", "h39"), ("h22", "h29"), ("h28", "h44"), ("h20", "h13"), ("p01", "p02"), ("p07", "p09")]
DISTRACTORS = {}
for _a, _b in _PAIRS:
    DISTRACTORS.setdefault(_a, []).append(_b)
    DISTRACTORS.setdefault(_b, []).append(_a)

if __name__ == "__main__":
    main()
