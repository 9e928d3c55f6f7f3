"""Chat model adapters: OpenAI-compatible endpoints and a deterministic scripted model."""

from core.llm.base import AssistantTurn, ChatModel, ModelError, Usage, estimate_tokens
from core.llm.scripted import ScriptedCall, ScriptedChatModel, ScriptedStep

__all__ = ["AssistantTurn", "ChatModel", "ModelError", "ScriptedCall", "ScriptedChatModel", "ScriptedStep",
           "Usage", "estimate_tokens"]
