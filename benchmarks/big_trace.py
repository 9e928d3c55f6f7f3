"""A long retail session's trace, written the way a session writes one: for the replay rows and their tests.

Why generated and not recorded: a 50k-event session takes a real model hours. This one is built from the same
parts a session uses, so replay cannot tell it apart: events numbered by an `EventBus` and written by the
`TraceWriter`, the seed data's real order and user records as read results, every `ledger_updated` /
`ledger_staled` what the retail path map really did to a real `Ledger` (the rebuilt ledger matches it, no
divergence), gate decisions listing the domain's predicates with their policy text. Per step: the customer's
message, a model turn with three reads, their results and ledger updates, the agent's answer; every fifth step
a gated write (an address change: ALLOW, executed, staling the profile) or a refused one (REVISE). About 1.1 KB
per line, as in the 50 MB / 47,008-line trace that once never opened.

Orders come from a pool of `distinct` ids (copies of the seed orders under fresh ids), so the ledger grows to
that many records and then keeps refreshing them, as a long session rereading its records does.
"""

from __future__ import annotations

import copy
import itertools
from pathlib import Path
from typing import Any

from core.events import (
    AssistantTurnEvent,
    CallInfo,
    EventBus,
    GateDecided,
    LedgerStaled,
    LedgerUpdated,
    MessageSent,
    PredicateResultInfo,
    SessionEnded,
    SessionStarted,
    ToolResultEvent,
)
from core.ledger import Ledger
from core.tools import ToolCall, format_tool_result
from core.trace import TraceWriter
from domains.retail import DOMAIN
from mock_backends.retail import load_seed
from mock_backends.retail.models import normalise

USER = "mia_garcia_4821"


def _orders(distinct: int) -> list[dict[str, Any]]:
    seed = list(normalise(load_seed())["orders"].values())
    pool: list[dict[str, Any]] = []
    for n in range(distinct):
        order = copy.deepcopy(seed[n % len(seed)])
        order["order_id"] = f"#W{9_000_000 + n}"
        order["user_id"] = USER
        pool.append(order)
    return pool


def _results(verdict: str) -> list[PredicateResultInfo]:
    failing = "retail.user_is_customer"
    return [PredicateResultInfo(predicate_id=p.id, status="violation" if verdict == "REVISE" and p.id == failing
                                else "pass", verdict=verdict if p.id == failing else "ALLOW",
                                reason="the profile at users.mia_garcia_4821 is another customer's"
                                if verdict == "REVISE" and p.id == failing else "",
                                evidence=["user", f"users.{USER}"], policy=p.policy)
            for p in DOMAIN.predicates]


class _Writer:
    def __init__(self, path: Path) -> None:
        self.bus = EventBus(keep_history=False)
        self.trace = TraceWriter(path)
        self.bus.subscribe(self.trace)
        self.ledger = Ledger(DOMAIN.path_map)
        self.calls = itertools.count(1)

    def read(self, step: int, name: str, arguments: dict[str, Any], result: Any) -> None:
        call = ToolCall(f"call_{next(self.calls)}", name, arguments)
        info = CallInfo.of(call)
        self.bus.emit(ToolResultEvent(step=step, call=info, kind="read", executed=True, ok=True, outcome="ok",
                                      content=format_tool_result(result), result=result))
        absorbed = self.ledger.absorb(call, result, step)
        if absorbed.touched:
            self.bus.emit(LedgerUpdated(step=step, call_id=call.id, tool=name, added=list(absorbed.added),
                                        changed=list(absorbed.changed), refreshed=list(absorbed.refreshed),
                                        version=self.ledger.version))

    def write(self, step: int, allowed: bool) -> None:
        arguments = {"user_id": USER, "address1": f"{step} Main St", "address2": "", "city": "Austin",
                     "state": "TX", "country": "USA", "zip": "78701"}
        call = ToolCall(f"call_{next(self.calls)}", "modify_user_address", arguments)
        info = CallInfo.of(call)
        self.bus.emit(AssistantTurnEvent(step=step, text=None, tool_calls=[info], prompt_tokens=3000,
                                         completion_tokens=60))
        verdict = "ALLOW" if allowed else "REVISE"
        self.bus.emit(GateDecided(step=step, call=info, verdict=verdict, results=_results(verdict),
                                  feedback="" if allowed else "NOT executed: retail.user_is_customer",
                                  ledger_version=self.ledger.version))
        if not allowed:
            self.bus.emit(ToolResultEvent(step=step, call=info, kind="write", executed=False, ok=False,
                                          outcome="rejected", content="NOT executed: retail.user_is_customer"))
            return
        result = {"user_id": USER, "address": {k: v for k, v in arguments.items() if k != "user_id"}}
        self.bus.emit(ToolResultEvent(step=step, call=info, kind="write", executed=True, ok=True, outcome="ok",
                                      content=format_tool_result(result), result=result))
        staled = self.ledger.mark_stale(call, step, result=result)
        if staled:
            self.bus.emit(LedgerStaled(step=step, call_id=call.id, tool=call.name, paths=staled,
                                       version=self.ledger.version))


def write_big_trace(path: Path, events: int = 50_000, *, distinct: int = 2_000) -> int:
    """Write a trace of about `events` events to `path` (a new file); returns the number written."""
    orders = _orders(distinct)
    user = normalise(load_seed())["users"][USER]
    out = _Writer(path)
    out.bus.emit(SessionStarted(domain="retail", agent="ledger", model="long-session", user="scripted",
                                scenario="long-session", predicates=[p.id for p in DOMAIN.predicates]))
    out.bus.emit(MessageSent(step=0, role="assistant", text="Hi! How can I help you today?"))
    out.read(0, "find_user_id_by_name_zip", {"first_name": "Mia", "last_name": "Garcia", "zip": "46281"}, USER)
    out.read(0, "get_user_details", {"user_id": USER}, user)
    cursor = itertools.cycle(orders)
    step = 0
    while out.bus._seq < events - 2:
        step += 1
        picked = [next(cursor) for _ in range(3)]
        asked = ", ".join(o["order_id"] for o in picked)
        out.bus.emit(MessageSent(step=step, role="user",
                                 text=f"Can you check orders {asked}? I want to know which of them already shipped."))
        calls = [CallInfo.of(ToolCall(f"plan_{step}_{n}", "get_order_details", {"order_id": o["order_id"]}))
                 for n, o in enumerate(picked)]
        out.bus.emit(AssistantTurnEvent(step=step, text=None, tool_calls=calls, prompt_tokens=2800,
                                        completion_tokens=90, ledger_tokens=1200))
        for order in picked:
            out.read(step, "get_order_details", {"order_id": order["order_id"]}, order)
        if step % 5 == 0:
            out.write(step, allowed=step % 10 == 0)
        out.bus.emit(MessageSent(step=step, role="assistant",
                                 text=f"Order {picked[0]['order_id']} is {picked[0]['status']}; the other two are "
                                      f"{picked[1]['status']} and {picked[2]['status']}."))
    out.bus.emit(SessionEnded(step=step, reason="user_stop", steps=step))
    out.trace.close()
    return out.bus._seq
