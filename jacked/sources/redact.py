"""Secret scrubbing: no secret reaches the index, the screen, a log or a server.

`redact(text)` replaces every secret it finds with `[REDACTED:<kind>]`;
`redact_many(texts)` does the same for a batch; `redact_obj(obj)` walks dicts,
lists and tuples and returns a new object with every string redacted.
`find_secrets(text)` says what was found where (kind and offsets, never the value).

What counts as a secret is measured against a public rule set: gitleaks' rule file
and detect-secrets' plugins (see tests/redact_corpus/README.md). The corpus there
holds a secret of every form those rules name (provider prefixes, keyword = value,
command-line flags, headers, cookies, connection strings, bare high-entropy tokens)
and look-alikes that must survive (hashes, UUIDs, images, ids, digests, paths).

Design for speed (this runs on every string of every transcript, tens of MB). A
scanner library was measured and not used: detect-secrets (its `scan_line` with the
default plugins and filters) read 0.01 MB/s of the transcript fixtures and reported
10,519 "secrets" in 100 KB of them, against ~80 MB/s here (`scripts/redact_bench.py`);
gitleaks is a Go binary. Their rules are the reference instead (tests/redact_corpus/).

* The scan works on UTF-8 bytes. Every secret we detect is ASCII, and byte scans
  run at memory speed, while `str` scans of a text holding one emoji run on 4-byte
  characters.
* Every detector but one is anchored on a literal trigger: token prefixes (`AKIA`,
  `ghp_`, `sk-`, `hf_`, `xoxb-`, `eyJ`, ~100 more), key words (`pass`, `token`,
  `_key`, `cred`, ...), command names (`curl`, `login`, `sshpass`, ...), `cookie`,
  `://` and `PRIVATE KEY`. All of them are found in ONE pass over the original bytes
  by an Aho-Corasick automaton (`ahocorasick-rs`, ~600 MB/s; without its wheel, one
  `bytes.find` loop per trigger finds the same places, several times slower). Key
  words are matched in every ASCII letter case: the automaton holds each case variant
  (a few hundred patterns cost it nothing), so no lower-cased copy of the text is made.
  Token prefixes are matched in their own case. Only where a trigger is found do small
  anchored regexes run. No regex alternation is tried at every position (that alone
  runs at 20-35 MB/s).
* The one unanchored detector finds bare high-entropy tokens (a key pasted with no
  word near it): the buffer is mapped by `bytes.translate` to one byte for token
  characters and one for the rest, and a second automaton finds where runs of 24+
  token characters start. Each run is then judged by cheap C-level counts (mixed case,
  case/digit alternation, little lower-case "wording", few separators), after known
  non-secret shapes are set aside: Claude/OpenAI/Stripe-style ids (`toolu_...`),
  hashes (hex is single-case), UUIDs, base64 images and other magic-prefixed blobs,
  SSH public keys, DER certificates, go.sum / SRI hashes, armored PEM lines, and runs
  longer than 256 characters (data, not credentials).
* `redact_many` / `redact_obj` join a batch into one buffer and scan it once,
  because per-call overhead dominates on the many short strings (ids, timestamps,
  tool names) of a transcript record.
* A replacement never holds a value after a trigger, so redacting twice equals
  redacting once.

Kinds: aws_access_key, aws_secret_key, github_token, gitlab_token, anthropic_key,
openai_key, slack_token, slack_webhook, discord_webhook, stripe_key,
google_api_key, npm_token, jwt, private_key, url_password, authorization,
password, secret, token, api_key, credentials, huggingface_token, provider_token,
cookie, high_entropy.
"""
from __future__ import annotations

import base64
import binascii
import bisect
import functools
import itertools
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

__all__ = ["redact", "redact_many", "redact_obj", "find_secrets", "Finding", "MARK_PREFIX", "KINDS"]

