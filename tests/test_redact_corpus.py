"""Redaction measured against a public rule set (issue 14): every secret of the corpus goes,
every look-alike stays. The corpus (tests/redact_corpus/, README there) holds a synthetic
secret of every form gitleaks' rules and detect-secrets' plugins name, plus the command-line,
header, cookie, connection-string and bare high-entropy forms the issue lists, and
look-alikes: hashes, UUIDs, base64 images, ids, digests, paths, identifiers, prose."""
from __future__ import annotations

import json
import random
import string
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from jacked.sources.redact import MARK_PREFIX, redact, redact_many, redact_obj

CORPUS = Path(__file__).resolve().parent / "redact_corpus"


def _load(name: str) -> list[dict[str, str]]:
    return [json.loads(line) for line in (CORPUS / name).read_text().splitlines() if line.strip()]


SECRETS = _load("secrets.jsonl")
LOOKALIKES = _load("lookalikes.jsonl")


def test_corpus_size_and_shape() -> None:
    assert len(SECRETS) >= 150 and len(LOOKALIKES) >= 150
    for e in SECRETS:
        assert set(e) == {"text", "secret", "form", "rule"} and e["secret"] in e["text"], e
        assert len(e["secret"]) >= 6, e
    for e in LOOKALIKES:
        assert set(e) == {"text", "form"}, e
    # every form the issue names is there
    forms = " ".join(e["form"] for e in SECRETS)
    for needle in ("--password X (space)", "curl -u user:pass", "--token hf_", "aws configure set secret",
                   "docker login -p", "Cookie sessionid", "azure storage AccountKey", "bare base62 40 alone"):
        assert needle in forms, needle


def test_every_secret_is_redacted(capsys: pytest.CaptureFixture[str]) -> None:
    leaks = [e for e in SECRETS if e["secret"] in redact(e["text"])]
    by_rule = Counter(e["rule"] for e in SECRETS)
    with capsys.disabled():
        print(f"\nredaction corpus: {len(SECRETS)} secrets ({len(by_rule)} rules/forms groups), "
              f"{len(leaks)} leaked")
    assert not leaks, [(e["form"], redact(e["text"])[:160]) for e in leaks]


def test_no_lookalike_is_destroyed(capsys: pytest.CaptureFixture[str]) -> None:
    destroyed = [e for e in LOOKALIKES if redact(e["text"]) != e["text"]]
    with capsys.disabled():
        print(f"\nredaction corpus: {len(LOOKALIKES)} look-alikes, {len(destroyed)} destroyed")
    assert not destroyed, [(e["form"], redact(e["text"])[:160]) for e in destroyed]


def test_batch_and_object_walk_agree_with_redact() -> None:
    texts = [e["text"] for e in SECRETS + LOOKALIKES]
    single = [redact(t) for t in texts]
    assert redact_many(texts) == single  # one buffer for the whole batch: no cross-talk
    rng = random.Random(3)
    shuffled = texts[:]
    rng.shuffle(shuffled)
    assert redact_many(shuffled) == [redact(t) for t in shuffled]
    obj: Any = {"records": [{"text": t, "n": i} for i, t in enumerate(texts)]}
    out = redact_obj(obj)
    assert [r["text"] for r in out["records"]] == single


def test_redacting_twice_equals_once() -> None:
    for e in SECRETS + LOOKALIKES:
        once = redact(e["text"])
        assert redact(once) == once, e["form"]


def test_secret_inside_other_text_and_json() -> None:
    """Each secret line, as tool output inside JSON (escaped newlines and quotes), still loses
    its value, and the JSON stays valid."""
    for e in SECRETS:
        blob = json.dumps({"tool_result": "$ run\n" + e["text"] + "\ndone"})
        out = redact(blob)
        assert e["secret"] not in json.loads(out)["tool_result"], e["form"]


@pytest.mark.parametrize("length", [32, 40, 64])
def test_bare_random_tokens_are_redacted_at_a_measured_rate(length: int) -> None:
    """The high-entropy rule on fresh random tokens far from any keyword: the README states
    the rate (a few in a thousand 24-character tokens read as words; longer ones almost never)."""
    rng = random.Random(length)
    alphabets = (string.ascii_letters + string.digits, string.ascii_letters + string.digits + "+/",
                 string.ascii_letters + string.digits + "-_")
    missed = 0
    total = 0
    for alphabet in alphabets:
        for _ in range(300):
            tok = "".join(rng.choice(alphabet) for _ in range(length))
            if not (any(c.isdigit() for c in tok) and any(c.islower() for c in tok)
                    and any(c.isupper() for c in tok)):
                continue
            total += 1
            missed += tok in redact(f"the value is {tok} ok")
    assert missed <= total * 0.01, (missed, total)


def test_markers_name_known_kinds() -> None:
    from jacked.sources.redact import KINDS

    kinds = Counter()
    for e in SECRETS:
        out = redact(e["text"])
        for part in out.split(MARK_PREFIX)[1:]:
            kinds[part.split("]", 1)[0]] += 1
    assert set(kinds) <= set(KINDS), set(kinds) - set(KINDS)
    assert len(kinds) >= 15, kinds
