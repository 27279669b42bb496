"""Secret scrubbing: no secret reaches the index, the screen, a log or a server.

`redact(text)` replaces every secret it finds with `[REDACTED:<kind>]`;
`redact_many(texts)` does the same for a batch; `redact_obj(obj)` walks dicts,
lists and tuples and returns a new object with every string redacted.
`find_secrets(text)` says what was found where (kind and offsets, never the value).

Design for speed (this runs on every string of every transcript, tens of MB):

* The scan works on UTF-8 bytes. Every secret we detect is ASCII, `bytes.lower()`
  lower-cases ASCII only (so offsets stay aligned with the text), and byte scans
  run at memory speed, while `str` scans of a text holding one emoji run on 4-byte
  characters and `str.lower()` on such text is ~30x slower.
* Every detector is anchored on a literal trigger: token prefixes (`AKIA`, `ghp_`,
  `sk-`, `xoxb-`, `eyJ`, ...), key words (`pass`, `token`, `_key`, ...), `://` and
  `private key`. All of them are found in ONE pass over a lower-cased copy, by an
  Aho-Corasick automaton (`ahocorasick-rs`, ~600 MB/s; without its wheel, one
  `bytes.find` loop per trigger finds the same places, about 3x slower). Only there
  do small anchored regexes run (token regexes check the case on the original bytes).
  No regex alternation is tried at every position (that alone runs at 20-35 MB/s).
* `redact_many` / `redact_obj` join a batch into one buffer and scan it once,
  because per-call overhead dominates on the many short strings (ids, timestamps,
  tool names) of a transcript record.
* A replacement never holds a value after a trigger, so redacting twice equals
  redacting once.

Kinds: aws_access_key, aws_secret_key, github_token, gitlab_token, anthropic_key,
openai_key, slack_token, slack_webhook, discord_webhook, stripe_key,
google_api_key, npm_token, jwt, private_key, url_password, authorization,
password, secret, token, api_key, credentials.
"""
from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

__all__ = ["redact", "redact_many", "redact_obj", "find_secrets", "Finding", "MARK_PREFIX", "KINDS"]

MARK_PREFIX = "[REDACTED:"
KINDS: tuple[str, ...] = (
    "aws_access_key", "aws_secret_key", "github_token", "gitlab_token", "anthropic_key",
    "openai_key", "slack_token", "slack_webhook", "discord_webhook", "stripe_key",
    "google_api_key", "npm_token", "jwt", "private_key", "url_password", "authorization",
    "password", "secret", "token", "api_key", "credentials",
)


class Finding(NamedTuple):
    """One secret in a text: its kind and its character offsets (end exclusive)."""

    kind: str
    start: int
    end: int


# No secret we detect is shorter than this (`pwd=ab1c` is 8), so shorter strings
# (most ids, types, tool names in a record) are returned without any scan.
_MIN_LEN = 8

# Bytes that make a neighbour part of the same word: a token preceded by one of
# them is a substring of something longer (e.g. the `sk-` in `task-list`).
_WORDCH = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")

# A span is (start, end, kind) in byte offsets of the UTF-8 buffer; end exclusive.
_Span = tuple[int, int, str]
_MARKS: dict[str, bytes] = {k: f"{MARK_PREFIX}{k}]".encode() for k in KINDS}


def _encode(text: str) -> bytes:
    # surrogatepass: JSON may carry lone surrogates ("\ud83d"); they must round-trip.
    return text.encode("utf-8", "surrogatepass")


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogatepass")