MARK_PREFIX = "[REDACTED:"
KINDS: tuple[str, ...] = (
    "aws_access_key", "aws_secret_key", "github_token", "gitlab_token", "anthropic_key",
    "openai_key", "slack_token", "slack_webhook", "discord_webhook", "stripe_key",
    "google_api_key", "npm_token", "jwt", "private_key", "url_password", "authorization",
    "password", "secret", "token", "api_key", "credentials", "huggingface_token",
    "provider_token", "cookie", "high_entropy",
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
# Each regex begins with its literal; the boundary before the match is checked in
# Python (a leading look-behind would slow `re` down). The regexes are the shapes of
# gitleaks' rules (rule ids in tests/redact_corpus/secrets.jsonl), a little wider
# where providers vary the length.
def _sk_kind(m: re.Match[bytes]) -> str | None:
    tok = m.group(0)
    if tok.startswith(b"sk-ant-"):
        return "anthropic_key"
    if tok.startswith((b"sk_live_", b"sk_test_", b"sk_prod_")):
        return "stripe_key"
    if tok.startswith(b"sk-or-"):
        return "provider_token"  # OpenRouter
    body = tok[3:]
    for p in (b"proj-", b"svcacct-", b"admin-"):
        if body.startswith(p):
            body = body[len(p):]
            break
    # Real keys are random: digits and both letter cases. Kebab-case words such as
    # `sk-learn-preprocessing-pipeline` are not keys.
    has_digit = any(48 <= c <= 57 for c in body)
    has_upper = any(65 <= c <= 90 for c in body)
    if has_digit and has_upper:
        return "openai_key"
    if len(body) >= 32 and has_digit and _HEX_RUN.fullmatch(body):
        return "provider_token"  # sk-<32 hex>: DeepSeek, Moonshot and other OpenAI-compatible APIs
    return None


_HEX_RUN = re.compile(rb"[0-9a-f]+")


def _b64_private_key(m: re.Match[bytes]) -> str | None:
    """A base64 run that decodes to a PEM private key (a Kubernetes secret's `tls.key`)."""
    head = m.group(0)[:96]
    try:
        return "private_key" if b"PRIVATE KEY" in base64.b64decode(head[: len(head) // 4 * 4]) else None
    except (binascii.Error, ValueError):
        return None


_Kind = str | Callable[[re.Match[bytes]], str | None]
_END = rb"(?![A-Za-z0-9])"
_P = "provider_token"
# (kind, regex, the literals a match starts with). The literals are what the trigger
# search looks for, in their own case; the regex then decides at each place one was found.
_TOKEN_RULES: tuple[tuple[_Kind, re.Pattern[bytes], tuple[bytes, ...]], ...] = (
    ("aws_access_key", re.compile(rb"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}" + _END),
     (b"AKIA", b"ASIA", b"ABIA", b"ACCA", b"A3T")),
    ("github_token", re.compile(rb"gh[pousr]_[A-Za-z0-9]{30,}"), tuple(b"gh%c_" % c for c in b"pousr")),
    ("github_token", re.compile(rb"github_pat_[A-Za-z0-9_]{30,}"), (b"github_pat_",)),
    ("gitlab_token", re.compile(
        rb"gl(?:pat|dt|rt|ptt|cbt|ft|imt|agent|oas|soat|ffct)-[A-Za-z0-9_\-]{20,}(?:\.[0-9a-z]{9})?"),
     (b"glpat-", b"gldt-", b"glrt-", b"glptt-", b"glcbt-", b"glft-", b"glimt-", b"glagent-", b"gloas-",
      b"glsoat-", b"glffct-")),
    ("gitlab_token", re.compile(rb"GR1348941[A-Za-z0-9_\-]{20,}"), (b"GR1348941",)),
    ("gitlab_token", re.compile(rb"_gitlab_session=([0-9a-z]{32})"), (b"_gitlab_session=",)),
    (_sk_kind, re.compile(rb"sk(?:-[A-Za-z0-9_\-]{20,}|_(?:live|test|prod)_[A-Za-z0-9]{10,})"),
     (b"sk-", b"sk_live_", b"sk_test_", b"sk_prod_")),
    ("stripe_key", re.compile(rb"(?:rk_(?:live|test|prod)_[A-Za-z0-9]{10,}|whsec_[A-Za-z0-9+/=]{24,})"),
     (b"rk_live_", b"rk_test_", b"rk_prod_", b"whsec_")),
    ("slack_token", re.compile(rb"xox[abeoprs]-[A-Za-z0-9\-]{10,}|xoxe\.xox[bp]-[A-Za-z0-9\-]{20,}"
                               rb"|xapp-\d-[A-Za-z0-9]+-\d+-[A-Za-z0-9]+"),
     tuple(b"xox%c-" % c for c in b"abeoprs") + (b"xoxe.", b"xapp-")),
    ("jwt", re.compile(rb"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"), (b"eyJ",)),
    ("google_api_key", re.compile(rb"AIza[0-9A-Za-z_\-]{35}"), (b"AIza",)),
    ("google_api_key", re.compile(rb"GOCSPX-[A-Za-z0-9_\-]{24,}|ya29\.[0-9A-Za-z_\-]{20,}"),
     (b"GOCSPX-", b"ya29.")),
    ("npm_token", re.compile(rb"npm_[A-Za-z0-9]{36}" + _END), (b"npm_",)),
    ("huggingface_token", re.compile(rb"(?:hf_|api_org_)[A-Za-z0-9]{30,}"), (b"hf_", b"api_org_")),
    # One rule per provider family of gitleaks' config (ids in the corpus).
    (_P, re.compile(rb"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}"),
     (b"A3-",)),
    (_P, re.compile(rb"ops_eyJ[A-Za-z0-9+/]{100,}={0,3}"), (b"ops_eyJ",)),
    (_P, re.compile(rb"p8e-[A-Za-z0-9]{32}" + _END), (b"p8e-",)),
    (_P, re.compile(rb"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"), (b"AGE-SECRET-KEY-1",)),
    (_P, re.compile(rb"LTAI[A-Za-z0-9]{20}" + _END), (b"LTAI",)),
    (_P, re.compile(rb"AKCp[A-Za-z0-9]{69}|cmVmd[A-Za-z0-9]{59}"), (b"AKCp", b"cmVmd")),
    (_P, re.compile(rb"ATATT3[A-Za-z0-9_\-=]{40,}|ATBB[A-Za-z0-9]{28,}"), (b"ATATT3", b"ATBB")),
    (_P, re.compile(rb"ABSK[A-Za-z0-9+/]{100,}={0,2}"), (b"ABSK",)),
    (_P, re.compile(rb"IQoJb3JpZ2luX2Vj[A-Za-z0-9+/=]{50,}|FwoGZXIvYXdzE[A-Za-z0-9+/=]{50,}"),
     (b"IQoJb3JpZ2luX2Vj", b"FwoGZXIvYXdzE")),  # AWS session tokens
    (_P, re.compile(rb"CLOJARS_[A-Za-z0-9]{60}"), (b"CLOJARS_",)),
    (_P, re.compile(rb"dapi[a-f0-9]{32}(?:-\d)?" + _END), (b"dapi",)),
    (_P, re.compile(rb"do[opr]_v1_[a-f0-9]{64}"), (b"doo_v1_", b"dop_v1_", b"dor_v1_")),
    (_P, re.compile(rb"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}"),
     (b"dp.pt.", b"dp.st.", b"dp.sa.", b"dp.ct.", b"dp.scim.", b"dp.audit.")),
    (_P, re.compile(rb"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"), (b"dt0c01.",)),
    (_P, re.compile(rb"EZ[AT]K[A-Za-z0-9]{54}"), (b"EZAK", b"EZTK")),
    (_P, re.compile(rb"EAA[ACM][A-Za-z0-9_\-]{22,}"), (b"EAAA", b"EAAC", b"EAAM")),  # Square, Facebook
    (_P, re.compile(rb"sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,}"), (b"sq0atp-", b"sq0csp-")),
    (_P, re.compile(rb"FLW(?:SECK|PUBK)(?:_TEST)?-[A-Za-z0-9]{12,}(?:-X)?"), (b"FLWSECK", b"FLWPUBK")),
    (_P, re.compile(rb"fo1_[\w\-]{43}|fm[12][ar]?_[A-Za-z0-9+/]{64,}={0,3}"), (b"fo1_", b"fm1a_", b"fm1r_", b"fm2_")),
    (_P, re.compile(rb"fio-u-[A-Za-z0-9_=\-]{64}"), (b"fio-u-",)),
    (_P, re.compile(rb"glc_[A-Za-z0-9+/]{32,}={0,3}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"), (b"glc_", b"glsa_")),
    (_P, re.compile(rb"eyJrIjoi[A-Za-z0-9]{40,}={0,3}"), (b"eyJrIjoi",)),  # Grafana
    (_P, re.compile(rb"(?:pat|sat)\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}"), (b"pat.", b"sat.")),
    (_P, re.compile(rb"HRKU-AA[0-9A-Za-z_\-]{58}"), (b"HRKU-AA",)),
    (_P, re.compile(rb"ico-[A-Za-z0-9]{32}" + _END), (b"ico-",)),
    (_P, re.compile(rb"s-s4t2(?:ud|af)-[a-f0-9]{64}"), (b"s-s4t2",)),
    (_P, re.compile(rb"lin_api_[A-Za-z0-9]{40}"), (b"lin_api_",)),
    (_P, re.compile(rb"NR(?:AK|II|JS)-[A-Za-z0-9\-]{19,32}"), (b"NRAK-", b"NRII-", b"NRJS-")),
    (_P, re.compile(rb"ntn_[0-9]{11}[A-Za-z0-9]{32,}|secret_[A-Za-z0-9]{43}" + _END), (b"ntn_", b"secret_")),
    (_P, re.compile(rb"sha256~[\w\-]{43}"), (b"sha256~",)),
    (_P, re.compile(rb"pplx-[A-Za-z0-9]{48}"), (b"pplx-",)),
    (_P, re.compile(rb"pscale_(?:tkn|oauth|pw)_[\w=.\-]{32,64}"), (b"pscale_",)),
    (_P, re.compile(rb"PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}"), (b"PMAK-",)),
    (_P, re.compile(rb"pnu_[A-Za-z0-9]{36}"), (b"pnu_",)),
    (_P, re.compile(rb"pul-[a-f0-9]{40}"), (b"pul-",)),
    (_P, re.compile(rb"pypi-AgEIcHlwaS5vcmc[\w\-]{50,}"), (b"pypi-AgEIcHlwaS5vcmc",)),
    (_P, re.compile(rb"rdme_[a-z0-9]{70}"), (b"rdme_",)),
    (_P, re.compile(rb"rubygems_[a-f0-9]{48}"), (b"rubygems_",)),
    (_P, re.compile(rb"oy2[a-z0-9]{43}" + _END), (b"oy2",)),  # NuGet
    (_P, re.compile(rb"tk-us-[\w\-]{48}"), (b"tk-us-",)),
    (_P, re.compile(rb"SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}"), (b"SG.",)),
    (_P, re.compile(rb"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}"), (b"xkeysib-",)),
    (_P, re.compile(rb"sntrys_eyJ[A-Za-z0-9+/=_]{50,}|sntryu_[a-f0-9]{64}"), (b"sntrys_", b"sntryu_")),
    (_P, re.compile(rb"sm_[aps]at_[A-Za-z0-9]{16}"), (b"sm_aat_", b"sm_pat_", b"sm_sat_")),
    (_P, re.compile(rb"shippo_(?:live|test)_[a-fA-F0-9]{40}"), (b"shippo_",)),
    (_P, re.compile(rb"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"), (b"shpat_", b"shpca_", b"shppa_", b"shpss_")),
    (_P, re.compile(rb"hvs\.[\w\-]{90,}|hvb\.[\w\-]{138,}"), (b"hvs.", b"hvb.")),
    (_P, re.compile(rb"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}"), (b"v1.0-",)),
    (_P, re.compile(rb"duffel_(?:test|live)_[A-Za-z0-9_\-=]{43}"), (b"duffel_",)),
    (_P, re.compile(rb"sk\.eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]{20,}"), (b"sk.eyJ",)),  # Mapbox secret
    (_P, re.compile(rb"gsk_[A-Za-z0-9]{48,}"), (b"gsk_",)),  # Groq
    (_P, re.compile(rb"r8_[A-Za-z0-9]{37}" + _END), (b"r8_",)),  # Replicate
    (_P, re.compile(rb"xai-[A-Za-z0-9]{60,}"), (b"xai-",)),
    (_P, re.compile(rb"pcsk_[A-Za-z0-9_]{40,}"), (b"pcsk_",)),  # Pinecone
    (_P, re.compile(rb"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}"), (b"lsv2_",)),  # LangSmith
    (_P, re.compile(rb"nvapi-[A-Za-z0-9_\-]{60,}"), (b"nvapi-",)),
    (_P, re.compile(rb"tvly-(?:dev-|prod-)?[A-Za-z0-9]{24,}"), (b"tvly-",)),
    (_P, re.compile(rb"sbp_[a-f0-9]{40}"), (b"sbp_",)),  # Supabase
    (_P, re.compile(rb"figd_[A-Za-z0-9_\-]{40,}"), (b"figd_",)),
    (_P, re.compile(rb"tskey-(?:auth|api|client|scim|webhook)-[A-Za-z0-9]+-[A-Za-z0-9]{16,}"), (b"tskey-",)),
    (_P, re.compile(rb"bkua_[a-f0-9]{40}"), (b"bkua_",)),  # Buildkite
    (_P, re.compile(rb"CCIPAT_[A-Za-z0-9]{20,}_[a-f0-9]{40}"), (b"CCIPAT_",)),
    (_P, re.compile(rb"sq[pua]_[a-f0-9]{40}"), (b"sqp_", b"squ_", b"sqa_")),  # SonarQube
    (_P, re.compile(rb"dckr_pat_[A-Za-z0-9_\-]{27,}"), (b"dckr_pat_",)),
    (_P, re.compile(rb"re_[A-Za-z0-9]{8}_[A-Za-z0-9]{24}" + _END), (b"re_",)),  # Resend
    (_P, re.compile(rb"key-[a-f0-9]{32}" + _END), (b"key-",)),  # Mailgun
    (_P, re.compile(rb"SK[0-9a-fA-F]{32}" + _END), (b"SK",)),  # Twilio API key
    (_b64_private_key, re.compile(rb"LS0tLS1CRUdJTi[A-Za-z0-9+/]+={0,2}"), (b"LS0tLS1CRUdJTi",)),
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
    if not _glued(data, s) and b"EXAMPLE" not in m.group(0):  # AKIAIOSFODNN7EXAMPLE: AWS's docs
        k = kind(m) if callable(kind) else kind
        if k:
            g = 1 if m.re.groups else 0
            out.append((m.start(g), m.end(g), k))
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


_PUTTY_LINES = re.compile(rb"Private-Lines: *\d+")


def _putty_at(data: bytes, s: int, out: list[_Span]) -> None:
    """The private lines of a PuTTY key file (`Private-Lines: 14` and base64 lines)."""
    m = _PUTTY_LINES.match(data, s)
    if m:
        end = _pk_open_end(data, m.end())
        if end > m.end():
            out.append((m.end(), end, "private_key"))


# --------------------------------------------------------------------------- URLs
_URL_USERINFO = re.compile(rb"([^\s:/?#@\"'<>\\\x00\[\]{}()]*):([^\s/?#@\"'<>\\\x00]{1,256})@")
_SLACK_HOOK = re.compile(rb"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9_/\-]{8,})")
_DISCORD_HOOK = re.compile(rb"(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/([A-Za-z0-9_\-]{20,})")
_TEAMS_HOOK = re.compile(rb"[A-Za-z0-9\-]+\.webhook\.office\.com/webhookb2/([A-Za-z0-9@/\-]{40,})")
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
    if data.find(b".webhook.office.com/", q, q + 80) != -1:
        h = _TEAMS_HOOK.match(data, q)
        if h:
            out.append((h.start(1), h.end(1), "token"))


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
    if "..." in v or "***" in v or "xxxx" in lv or "…" in v or "example" in lv:
        return True  # already masked: sk-...abcd, ghp_****; AWS's documented EXAMPLE keys
    if lv.startswith(("your", "my_", "my-", "redacted", "placeholder", "dummy", "fake_", "fake-", "todo")):
        return True  # your-api-key-here, YOUR_TOKEN, my_password
    if c0 == "/" or lv.startswith(("~/", "./", "../", "http://", "https://", "file:")):
        return True  # a path or URL (PWD=/home/x), not a credential
    return False


# A bare (unquoted) value that reads as code: an identifier or attribute chain
# without digits (`token`, `self.token`, `get_token`, `str`), or a number.
_CODEISH = re.compile(r"[A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*|[+-]?\d+(?:\.\d+)?")
# A command-line metavar or constant name: `--password PASSWORD`, `--token API_TOKEN`.
_METAVAR = re.compile(r"[A-Z][A-Z_]*")


# --------------------------------------------------------------------------- keyword assignments
# Triggers matched in every letter case. Each occurrence is grown to the whole key
# (`DATABASE_PASSWORD`, `client-secret`, `_authToken`, `AccountKey`).
_KEY_TRIGGERS = (b"pass", b"pwd", b"secret", b"token", b"api", b"_key", b"-key", b"auth", b"cred")
# ... and these in their own case only: `Key` ends camel-case keys (`AccountKey`,
# `accessKey`, `SharedAccessKey`); `sig=` / `signature=` are URL parameters (SAS, S3).
_KEY_TRIGGERS_EXACT = (b"Key", b"sig=", b"Signature=", b"signature=")
_KEYCH = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_KEY_FWD = re.compile(rb"[A-Za-z0-9_.\-]*")
_KEY_BACK_MAX = 80
# After a key comes a quote, a space, a separator or the end of an XML tag; most trigger
# occurrences ("tokens are", "rapid", "pass") fail this one-byte test and cost nothing more.
_AFTER_KEY = frozenset(b"\\\"' \t:=>")
# Every key `_key_kind` accepts (or `authorization`) ends with one of these: a key that
# does not (`tokens`, `api_url`) is dropped before its start is even looked for.
_KEY_ENDINGS = (b"password", b"passwd", b"passphrase", b"secret", b"token", b"key", b"pass", b"pwd",
                b"auth", b"credential", b"credentials", b"creds", b"authorization", b"sig", b"signature",
                b"key_base", b"requirepass", b"masterauth")

# The key must END with one of these words (checked on the lower-cased key).
# Strong words may follow any prefix (`pgpassword`, `authtoken`); weak ones need a
# separator or camel-case boundary before them (`bypass`, `monkey` are not keys).
_STRONG_SUFFIX = re.compile(
    r"(?:password|passwd|passphrase|secret|token|api[_\-]?key|apikey|secret_key_base|requirepass|masterauth)$")
_WEAK_SUFFIX = re.compile(
    r"(?:pass|pwd|auth|cred(?:ential)?s?|(?:access|secret|private|signing|encryption|master|client|app|auth"
    r"|account|storage|shared|service|subscription|license|session|webhook|admin|hmac|jwt|cookie)"
    r"[_\-]?key|key)$")
_KIND_OF_WORD = {
    "password": "password", "passwd": "password", "passphrase": "password", "pass": "password",
    "pwd": "password", "token": "token", "secret": "secret", "credential": "credentials",
    "credentials": "credentials", "creds": "credentials", "cred": "credentials", "auth": "authorization",
    "secret_key_base": "secret", "requirepass": "password", "masterauth": "password",
}
_NOT_SECRET_KEYS = frozenset({"pwd", "oldpwd", "key", "sort_key", "cache_key", "primary_key",
                              "foreign_key", "partition_key", "idempotency_key", "dedupe_key"})
# URL query parameters that carry a secret although their names say little.
_URL_PARAM_KINDS = {"sig": "token", "signature": "token", "x-amz-signature": "token", "key": "api_key"}

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
# A value after spaces, with no separator: `--password X`, `configure set KEY X`,
# `machine h login u password X`. Quoted, or bare up to a space or shell punctuation.
_SPACED = re.compile(rb"""[ \t]+(?:(\\?["'])([^"'\\\r\n\x00]{1,1024})\1|([^\s"'`;&|<>(){}\[\]\\\x00]{1,4096}))""")
# `the password is X` in a prompt.
_PROSE = re.compile(rb"""[ \t]+(?:is|was)[ \t]+[`"']?([^\s"'`\x00]{6,256})""")
_XML_VALUE = re.compile(rb">([^<>\r\n\x00\\]{1,1024})</")
_NUGET_VALUE = re.compile(rb"""\\?"[ \t]+value[ \t]*=[ \t]*\\?"([^"\\\r\n\x00]{1,1024})\\?\"""")
_AUTH_VALUE = re.compile(
    rb"""(\\?["'])?[ \t]*[:=][ \t]*(\\?["'])?[ \t]*
    (?:(?:bearer|basic|token|digest|bot|apikey|api-key|sso-key)[ \t]+)?
    ([A-Za-z0-9\-._~+/=:]{8,4096})""",
    re.X | re.I,
)
_AWS_SECRET = re.compile(rb"""(\\?["'])?[ \t]*[:=]?[ \t]*(\\?["'])?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])""")
# In the line before a key, words that make `KEY VALUE` an assignment.
_SETTER = re.compile(rb"(?:^|[\s;&|])(?:set|config|configure|setx|login|machine)[ \t]")


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


def _bare_is_secret(v: str, next_char: int, kind: str, literal: bool) -> bool:
    if _is_placeholder(v):
        return False
    if literal:
        return True  # KEY=value in .env / export / `--password=x` / `?token=x` / `;Password=x` is a literal
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


def _arg_is_secret(v: str, kind: str) -> bool:
    """A command-line argument given to a secret-named flag (`--token X`, `-p X`)."""
    if _is_placeholder(v) or v[0] == "-" or _METAVAR.fullmatch(v):
        return False  # --password PASSWORD (a metavar), --token --verbose
    return kind == "password" or not (_NAMEISH.fullmatch(v) or _CODEISH.fullmatch(v))


def _key_at(data: bytes, p: int, trig_len: int, seen: set[int], out: list[_Span]) -> int:
    """The keyword assignment whose trigger (`password`'s `pass`) is at `p`: the whole key is
    found around it and judged once per key start (`secret_token` holds two triggers).
    Returns where the next search for this trigger may start (after the key)."""
    n = len(data)
    nxt = p + trig_len
    if data[nxt - 1] == 61:  # `sig=`: the trigger holds the separator
        nxt -= 1
    ke = _KEY_FWD.match(data, nxt).end()  # type: ignore[union-attr]  # `[...]*` always matches
    if ke < n and data[ke] in _AFTER_KEY and data[max(0, ke - 13):ke].lower().endswith(_KEY_ENDINGS):
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


def _line_head(data: bytes, ks: int) -> bytes:
    """The text before `ks` on its line (at most 200 bytes; a `\\n` escape ends a line too)."""
    lo = max(0, ks - 200)
    head = data[lo:ks]
    cut = max(head.rfind(b"\n"), head.rfind(b"\\n") + 1, head.rfind(b"\x00"))
    return head[cut + 1:] if cut >= 0 else head


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
        if prev in (63, 38) and low_key in _URL_PARAM_KINDS:  # ?sig= &key=
            kind = _URL_PARAM_KINDS[low_key]
        elif prev == 59 and low_key == "pwd":  # Uid=sa;Pwd=...: a connection string
            kind = "password"
        else:
            return
    if kind == "authorization" and _check_authorization(data, ke, out):
        return
    if low_key.replace("_", "").endswith("secretaccesskey") and _check_aws_secret(data, ke, out):
        return
    m = _ASSIGN.match(data, ke)
    if m is None:
        _judge_unassigned(data, ks, ke, key, kind, prev, out)
        return
    key_quote, sp1, sep, sp2, vq, qv, bv = m.groups()
    if qv is not None:
        if _quoted_is_secret(qv.decode("utf-8", "replace"), kind, vq.decode()[-1:]):
            out.append((m.start(6), m.end(6), kind))
        return
    core = key.lstrip("-.")
    end = m.end(7)
    nc = data[end] if end < n else 0
    tight = sep == b"=" and not sp1 and not sp2 and not key_quote
    literal = (
        (tight and core.isupper() and core[:1].isalpha())  # .env / export KEY=value
        or (sep == b"=" and not sp1 and (key.startswith("--") or prev in (63, 38, 59)))  # --k=v ?k=v ;k=v
        # `password=letmein` at the end of a line: a config file, not a call's argument
        or (tight and kind == "password" and nc in (0, 10, 13, 32, 92) and prev not in (40, 44))
    )
    if _bare_is_secret(bv.decode("utf-8", "replace"), nc, kind, literal):
        out.append((m.start(7), end, kind))


def _judge_unassigned(data: bytes, ks: int, ke: int, key: str, kind: str, prev: int,
                      out: list[_Span]) -> None:
    """A secret-named key followed by no `=` or `:`: a flag and its argument, `set KEY VALUE`,
    a .netrc line, an XML element, NuGet's `key="Password" value="..."`, or prose."""
    c = data[ke]
    if c == 62:  # >
        if prev == 60:  # <password>VALUE</password>
            m = _XML_VALUE.match(data, ke)
            if m and _quoted_is_secret(m.group(1).decode("utf-8", "replace"), kind):
                out.append((m.start(1), m.end(1), kind))
        return
    if c in (34, 92):  # "ClearTextPassword" value="..."
        m = _NUGET_VALUE.match(data, ke)
        if m and not _is_placeholder(m.group(1).decode("utf-8", "replace")):
            out.append((m.start(1), m.end(1), kind))
        return
    if c not in (32, 9):
        return
    if key.startswith("-") or _SETTER.search(_line_head(data, ks)):
        m = _SPACED.match(data, ke)
        if m:
            g = 2 if m.group(2) is not None else 3
            # `set KEY VALUE`: a word is a setting's value, not a secret; a flag's argument may be.
            if _arg_is_secret(m.group(g).decode("utf-8", "replace"), kind if key.startswith("-") else "secret"):
                out.append((m.start(g), m.end(g), kind))
        return
    head = _line_head(data, ks)
    if not head.strip():  # `password VALUE` alone on its line: .netrc, redis.conf, a pasted note
        m = _SPACED.match(data, ke)
        if m and m.group(3) is not None and (m.end(3) >= len(data) or data[m.end(3)] in b"\r\n\x00\\"):
            if _arg_is_secret(m.group(3).decode("utf-8", "replace"), "secret"):
                out.append((m.start(3), m.end(3), kind))
            return
    m = _PROSE.match(data, ke)  # my password is hunter2
    if m:
        v = m.group(1).rstrip(b".,;:!?)").decode("utf-8", "replace")
        if (len(v) >= 6 and not _is_placeholder(v) and not _CODEISH.fullmatch(v)
                and not (kind != "password" and _NAMEISH.fullmatch(v))):
            out.append((m.start(1), m.start(1) + len(v.encode()), kind))


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


# --------------------------------------------------------------------------- command lines
# Commands whose short flags carry a secret. Found by their (lower-case) names; their
# arguments are read up to the end of the line. Long flags (`--password X`) are keys.
_VALUE = rb"""(?:(?P<q>\\?["'])(?P<qv>[^"'\\\r\n\x00]{1,512})(?P=q)|(?P<bv>[^\s"'`;&|<>\\\x00]{1,512}))"""
_CMD_FLAGS: dict[bytes, re.Pattern[bytes]] = {
    # docker / podman / helm registry / buildah / skopeo / oras / az / cf login -p X
    b"login": re.compile(rb"(?:^|[ \t])(?P<flag>-p)(?:=|[ \t]+)" + _VALUE),
    b"sshpass": re.compile(rb"(?:^|[ \t])(?P<flag>-p)(?:=|[ \t]*)" + _VALUE),
    b"mysql": re.compile(rb"(?:^|[ \t])(?P<flag>-p)" + _VALUE),  # -pSECRET; `-p db` would prompt
    b"mariadb": re.compile(rb"(?:^|[ \t])(?P<flag>-p)" + _VALUE),
    b"redis-cli": re.compile(rb"(?:^|[ \t])(?P<flag>-a)[ \t]+" + _VALUE),
    b"mongo": re.compile(rb"(?:^|[ \t])(?P<flag>-p)[ \t]+" + _VALUE),
    b"curl": re.compile(rb"(?:^|[ \t])(?P<flag>-u|--user|--proxy-user|-U|--oauth2-bearer|-b|--cookie)(?:=|[ \t]*)"
                        + _VALUE),
    b"smbclient": re.compile(rb"(?:^|[ \t])(?P<flag>-U)[ \t]*" + _VALUE),
}
_LINE_END = re.compile(rb"\r|\n|\\n|\x00")
_CMD_MAX_LINE = 4096
_QUOTED_ARG = re.compile(rb"""(\\?["'])([^"'\\\r\n\x00]{1,512})\1""")


def _command_end(data: bytes, e: int) -> int:
    """The end of the command line that goes on at `e`; a line ending in `\\` continues
    on the next (at most 8 lines, as a shell reads them)."""
    end = e
    for _ in range(8):
        le = _LINE_END.search(data, end, end + _CMD_MAX_LINE)
        if le is None:
            return min(len(data), end + _CMD_MAX_LINE)
        end = le.start()
        cont = data[end - 1:end] == b"\\" or data[end - 2:end] == b"\\\\"  # `\` raw, `\\` in JSON text
        if not cont or data[end:end + 1] == b"\x00":
            return end
        end = le.end()
    return end


def _cmd_at(data: bytes, s: int, e: int, out: list[_Span]) -> int:
    """The secret arguments of the command whose name is at [s, e); returns the line's end."""
    if s and data[s - 1] not in b" \t\n\x00\"'`;&|(/$" and not (s >= 2 and data[s - 2] == 92 and data[s - 1] in b"ntr"):
        return e  # `autologin`, `user.login`: not the command (`\ncurl` in JSON text is)
    name = data[s:e]
    end = _command_end(data, e)
    for m in _CMD_FLAGS[name].finditer(data, e, end):
        flag = m.group("flag")
        g = "qv" if m.group("qv") is not None else "bv"
        vs, ve = m.start(g), m.end(g)
        v = m.group(g)
        if flag in (b"-b", b"--cookie"):
            _cookie_pairs(data, vs, ve, False, out)
            continue
        kind = "password"
        if flag == b"--oauth2-bearer":
            kind = "token"
        elif name == b"curl" or name == b"smbclient":
            i = v.find(b":" if name == b"curl" else b"%")  # user:password, user%password
            if i < 0:
                continue  # a bare user: the command prompts for the password
            vs += i + 1
            if vs == ve and g == "bv":  # user:'password'
                q = _QUOTED_ARG.match(data, ve, end)
                if q is None:
                    continue
                vs, ve = q.start(2), q.end(2)
        pw = data[vs:ve].decode("utf-8", "replace")
        if pw and _arg_is_secret(pw, "password"):
            out.append((vs, ve, kind))
    return end


# --------------------------------------------------------------------------- cookies
_COOKIE_HEADER = re.compile(rb"""(\\?["'])?[ \t]*:[ \t]*(\\?["'])?""")
_COOKIE_FLAG = re.compile(rb"""(?:=|[ \t]+)(\\?["'])?""")
_COOKIE_PAIR = re.compile(rb"""[ \t]*[!#$%&*+\-.^_|~0-9A-Za-z]+=([^;\s"'\\\x00]*)""")


def _cookie_at(data: bytes, s: int, e: int, out: list[_Span]) -> None:
    """The values of a `Cookie:` / `Set-Cookie:` header or a `--cookie` argument."""
    set_cookie = data[max(0, s - 4):s].lower() == b"set-"
    if s >= 2 and data[s - 2:s] == b"--":
        m = _COOKIE_FLAG.match(data, e)
    else:
        if _glued(data, s):
            return  # `document.cookie`, `setcookie(`: code
        m = _COOKIE_HEADER.match(data, e)
    if m is None:
        return
    le = _LINE_END.search(data, m.end(), m.end() + _CMD_MAX_LINE)
    _cookie_pairs(data, m.end(), le.start() if le else min(len(data), m.end() + _CMD_MAX_LINE), set_cookie, out)


def _cookie_pairs(data: bytes, pos: int, end: int, first_only: bool, out: list[_Span]) -> None:
    """`name=value; name=value`: every value (a Set-Cookie's first only: the rest are attributes)."""
    while pos < end:
        pm = _COOKIE_PAIR.match(data, pos, end)
        if not pm:
            return
        v = pm.group(1).decode("utf-8", "replace")
        if len(v) >= 6 and not _is_placeholder(v):
            out.append((pm.start(1), pm.end(1), "cookie"))
        if first_only or data[pm.end():pm.end() + 1] != b";":
            return
        pos = pm.end() + 1


# --------------------------------------------------------------------------- bare high-entropy tokens
# Runs of token characters ([A-Za-z0-9+/_-]) long enough to be a key, found in a translated
# copy of the buffer, then judged by `_random_part`. In the copy, [A-Za-z0-9+/] -> `a`,
# `-` and `_` -> `b`, anything else -> space. One-needle automata find the runs that start
# with 24 `a` (a base62/base64 token) or hold 9 `a` before a separator or 13 after one
# (base64url; a token glued to a prefix): a base64url token of 24+ has one of these shapes
# unless three or more separators cut it short. UUIDs, snake_case and kebab-case names
# (words shorter than 9 before a separator, 13 after one) rarely reach Python; a base64 blob is one run.
_BARE_MIN = 24
_BARE_MAX = 256  # longer runs are data (images, signatures, file bodies), not credentials
_BARE_TABLE = bytes(0x61 if c in _ALNUM or c in b"+/" else 0x62 if c in b"-_" else 0x20 for c in range(256))
_BARE_NEEDLES = (b" " + b"a" * _BARE_MIN,)  # the run starts at the needle's second byte
_BARE_INNER_NEEDLES = (b"a" * 9 + b"b", b"b" + b"a" * 13)  # inside a run: its start is looked for
# lower -> a, upper -> A, digit -> 0, other -> .
_CLASS_TABLE = bytes(0x61 if 97 <= c <= 122 else 0x41 if 65 <= c <= 90 else 0x30 if 48 <= c <= 57 else 0x2E
                     for c in range(256))
_VOWEL_TABLE = bytes(0x76 if c in b"aeiou" else 0x2E for c in range(256))
# Shapes that are not secrets: ids with a known prefix (Anthropic `toolu_01...`, `msg_01...`,
# `req_011...`, OpenAI, Stripe objects), SRI hashes (`sha512-...`), base64 of images,
# documents, archives and JSON (`eyJ`, a lone JWT part), SSH public keys, DER (`MII`:
# certificates, public keys).
_BARE_PREFIXES = tuple(w + b"_" for w in (
    b"toolu", b"srvtoolu", b"msg", b"req", b"file", b"msgbatch", b"call", b"run", b"thread", b"asst", b"resp",
    b"batch", b"cus", b"pi", b"ch", b"py", b"evt", b"price", b"prod", b"sub", b"in", b"ii", b"acct", b"pm",
    b"seti", b"src", b"txn", b"cs", b"user", b"ws")) + tuple(w + b"-" for w in (
    b"chatcmpl", b"org", b"agent", b"sha1", b"sha256", b"sha384", b"sha512")) + (
    b"iVBORw0KGgo", b"/9j/", b"R0lGOD", b"UklGR", b"PHN2Zy", b"PD94bWw", b"JVBERi0", b"UEsDB", b"H4sI", b"eyJ",
    b"AAAAB3Nza", b"AAAAC3Nza", b"AAAAE2Vj", b"AAAAGnNr", b"MII")
# ... other id shapes (`word_01...`), thinking-block signatures, IPFS ids.
_BARE_SKIP = re.compile(rb"[a-z]{3,12}_[0-9]{2}|E[a-z][A-Za-z0-9+/]{2}C[kl]|Qm[1-9A-HJ-NP-Za-km-z]{44}$")
# ... and runs right after these: `h1:` go.sum hashes, `base64,` data URLs, digests, SSH keys.
_BARE_AFTER = (b"h1:", b"base64,", b"sha256:", b"sha384:", b"sha512:", b"sha1:", b"sha256=", b"sha512=", b"SHA256:",
               b"ssh-rsa ", b"ssh-ed25519 ", b"ssh-dss ", b"nistp256 ", b"nistp384 ", b"nistp521 ")


def _random_part(p: bytes, c: bytes) -> bool:
    """True when `p` (`c`: its classes by _CLASS_TABLE) reads as random: both letter cases,
    frequent case/digit changes, little lower-case wording (letters in runs of three or
    more) and few separators; where the wording is borderline, few vowels. Identifiers
    (`getBoundingClientRect`, `TestV2ApiClientForS3`), paths and model names fail; random
    base62/base64/base64url tokens pass at the rates tests/redact_corpus/README.md gives
    (over 99% from 32 characters on)."""
    n = len(p)
    words = c.count(b"aaa") * 3
    # Random base62/base64 is ~40% upper and ~40% lower case: a path with one capital
    # (`/var/folders/.../T/tmp...`) is not.
    if words > n * 0.6 or c.count(b"A") * 10 < n or c.count(b"a") * 10 < n:
        return False
    seps = c.count(b".")
    # A base64url token of 24+ holds a few `-`/`_`; a shorter piece between `/` holds none
    # (standard base64 has `+` and `/` only): `Mixtral-8x22B-v0` is a name.
    if seps > max(2, n >> 3) or (n < _BARE_MIN and seps > p.count(b"+")):
        return False
    changes = c.count(b"aA") + c.count(b"Aa") + c.count(b"a0") + c.count(b"0a") + c.count(b"A0") + c.count(b"0A")
    if changes < (n - 1) * 0.25:
        return False
    return words <= n * 0.4 or p.translate(_VOWEL_TABLE).count(b"v") < c.count(b"a") * 0.28


def _find_bare(data: bytes, out: list[_Span], ids: Sequence[int] = ()) -> None:
    """High-entropy runs of `data` into `out`; `ids` are where Claude ids have their `_`."""
    tr = data.translate(_BARE_TABLE)
    n = len(data)
    starts = [p + 1 for find_runs in _bare_runs for _, p, _ in find_runs(tr)]
    if tr[:_BARE_MIN] == _BARE_NEEDLES[0][1:]:
        starts.append(0)
    rfind = tr.rfind
    lim = _BARE_MAX + 1
    skip = set(ids)
    for find_runs in _bare_inner_runs:
        for p in [p for _, p, _ in find_runs(tr) if p not in skip]:
            q = rfind(b" ", p - lim if p > lim else 0, p)  # bounded: a long run is skipped anyway
            if q >= 0 or p <= lim:
                starts.append(q + 1)
    if not starts:
        return
    # Cheap C-level tests first, in comprehensions: length, one letter case (hex hashes,
    # lower-case names and paths), known prefixes (ids, encoded files), few capitals (paths:
    # random base62/base64 is ~40% upper case, so even a key inside a path keeps 10%), and
    # wording where no `/` may hide a random piece (identifiers: over 60% of the letters in
    # lower-case runs of 3+).
    find = tr.find
    m = n + 1  # find() % m: a run without a following space ends at n
    cands = [(s, e, data[s:e]) for s in set(starts) for e in (find(b" ", s) % m,) if _BARE_MIN <= e - s <= _BARE_MAX]
    cands = [x for x in cands if not (x[2].islower() or x[2].isupper() or x[2].startswith(_BARE_PREFIXES))]
    classed = [(s, e, t, c) for s, e, t in cands for c in (t.translate(_CLASS_TABLE),)
               if c.count(b"A") * 10 >= len(t) and (b"/" in t or c.count(b"aaa") * 5 <= len(t))]
    armored: bool | None = None
    for s, e, tok, c in classed:
        s0 = s
        if data[s] in b"/+":  # `//Qm...` after a scheme, `/path`: the run starts after
            while s < e and data[s] in b"/+":
                s += 1
            tok = data[s:e]
            if len(tok) < _BARE_MIN - 4 or tok.startswith(_BARE_PREFIXES):
                continue
            c = tok.translate(_CLASS_TABLE)
        if b"EXAMPLE" in tok:
            continue  # AWS's documented keys
        if s and data[s - 1] == 92 and tok[0] in b"ntrbfu":  # `\nAbC...`: the n belongs to an escape
            s += 5 if tok[0] == 117 else 1
            tok = data[s:e]
            c = tok.translate(_CLASS_TABLE)
            if len(tok) < _BARE_MIN or tok.startswith(_BARE_PREFIXES):
                continue
        if _BARE_SKIP.match(tok) or data.endswith(_BARE_AFTER, max(0, s - 12), s):
            continue
        # The whole run (a base64 key holds `/` and `+`), else each piece between `/` (a
        # random segment of a path or URL: only that piece goes).
        if tok.count(b"/") <= max(2, len(tok) >> 4) and _random_part(tok, c):  # base64 has few `/`
            pieces = [(s, e)]
        elif b"/" in tok:
            pieces = []
            q = s
            for piece in tok.split(b"/"):
                if len(piece) >= 12 and _random_part(piece, piece.translate(_CLASS_TABLE)):
                    pieces.append((q, q + len(piece)))
                q += len(piece) + 1
            if not pieces:
                continue
        else:
            continue
        if armored is None:
            armored = b"-----BEGIN" in data
        if armored and _whole_line(data, s0, e) and _in_armor(data, s0):
            continue  # a line of a PEM certificate or PGP block (private keys have their own rule)
        for ps, pe in pieces:
            while ps < pe and data[ps] in b"_-":
                ps += 1
            while pe < n and data[pe] == 61:  # = padding
                pe += 1
            out.append((ps, pe, "high_entropy"))


def _in_armor(data: bytes, s: int) -> bool:
    """True when `s` lies inside a `-----BEGIN ...` block of the same string."""
    b = data.rfind(b"-----BEGIN", max(0, s - 16384), s)
    return b >= 0 and data.find(b"\x00", b, s) < 0 and data.find(b"-----END", b, s) < 0


def _whole_line(data: bytes, s: int, e: int) -> bool:
    before = data[max(0, s - 2):s]
    after = data[e:e + 2].lstrip(b"=")
    return (before.endswith(b"\n") or before == b"\\n") and (after[:1] in (b"\n", b"\r", b"") or after == b"\\n")


# --------------------------------------------------------------------------- driver
# Every literal a detector starts at, found in one pass over the bytes; each detector
# then runs only where its literals are. Key words are searched in every ASCII letter
# case (each variant is a pattern of the automaton); everything else in its own case.
_PATTERNS: list[bytes] = []
_PATTERN_ACTIONS: list[tuple[str, int]] = []  # ("token", rule) | ("key", length) | ("url"|"pk"|..., 0)
_LITERALS: list[tuple[bytes, bool]] = []  # (literal, any case?) as the plain finds search them


def _case_variants(word: bytes) -> list[bytes]:
    choices = [(bytes([c]), bytes([c]).upper()) if 97 <= c <= 122 else (bytes([c]),) for c in word.lower()]
    return sorted({b"".join(p) for p in itertools.product(*choices)})


def _add_trigger(literal: bytes, action: tuple[str, int], any_case: bool = False) -> None:
    _LITERALS.append((literal, any_case))
    for v in _case_variants(literal) if any_case else [literal]:
        _PATTERNS.append(v)
        _PATTERN_ACTIONS.append(action)


for _rule, _token_rule in enumerate(_TOKEN_RULES):
    for _lit in _token_rule[2]:
        _add_trigger(_lit, ("token", _rule))
for _trig in _KEY_TRIGGERS:
    _add_trigger(_trig, ("key", len(_trig)), any_case=True)
for _trig in _KEY_TRIGGERS_EXACT:
    _add_trigger(_trig, ("key", len(_trig)))
for _trig in _CMD_FLAGS:
    _add_trigger(_trig, ("cmd", 0))
for _trig in (b"cookie", b"Cookie", b"COOKIE"):
    _add_trigger(_trig, ("cookie", 0))
_add_trigger(b"://", ("url", 0))
_add_trigger(b"PRIVATE KEY", ("pk", 0))
_add_trigger(b"Private-Lines:", ("putty", 0))
# Claude's own ids (`toolu_01...`, tens of thousands in a history): found here, they are set
# aside before the high-entropy pass looks at them. The argument is where their `_` is.
for _id in (b"toolu_01", b"msg_01", b"req_011C", b"file_011C"):
    _add_trigger(_id, ("id", _id.index(b"_")))
assert len(set(_PATTERNS)) == len(_PATTERNS), "two detectors share a trigger"
_PATTERN_INDEX = {p: i for i, p in enumerate(_PATTERNS)}
_TOKEN_WORD = frozenset(i for i, p in enumerate(_PATTERNS) if p.lower() == b"token")


def _hits_by_find(data: bytes) -> list[tuple[int, int, int]]:
    """(pattern, start, end) of every trigger occurrence, one `bytes.find` pass per literal
    (key words in a lower-cased copy)."""
    low = data.lower()
    hits = []
    for lit, any_case in _LITERALS:
        hay, needle = (low, lit.lower()) if any_case else (data, lit)
        p = hay.find(needle)
        while p != -1:
            e = p + len(needle)
            hits.append((_PATTERN_INDEX[data[p:e]], p, e))
            p = hay.find(needle, p + 1)
    return hits


def _runs_by_find(needle: bytes) -> Callable[[bytes], list[tuple[int, int, int]]]:
    def runs(tr: bytes) -> list[tuple[int, int, int]]:
        found = []
        p = tr.find(needle)
        while p != -1:
            found.append((0, p, p + len(needle)))
            p = tr.find(needle, p + len(needle))
        return found
    return runs


try:  # Aho-Corasick in Rust: all triggers in one pass, several times faster than the finds
    from ahocorasick_rs import BytesAhoCorasick, Implementation

    # A DFA: with a few hundred patterns the default NFA runs at a third of the speed.
    _find_all = BytesAhoCorasick(_PATTERNS, implementation=Implementation.DFA).find_matches_as_indexes

    def _hits_by_automaton(data: bytes) -> list[tuple[int, int, int]]:
        """(pattern, start, end) of every trigger occurrence, in one pass."""
        return _find_all(data, overlapping=True)

    _trigger_hits: Callable[[bytes], list[tuple[int, int, int]]] = _hits_by_automaton
    _bare_runs: list[Callable[[bytes], list[tuple[int, int, int]]]]
    _bare_inner_runs: list[Callable[[bytes], list[tuple[int, int, int]]]]
    # One automaton per needle: with one pattern it searches with SIMD; with several, far slower.
    _bare_runs = [BytesAhoCorasick([nd]).find_matches_as_indexes for nd in _BARE_NEEDLES]
    _bare_inner_runs = [BytesAhoCorasick([nd]).find_matches_as_indexes for nd in _BARE_INNER_NEEDLES]
except ImportError:  # no wheel for this platform: the same results, more slowly
    _trigger_hits = _hits_by_find
    _bare_runs = [_runs_by_find(nd) for nd in _BARE_NEEDLES]
    _bare_inner_runs = [_runs_by_find(nd) for nd in _BARE_INNER_NEEDLES]


def _scan(data: bytes) -> list[_Span]:
    """Sorted, non-overlapping byte spans of the secrets in a UTF-8 buffer."""
    hits = _trigger_hits(data)
    # Detectors keep their order of precedence (see _merge): tokens by rule, then private
    # keys, URLs, assignments, commands, cookies and bare tokens; each trigger resumes
    # after the text its last hit used.
    tokens: list[list[_Span]] = [[] for _ in _TOKEN_RULES]
    urls: list[_Span] = []
    keys: list[_Span] = []
    other: list[_Span] = []
    resume: dict[int, int] = {}  # token rule / pattern -> first position worth trying
    seen_keys: set[int] = set()
    has_pk = False
    actions = _PATTERN_ACTIONS
    plural = _TOKEN_WORD
    ids: list[int] = []
    for i, s, e in hits:
        action, arg = actions[i]
        if action == "key":
            if i in plural and data[e:e + 1] in (b"s", b"S"):
                continue  # `input_tokens`, `max_tokens`: the commonest trigger, never a key
            if s >= resume.get(~i, 0):
                resume[~i] = _key_at(data, s, arg, seen_keys, keys)
        elif action == "id":
            ids.append(s + arg)
        elif action == "token":
            if s >= resume.get(arg, 0):
                resume[arg] = _token_at(data, arg, s, tokens[arg])
        elif action == "url":
            _url_at(data, s, urls)
        elif action == "pk":
            has_pk = True
        elif action == "cmd":
            if s >= resume.get(~i, 0):
                resume[~i] = _cmd_at(data, s, e, other)
        elif action == "cookie":
            _cookie_at(data, s, e, other)
        else:
            _putty_at(data, s, other)
    spans = [sp for rule_spans in tokens for sp in rule_spans]
    if has_pk and b"PRIVATE KEY" in data:
        _find_private_keys(data, spans)
    spans += urls
    spans += keys
    spans += other
    if len(data) >= _BARE_MIN:
        _find_bare(data, spans, ids)
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


# `<private>…</private>`: what the user marked as not for memory is dropped before anything is
# stored (an unclosed span runs to the end of the text: a brief may have cut its end off).
PRIVATE_MARK = "[private]"
_PRIVATE = re.compile(r"<private>.*?(?:</private>|\Z)", re.I | re.S)


def drop_private(text: str) -> str:
    """`text` with every `<private>…</private>` span replaced by `[private]`."""
    if "rivate>" not in text and "RIVATE>" not in text:  # C-speed test first: nearly every text
        return text
    return _PRIVATE.sub(PRIVATE_MARK, text)


def redact(text: str) -> str:
    """`text` with each secret replaced by `[REDACTED:<kind>]` and each `<private>` span by
    `[private]` (idempotent)."""
    text = drop_private(text)
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
    times faster for many short strings). A string that repeats in the batch (a transcript's
    cwd, ids, keys on every record) is scanned once."""
    texts = [drop_private(t) for t in texts]
    uniq = list(dict.fromkeys([t for t in texts if len(t) >= _MIN_LEN]))
    if not uniq:
        return list(texts)
    enc = [_encode(t) for t in uniq]
    spans = _scan(_SEP.join(enc))
    if not spans:
        return list(texts)
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
    changed = {uniq[j]: _apply(enc[j], sp, starts[j]) for j, sp in by_text.items()}
    return [changed.get(t, t) for t in texts]


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
