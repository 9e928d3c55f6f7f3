"""An OpenAI-compatible stub that plays three roles at once for evaluation tests: the agent, the customer
simulator and the NL judge, each recognised by its system prompt, each with its own token counts.

The plain `OpenAIStub` answers from one FIFO queue, which cannot serve an agent and a user simulator that
take turns (and retries that re-send the same request). Here every answer is a pure function of the request:
the agent's n-th reply is picked by how many assistant messages its history already holds, the customer's
likewise, so whole-trial retries and resumed runs replay the same conversation. Every request body is
recorded (`requests`, with its `role`) so tests assert on what each role was actually sent.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tests.support.openai_stub import OpenAIStub, ScriptedResponse

AGENT_TOKENS = (11, 7)
USER_TOKENS = (5, 3)
JUDGE_TOKENS = (100, 20)


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict[str, Any]


def completion(content: str | None, calls: Sequence[Call] = (), tokens: tuple[int, int] = AGENT_TOKENS,
               number: int = 0) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [{"id": f"call_{number}_{i}", "type": "function",
                                  "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                                 for i, c in enumerate(calls)]
    return {"id": f"chatcmpl-{number}", "object": "chat.completion", "created": 1_700_000_000, "model": "stub",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": tokens[0], "completion_tokens": tokens[1],
                      "total_tokens": tokens[0] + tokens[1]}}


# The retail task r01 played right: identify, read the order, confirm, cancel, report.
R01_AGENT: list[str | Call] = [
    Call("find_user_id_by_email", {"email": "yuki.haddad48@example.com"}),
    Call("get_user_details", {"user_id": "yuki_haddad_4100"}),
    Call("get_order_details", {"order_id": "#W3354738"}),
    "I'll cancel order #W3354738 (no longer needed); 90.41 goes back to your PayPal. Do you confirm?",
    Call("cancel_pending_order", {"order_id": "#W3354738", "reason": "no longer needed"}),
    "Done: order #W3354738 is cancelled and 90.41 will be refunded to your PayPal.",
]
R01_USER = ["Hi, I'm Yuki Haddad (yuki.haddad48@example.com). Please cancel order #W3354738, I no longer need it.",
            "Yes, please go ahead.", "###STOP###"]


def role_of(body: dict[str, Any]) -> str:
    messages = body.get("messages") or [{}]
    system = str(messages[0].get("content") or "")
    if system.startswith("<instructions>"):
        return "agent"
    if "You will be given a list of expected outcomes" in system:
        return "judge"
    return "user"


def _count(body: dict[str, Any], role: str) -> int:
    return sum(1 for m in body.get("messages") or [] if m.get("role") == role)


def judge_all_met(body: dict[str, Any]) -> dict[str, Any]:
    prompt = str(body["messages"][1]["content"])
    outcomes = eval(prompt.rsplit("expectedOutcomes:", 1)[1].strip(), {})  # noqa: S307 - the test's own list repr
    results = [{"expectedOutcome": o, "reasoning": "the agent did it", "metExpectation": True} for o in outcomes]
    return completion(json.dumps({"results": results}), tokens=JUDGE_TOKENS)


class RoleStub(OpenAIStub):
    """`down`: roles whose endpoint answers HTTP 500; `judge`: the judge's answer body for a request (a str is
    sent verbatim, for unreadable answers)."""

    def __init__(self, *, agent_script: Sequence[str | Call] = tuple(R01_AGENT),
                 user_script: Sequence[str] = tuple(R01_USER),
                 judge: Callable[[dict[str, Any]], dict[str, Any] | str] = judge_all_met) -> None:
        super().__init__()
        self.agent_script = list(agent_script)
        self.user_script = list(user_script)
        self.judge = judge
        self.down: set[str] = set()
        self.roles: list[str] = []

    def _record_and_pop(self, path: str, headers: dict[str, str], body: Any) -> ScriptedResponse:
        with self._lock:
            self.requests.append(body if isinstance(body, dict) else {"_raw": body})
            self.request_paths.append(path)
            self.request_headers.append(headers)
            role = role_of(body) if isinstance(body, dict) else "garbage"
            self.roles.append(role)
        if role in self.down or not isinstance(body, dict):
            return ScriptedResponse(500, {"error": {"message": f"{role} endpoint down", "type": "server_error"}})
        if role == "judge":
            answer = self.judge(body)
            return ScriptedResponse(200, answer)
        if role == "user":
            n = _count(body, "assistant")
            text = self.user_script[n] if n < len(self.user_script) else "###STOP###"
            return ScriptedResponse(200, completion(text, tokens=USER_TOKENS, number=n))
        n = _count(body, "assistant") - 1  # the greeting is the first assistant message
        step = self.agent_script[n] if n < len(self.agent_script) else "Is there anything else?"
        if isinstance(step, Call):
            return ScriptedResponse(200, completion(None, [step], number=n))
        return ScriptedResponse(200, completion(step, number=n))

    def requests_of(self, role: str) -> list[dict[str, Any]]:
        return [body for body, r in zip(self.requests, self.roles, strict=True) if r == role]
