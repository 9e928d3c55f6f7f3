"""The NL-assertion judge, as tau2-bench's `NLAssertionsEvaluator` does it.

Same input: the whole trajectory (customer, agent, tool calls and tool results) as tau2 renders it
(`trajectory.judge_transcript`), and tau2's own system prompt and user prompt layout (the expected outcomes
as a Python list, as tau2 formats them). Same grading: an assertion set passes when every graded outcome
has `metExpectation: true`.

Where we are stricter than tau2, on purpose: tau2 calls `json.loads` on the answer and lets any exception
escape (its runner then retries the whole simulation and finally records an infrastructure error). We do the
same explicitly: a judge endpoint that fails, or an answer that is not the JSON asked for (or grades none of
the outcomes: tau2 would pass an empty list, `all([])`), raises `JudgeError`, which the runner treats as an
infrastructure failure of the trial: retried, then left out of the metrics. A failed judge is never a zero.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.evaluation.rewards import CheckResult, JudgeError, JudgeVerdict, NLJudge
from core.evaluation.trajectory import judge_transcript
from core.llm.base import ChatModel, ModelError

# tau2-bench's NL-assertions system prompt (src/tau2/evaluator/evaluator_nl_assertions.py), kept verbatim,
# indentation included, so a judge model sees the instruction tau2's judge sees.
# tau2-bench: MIT License, Copyright (c) 2025 Sierra Research.
JUDGE_PROMPT = """
        TASK
        - You will be given a list of expected outcomes and a conversation that was collected during a test case run.
        - The conversation is between an agent and a customer.
        - Your job is to evaluate whether the agent satisfies each of the expected outcomes.
        - Grade each expected outcome individually.

        FORMAT
        - Your response should be a JSON object with the following fields:
        - `reasoning`: a short explanation for your classification
        - `metExpectation`: `true` if the agent satisfies the expected outcomes, `false` otherwise
        - `expectedOutcome`: repeat the expectation from the input that you are grading
<<BLANK>>
        Example response structure:
        {
            "results": [
                {
                    "expectedOutcome": "<one of the expected outcomes from the input>",
                    "reasoning": "<reasoning trace>",
                    "metExpectation": <false or true>,
                }
            ]
        }
        """.replace("<<BLANK>>", " " * 8)  # tau2's prompt has a whitespace-only line there


def user_prompt(messages: Sequence[Mapping[str, Any]], assertions: Sequence[str]) -> str:
    """tau2's user prompt: the conversation, then the expected outcomes as Python prints a list of str."""
    return f"""
        conversation:
        {judge_transcript(messages)}
{" " * 8}
        expectedOutcomes:
        {list(assertions)}
        """


_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def parse_judgement(text: str, assertions: Sequence[str]) -> list[CheckResult]:
    """The graded outcomes, one per assertion in order (matched by text when the judge repeats it, else by
    position). Raises JudgeError for an answer that is not tau2's JSON or grades nothing."""
    body_text = (text or "").strip()
    fenced = _FENCE.match(body_text)
    if fenced:
        body_text = fenced.group(1)
    try:
        body: Any = json.loads(body_text)
    except json.JSONDecodeError as exc:
        raise JudgeError(f"judge answer is not JSON: {body_text[:120]!r}") from exc
    results = body.get("results") if isinstance(body, dict) else None
    if not isinstance(results, list) or not results or not all(isinstance(r, dict) for r in results):
        raise JudgeError("judge answer has no graded outcomes (expected {\"results\": [...]})")
    if any(not isinstance(r.get("metExpectation"), bool) for r in results):
        raise JudgeError("judge answer: metExpectation must be true or false for every outcome")
    by_text = {str(r.get("expectedOutcome", "")).strip(): r for r in results}
    checks: list[CheckResult] = []
    for position, assertion in enumerate(assertions):
        item = by_text.get(assertion.strip()) or (results[position] if position < len(results) else None)
        if item is None:
            raise JudgeError(f"judge answer grades {len(results)} of {len(assertions)} expected outcomes")
        checks.append(CheckResult(item=assertion, met=item["metExpectation"] is True,
                                  justification=str(item.get("reasoning", ""))[:500]))
    return checks


@dataclass
class LLMJudge:
    """An `NLJudge` over a chat model (its own endpoint: --judge-model / --judge-base-url)."""

    model: ChatModel

    async def __call__(self, messages: Sequence[Mapping[str, Any]], assertions: Sequence[str]) -> JudgeVerdict:
        request = [{"role": "system", "content": JUDGE_PROMPT},
                   {"role": "user", "content": user_prompt(messages, assertions)}]
        try:
            turn = await self.model.complete(request, [])
        except ModelError as exc:
            raise JudgeError(f"judge model failed: {exc.message}") from exc
        return JudgeVerdict(parse_judgement(turn.text or "", assertions), turn.usage, self.model.name)

    async def aclose(self) -> None:
        """Close the judge model's HTTP client: one judge serves a whole run, and its pool outlives no run."""
        close = getattr(self.model, "aclose", None)
        if close is not None:
            await close()


def llm_judge(model: ChatModel) -> LLMJudge:
    return LLMJudge(model)


async def close_judge(judge: NLJudge | None) -> None:
    """Release what a judge holds (an `LLMJudge`'s HTTP client); any other judge, or none, has nothing to close."""
    close = getattr(judge, "aclose", None)
    if close is not None:
        await close()
