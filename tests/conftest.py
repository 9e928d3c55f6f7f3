"""Options for the whole suite. Only hooks and fixtures live in conftest files; helpers are tests/support/."""

from __future__ import annotations

import gc
import os

import pytest
from hypothesis import HealthCheck, settings


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--snapshot-update", action="store_true", default=False,
                     help="rewrite the console's snapshot SVGs (tests/console/__snapshots__) instead of comparing "
                          "them; the same as UPDATE_SNAPSHOTS=1")


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection imported lives until the end: out of the collector's way (`gc.freeze`), so no full
    collection walks the modules and test items again."""
    gc.collect()
    gc.freeze()


def pytest_configure(config: pytest.Config) -> None:
    """The option reaches tests/console/snapshots.py as the variable it already reads; pytest-xdist workers get
    the same options, so they set it too.

    The randomised tests (marked `fuzz`) search as long as the Hypothesis profile says: `ci`, the default (what
    `make test` runs), is a small budget with the same examples every run (derandomised); `fuzz`
    (`HYPOTHESIS_PROFILE=fuzz`, what `make fuzz` runs) is the long random search. A test whose examples cost
    more than the profile's default scales it with `tests/support/budget.py`."""
    if config.getoption("--snapshot-update"):
        os.environ["UPDATE_SNAPSHOTS"] = "1"
    # The test process's garbage collector: Python's default thresholds (700, 10, 10) make a full collection
    # frequent, and each walks every live object; a worker of this suite holds hundreds of thousands (the
    # libraries, the apps' widgets, the upstream data), and full passes took a third of a worker's time. Young
    # cycles are still collected as often (every 10,000 allocations); full passes become rare.
    gc.set_threshold(10_000, 50, 100)
    config.addinivalue_line("markers", "fuzz: a randomised search, short in `make test` and long in `make fuzz` "
                                       "(the Hypothesis profile sets its budget: tests/support/budget.py)")
    quiet = [HealthCheck.too_slow, HealthCheck.data_too_large]
    settings.register_profile("ci", max_examples=12, deadline=None, derandomize=True, suppress_health_check=quiet)
    settings.register_profile("fuzz", max_examples=3000, deadline=None, suppress_health_check=quiet)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or "ci")
