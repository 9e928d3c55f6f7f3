"""A tiny self-contained domain (accounts and transfers) for testing the core without any real domain.

The backend is a plain in-memory dict on purpose: core tests must not depend on mock_backends.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from core.domain import Domain
from core.gate import GateContext, LedgerView, MissingEvidence, Outcome, Pass, Verdict, Violation, predicate
from core.ledger import PathMap, PathRule, WriteEffect
from core.tools import Requestor, ToolCall, ToolError, ToolKind, ToolSpec

TOOLS = (
    ToolSpec("login", "Authenticate a customer", {"type": "object", "properties": {"name": {"type": "string"}},
                                                  "required": ["name"], "additionalProperties": False},
             ToolKind.READ),
    ToolSpec("get_account", "Read an account", {"type": "object", "properties": {"account_id": {"type": "string"}},
                                                "required": ["account_id"], "additionalProperties": False},
             ToolKind.READ),
    ToolSpec("transfer", "Move money", {
        "type": "object",
        "properties": {"account_id": {"type": "string"}, "amount": {"type": "number"}},
        "required": ["account_id", "amount"], "additionalProperties": False}, ToolKind.WRITE),
    ToolSpec("note", "Write a note", {"type": "object", "properties": {"text": {"type": "string"}},
                                      "required": ["text"], "additionalProperties": False}, ToolKind.GENERIC),
)

PATH_MAP = PathMap(
    rules=(
        PathRule("login", "auth.customer", when=lambda call, result, ledger: ledger.get("auth.customer") is None),
        PathRule("get_account", "accounts.{account_id}"),
    ),
    write_effects=(WriteEffect("transfer", ("accounts.{account_id}",)),),
)


@predicate(id="toy.authenticated", tools=["transfer"], severity=Verdict.REVISE,
           policy="Authenticate the customer before any transfer.")
def authenticated(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    if ctx.customer_id is None:
        return MissingEvidence(("auth.customer",), "ask the customer to log in")
    return Pass()


@predicate(id="toy.owner", tools=["transfer"], severity=Verdict.BLOCK,
           policy="Only the customer's own accounts can be debited.")
def owner(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    account = view.require(f"accounts.{call.arguments['account_id']}")
    if account["owner"] != ctx.customer_id:
        return Violation(f"account {account['id']} belongs to {account['owner']!r}, not {ctx.customer_id!r}")
    return Pass()


@predicate(id="toy.balance", tools=["transfer"], severity=Verdict.REVISE,
           policy="A transfer cannot exceed the observed balance.")
def balance(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    account = view.require(f"accounts.{call.arguments['account_id']}")
    if call.arguments["amount"] > account["balance"]:
        return Violation(f"amount {call.arguments['amount']} exceeds balance {account['balance']} "
                         f"(accounts.{account['id']}.balance)")
    return Pass()


PREDICATES = (authenticated, owner, balance)

DOMAIN = Domain(name="toy", title="Toy bank", policy="Be nice. Only move money the customer has.",
                tools=TOOLS, path_map=PATH_MAP, predicates=PREDICATES,
                identify=lambda ledger: ledger.get("auth.customer"))

INITIAL = {"accounts": {"A1": {"id": "A1", "owner": "ann", "balance": 100.0},
                        "B1": {"id": "B1", "owner": "bob", "balance": 50.0}}}


class ToyBackend:
    def __init__(self) -> None:
        self.state: dict[str, Any] = copy.deepcopy(INITIAL)
        self.calls: list[str] = []

    async def call(self, name: str, arguments: Mapping[str, Any]) -> Any:
        self.calls.append(name)
        if name == "login":
            return arguments["name"]
        if name == "get_account":
            account = self.state["accounts"].get(arguments["account_id"])
            if account is None:
                raise ToolError("Account not found")
            return copy.deepcopy(account)
        if name == "transfer":
            account = self.state["accounts"].get(arguments["account_id"])
            if account is None:
                raise ToolError("Account not found")
            account["balance"] = round(account["balance"] - arguments["amount"], 2)
            return copy.deepcopy(account)
        if name == "note":
            return "noted"
        raise ToolError(f"Tool '{name}' not found.")

    async def state_hash(self) -> str:
        import hashlib
        import json

        return hashlib.sha256(json.dumps(self.state, sort_keys=True).encode()).hexdigest()


# ---------------------------------------------------------------------------------------------------
# Dual control: the same bank, plus the customer's own card app (user-side tools) and a sync hook.
# `DOMAIN` and `ToyBackend` above are untouched, so their existing users see no difference.

USER_TOOLS = (
    ToolSpec("check_card", "Look at the card in your banking app", {
        "type": "object", "properties": {}, "additionalProperties": False}, ToolKind.READ, Requestor.USER),
    ToolSpec("toggle_card_freeze", "Freeze or unfreeze your card in the app", {
        "type": "object", "properties": {}, "additionalProperties": False}, ToolKind.WRITE, Requestor.USER),
)

DUAL_PATH_MAP = PathMap(
    rules=(*PATH_MAP.rules, PathRule("check_card", "device.card")),
    write_effects=(*PATH_MAP.write_effects, WriteEffect("toggle_card_freeze", ("device.*",)),
                 WriteEffect("transfer", ("device.*",))),
)

DUAL_DOMAIN = Domain(name="toy-dual", title="Toy bank with a card app", policy=DOMAIN.policy,
                     tools=TOOLS + USER_TOOLS, path_map=DUAL_PATH_MAP, predicates=PREDICATES,
                     identify=DOMAIN.identify)


class DualToyBackend(ToyBackend):
    """ToyBackend plus the customer's card app. `sync` mirrors the app's card state onto account A1 (the
    bank's side), as telecom's sync mirrors the line onto the phone; it reports what it changed."""

    def __init__(self) -> None:
        super().__init__()
        self.state["app"] = {"card": "active"}
        self.syncs = 0

    async def call(self, name: str, arguments: Mapping[str, Any]) -> Any:
        if name == "check_card":
            self.calls.append(name)
            return f"Card ending 4242 is {self.state['app']['card']}."
        if name == "toggle_card_freeze":
            self.calls.append(name)
            app = self.state["app"]
            app["card"] = "active" if app["card"] == "frozen" else "frozen"
            return f"Your card is now {app['card']}."
        return await super().call(name, arguments)

    async def sync(self) -> list[str]:
        self.syncs += 1
        account, card = self.state["accounts"]["A1"], self.state["app"]["card"]
        if account.get("card") == card:
            return []
        before = account.get("card")
        account["card"] = card
        return [f"accounts.A1.card: {before} -> {card}"]
