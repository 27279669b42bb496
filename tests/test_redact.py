"""Secret redaction: every kind is caught, ordinary code is left alone, and the
generator's planted secrets vanish from a whole corpus."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kit import FIXTURES, GEN_CORPUS

from jacked.sources import redact as redact_mod
from jacked.sources.redact import KINDS, MARK_PREFIX, find_secrets, redact, redact_many, redact_obj


# Secrets are built from pieces so this file itself does not look like a leak to
# scanners, and so each test states exactly which part must disappear.
GHP = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2
ANT = "sk-ant-api03-" + "Zx9_Yw8-Vu7" * 8
OAI = "sk-proj-" + "Ab3De6Gh9Jk2" * 5
OAI_LEGACY = "sk-" + "T3BlbkFJ" + "q7W8e9R0t1Y2u3I4o5P6a7S8d9F0g1H2"
AWS_ID = "AKIA" + "Q7XT2M4N6P8R0S1U"
AWS_STS = "ASIA" + "Y5B7C9D1E3F5G7H9"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "z8Q2w4E6r8"
SLACK = "xoxb-" + "57676066117-4794873692959-e5TEbE7Ftm7kJjazfByTIh0I"
GLPAT = "glpat-" + "Xy12Ab34Cd56Ef78Gh90"
GH_PAT = "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ."
       "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
PEM_BODY = ["b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
            "QyNTUxOQAAACBdYX3kK1Sv9i5qT2YbZb0n7WmQ4Fz8hXp3Lq2RtVvWbgAAAJgH4pLHB+KS",
            "xwAAAAtzc2gtZWQyNTUxOQAAACBdYX3kK1Sv9i5qT2YbZb0n7WmQ4Fz8hXp3Lq2RtVvWbg=="]
OPENSSH = ("-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(PEM_BODY)
           + "\n-----END OPENSSH PRIVATE KEY-----")
RSA = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(PEM_BODY) + "\n-----END RSA PRIVATE KEY-----"


def assert_gone(text: str, secret: str, kind: str) -> str:
    out = redact(text)
    assert secret not in out, out
    assert f"[REDACTED:{kind}]" in out, out
    assert redact(out) == out, "redacting twice must equal redacting once"
    return out


# --------------------------------------------------------------------------- kinds
@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        (f"AWS_ACCESS_KEY_ID={AWS_ID}", AWS_ID, "aws_access_key"),
        (f"export AWS_ACCESS_KEY_ID={AWS_STS}", AWS_STS, "aws_access_key"),
        (f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET, "aws_secret_key"),
        (f'"SecretAccessKey": "{AWS_SECRET}"', AWS_SECRET, "aws_secret_key"),
        (f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}\n", AWS_SECRET, "aws_secret_key"),
        (f"This is the token I use locally: {GHP} - is it read?", GHP, "github_token"),
        (f"//npm.pkg.github.com/:_authToken={GHP}", GHP, "github_token"),
        ("gho_" + GHP[4:], "gho_" + GHP[4:], "github_token"),
        ("ghs_" + GHP[4:] + " expires", "ghs_" + GHP[4:], "github_token"),
        (f"GITHUB_TOKEN={GH_PAT}", GH_PAT, "github_token"),
        (f"git remote set-url origin https://oauth2:{GLPAT}@gitlab.com/x/y.git", GLPAT, "gitlab_token"),
        (f"GITLAB_TOKEN={GLPAT}", GLPAT, "gitlab_token"),
        (f"set ANTHROPIC_API_KEY={ANT} for the tests", ANT, "anthropic_key"),
        (f"client = Anthropic(api_key='{ANT}')", ANT, "anthropic_key"),
        (f"OPENAI_API_KEY={OAI}", OAI, "openai_key"),
        (f"key is {OAI_LEGACY}.", OAI_LEGACY, "openai_key"),
        (f"the alert bot token is {SLACK} - why?", SLACK, "slack_token"),
        (".env:7:SLACK_BOT_TOKEN=" + SLACK, SLACK, "slack_token"),
        ("post to https://hooks.slack.com/services/T0AAA1111/B0BBB2222/abcdefghij1234567890ABCD now",
         "T0AAA1111/B0BBB2222/abcdefghij1234567890ABCD", "slack_webhook"),
        (f"Authorization: Bearer {JWT}", JWT, "jwt"),
        (f"token={JWT}&x=1", JWT, "jwt"),
        (OPENSSH, PEM_BODY[1], "private_key"),
        (f"this is the deploy key that fails:\n\n{RSA}\n\nthanks", PEM_BODY[0], "private_key"),
        ("postgres://app_rw:Zq8Rt5Lm2Np7Kx4Vw1@db-staging.internal.example.net:5432/core",
         "Zq8Rt5Lm2Np7Kx4Vw1", "url_password"),
        ("DATABASE_URL=mysql://root:hunter2pass@localhost/app", "hunter2pass", "url_password"),
        ("redis://:s3cretRedisPw@cache:6379/0", "s3cretRedisPw", "url_password"),
        ("password=hunter2", "hunter2", "password"),
        ("passwd: 'Tr0ub4dor&3'", "Tr0ub4dor&3", "password"),
        ('{"password": "correct-horse-battery"}', "correct-horse-battery", "password"),
        ("DATABASE_PASSWORD=supersecretvalue", "supersecretvalue", "password"),
        ("PGPASSWORD=s3cret psql -h db", "s3cret", "password"),
        ("db:\n  password: hunter22\n  host: x", "hunter22", "password"),
        ("mysql --password=letmein99 -u root", "letmein99", "password"),
        ("export X_TOKEN=abcdefghijkl", "abcdefghijkl", "token"),
        ("API_TOKEN=plainletters", "plainletters", "token"),
        ("https://api.example.com/v1/items?token=a8f5f167f44f4964e6c998dee827110c&page=2",
         "a8f5f167f44f4964e6c998dee827110c", "token"),
        ('const auth = { accessToken: "q1w2e3r4t5y6" }', "q1w2e3r4t5y6", "token"),
        ("client_secret: 9f86d081884c7d659a2feaa0c55ad015", "9f86d081884c7d659a2feaa0c55ad015", "secret"),
        ("SECRET=abcDEF123456", "abcDEF123456", "secret"),
        ("api_key=abc123xyz789", "abc123xyz789", "api_key"),
        ("apikey: 0123456789abcdef", "0123456789abcdef", "api_key"),
        ('curl -H "X-API-Key: k3y-V4lu3-here"', "k3y-V4lu3-here", "api_key"),
        ("STRIPE_SIGNING_KEY=whsec_abcdef123456", "whsec_abcdef123456", "api_key"),
        ("Authorization: Bearer abcdef123456ghijkl", "abcdef123456ghijkl", "authorization"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA==", "authorization"),
        ('headers = {"authorization": "token 0a1b2c3d4e5f6a7b8c9d"}', "0a1b2c3d4e5f6a7b8c9d", "authorization"),
    ],
)
def test_each_kind_is_redacted(text: str, secret: str, kind: str) -> None:
    assert kind in KINDS
    assert_gone(text, secret, kind)


def test_connection_url_keeps_scheme_user_and_host() -> None:
    out = redact("postgres://app_rw:Zq8Rt5Lm2Np7Kx4Vw1@db.example.net:5432/core")
    assert out == "postgres://app_rw:[REDACTED:url_password]@db.example.net:5432/core"


def test_assignment_keeps_key_and_quotes() -> None:
    assert redact('password = "hunter2"') == 'password = "[REDACTED:password]"'
    assert redact("export DB_TOKEN=abc123def") == "export DB_TOKEN=[REDACTED:token]"


def test_private_key_with_json_escaped_newlines() -> None:
    escaped = json.dumps({"out": OPENSSH})  # the key as it sits inside a JSON line
    assert "\\n" in escaped
    out = redact(escaped)
    for line in PEM_BODY:
        assert line not in out
    assert json.loads(out) == {"out": "[REDACTED:private_key]"}


def test_private_key_without_end_line_is_redacted_to_end_of_text() -> None:
    truncated = "$ head -3 id_ed25519\n-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(PEM_BODY)
    out = assert_gone(truncated, PEM_BODY[2], "private_key")
    assert out == "$ head -3 id_ed25519\n[REDACTED:private_key]"


def test_private_key_without_end_line_stops_at_the_end_of_the_block() -> None:
    text = "-----BEGIN PRIVATE KEY-----\n" + "\n".join(PEM_BODY[:2]) + "\nthe key above fails to load, why?"
    out = assert_gone(text, PEM_BODY[1], "private_key")
    assert out == "[REDACTED:private_key]\nthe key above fails to load, why?"


def test_private_key_without_end_line_json_escaped() -> None:
    text = "-----BEGIN RSA PRIVATE KEY-----\\n" + "\\n".join(PEM_BODY) + '", "next": 1'
    out = assert_gone(text, PEM_BODY[2][:40], "private_key")
    assert out.endswith('", "next": 1')


def test_encrypted_pem_headers_are_part_of_the_block() -> None:
    text = ("-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,3F17F5316E2BAC89\n\n"
            + "\n".join(PEM_BODY) + "\n-----END RSA PRIVATE KEY-----")
    assert redact(text) == "[REDACTED:private_key]"


def test_several_secrets_in_one_text() -> None:
    text = f"a={GHP} b={SLACK}\nPASSWORD=hunter2\n{OPENSSH}\nend"
    out = redact(text)
    for s in (GHP, SLACK, "hunter2", PEM_BODY[0]):
        assert s not in out
    assert out.endswith("\nend")
    assert [f.kind for f in find_secrets(text)] == ["github_token", "slack_token", "password", "private_key"]


def test_secret_next_to_non_ascii_text() -> None:
    text = f"clé 🔑 → {GHP} — ok ✓ password=pässwörd9"
    out = redact(text)
    assert out == "clé 🔑 → [REDACTED:github_token] — ok ✓ password=[REDACTED:password]"
    f = find_secrets(text)[0]
    assert text[f.start:f.end] == GHP  # offsets are character offsets


def test_lone_surrogates_survive() -> None:
    text = "broken \ud83d emoji and password=hunter2"
    assert redact(text) == "broken \ud83d emoji and password=[REDACTED:password]"


def test_escaped_newline_before_a_secret_is_a_boundary() -> None:
    # Tool output often shows JSON-escaped text: `\n` right before the secret.
    text = '{"stdout": "AWS_REGION=eu-west-1\\nAKIAQ7XT2M4N6P8R0S1U\\nDB_PASSWORD=hunter2pw\\n"}'
    out = redact(text)
    assert AWS_ID not in out and "hunter2pw" not in out
    assert json.loads(out)["stdout"] == ("AWS_REGION=eu-west-1\n[REDACTED:aws_access_key]\n"
                                         "DB_PASSWORD=[REDACTED:password]\n")


# --------------------------------------------------------------------------- false positives
@pytest.mark.parametrize(
    "text",
    [
        "token = get_token()",
        "password: str",
        "def login(user: str, password: str = '') -> bool:",
        "secret_key_name = 'prod-db'",
        "password=...",
        "password=<password>",
        "password=${PASSWORD}",
        "password=$DB_PASSWORD",
        "password=****",
        "api_key: your-api-key-here",
        "OPENAI_API_KEY=sk-...",
        "token = self.token",
        "client = Client(token=token, timeout=30)",
        "secret = os.environ['SECRET']",
        "token: Optional[str] = None",
        "max_tokens=8000",
        "input_tokens: 1532",
        '"cache_creation_input_tokens": 8531',
        "if token == expected_token:",
        "Token::new(value)",
        "postgres://user:password@localhost:5432/db",
        "postgres://{user}:{password}@{host}/db",
        "https://github.com/anthropics/claude-code/issues/123",
        "commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904 fixes it",
        "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "session 2c5941bd-b9de-41d6-9414-221d175776f7",
        "toolu_01UGL8lCXGAMkfFISeyPHZ5K and msg_01VujOmKxk1AMkksNNsTXyPl and req_011ClR6ZBtmiMi0gBv0lCMSx",
        "pip install scikit-learn; use sk-learn-preprocessing-pipeline-helpers",
        "task-runner-configuration-for-the-workers",
        "PWD=/Users/dain/workspace/project",
        "curl -H 'Authorization: Bearer $TOKEN' https://api.example.com",
        'headers["Authorization"] = f"Bearer {token}"',
        "the token expired; refresh the secret and retry the password reset flow",
        '<input type="password" name="password" autocomplete="current-password">',
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----",
        "Bearer tokens are described in RFC 6750.",
        "password_hash = bcrypt.hash(password)",
        "cache_key = f'user:{uid}'",
        "sort_key=lambda x: x[0]",
        "[REDACTED:password] and [REDACTED:private_key]",
        '_SEND_MESSAGE_TOKEN = "send_message"',
        'ENV_SECRET_KEY = "LANGFUSE_SECRET_KEY"',
        'client = InferenceClient(provider="fal-ai", api_key="fal-ai-api-key")',
        "styles = {Token: '#cccccc', Comment: '#888888'}",
        "# reuse the cached token: `get_token()` may refresh it",
        "# cache for the exchanged token: re-exchanging on every call is slow",
        "self._auth = base64.b64encode(f'{user}:{pw}'.encode())",
        '_SK_START = b"-----BEGIN OPENSSH PRIVATE KEY-----"',
        'password = os.getenv("DB_PASSWORD")',
        'password = "DB_PASSWORD"',
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


def test_base64_image_is_left_alone() -> None:
    import base64
    import random

    rnd = random.Random(7)
    blob = base64.b64encode(bytes(rnd.randrange(256) for _ in range(200_000))).decode()
    text = "data:image/png;base64," + blob
    assert redact(text) == text


def test_short_strings_are_returned_as_is() -> None:
    for s in ("", "a", "user", "pwd=ab"):
        assert redact(s) is s


# --------------------------------------------------------------------------- batches and objects
def test_redact_many_equals_redact_each() -> None:
    texts = [f"token {GHP}", "plain", "", "pässwörd: x", f"a\x00b password=hunter2 {SLACK}",
             "x" * 10, "password=", "hunter2", f"{JWT}", "é" * 20 + " secret=abcdef123"]
    assert redact_many(texts) == [redact(t) for t in texts]
    assert redact_many([]) == []


def test_redact_obj_walks_and_returns_a_new_object() -> None:
    obj: dict[str, Any] = {
        "type": "user",
        "message": {"content": [{"type": "text", "text": f"my token is {GHP}"},
                                {"type": "tool_result", "content": f"SLACK_BOT_TOKEN={SLACK}"}]},
        "usage": {"input_tokens": 12, "output_tokens": 3},
        "flags": (True, None, 1.5, f"x {AWS_ID}"),
        "tool_input": {"password": "hunter", "api_key": "abcdef12", "description": "the password prompt"},
    }
    original = json.loads(json.dumps(obj, default=list))
    out = redact_obj(obj)
    assert out is not obj and out["message"] is not obj["message"]
    assert out["message"]["content"][0]["text"] == "my token is [REDACTED:github_token]"
    assert out["message"]["content"][1]["content"] == "SLACK_BOT_TOKEN=[REDACTED:slack_token]"
    assert out["usage"] == {"input_tokens": 12, "output_tokens": 3}
    assert out["flags"] == (True, None, 1.5, "x [REDACTED:aws_access_key]")
    # A value under a secret-named key is a secret even without a marker of its own.
    assert out["tool_input"] == {"password": "[REDACTED:password]", "api_key": "[REDACTED:api_key]",
                                 "description": "the password prompt"}
    assert json.loads(json.dumps(obj, default=list)) == original, "the input must not change"
    assert redact_obj(out) == out


def test_redact_obj_scalars() -> None:
    assert redact_obj(f"k={GHP}") == "k=[REDACTED:github_token]"
    assert redact_obj(5) == 5
    assert redact_obj(None) is None
    assert redact_obj([]) == []


def test_mark_prefix_matches_output() -> None:
    assert redact(f"x {GHP}").count(MARK_PREFIX) == 1


# --------------------------------------------------------------------------- generated corpus
def _strings(obj: Any, acc: list[str]) -> None:
    if isinstance(obj, str):
        acc.append(obj)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            acc.append(k)
            _strings(v, acc)
    elif isinstance(obj, list):
        for v in obj:
            _strings(v, acc)


def _corpus(tmp_path: Path, sessions: int, seed: int) -> tuple[list[str], list[str], list[str]]:
    """(original strings, redacted strings, planted secrets) of a generated corpus."""
    out = tmp_path / f"rc{seed}"
    subprocess.run([sys.executable, str(GEN_CORPUS), "--out", str(out), "--sessions", str(sessions),
                    "--seed", str(seed)], check=True, capture_output=True, timeout=300)
    truth = json.loads((out / "truth.json").read_text())
    planted = [sec for s in truth["sessions"] for sec in s.get("secrets", [])]
    before: list[str] = []
    after: list[str] = []
    for p in sorted(out.rglob("*")):
        if not p.is_file() or p.name == "truth.json":
            continue
        text = p.read_text(encoding="utf-8", errors="surrogateescape")
        if p.suffix == ".jsonl":
            for line in text.splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    before.append(line)  # malformed lines are redacted as text
                    after.append(redact(line))
                    continue
                _strings(rec, before)
                _strings(redact_obj(rec), after)
        elif p.suffix == ".json":
            rec = json.loads(text)
            _strings(rec, before)
            _strings(redact_obj(rec), after)
        else:
            before.append(text)
            after.append(redact(text))
    assert len(before) == len(after)
    return before, after, planted


def _check_corpus(before: list[str], after: list[str], planted: list[str]) -> None:
    assert planted, "the corpus must plant secrets"
    blob = "\n".join(after)
    pieces: list[str] = []
    for sec in planted:
        assert sec not in blob, f"planted secret leaked: {sec[:12]}..."
        # No fragment either: 16-character windows of the secret's value. (A URL
        # keeps its scheme, user and host: only the password must go.)
        value = sec.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1] if sec.startswith("postgres://") else sec
        pieces += [value[i:i + 16] for i in range(0, max(1, len(value) - 15), 8)
                   if "-----" not in value[i:i + 16]]
    # Everything else is left alone.
    changed = [(b, a) for b, a in zip(before, after, strict=True) if b != a]
    assert changed, "the secrets must appear in the corpus strings"
    # Fragments are looked for where the secrets were (searching the whole corpus
    # for hundreds of windows would dominate the test's time).
    for _, a in changed:
        for piece in pieces:
            assert piece not in a, f"fragment of a planted secret leaked: {piece!r} in {a[:200]!r}"
    collateral = [(b, a) for b, a in changed if not any(s in b for s in planted)]
    assert len(collateral) <= 0.001 * len(before), collateral[:5]
    total = sum(len(b) for b in before)
    assert sum(len(a) for a in after) >= 0.99 * total


def test_generated_corpus_secrets_disappear(tmp_path: Path) -> None:
    before, after, planted = _corpus(tmp_path, sessions=60, seed=3)
    _check_corpus(before, after, planted)


def test_generated_corpus_all_secret_kinds(tmp_path: Path) -> None:
    # A bigger corpus plants every kind the generator knows (AWS, GitHub,
    # Anthropic, OpenSSH key, Slack, postgres URL) in prompts, Bash output and files.
    before, after, planted = _corpus(tmp_path, sessions=240, seed=11)
    prefixes = {p for p in ("AKIA", "ghp_", "sk-ant-", "-----BEGIN OPENSSH", "xoxb-", "postgres://")
                if any(s.startswith(p) for s in planted)}
    assert len(prefixes) == 6, prefixes
    _check_corpus(before, after, planted)


# --------------------------------------------------------------------------- trigger search
def _real_transcript_bytes() -> list[bytes]:
    return [p.read_bytes() for p in sorted(FIXTURES.rglob("*.jsonl"))]


def test_trigger_search_equals_the_plain_finds() -> None:
    """The Aho-Corasick pass finds exactly what one `bytes.find` loop per trigger finds
    (the fallback where no wheel exists), so both redact alike."""
    if not hasattr(redact_mod, "_hits_by_automaton"):
        pytest.skip("ahocorasick-rs is not installed: only the plain finds run")
    secrets = [GHP, ANT, OAI, OAI_LEGACY, AWS_ID, AWS_STS, SLACK, GLPAT, GH_PAT, JWT, OPENSSH, RSA,
               "password=hunter2x", "postgres://u:Pw0rd!x@db/x", "api_key: 'Zx81kk2l0Q'", "secret_token=abc123XYZ"]
    buffers = [s.encode() for s in secrets] + [("\0".join(secrets)).lower().encode(),
                                                ("\0".join(secrets)).upper().encode()] + _real_transcript_bytes()
    for buf in buffers:
        assert sorted(redact_mod._hits_by_automaton(buf)) == sorted(redact_mod._hits_by_find(buf))
    found = sum(len(redact_mod._hits_by_find(b)) for b in buffers)
    assert found > 1000  # the fixtures hold plenty of triggers (`token`, `://`, ...)


def test_fallback_redacts_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [b.decode("utf-8", "surrogateescape") for b in _real_transcript_bytes()[:40]]
    texts += [f"export DB_PASSWORD={AWS_SECRET}\n{SLACK} {JWT}", OPENSSH, f"see https://x:{OAI}@h.io {GHP}"]
    texts += [f"bare {'Zx8Kq2Lm9Np4Rt7Vw1Yb3Cd6Fg0Hj5'} and urlsafe {'dKX3PVCXfBm0zG9saIYMW-zxg7FzpWBZXc_in6jN'}"]
    fast = [redact(t) for t in texts]
    monkeypatch.setattr(redact_mod, "_trigger_hits", redact_mod._hits_by_find)
    monkeypatch.setattr(redact_mod, "_bare_runs", [redact_mod._runs_by_find(n) for n in redact_mod._BARE_NEEDLES])
    monkeypatch.setattr(redact_mod, "_bare_inner_runs",
                        [redact_mod._runs_by_find(n) for n in redact_mod._BARE_INNER_NEEDLES])
    assert [redact(t) for t in texts] == fast
    assert sum(f.count(MARK_PREFIX) for f in fast) >= 6
