"""How two exports of a mock database differ, in rows and in money: what a compare run tells a stakeholder about
the end state ("1 row changed: reservation UX789J active -> cancelled; $312.00 moved").

Pure data: the input is `backend.export()` (table -> key -> record); nothing here knows a domain. Money is any
number under a key that names an amount (amount, balance, price, refund, total, fee, cost) and any list entry of
payment history that one side has and the other does not.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MONEY_WORDS = ("amount", "balance", "price", "refund", "total", "fee", "cost")
SHOWN = 80  # characters of a value in a change line


@dataclass(frozen=True)
class FieldChange:
    table: str
    key: str
    path: str  # dotted path inside the record ("" for a record added or removed)
    old: Any
    new: Any

    def describe(self) -> str:
        where = f"{self.table} {self.key}" + (f" {self.path}" if self.path else "")
        if self.path == "":
            return f"{where}: {'added' if self.old is None else 'removed'}"
        return f"{where}: {_short(self.old)} -> {_short(self.new)}"


@dataclass
class DbDiff:
    rows: list[tuple[str, str]] = field(default_factory=list)  # (table, key) of every record that differs
    changes: list[FieldChange] = field(default_factory=list)
    money: float = 0.0  # absolute value of every amount that changed or appeared, summed

    @property
    def empty(self) -> bool:
        return not self.rows

    def summary(self) -> str:
        if self.empty:
            return "no difference"
        money = f"; ${self.money:,.2f} moved" if self.money else "; no money moved"
        return f"{len(self.rows)} row(s) differ{money}"


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def _is_money(path: str) -> bool:
    last = path.rsplit(".", 1)[-1].lower()
    return any(word in last for word in MONEY_WORDS)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _walk(table: str, key: str, path: str, old: Any, new: Any, out: DbDiff) -> None:
    if old == new:
        return
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for name in sorted(set(old) | set(new), key=str):
            _walk(table, key, f"{path}.{name}" if path else str(name), old.get(name), new.get(name), out)
        return
    if isinstance(old, list) and isinstance(new, list) and "payment" in path.lower():
        for entry in new[len(old):] if new[: len(old)] == old else []:
            amount = _number(entry.get("amount")) if isinstance(entry, Mapping) else None
            out.money += abs(amount or 0.0)
        out.changes.append(FieldChange(table, key, path, old, new))
        return
    out.changes.append(FieldChange(table, key, path, old, new))
    if _is_money(path):
        before, after = _number(old), _number(new)
        if before is not None or after is not None:
            out.money += abs((after or 0.0) - (before or 0.0))


def db_diff(before: Mapping[str, Mapping[str, Any]], after: Mapping[str, Mapping[str, Any]]) -> DbDiff:
    """Every record of `after` that differs from `before` (added, removed or changed), field by field."""
    out = DbDiff()
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
            _walk(table, str(key), "", old, new, out)
    return out
