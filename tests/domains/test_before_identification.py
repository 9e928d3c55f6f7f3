"""For every domain: before anyone is identified, a write is refused by the
identity rule alone, and no feedback asks the agent to read a record the call names (a reservation, order,
line, bill, appointment, medical record, or a patient's calendar or profile): until the customer is known,
that record may be a stranger's, and the policy forbids reading another customer's data."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from core.gate import PolicyGate
from core.ledger import Ledger
from core.tools import ToolCall, ToolKind

IDENTITY_RULE = {"airline": "airline.customer_identified", "retail": "retail.authenticated",
                 "telecom": "telecom.customer_identified", "telehealth": "telehealth.authenticated"}
ARGUMENTS: dict[str, dict[str, Any]] = {
    "airline": {"reservation_id": "ZFA04Y", "user_id": "mia_li_3668", "cabin": "economy", "payment_id": "credit_card_1",
                "flights": [{"flight_number": "HAT001", "date": "2024-05-20"}], "origin": "JFK", "destination": "LAX",
                "flight_type": "one_way", "passengers": [{"first_name": "A", "last_name": "B", "dob": "1990-01-01"}],
                "total_baggages": 1, "nonfree_baggages": 0, "amount": 100, "insurance": "no",
                "payment_methods": [{"payment_id": "credit_card_1", "amount": 100}]},
    "retail": {"order_id": "#W2378156", "user_id": "yusuf_rossi_9620", "reason": "no longer needed", "item_ids": ["1"],
               "new_item_ids": ["2"], "payment_method_id": "credit_card_1", "address1": "1 Main St", "address2": "",
               "city": "Austin", "state": "TX", "country": "USA", "zip": "78701"},
    "telecom": {"customer_id": "C1001", "line_id": "L1002", "bill_id": "B1002", "gb_amount": 1.0,
                "reason": "overdue bill"},
    "telehealth": {"patient_id": "sarah_johnson_1234", "provider_id": "dr_garcia_primary", "date": "2025-01-06",
                   "time": "09:00", "appointment_type": "routine_checkup", "appointment_id": "APPT001",
                   "new_date": "2025-01-06", "new_time": "09:00", "record_id": "REC001", "medication": "Sertraline",
                   "supplier_company": "Harmony Labs", "brand_name": "Sertrawin", "price_usd": 4.75, "note": "n",
                   "bill_insurance": True},
}


def _writes() -> list[tuple[str, str]]:
    cases = []
    for name in ARGUMENTS:
        domain = importlib.import_module(f"domains.{name}").DOMAIN
        guarded = {tool for rule in domain.predicates for tool in rule.tools}
        cases += [(name, t.name) for t in domain.tools if t.kind is ToolKind.WRITE and t.name in guarded]
    return cases


@pytest.mark.parametrize(("name", "tool"), _writes())
def test_only_the_identity_rule_objects_and_no_hint_asks_for_a_record(name: str, tool: str) -> None:
    domain = importlib.import_module(f"domains.{name}").DOMAIN
    spec = next(t for t in domain.tools if t.name == tool)
    arguments = {k: v for k, v in ARGUMENTS[name].items() if k in spec.parameters.get("properties", {})}
    ledger = Ledger(domain.path_map)
    gate = PolicyGate(domain.predicates, path_map=domain.path_map)
    decision = gate.evaluate(ToolCall(id="c1", name=tool, arguments=arguments), ledger, domain.context(ledger))
    failed = [r.predicate_id for r in decision.results if r.failed]
    assert failed == [IDENTITY_RULE[name]], decision.feedback
    for read in ("get_reservation_details(", "get_order_details(", "get_product_details(", "get_details_by_id(",
                 "get_appointment_details(", "get_medical_record(", "list_patient_appointments(",
                 "get_patient_details(", "get_flight_status("):
        assert read not in decision.feedback, decision.feedback
