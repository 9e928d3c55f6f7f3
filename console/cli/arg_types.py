"""The argparse types of the command line's numbers, and the option declarations shared by several commands that
need nothing but argparse.

A module of its own, with no import beyond the standard library, so that a command whose start is timed
(`ledgeragent mcp`, launched by a desktop client for every chat) parses its command line without loading the
error contract's or the console's dependencies (`console.cli.errors` and `console.cli.options` re-export these).
"""

from __future__ import annotations

import argparse

EVIDENCE_MODES = ("assist", "ask")


def non_negative_int(text: str) -> int:
    """argparse type: a whole number >= 0 (`--retries -1` is refused by the parser, exit 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def positive_int(text: str) -> int:
    value = non_negative_int(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be 1 or more, got 0")
    return value


def tcp_port(text: str) -> int:
    """argparse type: a TCP port, 0 (any free one) to 65535; anything else is the parser's one-line error."""
    value = non_negative_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"a TCP port is at most 65535, got {value}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, got {text}")
    return value


def non_negative_float(text: str) -> float:
    """argparse type: a finite number >= 0 (`--pace nan` or `--pace -1` is refused by the parser, exit 2)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number of 0 or more, got {text}")
    return value


def add_evidence_argument(parser: argparse._ActionsContainer, default: str | None, shown: str | None = None) -> None:
    """`--evidence assist|ask`: who makes the reads a write's rules lack (core.evidence). `default` None: the
    scenario's own mode if it names one, else assist (`shown` words the default when a command decides it
    otherwise)."""
    shown = shown or default or "assist, or the scenario's own"
    parser.add_argument("--evidence", choices=EVIDENCE_MODES, default=default,
                        help=f"assist: the gate reads missing or stale records itself before judging a write; ask: "
                             f"the model is told to read them (the paper's gate). Default: {shown}")
