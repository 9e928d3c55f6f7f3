"""Options for the whole suite. Only hooks and fixtures live in conftest files; helpers are tests/support/."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--snapshot-update", action="store_true", default=False,
                     help="rewrite the console's snapshot SVGs (tests/console/__snapshots__) instead of comparing "
                          "them; the same as UPDATE_SNAPSHOTS=1")


def pytest_configure(config: pytest.Config) -> None:
    """The option reaches tests/console/snapshots.py as the variable it already reads; pytest-xdist workers get
    the same options, so they set it too.

    The randomised tests (marked `fuzz`) search as long as the Hypothesis profile says: `ci`, the default (what
    `make test` runs), is a small budget with the same examples every run (derandomised); `fuzz`
    (`HYPOTHESIS_PROFILE=fuzz`, what `make fuzz` runs) is the long random search. A test whose examples cost
    more than the profile's default scales it with `tests/support/budget.py`."""
    if config.getoption("--snapshot-update"):
        os.environ["UPDATE_SNAPSHOTS"] = "1"
    config.addinivalue_line("markers", "fuzz: a randomised search, short in `make test` and long in `make fuzz` "
                                       "(the Hypothesis profile sets its budget: tests/support/budget.py)")
    quiet = [HealthCheck.too_slow, HealthCheck.data_too_large]
    settings.register_profile("ci", max_examples=12, deadline=None, derandomize=True, suppress_health_check=quiet)
    settings.register_profile("fuzz", max_examples=3000, deadline=None, suppress_health_check=quiet)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or "ci")
