"""Runs inside a fresh interpreter for the console figures (cold start, event append, memory, layout switch).

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
from collections.abc import Callable
from pathlib import Path
from typing import Any

TRANSCRIPT_EVENTS = 2_000
LEDGER_ENTRIES = 5_000


async def first_frame() -> None:
    """`ledgeragent` starts in console.cli.main (its module imports included), then makes the app and draws it."""
    import console.cli.main  # noqa: F401  - the entry point's imports are part of every cold start
    from console.tui.app import make_app

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


def timed_frames(screen: Any) -> tuple[asyncio.Event, list[int], Callable[[bool], None]]:
    """Wrap the screen's update timer: returns (drawn event, [render ns], arm(flag)) for timing one frame."""
    drawn = asyncio.Event()
    render = [0]
    armed = [False]
    original_update = screen._on_timer_update

    def timed_update() -> None:
        start = time.perf_counter_ns()
        original_update()
        if armed[0]:
            render[0] += time.perf_counter_ns() - start
            drawn.set()

    screen._on_timer_update = timed_update
    screen._update_timer._callback = timed_update  # the timer holds the bound method it was given

    def arm(flag: bool) -> None:
        armed[0] = flag
        if not flag:
            render[0] = 0
            drawn.clear()

    return drawn, render, arm


def layout_shown(app: Any, width: int) -> bool:
    """True when what the compositor holds is the layout for `width` columns, complete: the screen is that
    wide; stacked (< 110): only the front pane is mapped, at the panes' full width; side by side: all three
    panes are mapped and fill the width together; the transcript's lines on screen are wrapped at its new width;
    and the footer offers the "Next pane" key exactly when stacked (it is hidden side by side)."""
    from textual.widgets._footer import FooterKey

    from console.tui.widgets.session_panes import NARROW_WIDTH

    main = app.main
    panes = main.panes
    mapped = main._compositor.visible_widgets  # what the frame was drawn from (built for it, so no extra work)
    if main._compositor.size.width != width or panes not in mapped:
        return False
    full = mapped[panes][0].width
    shown = [pane for pane in (panes.transcript, panes.ledger, panes.gate) if pane in mapped]
    if width < NARROW_WIDTH:
        if [pane.id for pane in shown] != [panes.front] or mapped[shown[0]][0].width != full:
            return False
    elif len(shown) != 3 or sum(mapped[pane][0].width for pane in shown) != full:
        return False
    cycle_key = any(isinstance(w, FooterKey) and w.action == "cycle_pane" for w in mapped)
    if cycle_key != (width < NARROW_WIDTH):
        return False
    transcript = panes.transcript
    if transcript not in mapped:
        return True
    if transcript._width != transcript._content_width():
        return False
    # the entries on screen are wrapped at that width (the others may still wait for the catch-up)
    top = round(transcript.scroll_y)
    height = transcript.scrollable_content_region.height
    shown = zip(transcript.items, transcript._starts, strict=True)
    return all(entry.width == transcript._width for entry, start in shown
               if start < top + height and start + len(entry.strips) > top)


async def layout_switch(samples_wanted: int) -> None:
    """Resize across the stacked-layout breakpoint (120 <-> 100 columns) with a finished session on screen.

    Each sample runs from posting the terminal's Resize event to the app (as a driver does) to the first frame
    handed to the display (`App._display`, every frame goes through it: the resize handler's own frame and
    the update timer's) in which `layout_shown` holds. Wall and CPU (process time) are both recorded, with the
    number of frames drawn up to and including that one. Textual's 1/120 s resize debounce is in the wall time.
    """
    from textual import events
    from textual.geometry import Size

    from console.tui.app import make_app

    with tempfile.TemporaryDirectory() as tmp:
        app = make_app(root=Path(tmp))
        async with app.run_test(size=(120, 35)) as pilot:
            await pilot.press("space")
            while app.live is None or app.live.state.phase != "ended":
                await pilot.pause(0.05)
            await pilot.pause()
            target = [0]
            frames = [0]
            done = asyncio.Event()
            stamps = [0, 0]
            original_display = app._display

            def display(screen: Any, renderable: Any) -> None:
                original_display(screen, renderable)
                if renderable is None or done.is_set() or not target[0]:
                    return
                frames[0] += 1
                if layout_shown(app, target[0]):
                    stamps[:] = [time.perf_counter_ns(), time.process_time_ns()]
                    done.set()

            app._display = display  # type: ignore[method-assign]
            driver = app._driver
            assert driver is not None
            samples: list[int] = []
            cpu: list[int] = []
            frame_counts: list[int] = []
            for index in range(samples_wanted):
                width = 100 if index % 2 == 0 else 120
                await pilot.pause()
                done.clear()
                frames[0] = 0
                target[0] = width
                start, start_cpu = time.perf_counter_ns(), time.process_time_ns()
                driver._size = Size(width, 35)  # as Pilot.resize_terminal does for the headless driver
                app.post_message(events.Resize(Size(width, 35), Size(width, 35)))
                await asyncio.wait_for(done.wait(), timeout=5)
                samples.append(stamps[0] - start)
                cpu.append(stamps[1] - start_cpu)
                frame_counts.append(frames[0])
                target[0] = 0
                await pilot.pause()
                await pilot.pause()
                assert app.main.panes.narrow == (width < 110), "the layout did not switch"
                assert layout_shown(app, width), "the layout did not stay switched"
            print(json.dumps({"samples_ns": samples, "cpu_ns": cpu, "frames": frame_counts}), flush=True)


