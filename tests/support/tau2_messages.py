"""tau2-bench's message models, pinned field by field, for checking the messages our export writes.

Copied from tau2-bench `src/tau2/data_model/message.py` (commit a2c024725189473d2d7cea3a5cfdbcc67478e41f): the
fields of `ToolCall`, `SystemMessage`, `AssistantMessage` / `UserMessage` (`ParticipantMessageBase`),
`ToolMessage` and `MultiToolMessage`, with their types. tau2's own classes ignore unknown keys, so a key they do
not know would be dropped without a word when tau2 loads the file; here unknown keys are refused
(`extra="forbid"`), so the export can only write what tau2 keeps. The audio, streaming and turn-taking fields
are tau2's too (we write none of them); their nested models are taken as plain objects.

`check_trajectory` is the rule tau2's `Environment.set_state` applies before it replays a trajectory to grade
the database: every tool call is answered, in order, by a tool message of the same id, and no tool message
stands alone. The project does not depend on tau2-bench, so its classes are not imported here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, TypeAdapter


class _Tau2(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCall(_Tau2):
    id: str = ""
    name: str
    arguments: dict[str, Any]
    requestor: Literal["user", "assistant"] = "assistant"


class SystemMessage(_Tau2):
    role: Literal["system"]
    content: str | None = None
    turn_idx: int | None = None
    timestamp: str | None = None


class _Participant(_Tau2):
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    is_audio: bool = False
    turn_idx: int | None = None
    timestamp: str | None = None
    cost: float | None = None
    usage: dict[str, Any] | None = None
    raw_data: dict[str, Any] | None = None
    generation_time_seconds: float | None = None
    audio_format: dict[str, Any] | None = None
    audio_content: str | None = None
    audio_path: str | None = None
    audio_script_gold: str | None = None
    speech_effects: dict[str, Any] | None = None
    source_effects: dict[str, Any] | None = None
    channel_effects: dict[str, Any] | None = None
    turn_taking_action: dict[str, Any] | None = None
    utterance_ids: list[str] | None = None
    chunk_id: int | None = None
    is_final_chunk: bool = True
    source: str | None = None
    contains_speech: bool = True


class AssistantMessage(_Participant):
    role: Literal["assistant"]


class UserMessage(_Participant):
    role: Literal["user"]


class ToolMessage(_Tau2):
    id: str
    role: Literal["tool"]
    content: str | None = None
    requestor: Literal["user", "assistant"] = "assistant"
    error: bool = False
    turn_idx: int | None = None
    timestamp: str | None = None


class MultiToolMessage(_Tau2):
    role: Literal["tool"]
    tool_messages: list[ToolMessage]


Message = SystemMessage | AssistantMessage | UserMessage | ToolMessage | MultiToolMessage
MESSAGES: TypeAdapter[list[Message]] = TypeAdapter(list[Message])


def validate_messages(messages: Sequence[Mapping[str, Any]]) -> list[Message]:
    """The messages as tau2's models read them; pydantic's ValidationError names the first that does not fit."""
    return MESSAGES.validate_python(list(messages))


def check_trajectory(messages: Sequence[Message]) -> None:
    """tau2's `Environment.set_state` rule (see the module docstring); AssertionError naming the position."""
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        assert not isinstance(message, ToolMessage | MultiToolMessage), f"tool message without a call at {index - 1}"
        if isinstance(message, AssistantMessage | UserMessage) and message.tool_calls is not None:
            for call in message.tool_calls:
                assert index < len(messages), f"tool call {call.id} is never answered"
                reply = messages[index]
                index += 1
                assert isinstance(reply, ToolMessage) and reply.id == call.id, \
                    f"tool call {call.id} answered by {reply!r} at {index - 1}"
