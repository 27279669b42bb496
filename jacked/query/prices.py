"""What a model's tokens cost: the price table shipped with jacked, overridable in `jacked.json`.

Rates are USD per million tokens, per token kind: `input` (fresh input), `output` (reasoning
included), `cache_creation` (five-minute cache writes), `cache_creation_1h` (one-hour writes),
`cache_read`. A model with long-context rates has `long_context`: the rates of a response whose
input (fresh + cache reads + cache writes) is above 200,000 tokens. A model that no entry
matches has no price: its cost is unknown (null), never 0.

`jacked.json` may add or replace entries under `"prices"`, e.g.
`{"prices": {"my-model": {"input": 2, "output": 8, "cache_read": 0.2}}}`; a kind left out of an
override costs what the shipped entry of the same model says, else 0 for cache kinds.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from jacked.errors import JackedError

AS_OF = "2025-11-24"
SOURCES = {
    "anthropic": "https://docs.claude.com/en/docs/about-claude/pricing",
    "openai": "https://platform.openai.com/docs/pricing",
    "google": "https://ai.google.dev/gemini-api/docs/pricing",
}
KINDS = ("input", "output", "cache_creation", "cache_creation_1h", "cache_read")


@dataclass(frozen=True, slots=True)
class Rates:
    """USD per million tokens of each kind."""

    input: float
    output: float
    cache_creation: float = 0.0
    cache_creation_1h: float = 0.0
    cache_read: float = 0.0

    def cost(self, input: int, output: int, cache_creation: int, cache_creation_1h: int,
             cache_read: int) -> float:
        one_hour = min(cache_creation_1h, cache_creation)
        return (input * self.input + output * self.output + (cache_creation - one_hour) * self.cache_creation
                + one_hour * self.cache_creation_1h + cache_read * self.cache_read) / 1_000_000


@dataclass(frozen=True, slots=True)
class Price:
    """A model's rates, its long-context rates if it has them, and where they come from."""

    rates: Rates
    long_context: Rates | None = None
    source: str = ""

    def for_response(self, long_context: bool) -> Rates:
        return self.long_context if long_context and self.long_context is not None else self.rates


def _claude(inp: float, out: float, long: tuple[float, float] | None = None) -> Price:
    """Anthropic's rule: cache writes 1.25x input (five minutes) or 2x (one hour), reads 0.1x."""
    def rates(i: float, o: float) -> Rates:
        return Rates(i, o, round(i * 1.25, 6), round(i * 2, 6), round(i * 0.1, 6))
    return Price(rates(inp, out), rates(*long) if long else None, SOURCES["anthropic"])


def _openai(inp: float, out: float, cached: float) -> Price:
    return Price(Rates(inp, out, 0.0, 0.0, cached), None, SOURCES["openai"])


def _gemini(inp: float, out: float, cached: float, long: tuple[float, float, float] | None = None) -> Price:
    return Price(Rates(inp, out, 0.0, 0.0, cached), Rates(long[0], long[1], 0.0, 0.0, long[2]) if long else None,
                 SOURCES["google"])


# Keys are model names without a date suffix or a provider prefix (see `model_key`).
SHIPPED: dict[str, Price] = {
    "claude-opus-4-7": _claude(5, 25),
    "claude-opus-4-6": _claude(5, 25),
    "claude-opus-4-5": _claude(5, 25),
    "claude-opus-4-1": _claude(15, 75),
    "claude-opus-4": _claude(15, 75),
    "claude-sonnet-4-5": _claude(3, 15, long=(6, 22.5)),
    "claude-sonnet-4": _claude(3, 15, long=(6, 22.5)),
    "claude-3-7-sonnet": _claude(3, 15),
    "claude-3-5-sonnet": _claude(3, 15),
    "claude-haiku-4-5": _claude(1, 5),
    "claude-3-5-haiku": _claude(0.8, 4),
    "claude-3-haiku": Price(Rates(0.25, 1.25, 0.30, 0.50, 0.03), None, SOURCES["anthropic"]),
    "claude-3-opus": _claude(15, 75),
    "gpt-5": _openai(1.25, 10, 0.125),
    "gpt-5-codex": _openai(1.25, 10, 0.125),
    "gpt-5.1": _openai(1.25, 10, 0.125),
    "gpt-5.1-codex": _openai(1.25, 10, 0.125),
    "gpt-5-mini": _openai(0.25, 2, 0.025),
    "gpt-5.1-codex-mini": _openai(0.25, 2, 0.025),
    "gpt-5-nano": _openai(0.05, 0.4, 0.005),
    "gpt-4.1": _openai(2, 8, 0.5),
    "o3": _openai(2, 8, 0.5),
    "o4-mini": _openai(1.1, 4.4, 0.275),
    "codex-mini-latest": _openai(1.5, 6, 0.375),
    "gemini-2.5-pro": _gemini(1.25, 10, 0.125, long=(2.5, 15, 0.25)),
    "gemini-2.5-flash": _gemini(0.30, 2.5, 0.03),
    "gemini-2.5-flash-lite": _gemini(0.10, 0.40, 0.01),
    "gemini-3-pro-preview": _gemini(2, 12, 0.20, long=(4, 18, 0.40)),
}