# --------------------------------------------------------------------------- token-shaped
# Each regex begins with a literal so `re` skips to candidates quickly; the
# boundary before the match is checked in Python because a leading look-behind
# would disable that fast literal search (85 MB/s instead of ~2.8 GB/s).
def _sk_kind(m: re.Match[bytes]) -> str | None:
    tok = m.group(0)
    if tok.startswith(b"sk-ant-"):
        return "anthropic_key"
    if tok.startswith((b"sk_live_", b"sk_test_")):
        return "stripe_key"
    body = tok[3:]
    for p in (b"proj-", b"svcacct-", b"admin-"):
        if body.startswith(p):
            body = body[len(p):]
            break
    # Real keys are random: digits and both letter cases. Kebab-case words such as
    # `sk-learn-preprocessing-pipeline` are not keys.
    has_digit = any(48 <= c <= 57 for c in body)
    has_upper = any(65 <= c <= 90 for c in body)
    return "openai_key" if has_digit and has_upper else None


_Kind = str | Callable[[re.Match[bytes]], str | None]
# (kind, regex, the literals a match starts with). The literals are what the trigger
# search looks for; the regex then decides at each place one was found.
_TOKEN_RULES: tuple[tuple[_Kind, re.Pattern[bytes], tuple[bytes, ...]], ...] = (
    ("aws_access_key", re.compile(rb"(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"), (b"AKIA", b"ASIA")),
    ("github_token", re.compile(rb"gh[pousr]_[A-Za-z0-9]{30,}"), tuple(b"gh%c_" % c for c in b"pousr")),
    ("github_token", re.compile(rb"github_pat_[A-Za-z0-9_]{30,}"), (b"github_pat_",)),
    ("gitlab_token", re.compile(rb"glpat-[A-Za-z0-9_\-]{20,}"), (b"glpat-",)),
    (_sk_kind, re.compile(rb"sk(?:-[A-Za-z0-9_\-]{20,}|_(?:live|test)_[A-Za-z0-9]{16,})"),
     (b"sk-", b"sk_live_", b"sk_test_")),
    ("slack_token", re.compile(rb"xox[abeoprs]-[A-Za-z0-9\-]{10,}"), tuple(b"xox%c-" % c for c in b"abeoprs")),
    ("jwt", re.compile(rb"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"), (b"eyJ",)),
    ("google_api_key", re.compile(rb"AIza[0-9A-Za-z_\-]{35}"), (b"AIza",)),
    ("npm_token", re.compile(rb"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"), (b"npm_",)),
)


def _glued(data: bytes, s: int) -> bool:
    """True when the byte before `s` continues a word (so a match at `s` is part of
    a longer word). A JSON escape (`\\n`, `\\t`, `\\r`) before `s` is a break, not a
    word: tool output often shows escaped text such as `"...\\nAKIA..."`."""
    if not s or data[s - 1] not in _WORDCH:
        return False
    return not (data[s - 1] in b"ntr" and s >= 2 and data[s - 2] == 92)


def _token_at(data: bytes, rule: int, s: int, out: list[_Span]) -> int:
    """The token rule `rule` tried where one of its literals was found; returns where the
    match ends (the next try of this rule starts there: matches do not overlap)."""
    kind, rx, _ = _TOKEN_RULES[rule]
    m = rx.match(data, s)
    if m is None:
        return s
    if not _glued(data, s):
        k = kind(m) if callable(kind) else kind
        if k:
            out.append((s, m.end(), k))
    return m.end()


