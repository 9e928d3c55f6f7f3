"""Whole numbers as JSON writes them: a count of 3 and of 3.0 is the same count.

A JSON number has no integer type. The tool schemas' "integer" (jsonschema, Draft 2020-12) accepts 3.0, and
so do the tools behind them (tau2's and tau-bench's Python compares 3.0 == 3 and adds it like 3), and a
model's or a serializer's `110.0` is the same payment as `110`. So a rule that needs a count or a whole
number of dollars judges the value, never the Python type the writer's JSON library chose: 110.0 is a whole
number of dollars, 110.5 is not. A boolean is no number; NaN and the infinities are never whole (and never
reach a rule: `core.strict_json` refuses them first).
"""

from __future__ import annotations

from typing import Any


def whole(value: Any) -> int | None:
    """`value` as an int when it is a whole number (an int, or a float with an integral value); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None
