from __future__ import annotations

from core.ledger import Ledger, PathMap, PathRule, WriteEffect, fill_template, path_matches
from core.tools import ToolCall
from tests.support.toy_domain import PATH_MAP


def call(tool: str, **arguments: object) -> ToolCall:
    return ToolCall(id=f"c-{tool}", name=tool, arguments=arguments)


def test_read_lands_at_its_canonical_path_with_provenance() -> None:
    ledger = Ledger(PATH_MAP)
    result = ledger.absorb(call("get_account", account_id="A1"), {"id": "A1", "owner": "ann", "balance": 100.0}, 3)
    assert result.added == ("accounts.A1",)
    entry = ledger.entry("accounts.A1")
    assert entry is not None and entry.value["balance"] == 100.0
    assert entry.provenance.tool == "get_account" and entry.provenance.step == 3
    assert entry.provenance.describe() == 'get_account(account_id="A1") at step 3'


def test_condition_keeps_first_identity() -> None:
    ledger = Ledger(PATH_MAP)
    ledger.absorb(call("login", name="ann"), "ann", 1)
    second = ledger.absorb(call("login", name="bob"), "bob", 2)
    assert ledger.get("auth.customer") == "ann"
    assert second.touched == () and second.skipped


def test_reabsorbing_same_value_is_a_refresh_and_clears_stale() -> None:
    ledger = Ledger(PATH_MAP)
    record = {"id": "A1", "owner": "ann", "balance": 100.0}
    ledger.absorb(call("get_account", account_id="A1"), record, 1)
    assert ledger.mark_stale(call("transfer", account_id="A1", amount=5), 2) == ["accounts.A1"]
    entry = ledger.entry("accounts.A1")
    assert entry is not None and entry.is_stale
    assert "STALE" in ledger.render()
    again = ledger.absorb(call("get_account", account_id="A1"), record, 3)
    assert again.refreshed == ("accounts.A1",)
    entry = ledger.entry("accounts.A1")
    assert entry is not None and not entry.is_stale


def test_render_is_deterministic_and_sorted() -> None:
    a, b = Ledger(PATH_MAP), Ledger(PATH_MAP)
    records = [{"id": "B1", "owner": "bob", "balance": 50.0}, {"id": "A1", "owner": "ann", "balance": 100.0}]
    for r in records:
        a.absorb(call("get_account", account_id=r["id"]), r, 1)
    for r in reversed(records):
        b.absorb(call("get_account", account_id=r["id"]), {k: r[k] for k in reversed(list(r))}, 1)
    assert a.render() == b.render()
    assert a.render().index("accounts.A1") < a.render().index("accounts.B1")
    assert Ledger(PATH_MAP).render().startswith("<ledger>\n(empty")


def test_snapshot_is_immutable_and_diffable() -> None:
    ledger = Ledger(PATH_MAP)
    ledger.absorb(call("get_account", account_id="A1"), {"id": "A1", "balance": 1}, 1)
    before = ledger.snapshot()
    ledger.absorb(call("get_account", account_id="A1"), {"id": "A1", "balance": 2}, 2)
    ledger.absorb(call("get_account", account_id="B1"), {"id": "B1", "balance": 3}, 3)
    assert before.get("accounts.A1") == {"id": "A1", "balance": 1}
    diff = ledger.diff(before)
    assert diff.added == ("accounts.B1",) and diff.changed == ("accounts.A1",)
    ledger.restore(before)
    assert ledger.paths() == ["accounts.A1"]


def test_glob_and_templates() -> None:
    assert path_matches("orders.*", "orders.#W1")
    assert not path_matches("orders.*", "orders.#W1.items")
    assert fill_template("f.{origin}.{result.id}", {"origin": "JFK"}, {"id": 7}) == "f.JFK.7"
    fan_out = PathMap((PathRule("search", "flights.{item.n}.{date}", each="result"),))
    ledger = Ledger(fan_out)
    ledger.absorb(call("search", date="d1"), [{"n": "F1"}, {"n": "F2"}], 1)
    assert ledger.paths() == ["flights.F1.d1", "flights.F2.d1"]
    assert sorted(ledger.glob("flights.*.d1")) == ["flights.F1.d1", "flights.F2.d1"]


def test_failed_template_is_skipped_not_raised() -> None:
    ledger = Ledger(PathMap((PathRule("get_account", "accounts.{result.id}"),)))
    result = ledger.absorb(call("get_account", account_id="A1"), {"no_id": True}, 1)
    assert result.touched == () and "no value" in result.skipped[0]


