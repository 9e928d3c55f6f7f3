"""The NL-assertion judge: an LLM grades each assertion against the transcript, as tau2's judge does.

Used only when a judge model is configured. A judge answer that cannot be read counts every assertion as
not met, with the reason, rather than crashing the run or passing the trial: an unreadable grade is not
evidence that the agent did well.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from core.evaluation.rewards import CheckResult, NLJudge
from core.llm.base import ChatModel, ModelError

JUDGE_PROMPT = """You grade a customer-service conversation against expected outcomes.
For each numbered expected outcome, decide from the transcript alone whether the agent met it.
Answer with JSON only: {"results": [{"expectedOutcome": "...", "reasoning": "...", "metExpectation": true}]}
with one entry per expected outcome, in the given order."""

_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def parse_judgement(text: str, assertions: Sequence[str]) -> list[CheckResult]:
    match = _OBJECT.search(text or "")
    try:
        body: Any = json.loads(match.group(0)) if match else None
    except json.JSONDecodeError:
        body = None
    results = body.get("results") if isinstance(body, dict) else None
    if not isinstance(results, list) or len(results) != len(assertions):
        return [CheckResult(item=a, met=False, justification="judge answer unreadable") for a in assertions]
    checks: list[CheckResult] = []
    for assertion, item in zip(assertions, results, strict=True):
        item = item if isinstance(item, dict) else {}
        checks.append(CheckResult(item=assertion, met=item.get("metExpectation") is True,
                                  justification=str(item.get("reasoning", ""))[:500]))
    return checks


def llm_judge(model: ChatModel) -> NLJudge:
    async def judge(transcript: str, assertions: Sequence[str]) -> list[CheckResult]:
        numbered = "\n".join(f"{i}. {a}" for i, a in enumerate(assertions, start=1))
        messages = [{"role": "system", "content": JUDGE_PROMPT},
                    {"role": "user", "content": f"<transcript>\n{transcript}\n</transcript>\n\n"
                                                f"Expected outcomes:\n{numbered}"}]
        try:
            turn = await model.complete(messages, [])
        except ModelError as exc:
            return [CheckResult(item=a, met=False, justification=f"judge failed: {exc.message}") for a in assertions]
        return parse_judgement(turn.text or "", assertions)

    return judge