_DATE_SUFFIX = re.compile(r"(?:[-@]\d{8}|-\d{4}-\d{2}-\d{2}|-latest)$")
_BEDROCK = re.compile(r"^(?:[a-z]{2}\.)?anthropic\.|-v\d+(?::\d+)?$")


def model_key(model: str) -> str:
    """A model name as the table keys it: lower case, without a provider prefix
    (`anthropic/…`, Bedrock's `us.anthropic.…-v1:0`) or a date suffix (`-20250929`, `@20250929`)."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    name = _BEDROCK.sub("", name)
    return _DATE_SUFFIX.sub("", name)


class PriceError(JackedError):
    """A `prices` entry in jacked.json that cannot be read."""


@dataclass(slots=True)
class PriceTable:
    """The shipped prices with the user's overrides; `price(model)` or None when unknown."""

    entries: dict[str, Price] = field(default_factory=lambda: dict(SHIPPED))
    overridden: tuple[str, ...] = ()
    _cache: dict[str, Price | None] = field(default_factory=dict)

    @classmethod
    def with_overrides(cls, overrides: Mapping[str, Any] | None) -> PriceTable:
        entries = dict(SHIPPED)
        for name, spec in (overrides or {}).items():
            entries[model_key(name)] = _override(name, spec, entries.get(model_key(name)))
        return cls(entries, tuple(sorted(overrides or ())))

    def price(self, model: str | None) -> Price | None:
        if not model:
            return None
        if model not in self._cache:
            key = model_key(model)
            self._cache[model] = self.entries.get(key) or self.entries.get(model.strip().lower())
        return self._cache[model]

    def describe(self) -> dict[str, Any]:
        """Where the prices come from (for `--json` output)."""
        return {"as_of": AS_OF, "sources": sorted(set(SOURCES.values())), "overridden": list(self.overridden),
                "unit": "USD per million tokens"}


def _override(name: str, spec: Any, base: Price | None) -> Price:
    if not isinstance(spec, Mapping):
        raise PriceError(f"jacked.json prices.{name}: give an object of USD per million tokens, "
                         f"e.g. {{\"input\": 3, \"output\": 15}}")
    def rates(values: Mapping[str, Any], fallback: Rates | None, where: str) -> Rates:
        out: dict[str, float] = {}
        for kind in KINDS:
            v = values.get(kind)
            if v is None:
                if fallback is None and kind in ("input", "output"):
                    raise PriceError(f"jacked.json {where}: `{kind}` is missing (USD per million tokens)")
                out[kind] = getattr(fallback, kind) if fallback is not None else 0.0
            elif isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                raise PriceError(f"jacked.json {where}.{kind}: give a number of USD per million tokens, 0 or more")
            else:
                out[kind] = float(v)
        unknown = set(values) - set(KINDS) - {"long_context"}
        if unknown:
            raise PriceError(f"jacked.json {where}: unknown key {sorted(unknown)[0]!r} (known: {', '.join(KINDS)}, "
                             "long_context)")
        return Rates(**out)
    main = rates(spec, base.rates if base else None, f"prices.{name}")
    long = spec.get("long_context")
    if long is None:
        long_rates = base.long_context if base else None
    elif isinstance(long, Mapping):
        long_rates = rates(long, base.long_context if base and base.long_context else main,
                           f"prices.{name}.long_context")
    else:
        raise PriceError(f"jacked.json prices.{name}.long_context: give an object of rates")
    return replace(base, rates=main, long_context=long_rates, source="jacked.json") if base else \
        Price(main, long_rates, "jacked.json")