# --------------------------------------------------------------------------- private keys
_PK_BEGIN = re.compile(rb"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PK_END = re.compile(rb"-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
# What may stand between BEGIN and END: base64, whitespace, literal `\n` escapes of
# JSON-encoded text, and PEM headers such as `Proc-Type: 4,ENCRYPTED`.
_PK_BODY = re.compile(rb"[A-Za-z0-9+/=\s\\:,.\-]*")
_PK_LINE_BREAK = re.compile(rb"(?:\r?\n|\\r\\n|\\n)")
_PK_B64_LINE = re.compile(rb"[ \t]*(?:[A-Za-z0-9+/=]|\\/)+[ \t]*")
_PK_HEADER_LINE = re.compile(rb"[ \t]*[A-Za-z][A-Za-z0-9\-]*: [^\r\n\\]*")
# A short all-lower-case line is a word of prose after a truncated key, not base64
# (PEM lines are 64-70 characters; only the last one is short).
_PK_PROSE_WORD = re.compile(rb"[ \t]*[a-z]{1,15}[ \t]*")
_PK_MAX_BODY = 64 * 1024  # bigger than any real key; bounds the END search
_PK_HAS_BODY = re.compile(rb"[A-Za-z0-9+/=]{16}")


def _pk_open_end(data: bytes, pos: int) -> int:
    """End of a key block whose END line is missing: consume key-looking lines.

    A truncated key (`head -5 id_rsa`, a cut tool output) still leaks its body, so
    every line that looks like base64 or a PEM header goes; the first line of
    anything else (prose, a prompt) ends the block.
    """
    m = _PK_B64_LINE.match(data, pos)  # base64 glued to the BEGIN line
    if m:
        pos = m.end()
    while True:
        br = _PK_LINE_BREAK.match(data, pos)
        if not br:
            return pos
        nxt = br.end()
        line = _PK_B64_LINE.match(data, nxt) or _PK_HEADER_LINE.match(data, nxt)
        if line is None or _PK_PROSE_WORD.fullmatch(data, nxt, line.end()):
            return pos
        pos = line.end()


def _find_private_keys(data: bytes, out: list[_Span]) -> None:
    pos = 0
    while True:
        m = _PK_BEGIN.search(data, pos)
        if not m:
            return
        e = _PK_END.search(data, m.end(), min(len(data), m.end() + _PK_MAX_BODY))
        if e and _PK_BODY.fullmatch(data, m.end(), e.start()):
            end, body = e.end(), data[m.end():e.start()]
        else:
            end = _pk_open_end(data, m.end())
            body = data[m.end():end]
        # A marker line with no key after it (code that looks for keys, docs) is
        # not a secret; a key has at least a line of base64.
        if _PK_HAS_BODY.search(body):
            out.append((m.start(), end, "private_key"))
        pos = end


# --------------------------------------------------------------------------- URLs
_URL_USERINFO = re.compile(rb"([^\s:/?#@\"'<>\\\x00\[\]{}()]*):([^\s/?#@\"'<>\\\x00]{1,256})@")
_SLACK_HOOK = re.compile(rb"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9_/\-]{8,})")
_DISCORD_HOOK = re.compile(rb"(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/([A-Za-z0-9_\-]{20,})")
_URL_PW_PLACEHOLDERS = frozenset({"pass", "password", "passwd", "pwd", "secret", "pw", "token"})
_ALNUM = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


def _url_at(data: bytes, p: int, out: list[_Span]) -> None:
    """Credentials and webhook secrets of the URL whose `://` is at `p`."""
    if not (p and data[p - 1] in _ALNUM):  # a scheme stands before ://
        return
    q = p + 3
    m = _URL_USERINFO.match(data, q)
    if m:
        pw = m.group(2).decode("utf-8", "replace")
        # `postgres://user:password@localhost` in docs is a placeholder.
        if not _is_placeholder(pw) and pw.lower() not in _URL_PW_PLACEHOLDERS:
            out.append((m.start(2), m.end(2), "url_password"))
        q = m.end()
    c = data[q:q + 1]
    if c == b"h":
        h = _SLACK_HOOK.match(data, q)
        if h:
            out.append((h.start(1), h.end(1), "slack_webhook"))
    elif c in (b"d", b"p", b"c"):
        h = _DISCORD_HOOK.match(data, q)
        if h:
            out.append((h.start(1), h.end(1), "discord_webhook"))


# --------------------------------------------------------------------------- placeholders
_PLACEHOLDER_WORDS = frozenset({
    "none", "null", "nil", "undefined", "true", "false", "str", "string", "bytes", "int",
    "optional", "required", "password", "passwd", "passphrase", "secret", "token", "apikey",
    "api_key", "api-key", "redacted", "changeme", "change_me", "example", "placeholder",
    "dummy", "fake", "test", "todo", "tbd", "hidden", "masked", "secretstr", "env", "value", "values",
})
_MASK_CHARS = frozenset("*xX•.-_#?·…")


def _is_placeholder(v: str) -> bool:
    """True for values that stand in for a secret rather than being one."""
    if len(v) < 4:
        return True
    c0 = v[0]
    if c0 in "<{$%*[(`#" or v[-1] in ">}":
        return True  # <password>, {token}, ${TOKEN}, $TOKEN, %s, ***, [REDACTED:..], #ccc
    lv = v.lower()
    if lv in _PLACEHOLDER_WORDS:
        return True
    if set(v) <= _MASK_CHARS:
        return True  # ****, xxxx, ...
    if "..." in v or "***" in v or "xxxx" in lv or "…" in v:
        return True  # already masked: sk-...abcd, ghp_****
    if lv.startswith(("your", "my_", "my-", "redacted", "placeholder", "dummy", "fake_", "fake-", "todo")):
        return True  # your-api-key-here, YOUR_TOKEN, my_password
    if c0 == "/" or lv.startswith(("~/", "./", "../", "http://", "https://", "file:")):
        return True  # a path or URL (PWD=/home/x), not a credential
    return False


# A bare (unquoted) value that reads as code: an identifier or attribute chain
# without digits (`token`, `self.token`, `get_token`, `str`), or a number.
_CODEISH = re.compile(r"[A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*|[+-]?\d+(?:\.\d+)?")


# --------------------------------------------------------------------------- keyword assignments
# Triggers searched with bytes.find in the lower-cased buffer. Each occurrence is
# grown to the whole key (`DATABASE_PASSWORD`, `client-secret`, `_authToken`).
_KEY_TRIGGERS = (b"pass", b"pwd", b"secret", b"token", b"api", b"_key", b"auth")
_KEYCH = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_KEY_FWD = re.compile(rb"[A-Za-z0-9_.\-]*")
_KEY_BACK_MAX = 80
# After a key comes a quote, a space or a separator; most trigger occurrences
# ("tokens are", "rapid", "pass") fail this one-byte test and cost nothing more.
_AFTER_KEY = frozenset(b"\\\"' \t:=")
# Every key `_key_kind` accepts (or `authorization`) ends with one of these: a key that
# does not (`tokens`, `api_url`) is dropped before its start is even looked for.
_KEY_ENDINGS = (b"password", b"passwd", b"passphrase", b"secret", b"token", b"key", b"pass", b"pwd",
                b"auth", b"credential", b"credentials", b"authorization")

# The key must END with one of these words (checked on the lower-cased key).
# Strong words may follow any prefix (`pgpassword`, `authtoken`); weak ones need a
# separator or camel-case boundary before them (`bypass`, `monkey` are not keys).
_STRONG_SUFFIX = re.compile(r"(?:password|passwd|passphrase|secret|token|api[_\-]?key|apikey)$")
_WEAK_SUFFIX = re.compile(
    r"(?:pass|pwd|auth|credentials?|(?:access|secret|private|signing|encryption|master|client|app|auth)[_\-]?key|key)$")
_KIND_OF_WORD = {
    "password": "password", "passwd": "password", "passphrase": "password", "pass": "password",
    "pwd": "password", "token": "token", "secret": "secret", "credential": "credentials",
    "credentials": "credentials", "auth": "authorization",
}
_NOT_SECRET_KEYS = frozenset({"pwd", "oldpwd", "key", "sort_key", "cache_key", "primary_key",
                              "foreign_key", "partition_key", "idempotency_key", "dedupe_key"})

_ASSIGN = re.compile(
    rb"""(\\?["'])?           # the closing quote of a quoted key ("password": ...)
    ([ \t]*)                  # space before the separator
    (:=|=>|=(?!=)|:(?![:/]))  # not ==, ::, or a URL's ://
    ([ \t]*)
    (?:
       (\\?["'`])([^"'`\\\r\n\x00]{1,1024})\5        # quoted value; \5 = the same quote
     | ([^\s"'`,;&|<>(){}\[\]\\\x00]{1,4096})        # bare value
    )""",
    re.X,
)
_AUTH_VALUE = re.compile(
    rb"""(\\?["'])?[ \t]*[:=][ \t]*(\\?["'])?[ \t]*
    (?:(?:bearer|basic|token|digest|bot|apikey|api-key|sso-key)[ \t]+)?
    ([A-Za-z0-9\-._~+/=:]{8,4096})""",
    re.X | re.I,
)
_AWS_SECRET = re.compile(rb"""(\\?["'])?[ \t]*[:=][ \t]*(\\?["'])?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])""")


@functools.lru_cache(maxsize=4096)  # dict keys repeat endlessly across records
def _key_kind(key: str) -> str | None:
    """The kind of secret a key names (`DB_PASSWORD` -> password), or None."""
    stripped = key.lstrip("-.")
    low = stripped.lower()
    if not low or low in _NOT_SECRET_KEYS:
        return None
    m = _STRONG_SUFFIX.search(low)
    if m is None:
        m = _WEAK_SUFFIX.search(low)
        if m is None:
            return None
        i = m.start()
        # A weak word must be a whole component: `db_pass`, `dbPass`, `DB_PASS`, `pass`.
        if i and low[i - 1] not in "_.-" and not (stripped[i].isupper() and not stripped[i - 1].isupper()):
            return None
        if m.group(0) == "key":
            # A bare `*_KEY` names a secret only in env style (upper case): SIGNING_KEY=...
            return "api_key" if stripped.isupper() and i and low[i - 1] == "_" else None
    return _KIND_OF_WORD.get(m.group(0), "api_key")


# A quoted name rather than a value: letters and separators, no digit
# (`_SEND_MESSAGE_TOKEN = "send_message"`, `ENV_SECRET_KEY = "LANGFUSE_SECRET_KEY"`,
# `api_key="fal-ai-api-key"`). Real tokens and keys are random and hold digits.
_NAMEISH = re.compile(r"[A-Za-z_][A-Za-z_]*(?:[.\-_/:][A-Za-z_]+)*")
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")  # password = "DB_PASSWORD": a variable's name
_CALLISH = re.compile(r"[A-Za-z_][\w.]*\(.*\)")  # `get_token()` in backticks or quotes


def _bare_is_secret(v: str, next_char: int, kind: str, env_style: bool, url_or_cli: bool) -> bool:
    if _is_placeholder(v):
        return False
    if env_style or url_or_cli:
        return True  # KEY=value in .env / export / `--password=x` / `?token=x` is a literal
    if next_char in b"([.{":
        return False  # get_token(), os.environ[...]: a call or subscript
    v = v.rstrip(":.,")
    if _CODEISH.fullmatch(v):
        return False  # token = token, password: str, secret = self.secret, port: 5432
    if kind != "password" and _NAMEISH.fullmatch(v):
        return False  # prose: "the exchanged token: re-exchanging it ..."
    return True


def _quoted_is_secret(v: str, kind: str, quote: str = '"') -> bool:
    if _is_placeholder(v):
        return False
    if " " in v or "\t" in v:
        return False  # prose ("the token expired"), not a credential
    if quote == "`" or _CALLISH.fullmatch(v):
        return not (_CODEISH.fullmatch(v) or _CALLISH.fullmatch(v))  # `token` / `get_token()` in prose
    if kind == "password":
        # Human passwords can be plain words (`"correct-horse-battery"`): only an
        # environment variable's name is taken for a reference.
        return not _ENV_NAME.fullmatch(v)
    return not _NAMEISH.fullmatch(v)


def _key_at(data: bytes, low: bytes, p: int, trig_len: int, seen: set[int], out: list[_Span]) -> int:
    """The keyword assignment whose trigger (`password`'s `pass`) is at `p`: the whole key is
    found around it and judged once per key start (`secret_token` holds two triggers).
    Returns where the next search for this trigger may start (after the key)."""
    n = len(data)
    nxt = p + trig_len
    ke = _KEY_FWD.match(data, nxt).end()  # type: ignore[union-attr]  # `[...]*` always matches
    if ke < n and data[ke] in _AFTER_KEY and low.endswith(_KEY_ENDINGS, 0, ke):
        ks = p
        lim = max(0, p - _KEY_BACK_MAX)
        while ks > lim and data[ks - 1] in _KEYCH:
            if ks >= 2 and data[ks - 2] == 92 and data[ks - 1] in b"ntr":
                break  # `\\nDB_PASSWORD=`: the key starts after the escape
            ks -= 1
        if ks not in seen:
            seen.add(ks)
            _judge_key(data, ks, ke, n, out)
    return ke if ke > nxt else nxt


def _judge_key(data: bytes, ks: int, ke: int, n: int, out: list[_Span]) -> None:
    prev = data[ks - 1] if ks else 0
    if prev == 36 or (prev == 123 and ks >= 2 and data[ks - 2] == 36):  # $ / ${
        return  # $TOKEN, ${DB_PASSWORD}: a reference, not a value
    key = data[ks:ke].decode("ascii")
    low_key = key.lower()
    if low_key.endswith("authorization"):
        _check_authorization(data, ke, out)
        return
    kind = _key_kind(key)
    if kind is None:
        return
    if kind == "authorization" and _check_authorization(data, ke, out):
        return
    if low_key.replace("_", "").endswith("secretaccesskey") and _check_aws_secret(data, ke, out):
        return
    m = _ASSIGN.match(data, ke)
    if m is None:
        return
    key_quote, sp1, sep, sp2, vq, qv, bv = m.groups()
    if qv is not None:
        if _quoted_is_secret(qv.decode("utf-8", "replace"), kind, vq.decode()[-1:]):
            out.append((m.start(6), m.end(6), kind))
        return
    core = key.lstrip("-.")
    env_style = (sep == b"=" and not sp1 and not sp2 and not key_quote
                 and core.isupper() and core[:1].isalpha())
    url_or_cli = sep == b"=" and not sp1 and (key.startswith("--") or prev in (63, 38))  # ? &
    end = m.end(7)
    if _bare_is_secret(bv.decode("utf-8", "replace"), data[end] if end < n else 0, kind, env_style, url_or_cli):
        out.append((m.start(7), end, kind))


def _check_authorization(data: bytes, ke: int, out: list[_Span]) -> bool:
    m = _AUTH_VALUE.match(data, ke)
    if m is None:
        return False
    v = m.group(3).decode("ascii")
    end = m.end(3)
    if data[end:end + 1] in (b"(", b"["):
        return True  # self._auth = base64.b64encode(...): code
    if not (_is_placeholder(v) or _CODEISH.fullmatch(v)):  # `Bearer $TOKEN`, `auth: token`
        out.append((m.start(3), end, "authorization"))
    return True


def _check_aws_secret(data: bytes, ke: int, out: list[_Span]) -> bool:
    m = _AWS_SECRET.match(data, ke)
    if m is None or _is_placeholder(m.group(3).decode("ascii")):
        return False
    out.append((m.start(3), m.end(3), "aws_secret_key"))
    return True


# --------------------------------------------------------------------------- driver
# Every literal a detector starts at, lower-cased, found in one pass over the lower-cased
# buffer; each detector then runs only where its literals are. Token literals are
# case-sensitive: their regexes check the case on the original bytes.
_TRIGGERS: list[bytes] = []
_TRIGGER_ACTIONS: list[tuple[str, int]] = []  # ("token", rule) | ("key", length) | ("url", 0) | ("pk", 0)
for _rule, (_, _, _literals) in enumerate(_TOKEN_RULES):
    for _lit in _literals:
        _TRIGGERS.append(_lit.lower())
        _TRIGGER_ACTIONS.append(("token", _rule))
for _trig in _KEY_TRIGGERS:
    _TRIGGERS.append(_trig)
    _TRIGGER_ACTIONS.append(("key", len(_trig)))
_TRIGGERS += [b"://", b"private key"]
_TRIGGER_ACTIONS += [("url", 0), ("pk", 0)]


def _hits_by_find(low: bytes) -> list[tuple[int, int, int]]:
    """(trigger, start, end) of every trigger occurrence, one `bytes.find` pass per trigger."""
    hits = []
    for i, trig in enumerate(_TRIGGERS):
        p = low.find(trig)
        while p != -1:
            hits.append((i, p, p + len(trig)))
            p = low.find(trig, p + 1)
    return hits


try:  # Aho-Corasick in Rust: all triggers in one pass, several times faster than the finds
    from ahocorasick_rs import BytesAhoCorasick

    _find_all = BytesAhoCorasick(_TRIGGERS).find_matches_as_indexes

    def _hits_by_automaton(low: bytes) -> list[tuple[int, int, int]]:
        """(trigger, start, end) of every trigger occurrence, in one pass."""
        return _find_all(low, overlapping=True)

    _trigger_hits: Callable[[bytes], list[tuple[int, int, int]]] = _hits_by_automaton
except ImportError:  # no wheel for this platform: the same results, more slowly
    _trigger_hits = _hits_by_find


def _scan(data: bytes) -> list[_Span]:
    """Sorted, non-overlapping byte spans of the secrets in a UTF-8 buffer."""
    low = data.lower()
    hits = _trigger_hits(low)
    if not hits:
        return []
    # Detectors keep their order of precedence (see _merge): tokens by rule, then private
    # keys, URLs and assignments; each trigger resumes after the text its last hit used.
    tokens: list[list[_Span]] = [[] for _ in _TOKEN_RULES]
    urls: list[_Span] = []
    keys: list[_Span] = []
    resume: dict[int, int] = {}  # token rule / key trigger -> first position worth trying
    seen_keys: set[int] = set()
    has_pk = False
    for i, s, _ in hits:
        action, arg = _TRIGGER_ACTIONS[i]
        if action == "key":
            if s >= resume.get(~i, 0):
                resume[~i] = _key_at(data, low, s, arg, seen_keys, keys)
        elif action == "token":
            if s >= resume.get(arg, 0):
                resume[arg] = _token_at(data, arg, s, tokens[arg])
        elif action == "url":
            _url_at(data, s, urls)
        else:
            has_pk = True
    spans = [sp for rule_spans in tokens for sp in rule_spans]
    if has_pk and b"PRIVATE KEY" in data:
        _find_private_keys(data, spans)
    spans += urls
    spans += keys
    if len(spans) > 1:
        spans = _merge(spans)
    return spans


def _merge(spans: list[_Span]) -> list[_Span]:
    # Earlier detectors are more specific: on equal starts the first found wins;
    # overlapping spans are united so no fragment of either secret survives.
    order = sorted(range(len(spans)), key=lambda i: (spans[i][0], -spans[i][1], i))
    merged: list[_Span] = []
    for i in order:
        s, e, k = spans[i]
        if merged and s < merged[-1][1]:
            ps, pe, pk = merged[-1]
            if e > pe:
                merged[-1] = (ps, e, pk)
            continue
        merged.append((s, e, k))
    return merged


def _apply(data: bytes, spans: Sequence[_Span], offset: int = 0) -> str:
    parts: list[bytes] = []
    last = 0
    n = len(data)
    for s, e, k in spans:
        s -= offset
        e -= offset
        # A value may hold non-ASCII bytes; never cut a UTF-8 sequence in half.
        while e < n and 0x80 <= data[e] < 0xC0:
            e += 1
        parts.append(data[last:s])
        parts.append(_MARKS[k])
        last = e
    parts.append(data[last:])
    return _decode(b"".join(parts))


def redact(text: str) -> str:
    """`text` with each secret replaced by `[REDACTED:<kind>]` (idempotent)."""
    if len(text) < _MIN_LEN:
        return text
    data = _encode(text)
    spans = _scan(data)
    return _apply(data, spans) if spans else text


def find_secrets(text: str) -> list[Finding]:
    """Where the secrets in `text` are (kind and character offsets), for counts
    and tests; the values themselves are never returned."""
    if len(text) < _MIN_LEN:
        return []
    data = _encode(text)
    return [Finding(k, len(_decode(data[:s])), len(_decode(data[:e]))) for s, e, k in _scan(data)]


# Joins a batch: every value and token byte class excludes NUL, so no span runs
# from the end of one string into the next (and spans are clipped regardless).
_SEP = b"\x00"


def redact_many(texts: Sequence[str]) -> list[str]:
    """`[redact(t) for t in texts]`, scanning the batch as one buffer (several
    times faster for many short strings)."""
    out = list(texts)
    idx = [i for i, t in enumerate(texts) if len(t) >= _MIN_LEN]
    if not idx:
        return out
    enc = [_encode(texts[i]) for i in idx]
    spans = _scan(_SEP.join(enc))
    if not spans:
        return out
    starts: list[int] = []
    pos = 0
    for b in enc:
        starts.append(pos)
        pos += len(b) + 1
    by_text: dict[int, list[_Span]] = {}
    for s, e, k in spans:
        j = bisect.bisect_right(starts, s) - 1
        while s < e and j < len(enc):
            t_end = starts[j] + len(enc[j])
            ce = min(e, t_end)
            if s < ce:
                by_text.setdefault(j, []).append((s, ce, k))
            s = t_end + 1
            j += 1
    for j, sp in by_text.items():
        out[idx[j]] = _apply(enc[j], sp, starts[j])
    return out


def redact_obj(obj: Any) -> Any:
    """A copy of `obj` (dicts, lists, tuples of JSON-like values) with every string
    redacted: values, dict keys, and the whole value of a secret-named key
    (`{"api_key": "abc123"}` -> `{"api_key": "[REDACTED:api_key]"}`)."""
    strings: list[str] = []
    _collect(obj, strings)
    return _rebuild(obj, iter(redact_many(strings)))


# The walks below handle the common leaves (str, numbers, None) inline and recurse
# for everything else: on transcript records (many small dicts) the walk, not the
# scan, is most of the cost. Both walks must visit strings in the same order.
_SCALARS = frozenset({int, float, bool, type(None)})


def _collect(obj: Any, acc: list[str]) -> None:
    append = acc.append
    if isinstance(obj, str):
        append(obj)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(k, str):
                append(k)
            tv = type(v)
            if tv is str:
                append(v)
            elif tv not in _SCALARS:
                _collect(v, acc)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            tv = type(v)
            if tv is str:
                append(v)
            elif tv not in _SCALARS:
                _collect(v, acc)


def _rebuild(obj: Any, it: Iterator[str]) -> Any:
    """A copy of `obj` taking, in _collect's order, the redacted strings from `it`."""
    if isinstance(obj, str):
        return next(it)
    if isinstance(obj, dict):
        new: dict[Any, Any] = {}
        for k, v in obj.items():
            if isinstance(k, str):
                k = next(it)
            tv = type(v)
            if tv is str:
                nv = next(it)
            elif tv in _SCALARS:
                new[k] = v
                continue
            else:
                nv = _rebuild(v, it)
            if type(nv) is str and type(k) is str:
                kind = _key_kind(k)
                # A value under a secret-named key is a secret as a whole.
                if kind is not None and not nv.startswith(MARK_PREFIX) and _quoted_is_secret(nv, kind):
                    nv = f"{MARK_PREFIX}{kind}]"
            new[k] = nv
        return new
    if isinstance(obj, (list, tuple)):
        out = [next(it) if type(v) is str else v if type(v) in _SCALARS else _rebuild(v, it) for v in obj]
        return out if isinstance(obj, list) else tuple(out)
    return obj
