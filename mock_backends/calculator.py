"""tau2-bench's `calculate` tool without `eval`.

tau2 filters the characters and then calls `eval`. The filter still admits `9**9**9**9`, which would
hang the session, so we walk the syntax tree instead: same operators, same Python arithmetic (so the
same results and the same error texts for division by zero or bad syntax), plus a bound on powers.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import cast

ALLOWED = frozenset("0123456789+-*/(). ")
_MAX_EXPONENT = 1000
_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[float], float]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def _eval(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return cast(float, node.value)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_EXPONENT and abs(left) not in (0, 1):
            raise ValueError("Exponent too large")
        return _BINARY[type(node.op)](left, right)
    raise ValueError("Invalid expression")


def calculate(expression: str) -> str:
    """The result rounded to 2 decimals, as text (tau2: `str(round(float(eval(expr)), 2))`)."""
    if not all(char in ALLOWED for char in expression):
        raise ValueError("Invalid characters in expression")
    tree = compile(expression, "<string>", "eval", ast.PyCF_ONLY_AST)
    return str(round(float(_eval(tree)), 2))
