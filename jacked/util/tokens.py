"""Token counting for retrieve budgets, offline.

jacked counts with tiktoken's `cl100k_base`, built with tiktoken's public API from the BPE
ranks file shipped inside jacked (`jacked/data/cl100k_base/`, MIT, OpenAI), checked against
its pinned sha256 first, so counting never touches the network and a damaged file is an
error rather than wrong counts. Claude's tokenizer differs from cl100k, so budgets apply a
safety margin (`with_margin`, default `token_safety_margin` from the config).
"""
from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

from jacked.errors import JackedError
from jacked.util.datafiles import DATA_DIR, DataFileError, verify_file

if TYPE_CHECKING:
    import tiktoken

__all__ = [
    "ENCODING_NAME", "BPE_FILE", "BPE_SHA256", "DEFAULT_MARGIN", "TokenizerUnavailable", "load_encoding",
    "get_encoding", "count_tokens", "with_margin", "cache_info", "clear_cache",
]

ENCODING_NAME = "cl100k_base"
DEFAULT_MARGIN = 0.1  # used when no config is at hand; the config key is token_safety_margin

#: The BPE ranks of cl100k_base and their sha256 (the one tiktoken itself pins for the file).
BPE_FILE: Path = DATA_DIR / "cl100k_base" / "cl100k_base.tiktoken"
BPE_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"

# cl100k_base's split pattern and special tokens, as tiktoken's own definition of the encoding.
_PATTERN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|"""
            r"""\s++$|\s*[\r\n]|\s+(?!\S)|\s""")
_SPECIAL_TOKENS = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}

_REPAIR_DATA = "pip install --force-reinstall --no-deps jacked"
_REPAIR_TIKTOKEN = "pip install --force-reinstall 'tiktoken>=0.7,<1'"


class TokenizerUnavailable(JackedError, RuntimeError):
    """The offline cl100k data cannot be loaded; the message says how to fix it."""


_encoding: tiktoken.Encoding | None = None
_lock = threading.Lock()


def load_encoding(bpe_file: Path = BPE_FILE) -> tiktoken.Encoding:
    """cl100k_base from the BPE ranks at `bpe_file`, after checking them against `BPE_SHA256`.

    Raises `TokenizerUnavailable` (one line naming the file and the repair) when tiktoken
    cannot be imported or the file is missing or damaged.
    """
    try:
        import tiktoken
        from tiktoken.load import load_tiktoken_bpe
    except ImportError as e:
        raise TokenizerUnavailable(f"cannot import tiktoken ({e}): repair with `{_REPAIR_TIKTOKEN}`") from e
    try:
        # Checked here, not only by tiktoken: load_tiktoken_bpe keeps a copy in its cache
        # folder and would answer from a good copy while the file itself is damaged.
        verify_file(bpe_file, BPE_SHA256, _REPAIR_DATA)
        ranks = load_tiktoken_bpe(str(bpe_file), expected_hash=BPE_SHA256)
    except DataFileError as e:
        raise TokenizerUnavailable(f"tokenizer data: {e}") from e
    except (OSError, ValueError) as e:  # the file changed between the check and the load
        raise TokenizerUnavailable(
            f"tokenizer data {bpe_file} cannot be loaded ({_first_line(e)}): repair with `{_REPAIR_DATA}`"
        ) from e
    return tiktoken.Encoding(ENCODING_NAME, pat_str=_PATTERN, mergeable_ranks=ranks,
                             special_tokens=_SPECIAL_TOKENS)


def _first_line(e: BaseException) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def get_encoding() -> tiktoken.Encoding:
    """The cl100k encoding, loaded once per process (loading takes ~0.2 s).

    Raises `TokenizerUnavailable` with an actionable message when the offline
    data is missing or damaged.
    """
    global _encoding
    enc = _encoding
    if enc is None:
        with _lock:  # two threads must not both pay for the load
            if _encoding is None:
                _encoding = load_encoding()
            enc = _encoding
    return enc


# The same units (plans, summaries, prompts) are counted again and again while a
# budget is fitted; keying on a digest keeps the cache small even for long texts.
_CACHE_MAX = 8192
_cache: OrderedDict[bytes, int] = OrderedDict()
_hits = 0
_misses = 0
_SHORT = 64  # shorter texts are keyed by themselves: hashing costs more than it saves


def count_tokens(text: str) -> int:
    """cl100k token count of `text` (special-token strings count as plain text)."""
    global _hits, _misses
    if not text:
        return 0
    data = text.encode("utf-8", "surrogatepass")
    key = data if len(data) <= _SHORT else hashlib.blake2b(data, digest_size=16).digest()
    with _lock:
        n = _cache.get(key)
        if n is not None:
            _cache.move_to_end(key)
            _hits += 1
            return n
    # disallowed_special=(): a transcript may quote "<|endoftext|>"; count it as
    # text instead of raising.
    n = len(get_encoding().encode(text, disallowed_special=()))
    with _lock:
        _misses += 1
        _cache[key] = n
        if len(_cache) > _CACHE_MAX:
            _cache.popitem(last=False)
    return n


def cache_info() -> dict[str, int]:
    """Hits, misses and size of the count cache (for benchmarks and tests)."""
    with _lock:
        return {"hits": _hits, "misses": _misses, "size": len(_cache), "max": _CACHE_MAX}


def clear_cache() -> None:
    """Forget all cached counts."""
    global _hits, _misses
    with _lock:
        _cache.clear()
        _hits = _misses = 0


def with_margin(n: int, margin: float | None = None) -> int:
    """`n` tokens plus a safety margin, rounded up: 1000 with 0.1 -> 1100.

    `margin` defaults to DEFAULT_MARGIN (0.1); callers with settings pass
    `settings.token_safety_margin`. A budget check compares `with_margin(count)`
    to the budget so that Claude's tokenizer, which can count more, stays under it.
    """
    if margin is None:
        margin = DEFAULT_MARGIN
    if n < 0:
        raise ValueError(f"token count must be >= 0, got {n}")
    if not 0 <= margin <= 1 or math.isnan(margin):
        raise ValueError(f"token safety margin must be between 0 and 1, got {margin}")
    # round() first: 100 * 1.1 is 110.00000000000001 in floating point, and a
    # spurious ceil() to 111 would waste budget.
    return math.ceil(round(n * (1 + margin), 6))
