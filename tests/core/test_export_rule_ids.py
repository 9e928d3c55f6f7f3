"""An exported fixture records which rules objected (and which crashed); `check` compares them.

Before, a fixture expecting REVISE passed whenever the verdict was REVISE, even when the REVISE came from
a crashing rule (the gate fails closed) or from another rule.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from test_regate import STREAK, toy_events

from core.gate import GateContext, LedgerView, Outcome, Verdict, predicate
from core.regate import export_trajectory, to_jsonl
from core.replay import Checker, parse_trajectory
from core.tools import ToolCall
from tests.support.toy_domain import DOMAIN, PREDICATES, ToyBackend


@predicate(id="toy.balance", tools=["transfer"], severity=Verdict.REVISE,
           policy="A transfer cannot exceed the observed balance.")
def crashing_balance(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    raise KeyError("balance")  # an edited rule that crashes: the gate fails closed with REVISE


async def checked(text: str, crash: bool = False) -> list[bool | None]:
    predicates = tuple(crashing_balance if p.id == "toy.balance" else p for p in PREDICATES) if crash else PREDICATES
    domain = replace(DOMAIN, predicates=predicates)
    trajectory = parse_trajectory(text)
    assert trajectory.problems == []
    return [r.met for r in await Checker(domain, ToyBackend()).run(trajectory.calls)]


async def test_export_records_failed_and_crashed_rule_ids(tmp_path: Path) -> None:
    lines = export_trajectory(await toy_events(STREAK, tmp_path)).lines
    writes = [line for line in lines if line["name"] == "transfer"]
    assert [w["expect"] for w in writes] == ["REVISE", "REVISE", "BLOCK"]
    assert writes[0]["expect_rules"] == ["toy.balance"] and writes[0]["expect_crashed"] == []
    assert "expect_rules" not in lines[0]  # reads are not gated


async def test_check_fails_when_the_revise_comes_from_a_crash(tmp_path: Path) -> None:
    text = to_jsonl(export_trajectory(await toy_events(STREAK, tmp_path)).lines)
    assert all(m in (True, None) for m in await checked(text))
    met = await checked(text, crash=True)
    assert False in met  # same verdicts, but the REVISE now comes from a crash


async def test_check_fails_when_another_rule_objects(tmp_path: Path) -> None:
    lines = export_trajectory(await toy_events(STREAK, tmp_path)).lines
    first_write = next(i for i, line in enumerate(lines) if line["name"] == "transfer")
    lines[first_write] = {**lines[first_write], "expect_rules": ["toy.owner"]}
    met = await checked(to_jsonl(lines))
    assert met[first_write] is False


def test_a_bad_rule_list_is_a_problem_not_a_crash() -> None:
    trajectory = parse_trajectory('{"name": "transfer", "arguments": {}, "expect_rules": "toy.balance"}\n')
    assert trajectory.calls == [] and "list of rule ids" in trajectory.problems[0].message
