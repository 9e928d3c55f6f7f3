"""`ledgeragent predicates --coverage`: every policy sentence -> predicates -> tests, for all four domains."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.cli.main import main
from console.runtime.coverage import _parse_notes, coverage
from domains.registry import DOMAINS, load_domain


@pytest.mark.parametrize("name", DOMAINS)
def test_every_predicate_is_mapped_labelled_and_tested(name: str) -> None:
    domain = load_domain(name)
    report = coverage(domain)
    assert report.tests_found and not report.unmapped and not report.unknown and not report.problems
    assert {i for row in report.house_rules for i in row.predicate_ids} == {p.id for p in domain.predicates
                                                                            if p.house_rule}
    for predicate in domain.predicates:
        assert report.tests_of(predicate.id), f"{predicate.id} has no test naming it"
    assert any("yes" in sentence for sentence in report.unchecked)  # explicit consent: no predicate sees it
    assert any("one tool call" in sentence.lower() for sentence in report.unchecked)


def test_the_report_flags_a_predicate_the_table_forgets_and_an_id_it_invents(tmp_path: Path) -> None:
    domain = load_domain("telecom")
    notes = domain.policy_notes.replace("`telecom.refuel_priced_from_plan`", "`telecom.refuel_made_up`")
    from dataclasses import replace

    report = coverage(replace(domain, policy_notes=notes), tests_root=tmp_path)
    assert report.unmapped == ("telecom.refuel_priced_from_plan",) and report.unknown == ("telecom.refuel_made_up",)
    assert not report.tests_found and report.tests_of("telecom.customer_identified") == ()


def test_notes_parser_separates_policy_house_rules_and_unchecked() -> None:
    notes = ("## What the gate checks and what it cannot\n\n| policy sentence | predicate | on failure |\n"
             "|---|---|---|\n| Say why | `d.a` | REVISE |\n\nHouse rules: ours.\n\n| house rule | predicate | on |\n"
             "|---|---|---|\n| Ours | `d.b` | REVISE |\n\nNot checked by the gate:\n\n- the customer's yes;\n"
             "- one call per turn,\n  and no text\n\nAfter.\n")
    policy, house, unchecked = _parse_notes(notes)
    assert policy == [("Say why", ["d.a"])] and house == [("Ours", ["d.b"])]
    assert unchecked == ["the customer's yes;", "one call per turn, and no text"]


def test_cli_prints_the_coverage_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["predicates", "--domain", "telecom", "--coverage", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["predicates"][0]["id"] for r in report["house_rules"]] == [
        "telecom.roaming_not_already_enabled", "telecom.resume_pending_activation"]
    row = next(r for r in report["policy"] if r["predicates"][0]["id"] == "telecom.refuel_within_cap")
    assert "counting refuels already made" in row["sentence"] and row["predicates"][0]["tests"]


def test_cli_coverage_table_lists_house_rules_apart(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["predicates", "--domain", "telehealth", "--coverage"]) == 0
    out = capsys.readouterr().out
    assert "house rules (labelled, REVISE at most" in out and "Not checkable by any predicate" in out


def test_cli_listing_shows_each_predicates_source(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["predicates", "--domain", "telehealth", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    by_id = {r["id"]: r for r in rows}
    assert by_id["telehealth.dependant_age"]["source"] == "house rule"
    assert by_id["telehealth.dependant_age"]["policy"].startswith("house rule: ")
    assert by_id["telehealth.authenticated"]["source"] == "policy"
    assert by_id["telehealth.no_severe_interaction"]["enabled"] is True
    assert by_id["telehealth.no_severe_interaction"]["source"] == "house rule"
