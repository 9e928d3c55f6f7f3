"""The model boundary: one `complete` call per agent step, returning text and/or tool calls."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from core.strict_json import printable
from core.tools import ToolCall

Message = Mapping[str, Any]


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False  # True when counted locally rather than reported by the API

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens,
                     self.estimated or other.estimated)


@dataclass(frozen=True)
class AssistantTurn:
    text: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    model: str = ""
    finish_reason: str | None = None

    def __post_init__(self) -> None:
        # Garbage from the model goes back to the model: a lone surrogate in the text is kept escaped and a
        # call whose arguments JSON cannot hold becomes an unparseable call (a tool error), so neither the
        # trace writer nor the next request to the model chokes on it.
        if self.text is not None:
            object.__setattr__(self, "text", printable(self.text))
        object.__setattr__(self, "tool_calls", tuple(call.hardened() for call in self.tool_calls))


class ModelError(Exception):
    """The model could not produce a turn (after retries). `kind` is machine-readable for the trace.

    `message` is ONE line, fit for the transcript: the status and the server's own words, condensed. What
    the server actually sent (a pydantic dump, a traceback, an HTML page) is kept whole in `detail`, shown
    only on demand. `usage` counts what the failed attempts cost the server although they produced no turn
    (a timed-out request keeps running on servers that do not cancel abandoned requests).
    """

    def __init__(self, message: str, *, kind: str, attempts: int = 1, status: int | None = None,
                 detail: str = "", usage: Usage | None = None) -> None:
        super().__init__(message)
        self.message = message
        # timeout | rate_limited | server_error | invalid_request | http_error | connection | bad_response | script
        self.kind = kind
        self.attempts = attempts
        self.status = status
        self.detail = detail
        self.usage = usage if usage is not None else Usage()


@runtime_checkable
class RetryListener(Protocol):
    def __call__(self, attempt: int, error: ModelError, delay: float) -> None: ...


@runtime_checkable
class ChatModel(Protocol):
    name: str

    async def complete(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> AssistantTurn: ...


def estimate_tokens(text: str) -> int:
    """A deterministic local estimate (≈4 characters per token) for models that report no usage."""
    return (len(text) + 3) // 4
