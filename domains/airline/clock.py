"""The airline's clock: "now" is a fixed reference time, 2024-05-15 15:00 EST, as in tau2-bench.

Every time in the data (`created_at`, flight times) is a naive EST wall-clock string, so the gate compares
naive EST datetimes. The reference time travels to the predicates as `GateContext.now` (from
`Domain.reference_time`), so a domain built for another moment (`domains.airline.airline_domain(now=...)`,
e.g. per task) moves every time-dependent verdict with it: the 24-hour window, which flights have flown.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

EST = timezone(timedelta(hours=-5), "EST")
REFERENCE_TIME = datetime(2024, 5, 15, 15, 0, 0, tzinfo=EST)


def local_now(now: datetime | None) -> datetime:
    """`now` as a naive EST wall-clock time; the default reference time when the context has none."""
    moment = REFERENCE_TIME if now is None else now
    if moment.tzinfo is not None:
        moment = moment.astimezone(EST).replace(tzinfo=None)
    return moment


def parse_local(text: object) -> datetime | None:
    """A data timestamp ("YYYY-MM-DDTHH:MM:SS", EST) or None when it is not one."""
    if not isinstance(text, str):
        return None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed.astimezone(EST).replace(tzinfo=None) if parsed.tzinfo is not None else parsed


def describe(moment: datetime) -> str:
    """How the policy text states the time, e.g. '2024-05-15 15:00:00 EST'."""
    return f"{local_now(moment):%Y-%m-%d %H:%M:%S} EST"
