"""Token counting: offline cl100k from the BPE file shipped in jacked, stable counts, cache,
safety margin, and a one-line error when the file is missing or damaged."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jacked.util.tokens import (
    BPE_FILE,
    BPE_SHA256,
    DEFAULT_MARGIN,
    ENCODING_NAME,
    TokenizerUnavailable,
    cache_info,
    clear_cache,
    count_tokens,
    get_encoding,
    load_encoding,
    with_margin,
)

REPO = Path(__file__).resolve().parents[1]

# Counts of cl100k_base ("hello world" and "tiktoken is great!" are the values
# tiktoken documents); a change means another tokenizer or data file is loaded.
KNOWN = [
    ("hello world", 2),
    ("tiktoken is great!", 6),
    ("", 0),
    ("def count_tokens(text: str) -> int:\n    return len(enc.encode(text))\n", 17),
    ("Claude Code écrit des transcripts 📝", 9),
]


@pytest.mark.parametrize(("text", "n"), KNOWN)
def test_known_counts(text: str, n: int) -> None:
    assert count_tokens(text) == n


def test_encoding_is_the_offline_cl100k_loaded_once() -> None:
    enc = get_encoding()
    assert enc.name == ENCODING_NAME == "cl100k_base"
    assert get_encoding() is enc
    assert enc.n_vocab == 100277  # cl100k_base's vocabulary, special tokens included
    assert enc.eot_token == 100257 and enc.encode("<|endofprompt|>", allowed_special="all") == [100276]


def test_the_shipped_bpe_file_is_tiktokens_pinned_one() -> None:
    import hashlib

    # The sha256 tiktoken's own cl100k_base definition pins for the file it downloads.
    assert BPE_SHA256 == "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
    assert hashlib.sha256(BPE_FILE.read_bytes()).hexdigest() == BPE_SHA256
    assert "MIT License" in (BPE_FILE.parent / "LICENSE").read_text()


def test_counts_are_stable_and_match_the_encoder() -> None:
    text = "The retrieve budget is measured in cl100k tokens. " * 50
    first = count_tokens(text)
    assert first == len(get_encoding().encode(text))
    assert all(count_tokens(text) == first for _ in range(3))


def test_special_token_text_is_counted_not_rejected() -> None:
    # A transcript can quote "<|endoftext|>"; it is text, not a control token.
    assert count_tokens("<|endoftext|>") == len(get_encoding().encode("<|endoftext|>", disallowed_special=()))
    assert count_tokens("<|endoftext|>") > 1


def test_cache_hits_for_repeated_texts() -> None:
    clear_cache()
    long_text = "a plan with many steps\n" * 400
    count_tokens(long_text)
    count_tokens("short")
    before = cache_info()
    assert before["misses"] == 2 and before["hits"] == 0
    assert count_tokens(long_text) == count_tokens(long_text)
    assert cache_info()["hits"] == 2
    assert cache_info()["size"] == 2


def test_cache_is_bounded() -> None:
    clear_cache()
    limit = cache_info()["max"]
    for i in range(limit + 50):
        count_tokens(f"unit {i}")
    assert cache_info()["size"] == limit
    # The oldest entries were evicted; counting one again is a miss, still correct.
    misses = cache_info()["misses"]
    assert count_tokens("unit 0") == count_tokens("unit 0")
    assert cache_info()["misses"] == misses + 1


def test_with_margin() -> None:
    assert DEFAULT_MARGIN == 0.1
    assert with_margin(1000, 0.1) == 1100
    assert with_margin(100, 0.1) == 110  # not 111: 100 * 1.1 is 110.00000000000001
    assert with_margin(7, 0.1) == 8  # rounded up
    assert with_margin(1000) == 1100
    assert with_margin(0, 0.5) == 0
    assert with_margin(123, 0) == 123
    assert with_margin(10, 1) == 20
    with pytest.raises(ValueError):
        with_margin(10, -0.1)
    with pytest.raises(ValueError):
        with_margin(10, 1.5)
    with pytest.raises(ValueError):
        with_margin(-1, 0.1)


def _run(code: str, env_extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TIKTOKEN", "DATA_GYM"))}
    env.update(env_extra)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=120, cwd=str(REPO))


def test_works_without_network_and_without_a_tiktoken_plugin(tmp_path: Path) -> None:
    # A fresh process with every socket refused and an empty tiktoken cache: the data must
    # come from jacked's own file, and no module of tiktoken's plugin namespace (tiktoken_ext.*) is loaded.
    code = """
        import socket, sys
        def refuse(*a, **k):
            raise OSError("network disabled by the test")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        from jacked.util.tokens import count_tokens, get_encoding
        print(get_encoding().name, count_tokens("hello world"), count_tokens("tiktoken is great!"))
        print(sorted(m for m in sys.modules if m.startswith("tiktoken_ext.")))
    """
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    p = _run(code, {"TIKTOKEN_CACHE_DIR": str(cache), "HTTPS_PROXY": "http://127.0.0.1:9",
                    "HTTP_PROXY": "http://127.0.0.1:9", "PYTHONPATH": str(REPO)})
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["cl100k_base 2 6", "[]"]


def test_a_bpe_file_changed_by_one_byte_is_a_one_line_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # tiktoken's cache holds a good copy of this very path: tiktoken alone would answer from it.
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    copy = tmp_path / "cl100k_base.tiktoken"
    shutil.copyfile(BPE_FILE, copy)
    assert len(load_encoding(copy).encode("hello world")) == 2
    assert any((tmp_path / "cache").iterdir())
    data = bytearray(copy.read_bytes())
    data[len(data) // 2] ^= 0x01
    fresh = tmp_path / "fresh"
    fresh.write_bytes(bytes(data))
    fresh.replace(copy)  # a new file in its place: a new identity even within one timestamp tick
    with pytest.raises(TokenizerUnavailable) as exc:
        load_encoding(copy)
    text = str(exc.value)
    assert len(text.splitlines()) == 1, text
    assert str(copy) in text and "damaged" in text and "pip install --force-reinstall --no-deps jacked" in text


def test_a_missing_bpe_file_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(TokenizerUnavailable) as exc:
        load_encoding(tmp_path / "nowhere.tiktoken")
    text = str(exc.value)
    assert len(text.splitlines()) == 1 and str(tmp_path / "nowhere.tiktoken") in text and "missing" in text, text
    assert "pip install --force-reinstall --no-deps jacked" in text


def test_tiktoken_missing_is_a_clear_error(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow" / "tiktoken"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('tiktoken is broken in this test')\n")
    code = """
        from jacked.util.tokens import TokenizerUnavailable, count_tokens
        try:
            count_tokens("hello")
        except TokenizerUnavailable as e:
            print("ERROR:", e)
    """
    p = _run(code, {"PYTHONPATH": f"{tmp_path / 'shadow'}{os.pathsep}{REPO}"})
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("ERROR: cannot import tiktoken"), p.stdout
    assert "pip install --force-reinstall 'tiktoken>=0.7,<1'" in p.stdout
    assert len(p.stdout.strip().splitlines()) == 1


def test_tokenizer_unavailable_is_a_runtime_error() -> None:
    assert issubclass(TokenizerUnavailable, RuntimeError)
