"""How to talk to a live model, as one value: the settings every command (`console`, `run`, `eval`) shares.

The CLI fills a `ModelSettings` from `--tool-choice`, `--max-tokens`, `--timeout`, `--retries` and
`--model-args`; `build` makes the `OpenAIChatModel` for a model name and base URL. Keeping the values
here (and not as loose argparse attributes) means the console, the headless runner and the eval harness
cannot drift apart in what they send.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from core.llm.base import RetryListener
from core.llm.openai_model import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_TIMEOUT,
    DEFAULT_TOOL_CHOICE,
    TOOL_CHOICES,
    OpenAIChatModel,
)

__all__ = ["MAX_MODEL_ARGS_BYTES", "ModelSettings", "parse_model_args"]

MAX_MODEL_ARGS_BYTES = 16_384
_MAX_DEPTH = 16
# Keys the adapter owns: setting them through the extra body would bypass what the session relies on.
_RESERVED = frozenset({"model", "messages", "tools", "stream"})


@dataclass(frozen=True)
class ModelSettings:
    """Request settings for OpenAI-compatible endpoints (see `OpenAIChatModel` for what each one is for)."""

    tool_choice: str = DEFAULT_TOOL_CHOICE
    max_tokens: int | None = DEFAULT_MAX_TOKENS  # None: send no limit
    timeout: float = DEFAULT_TIMEOUT
    retries: int = 3
    temperature: float = 0.0
    extra_body: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.tool_choice not in TOOL_CHOICES:
            raise ValueError(f"tool choice must be one of {', '.join(TOOL_CHOICES)} (got {self.tool_choice!r})")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError("max tokens must be at least 1 (0 on the command line sends no limit)")
        if not (math.isfinite(self.timeout) and self.timeout > 0):
            raise ValueError("timeout must be a positive number of seconds")
        if self.retries < 0:
            raise ValueError("retries must be 0 or more")

    def build(self, model: str, base_url: str | None = None, *,
              on_retry: RetryListener | None = None) -> OpenAIChatModel:
        return OpenAIChatModel(model, base_url=base_url, timeout=self.timeout, max_retries=self.retries,
                               temperature=self.temperature, tool_choice=self.tool_choice, max_tokens=self.max_tokens,
                               extra_body=dict(self.extra_body), on_retry=on_retry)


def _depth(value: Any, level: int = 0) -> int:
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed (strict JSON)")


def parse_model_args(text: str) -> dict[str, Any]:
    """`--model-args`: a strict JSON object (no NaN/Infinity), bounded in size and depth; ValueError otherwise."""
    if len(text.encode("utf-8")) > MAX_MODEL_ARGS_BYTES:
        raise ValueError(f"model args are larger than {MAX_MODEL_ARGS_BYTES} bytes")
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ValueError(f"model args are not valid JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(value, dict):
        raise ValueError(f'model args must be a JSON object such as {{"top_p": 0.9}}, got {type(value).__name__}')
    if _depth(value) > _MAX_DEPTH:
        raise ValueError(f"model args are nested deeper than {_MAX_DEPTH} levels")
    reserved = sorted(_RESERVED & value.keys())
    if reserved:
        raise ValueError(f"model args cannot set {', '.join(reserved)}: the agent sends those itself")
    return value
