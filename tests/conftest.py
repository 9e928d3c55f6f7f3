"""Options for the whole suite. Only hooks and fixtures live in conftest files; helpers are tests/support/."""

from __future__ import annotations

import os

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--snapshot-update", action="store_true", default=False,
                     help="rewrite the console's snapshot SVGs (tests/console/__snapshots__) instead of comparing "
                          "them; the same as UPDATE_SNAPSHOTS=1")


def pytest_configure(config: pytest.Config) -> None:
    """The option reaches tests/console/snapshots.py as the variable it already reads; pytest-xdist workers get
    the same options, so they set it too."""
    if config.getoption("--snapshot-update"):
        os.environ["UPDATE_SNAPSHOTS"] = "1"