async def append(samples_wanted: int, width: int = 160, height: int = 45) -> None:
    from console.tui.app import make_app
    from console.tui.screens.main import SessionEvent
    from core.tools import ToolCall

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        pattern = await recorded_events(home)
        app = make_app(root=home)
        async with app.run_test(size=(width, height)) as pilot:
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

            main = app.main
            for index in range(TRANSCRIPT_EVENTS):
                main.post_message(SessionEvent(next_event(index)))
                if index % 100 == 99:
                    await pilot.pause()
            await pilot.pause()
            # Two numbers per event. `work`: the handler plus the screen updates it causes (layout, compositing,
            # drawing) — the CPU an append costs. `latency`: until that frame is drawn, which also includes
            # waiting for Textual's 60 fps update timer (up to 16.7 ms of idle time by design).
            drawn, render, arm = timed_frames(main)
            samples: list[int] = []
            latencies: list[int] = []
            for index in range(samples_wanted):
                event = next_event(TRANSCRIPT_EVENTS + index)
                arm(False)
                start = time.perf_counter_ns()
                main._event(SessionEvent(event))
                handler_ns = time.perf_counter_ns() - start
                arm(True)
                await asyncio.wait_for(drawn.wait(), timeout=5)
                latencies.append(time.perf_counter_ns() - start)
                samples.append(handler_ns + render[0])
                await asyncio.sleep(0)
            peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            print(json.dumps({"samples_ns": samples, "latency_ns": latencies, "peak_rss_bytes": peak_kib * 1024,
                              "ledger_entries": len(ledger), "transcript_events": TRANSCRIPT_EVENTS}), flush=True)


async def compare_append(samples_wanted: int, width: int = 160, height: int = 45) -> None:
    """`console --compare` with both sides full (2,000 events each, a 5,000-entry ledger on the LedgerAgent
    side), then events appended the way stepping both sides together delivers them: one to the baseline, one to
    LedgerAgent, each timed from its handler (panes and difference strip, which re-reads both traces) to the
    frame it causes. The events are also in each side's history, so the strip works on a real-sized trace."""
    from console.runtime.live import SessionSpec
    from console.tui.compare_app import CompareConsole
    from console.tui.screens.compare import SideEvent
    from core.tools import ToolCall

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        pattern = await recorded_events(home)
        app = CompareConsole(SessionSpec(domain="retail", scenario="refund-to-original-payment"), root=home)
        async with app.run_test(size=(width, height)) as pilot:
            screen = app.compare
            while screen.pair is None or not screen.panes:
                await pilot.pause(0.05)
            pair = screen.pair
            ledger = big_ledger(LEDGER_ENTRIES)
            assert pair["ledger"].session is not None
            pair["ledger"].session.agent.ledger = ledger
            screen.panes["ledger"].ledger.sync(ledger)
            seq = {"fc": 0, "ledger": 0}

            def next_event(side: str, index: int) -> Any:
                seq[side] += 1
                event = pattern[index % len(pattern)]
                if side == "fc" and event.type in ("gate_decision", "ledger_updated", "ledger_staled"):
                    event = pattern[(index + 1) % len(pattern)]  # the baseline has no gate and no ledger events
                if event.type == "ledger_updated" and side == "ledger":
                    order_id = f"#X{seq[side]:07d}"
                    ledger.absorb(ToolCall(f"n{seq[side]}", "get_order_details", {"order_id": order_id}),
                                  {"order_id": order_id, "status": "delivered"}, seq[side])
                    event = event.model_copy(update={"added": [f"orders.{order_id}"], "changed": []})
                event = event.model_copy(update={"seq": seq[side]})
                pair[side].bus.history.append(event)
                return event

            for index in range(TRANSCRIPT_EVENTS):
                for side in ("fc", "ledger"):
                    screen.post_message(SideEvent(side, next_event(side, index)))
                if index % 100 == 99:
                    await pilot.pause()
            await pilot.pause()
            drawn, render, arm = timed_frames(screen)
            samples: dict[str, list[int]] = {"fc": [], "ledger": []}
            for index in range(samples_wanted):
                for side in ("fc", "ledger"):
                    event = next_event(side, TRANSCRIPT_EVENTS + index)
                    arm(False)
                    start = time.perf_counter_ns()
                    screen._event(SideEvent(side, event))
                    handler_ns = time.perf_counter_ns() - start
                    arm(True)
                    await asyncio.wait_for(drawn.wait(), timeout=5)
                    samples[side].append(handler_ns + render[0])
                    await asyncio.sleep(0)
            print(json.dumps({"samples_ns": samples, "transcript_events": TRANSCRIPT_EVENTS,
                              "ledger_entries": len(ledger)}), flush=True)


def main(argv: list[str]) -> None:
    if argv[:1] == ["first-frame"]:
        asyncio.run(first_frame())
    elif argv[:1] == ["append"]:
        size = [int(n) for n in argv[2].split("x")] if len(argv) > 2 else [160, 45]
        asyncio.run(append(int(argv[1]) if len(argv) > 1 else 200, size[0], size[1]))
    elif argv[:1] == ["compare-append"]:
        size = [int(n) for n in argv[2].split("x")] if len(argv) > 2 else [160, 45]
        asyncio.run(compare_append(int(argv[1]) if len(argv) > 1 else 200, size[0], size[1]))
    elif argv[:1] == ["layout"]:
        asyncio.run(layout_switch(int(argv[1]) if len(argv) > 1 else 40))
    else:
        raise SystemExit("usage: python -m benchmarks.console_child first-frame | append [N [WxH]] | "
                         "compare-append [N [WxH]] | layout [N]")


if __name__ == "__main__":
    main(sys.argv[1:])
