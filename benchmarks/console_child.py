"""Runs inside a fresh interpreter for the console figures (cold start, event append, memory).

`python -m benchmarks.console_child first-frame` prints `ready` once the console has composed and drawn its
first frame; `python -m benchmarks.console_child append N` fills the panes with 2,000 events and a 5,000-entry
ledger, then times N more event appends and prints the samples and the peak RSS as JSON.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TRANSCRIPT_EVENTS = 2_000
LEDGER_ENTRIES = 5_000


async def first_frame() -> None:
    from console.app import make_app

    with tempfile.TemporaryDirectory() as home:
        app = make_app(root=Path(home))
        async with app.run_test(size=(160, 45)) as pilot:
            await pilot.pause()
            print("ready", flush=True)


async def recorded_events(home: Path) -> list[Any]:
    """The events of a real scripted retail session: the shapes the panes see in practice."""
    from core.scenario import list_scenarios, load_scenario
    from core.session import Session
    from domains.retail import DOMAIN
    from mock_backends.retail import RetailBackend

    scenario = load_scenario(list_scenarios(DOMAIN.scenarios_dir)["refund-to-original-payment"])
    backend = await RetailBackend.open(home / "source.sqlite")
    session = Session(domain=DOMAIN, backend=backend, model=scenario.build_model(), user=scenario.build_user())
    await session.run()
    await backend.close()
    return [e for e in session.bus.history if e.type not in ("session_started", "session_ended")]


def big_ledger(entries: int) -> Any:
    from core.ledger import Ledger
    from core.tools import ToolCall
    from domains.retail import DOMAIN

    ledger = Ledger(DOMAIN.path_map)
    for n in range(entries):
        order_id = f"#W{n:07d}"
        record = {"order_id": order_id, "user_id": f"user_{n % 500}", "status": "pending",
                  "items": [{"item_id": str(1000000000 + n), "price": 10.0 + n % 7}],
                  "payment_history": [{"transaction_type": "payment", "amount": 10.0, "payment_method_id": "x"}]}
        ledger.absorb(ToolCall(f"c{n}", "get_order_details", {"order_id": order_id}), record, 1)
    return ledger


async def append(samples_wanted: int) -> None:
    from console.app import SessionEvent, make_app
    from core.tools import ToolCall

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        pattern = await recorded_events(home)
        app = make_app(root=home)
        async with app.run_test(size=(160, 45)) as pilot:
            assert app.live is not None and app.live.session is not None
            ledger = big_ledger(LEDGER_ENTRIES)
            app.live.session.agent.ledger = ledger
            app.ledger_pane.sync(ledger)
            seq = 0

            def next_event(index: int) -> Any:
                nonlocal seq
                seq += 1
                event = pattern[index % len(pattern)]
                if event.type == "ledger_updated":
                    order_id = f"#X{seq:07d}"
                    ledger.absorb(ToolCall(f"n{seq}", "get_order_details", {"order_id": order_id}),
                                  {"order_id": order_id, "status": "delivered"}, seq)
                    event = event.model_copy(update={"added": [f"orders.{order_id}"], "changed": []})
                return event.model_copy(update={"seq": seq})

            for index in range(TRANSCRIPT_EVENTS):
                app.post_message(SessionEvent(next_event(index)))
                if index % 100 == 99:
                    await pilot.pause()
            await pilot.pause()
            # Two numbers per event. `work`: the handler plus the screen updates it causes (layout, compositing,
            # drawing) — the CPU an append costs. `latency`: until that frame is drawn, which also includes
            # waiting for Textual's 60 fps update timer (up to 16.7 ms of idle time by design).
            drawn = asyncio.Event()
            handled = False
            render_ns = 0
            screen = app.screen
            original_update = screen._on_timer_update

            def timed_update() -> None:
                nonlocal render_ns
                start = time.perf_counter_ns()
                original_update()
                if handled:
                    render_ns += time.perf_counter_ns() - start
                    drawn.set()

            screen._on_timer_update = timed_update  # type: ignore[method-assign]
            screen._update_timer._callback = timed_update  # the timer holds the bound method it was given
            samples: list[int] = []
            latencies: list[int] = []
            for index in range(samples_wanted):
                event = next_event(TRANSCRIPT_EVENTS + index)
                handled = False
                render_ns = 0
                drawn.clear()
                start = time.perf_counter_ns()
                app._event(SessionEvent(event))
                handler_ns = time.perf_counter_ns() - start
                handled = True
                await asyncio.wait_for(drawn.wait(), timeout=5)
                latencies.append(time.perf_counter_ns() - start)
                samples.append(handler_ns + render_ns)
                await asyncio.sleep(0)
            peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            print(json.dumps({"samples_ns": samples, "latency_ns": latencies, "peak_rss_bytes": peak_kib * 1024,
                              "ledger_entries": len(ledger), "transcript_events": TRANSCRIPT_EVENTS}), flush=True)


def main(argv: list[str]) -> None:
    if argv[:1] == ["first-frame"]:
        asyncio.run(first_frame())
    elif argv[:1] == ["append"]:
        asyncio.run(append(int(argv[1]) if len(argv) > 1 else 200))
    else:
        raise SystemExit("usage: python -m benchmarks.console_child first-frame | append [N]")


if __name__ == "__main__":
    main(sys.argv[1:])
