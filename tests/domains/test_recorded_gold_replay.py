"""Upstream gold trajectories, recorded as OpenAI chat messages and audited as recorded, give plain `check`'s verdicts.

Each tau2 retail and airline task's careful trajectory (tests/support/tau2_*_trajectories.py) is first run through
plain `check` over the REAL backend loaded from tau2's db.json; every call's result, as the executor gave it to
the agent, is written into an OpenAI messages file (the form published benchmark trajectories take). Where plain
check refused nothing, the as-recorded audit of that file, with no database at all, must judge every write the
same: same verdict, same objecting rules, same evidence, since the ledger it builds from the recorded results is
the one plain check built from the database. Skipped when the tau2-bench data is absent (tests/support/upstream.py).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import pytest
import pytest_asyncio

from core.domain import Domain
from core.events import EventBus, ToolResultEvent
from core.recorded.audit import RecordedAudit
from core.recorded.formats import parse_recording
from core.replay import Checker
from domains.airline import DOMAIN as AIRLINE
from domains.retail import DOMAIN as RETAIL
from mock_backends.airline import AirlineBackend
from mock_backends.airline import load_tau2_db as airline_db
from mock_backends.base import SQLiteToolBackend
from mock_backends.retail import RetailBackend
from mock_backends.retail import load_tau2_db as retail_db
from tests.support import tau2_airline_trajectories as airline
from tests.support import tau2_retail_trajectories as retail
from tests.support.gold_replay import Template, calls, module_loop, replay_group

HAVE = {"retail": retail.shared_present(), "airline": airline.shared_present()}
pytestmark = [pytest.mark.shared, replay_group("tau2-recorded"),
              pytest.mark.skipif(not all(HAVE.values()),
                                 reason=f"tau2 data not found under {retail.TAU2_RETAIL.parent}")]

DOMAINS: dict[str, Domain] = {"retail": RETAIL, "airline": AIRLINE}
BUILD: dict[str, Callable[[Mapping[str, Any]], list[dict[str, Any]]]] = {}
TASKS: dict[str, list[dict[str, Any]]] = {}
if all(HAVE.values()):
    _retail_db, _airline_db = retail.load_db(), airline.load_db()
    BUILD = {"retail": lambda task: retail.build_trajectory(task, _retail_db),
             "airline": lambda task: airline.build_trajectory(task, _airline_db)}
    TASKS = {"retail": retail.load_tasks(), "airline": airline.load_tasks()}



@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def templates(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Template[Any]]]:
    """Each domain's backend over tau2's data, built once, and its state right after loading."""
    folder = tmp_path_factory.mktemp("tau2_recorded")
    backends: dict[str, SQLiteToolBackend] = {
        "retail": await RetailBackend.create(folder / "retail.sqlite", retail_db(retail.DB_PATH)),
        "airline": await AirlineBackend.create(folder / "airline.sqlite", airline_db(airline.DB_PATH))}
    try:
        yield {name: Template(b, await b.snapshot(), "") for name, b in backends.items()}
    finally:
        for backend in backends.values():
            await backend.close()


def openai_file(results: list[ToolResultEvent]) -> str:
    """The calls that ran, each as an assistant message with its tool message: what the agent saw, verbatim."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "policy"}]
    for n, result in enumerate(results):
        messages.append({"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call_{n}", "type": "function",
            "function": {"name": result.call.name, "arguments": json.dumps(result.call.arguments)}}]})
        messages.append({"role": "tool", "tool_call_id": f"call_{n}", "content": result.content})
    return json.dumps(messages)


async def _same_verdicts(domain_name: str, template: Template[Any]) -> int:
    domain, compared = DOMAINS[domain_name], 0
    for task in TASKS[domain_name]:
        await template.backend.restore(template.base)
        bus = EventBus()
        plain = await Checker(domain, template.backend, bus=bus).run(calls(BUILD[domain_name](task)))
        written = [r for r in plain if r.kind == "write"]
        if not written or any(not r.executed for r in written):  # the comparison holds where nothing is refused
            continue
        ran = [e for e in bus.history if isinstance(e, ToolResultEvent) and e.executed]
        recording = parse_recording(openai_file(ran), f"{task['id']}.json")
        audited = [a async for a in RecordedAudit(domain).run(recording)]
        assert [p.message for a in audited for p in a.problems] == [], task["id"]
        writes = audited[0].writes
        assert [(w.call.name, w.decision.verdict.value, tuple(r.predicate_id for r in w.decision.failed),  # type: ignore[union-attr]
                 w.decision.evidence, w.recorded, w.taken) for w in writes] == [  # type: ignore[union-attr]
            (r.name, r.verdict, r.predicates, r.evidence, "ok", True) for r in written], task["id"]
        compared += len(writes)
    return compared


@module_loop
# Every gold write of a task plain check refused nothing in: retail's 90 but task 64's two (its first exchange is
# refused, as tau2's own tool refuses it), airline's 24.
@pytest.mark.parametrize(("domain", "writes"), [("retail", 88), ("airline", 24)])
async def test_gold_recorded_as_openai_messages_gets_plain_checks_verdicts(
        templates: dict[str, Template[Any]], domain: str, writes: int) -> None:
    assert await _same_verdicts(domain, templates[domain]) == writes
