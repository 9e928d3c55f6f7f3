"""How two exports of a mock database differ, in rows and in money: what a compare run tells a stakeholder about
the end state ("$312.00 refunded to Visa credit_card_4521001; 1 row(s) differ: reservations UX789J status: ...").

Pure data: the input is `backend.export()` (table -> key -> record); nothing here knows a domain. Money is any
number under a key that names an amount (amount, balance, price, refund, total, fee, cost) and any entry a payment
history gained. Such an entry is said in words, never as JSON: its amount, whether it was refunded or charged (a
`transaction_type` of refund, or a negative amount, is a refund), and the payment method it names
(`payment_method_id` or `payment_id`), by its brand or kind when some record's `payment_methods` describes it (the
shape tau2's airline and retail data share) and by its id always.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

MONEY_WORDS = ("amount", "balance", "price", "refund", "total", "fee", "cost")
SHOWN = 80  # characters of a value in a change line
METHOD_WORDS = {"credit_card": "credit card", "gift_card": "gift card", "paypal": "PayPal"}


@dataclass(frozen=True)
class Payment:
    """An entry a payment history gained: how much, which way, to or from which method."""

    amount: float  # its absolute value
    refund: bool
    method: str  # "Mastercard credit_card_4821002", or "" when the entry names none

    def describe(self) -> str:
        way = "refunded" if self.refund else "charged"
        return f"${self.amount:,.2f} {way}" + (f" to {self.method}" if self.method else "")


@dataclass(frozen=True)
class FieldChange:
    table: str
    key: str
    path: str  # dotted path inside the record ("" for a record added or removed)
    old: Any
    new: Any
    payments: tuple[Payment, ...] = ()  # a payment history that gained entries: said in their words

    def describe(self) -> str:
        where = f"{self.table} {self.key}" + (f" {self.path}" if self.path else "")
        if self.path == "":
            return f"{where}: {'added' if self.old is None else 'removed'}"
        if self.payments:
            return f"{where}: " + "; ".join(p.describe() for p in self.payments)
        return f"{where}: {_short(self.old)} -> {_short(self.new)}"


@dataclass
class DbDiff:
    rows: list[tuple[str, str]] = field(default_factory=list)  # (table, key) of every record that differs
    changes: list[FieldChange] = field(default_factory=list)
    money: float = 0.0  # absolute value of every amount that changed or appeared, summed

    @property
    def empty(self) -> bool:
        return not self.rows

    @property
    def payments(self) -> list[Payment]:
        return [p for change in self.changes for p in change.payments]

    @property
    def record_changes(self) -> list[FieldChange]:
        """The changes `summary` does not already say (every one but the payments)."""
        return [c for c in self.changes if not c.payments]

    def summary(self) -> str:
        """Money first, in words (each payment, then any other amount that moved), then how many rows differ."""
        if self.empty:
            return "no difference"
        payments = self.payments
        other = self.money - sum(p.amount for p in payments)
        said = [p.describe() for p in payments] + ([f"${other:,.2f} moved"] if round(other, 2) else [])
        return f"{'; '.join(said) or 'no money moved'}; {len(self.rows)} row(s) differ"


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def _is_money(path: str) -> bool:
    last = path.rsplit(".", 1)[-1].lower()
    return any(word in last for word in MONEY_WORDS)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _methods(*exports: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Payment method id -> how to name it ("Mastercard credit_card_4821002"), from every `payment_methods`."""
    named: dict[str, str] = {}
    for export in exports:
        for rows in export.values():
            for record in rows.values() if isinstance(rows, Mapping) else ():
                methods = record.get("payment_methods") if isinstance(record, Mapping) else None
                for method_id, method in methods.items() if isinstance(methods, Mapping) else ():
                    if isinstance(method, Mapping):
                        named.setdefault(str(method_id), _method_words(str(method_id), method))
    return named


def _method_words(method_id: str, method: Mapping[str, Any]) -> str:
    brand, source = method.get("brand"), method.get("source")
    if isinstance(brand, str) and brand:
        kind = brand[:1].upper() + brand[1:]
    elif isinstance(source, str) and source:
        kind = METHOD_WORDS.get(source, source.replace("_", " "))
    else:
        return method_id
    return f"{kind} {method_id}"


def _payment(entry: Any, methods: Mapping[str, str]) -> Payment | None:
    amount = _number(entry.get("amount")) if isinstance(entry, Mapping) else None
    if amount is None:
        return None
    assert isinstance(entry, Mapping)
    refund = entry.get("transaction_type") == "refund" or amount < 0
    method = entry.get("payment_method_id", entry.get("payment_id"))
    named = methods.get(method, method) if isinstance(method, str) else ""
    return Payment(abs(amount), refund, named)


class _Walk:
    def __init__(self, out: DbDiff, methods: Mapping[str, str]) -> None:
        self.out = out
        self.methods = methods

    def walk(self, table: str, key: str, path: str, old: Any, new: Any) -> None:
        out = self.out
        if old == new:
            return
        if isinstance(old, Mapping) and isinstance(new, Mapping):
            for name in sorted(set(old) | set(new), key=str):
                self.walk(table, key, f"{path}.{name}" if path else str(name), old.get(name), new.get(name))
            return
        if isinstance(old, list) and isinstance(new, list) and "payment" in path.lower():
            gained = list(self._gained(old, new))
            out.money += sum(p.amount for p in gained)
            # said in words only when every new entry is a payment and nothing before it changed
            whole = bool(gained) and len(gained) == len(new) - len(old) and new[: len(old)] == old
            out.changes.append(FieldChange(table, key, path, old, new, tuple(gained) if whole else ()))
            return
        out.changes.append(FieldChange(table, key, path, old, new))
        if _is_money(path):
            before, after = _number(old), _number(new)
            if before is not None or after is not None:
                out.money += abs((after or 0.0) - (before or 0.0))

    def _gained(self, old: list[Any], new: list[Any]) -> Iterator[Payment]:
        for entry in new[len(old):] if new[: len(old)] == old else []:
            payment = _payment(entry, self.methods)
            if payment is not None:
                yield payment


def db_diff(before: Mapping[str, Mapping[str, Any]], after: Mapping[str, Mapping[str, Any]]) -> DbDiff:
    """Every record of `after` that differs from `before` (added, removed or changed), field by field."""
    out = DbDiff()
    walk = _Walk(out, _methods(after, before))
    for table in sorted(set(before) | set(after)):
        old_rows, new_rows = before.get(table, {}), after.get(table, {})
        for key in sorted(set(old_rows) | set(new_rows), key=str):
            old, new = old_rows.get(key), new_rows.get(key)
            if old == new:
                continue
            out.rows.append((table, str(key)))
            if old is None or new is None:
                out.changes.append(FieldChange(table, str(key), "", old, new))
                continue
            walk.walk(table, str(key), "", old, new)
    return out
