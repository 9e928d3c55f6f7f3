"""What a run cost: a price table (USD per million input and output tokens, per model) and the cost of a usage.

A default table covers common hosted models (list prices, standard tier, no caching or batch discounts, as
published by the vendors in 2025); `--price-table FILE` adds or overrides entries. A model missing from the
table has an *unknown* price: its cost is None and is shown as "unknown price", never as 0 (a local model
is free to run but a missing entry is not evidence of that; say `{"my-model": {"input": 0, "output": 0}}`).

Lookup: the exact model name, then the name without a provider prefix (`openai/gpt-4.1`), then the longest
table entry the name starts with followed by a date or version suffix (`gpt-4.1-2025-04-14` -> `gpt-4.1`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "o3": (2.00, 8.00),
    "o4-mini": (1.10, 4.40),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-3-5-sonnet": (3.00, 15.00),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-opus-4": (15.00, 75.00),
}


class Price(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    input: float = Field(ge=0)
    output: float = Field(ge=0)

    @field_validator("input", "output")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value


class PriceTableError(ValueError):
    """A price table file that cannot be used; names the file and the entry."""


_SUFFIX = re.compile(r"^[-@:.]?(\d{4}-?\d{2}-?\d{2}|\d{8}|v\d+|latest|\d+)([-:.].*)?$")


class PriceTable:
    def __init__(self, prices: Mapping[str, Price] | None = None) -> None:
        self.prices: dict[str, Price] = dict(prices) if prices is not None else {
            name: Price(input=i, output=o) for name, (i, o) in DEFAULT_PRICES.items()}

    @classmethod
    def load(cls, path: Path | None) -> PriceTable:
        """The default table, with the entries of `path` (JSON: {model: {"input": USD, "output": USD}}) on top."""
        table = cls()
        if path is None:
            return table
        try:
            raw = json.loads(path.read_text(encoding="utf-8"), parse_constant=_reject_constant)
        except FileNotFoundError as exc:
            raise PriceTableError(f"no such price table: {path}") from exc
        except (json.JSONDecodeError, UnicodeDecodeError, ValueError) as exc:
            raise PriceTableError(f"{path}: not valid JSON ({exc})") from exc
        if not isinstance(raw, dict):
            raise PriceTableError(f"{path}: expected a JSON object of model -> {{\"input\": ..., \"output\": ...}}")
        for name, entry in raw.items():
            try:
                table.prices[str(name)] = Price.model_validate(entry)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise PriceTableError(f"{path}: {name}: {where + ': ' if where else ''}{first['msg']}") from exc
        return table

    def price(self, model: str) -> Price | None:
        if not model:
            return None
        if model in self.prices:
            return self.prices[model]
        bare = model.rsplit("/", 1)[-1]
        if bare in self.prices:
            return self.prices[bare]
        candidates = [n for n in self.prices if bare.startswith(n) and _SUFFIX.match(bare[len(n):])]
        return self.prices[max(candidates, key=len)] if candidates else None

    def cost(self, model: str, prompt: int, completion: int) -> float | None:
        """USD for one usage, or None when the model's price is unknown."""
        price = self.price(model)
        if price is None:
            return None
        return (prompt * price.input + completion * price.output) / 1_000_000

    def used(self, models: list[str]) -> dict[str, dict[str, float]]:
        """The entries a run used, for its header (so a report says which prices it applied)."""
        found: dict[str, dict[str, float]] = {}
        for model in models:
            price = self.price(model)
            if price is not None:
                found[model] = {"input": price.input, "output": price.output}
        return found


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number")