def test_suggest_read_names_the_call() -> None:
    pm = PathMap((PathRule("get_order_details", "orders.{order_id}"),), (WriteEffect("x", ("orders.{order_id}",)),))
    assert pm.suggest_read("orders.#W1") == 'get_order_details(order_id="#W1")'


def test_suggest_read_maps_result_fields_to_same_named_arguments() -> None:
    pm = PathMap((PathRule("get_order_details", "orders.{result.order_id}"),
                  PathRule("get_item_details", "items.{item_id}"),
                  PathRule("search", "flights.{item.n}", each="result")))
    assert pm.suggest_read("orders.#W9") == 'get_order_details(order_id="#W9")'
    assert pm.suggest_read("items.42") == 'get_item_details(item_id="42")'
    assert pm.suggest_read("flights.F1") == "search(...)"


def test_mark_stale_handles_exact_paths_and_globs() -> None:
    pm = PathMap((PathRule("get", "{kind}.{key}"),), (WriteEffect("w", ("orders.{order_id}", "users.*")),))
    ledger = Ledger(pm)
    for kind, key in [("orders", "#W1"), ("orders", "#W2"), ("users", "a"), ("users", "b"), ("userspace", "x")]:
        ledger.absorb(call("get", kind=kind, key=key), {"k": key}, 1)
    staled = ledger.mark_stale(call("w", order_id="#W2"), 2)
    assert staled == ["orders.#W2", "users.a", "users.b"]
    assert ledger.mark_stale(call("w", order_id="#W2"), 3) == []  # already stale: nothing new


# ---------------------------------------------------------------------------------------------------
# History (superseded observations) and effects (what executed writes returned): what a rule needs to tell a fact
# our own write changed, or a compensation already granted, from what the customer says.


def test_a_changed_value_keeps_the_superseded_observation_with_its_provenance() -> None:
    ledger = Ledger(PATH_MAP)
    ledger.absorb(call("get_account", account_id="A1"), {"id": "A1", "balance": 100}, 1)
    ledger.absorb(call("get_account", account_id="A1"), {"id": "A1", "balance": 100}, 2)  # same value: no history
    assert ledger.history("accounts.A1") == ()
    ledger.absorb(call("get_account", account_id="A1"), {"id": "A1", "balance": 40}, 3)
    [old] = ledger.history("accounts.A1")
    assert old.value == {"id": "A1", "balance": 100} and old.provenance.step == 2
    assert [e.value["balance"] for e in ledger.observations("accounts.A1")] == [100, 40]
    assert ledger.observed_paths("accounts.*") == ["accounts.A1"]
    assert "100" not in ledger.render()  # history never reaches the prompt


def test_only_a_write_with_its_return_becomes_an_effect() -> None:
    ledger = Ledger(PATH_MAP)
    ledger.absorb(call("get_account", account_id="A1"), {"id": "A1", "balance": 100}, 1)
    before = ledger.version
    ledger.mark_stale(call("transfer", account_id="A1", amount=5), 2)  # no return given: stale only
    assert ledger.effects() == ()
    ledger.mark_stale(call("transfer", account_id="A1", amount=7), 3, result={"id": "A1", "balance": 93})
    ledger.mark_stale(call("transfer", account_id="A1", amount=1), 4, result={"id": "A1", "balance": 92})
    first, second = ledger.effects("transfer")
    assert (first.arguments["amount"], first.result["balance"], first.provenance.step) == (7, 93, 3)
    assert (first.path, second.path) == ("effects.transfer.0", "effects.transfer.1")
    assert ledger.effects("login") == () and ledger.version > before
    assert "effects" not in ledger.render()


def test_snapshots_and_restore_carry_history_and_effects() -> None:
    ledger = Ledger(PATH_MAP)
    ledger.absorb(call("get_account", account_id="A1"), {"id": "A1", "balance": 1}, 1)
    ledger.absorb(call("get_account", account_id="A1"), {"id": "A1", "balance": 2}, 2)
    ledger.mark_stale(call("transfer", account_id="A1", amount=1), 3, result="ok")
    snapshot = ledger.snapshot()
    ledger.absorb(call("get_account", account_id="A1"), {"id": "A1", "balance": 3}, 4)
    ledger.mark_stale(call("transfer", account_id="A1", amount=1), 5, result="ok")
    assert len(snapshot.history("accounts.A1")) == 1 and len(snapshot.effects()) == 1
    ledger.restore(snapshot)
    assert len(ledger.history("accounts.A1")) == 1 and len(ledger.effects()) == 1
