"""How long a randomised test searches: short in `make test`, long in `make fuzz`.

The Hypothesis profile (registered in tests/conftest.py, chosen with HYPOTHESIS_PROFILE) is the one switch:
`ci` by default, `fuzz` for the long run. Tests that are not Hypothesis tests, or whose examples cost far more
than the profile's default number of them, take their budget from here so the same switch sets it.
"""

from __future__ import annotations

from hypothesis import settings


def fuzzing() -> bool:
    """Whether this run is the long search (`make fuzz`)."""
    return settings.get_current_profile_name() == "fuzz"


def budget(short: int, long: int) -> int:
    """`short` in `make test`, `long` in `make fuzz`."""
    return long if fuzzing() else short
