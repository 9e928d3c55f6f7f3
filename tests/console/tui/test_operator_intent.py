"""The operator's choice is the decision: no key, focus or Enter records an override nobody chose, a dialog
never takes keys typed for somewhere else, and its labels say what each key does for the verdict on screen.

Each test here is a way a new operator broke it, driven with keys as they did; each failed on the console
before the change (the review modal opened by itself and took the keys; Enter in its reason box went to
Force-allow; its buttons were below the fold at 120x35; the filter box showed only its top border; the compose
form had an invisible Tab stop).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Button, Input, TextArea

from console.runtime.live import SupervisionMode
from console.tui.app import OperatorConsole
from console.tui.screens.compose import ComposeScreen
from console.tui.screens.help import HelpScreen
from console.tui.screens.review import ReviewScreen
from tests.support.pilot import compose_tool_call, open_review, wait_for, wait_for_screen
from tests.support.screen import screen_lines
from tests.support.shown import shown

N, W = SupervisionMode.APPROVE_NON_ALLOW, SupervisionMode.APPROVE_WRITES


def decisions(app: OperatorConsole) -> list[Any]:
    assert app.live is not None
    return [e for e in app.live.bus.history if e.type == "supervisor_decision"]


def ran(app: OperatorConsole, tool: str) -> list[Any]:
    assert app.live is not None
    return [e for e in app.live.bus.history if e.type == "tool_result" and e.call.name == tool and e.executed]


def footer_keys(screen: Any) -> dict[str, str]:
    """What the footer lists: key -> description, only the keys that do something here."""
    return {key: b.binding.description for key, b in screen.active_bindings.items()
            if b.binding.show and b.enabled}


def on_screen(widget: Any, size: tuple[int, int]) -> bool:
    assert widget.app.size == size
    return shown(widget)


# ------------------------------------------------------------------------------------- a veto stays a veto


@pytest.mark.parametrize(("domain", "scenario", "tool"), [
    ("airline", "cancel-outside-window", "cancel_reservation"),
    ("telehealth", "cancel-completed-appointment", "cancel_appointment")])
async def test_v_then_the_message_then_enter_enter_is_a_veto(console_app: Callable[..., OperatorConsole],
                                                             domain: str, scenario: str, tool: str) -> None:
    """At a BLOCK: `v` (write the message to veto), the message, Enter, Enter. It was recorded as a force-allow
    with the veto message as its reason, and the BLOCKed write ran."""
    app = console_app(domain=domain, scenario=scenario, mode=N, operator="tester")
    async with app.run_test(size=(120, 35)) as pilot:
        await pilot.press("space")
        screen = await open_review(pilot, app)
        assert screen.verdict == "BLOCK"
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.focused, Input))
        await pilot.press(*"No. Tell her about the 24-hour rule", "enter", "enter")
        await wait_for(pilot, lambda: bool(decisions(app)))
        assert [(d.decision, d.reason) for d in decisions(app)] == [("veto", "No. Tell her about the 24-hour rule")]
        await wait_for(pilot, lambda: any(e.type == "tool_result" and e.call.name == tool
                                          for e in app.live.bus.history))  # type: ignore[union-attr]
        assert not ran(app, tool)


async def test_enter_in_the_reason_box_with_nothing_started_goes_to_the_safe_button(
        console_app: Callable[..., OperatorConsole]) -> None:
    """Not to Force-allow: on a BLOCK the safe button accepts it, and a second Enter does that."""
    app = console_app(scenario="other-customers-order", mode=N)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("space")
        screen = await open_review(pilot, app)
        screen.query_one("#review-reason", Input).focus()
        await pilot.press(*"ok", "enter")
        assert app.focused is screen.query_one("#approve")
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(decisions(app)))
        assert [(d.decision, d.reason) for d in decisions(app)] == [("accept_verdict", "ok")]
        assert not ran(app, "cancel_pending_order")


async def test_f_then_the_reason_then_enter_force_allows(console_app: Callable[..., OperatorConsole]) -> None:
    """Force-allow is two deliberate acts: its key, and a reason; Enter in the box then completes it."""
    app = console_app(scenario="other-customers-order", mode=N, operator="dana")
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("space")
        screen = await open_review(pilot, app)
        assert str(screen.query_one("#force", Button).label) == "Force-allow despite BLOCK [f]"
        await pilot.press("f")
        assert app.screen is screen and "force-allow despite the BLOCK" in str(screen.query_one("#review-error")
                                                                                 .render())
        await pilot.press("enter")  # an empty reason is refused, and nothing is decided
        assert app.screen is screen and not decisions(app)
        await pilot.press(*"spouse, verified", "enter")
        await wait_for(pilot, lambda: bool(decisions(app)))
        assert [(d.decision, d.reason, d.who) for d in decisions(app)] == [("force_allow", "spouse, verified", "dana")]


async def test_an_empty_veto_message_is_refused(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(mode=W)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("space")
        screen = await open_review(pilot, app)
        await pilot.press("v")
        await pilot.press("space", "space", "enter")  # blanks only: still no message
        assert app.screen is screen and not decisions(app)
        assert "write the message for the model" in str(screen.query_one("#review-error").render()).lower()


# ------------------------------------------------------------------ keys typed elsewhere stay where they were


async def test_typing_in_the_customer_seat_as_a_review_comes_never_decides(
        console_app: Callable[..., OperatorConsole]) -> None:
    """`yes`, and the next sentence typed on: the review dialog opened mid-sentence and its letters decided the
    write under the operator's name, and the sentence was lost."""
    app = console_app(seat="customer", mode=W, operator="tester")
    async with app.run_test(size=(120, 35)) as pilot:
        box = app.main.input_box
        await wait_for(pilot, lambda: box.has_focus)
        await pilot.press(*"cancel order #W4821002", "enter")
        live = app.live
        assert live is not None
        await wait_for(pilot, lambda: live.human is not None and live.human.waiting
                       and any(e.type == "assistant_turn" and "cancel" in (e.text or "") for e in live.bus.history))
        await pilot.press(*"yes", "enter")
        await wait_for(pilot, lambda: live.supervisor.pending is not None)  # the session asks for a review now
        await pilot.press(*"and also a question about my other order")
        await pilot.pause()
        assert box.value == "and also a question about my other order"
        assert not decisions(app) and not isinstance(app.screen, ReviewScreen)
        assert "Press F3" in "\n".join(screen_lines(app))
        assert footer_keys(app.main).get("f3") == "Review the write"
        screen = await open_review(pilot, app)  # F3 works from inside the box
        await pilot.press("a")
        await wait_for(pilot, lambda: bool(decisions(app)))
        assert [d.decision for d in decisions(app)] == [screen.verdict == "ALLOW" and "approve" or "accept_verdict"]
        await wait_for(pilot, lambda: app.screen is app.main)
        assert box.value == "and also a question about my other order"


async def test_a_click_on_the_announcement_opens_the_review(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(scenario="other-customers-order", mode=N)
    async with app.run_test(size=(120, 35)) as pilot:
        await pilot.press("space")
        await wait_for(pilot, lambda: app.main.review_waiting)
        await pilot.pause()
        assert not isinstance(app.screen, ReviewScreen)  # announced only
        await pilot.click("#review-notice")
        screen = await wait_for_screen(pilot, app, ReviewScreen)
        assert screen.verdict == "BLOCK" and not decisions(app)


async def test_a_review_left_undecided_stays_announced_and_decides_nothing(
        console_app: Callable[..., OperatorConsole]) -> None:
    """Escape leaves the dialog: the call keeps waiting, announced, and nothing is recorded (it used to count as
    an approval)."""
    app = console_app(scenario="other-customers-order", mode=N)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("space")
        await open_review(pilot, app)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.main and app.main.review_waiting)
        assert not decisions(app) and app.live is not None and app.live.supervisor.pending is not None
        screen = await open_review(pilot, app)
        await pilot.press("a")
        await wait_for(pilot, lambda: bool(decisions(app)))
        assert [d.decision for d in decisions(app)] == ["accept_verdict"] and screen.verdict == "BLOCK"


# ------------------------------------------------------------------------- labels say the real effect


async def test_the_footer_and_buttons_say_what_a_and_f_do_for_this_verdict(
        console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(mode=W)
    async with app.run_test(size=(120, 35)) as pilot:
        await pilot.press("space")
        screen = await open_review(pilot, app)
        assert screen.verdict == "REVISE"
        keys = footer_keys(screen)
        assert keys["a"] == "Accept REVISE (don't run)" and keys["f"] == "Force-allow despite REVISE"
        assert str(screen.query_one("#approve", Button).label) == "Accept REVISE (don't run) [a]"
        for button in screen.query(Button):  # every button on screen at 120x35, not below the fold
            assert on_screen(button, (120, 35)), button.id
        assert on_screen(screen.query_one("#review-reason"), (120, 35))
        await pilot.press("question_mark")
        help_screen = await wait_for_screen(pilot, app, HelpScreen)
        assert ("f", "Force-allow despite REVISE") in help_screen.keys
        assert ("a", "Approve (run it)") not in help_screen.keys
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen)
        await pilot.press("a")  # accept the REVISE: the plan proposes the corrected call, an ALLOW
        screen = await open_review(pilot, app)
        assert screen.verdict == "ALLOW"
        keys = footer_keys(screen)
        assert keys["a"] == "Approve (run it)" and "f" not in keys  # f does nothing on an ALLOW: not listed
        assert not screen.query("#force")
        await pilot.press("question_mark")
        help_screen = await wait_for_screen(pilot, app, HelpScreen)
        assert not [k for k, _ in help_screen.keys if k == "f"]


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (120, 35), (160, 45), (200, 60)])
async def test_the_review_buttons_and_reason_box_are_on_screen_at_every_size(
        console_app: Callable[..., OperatorConsole], size: tuple[int, int]) -> None:
    app = console_app(domain="airline", scenario="cancel-outside-window", mode=N)
    async with app.run_test(size=size) as pilot:
        await pilot.press("space")
        screen = await open_review(pilot, app)
        await pilot.pause()
        for widget in [*screen.query(Button), screen.query_one("#review-reason")]:
            assert on_screen(widget, size), (widget.id, widget.region)


async def test_the_arguments_hint_names_the_key_that_leaves_the_box(
        console_app: Callable[..., OperatorConsole]) -> None:
    """The box said "Tab leaves, then e re-gates", but Tab went to the reason box, where `e` is a letter."""
    import json

    app = console_app(mode=W)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("space")
        screen = await open_review(pilot, app)
        area = screen.query_one("#review-arguments", TextArea)
        area.focus()
        await pilot.pause()
        hint = str(area.border_title)
        key = "escape" if "escape leaves" in hint else "tab" if "Tab leaves" in hint else ""
        assert key, hint
        area.text = json.dumps({"order_id": "#W4821001", "item_ids": ["2000000011"],
                                "payment_method_id": "gift_card_4821001"})
        await pilot.press(key, "e")  # as the hint says
        await wait_for(pilot, lambda: bool(decisions(app)))
        assert [d.decision for d in decisions(app)] == ["edit"]


# --------------------------------------------------------------------------- the filter box and replay


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_the_filter_box_shows_what_is_typed(console_app: Callable[..., OperatorConsole],
                                                  size: tuple[int, int]) -> None:
    app = console_app()
    async with app.run_test(size=size) as pilot:
        await pilot.press("slash")
        await pilot.press(*"zqxw")
        await pilot.pause()
        assert "zqxw" in "\n".join(screen_lines(app))


async def test_end_in_replay_moves_the_slider_after_the_filter(console_app: Callable[..., OperatorConsole],
                                                               tmp_path: Path) -> None:
    from console.tui.screens.replay import ReplayScreen, StepSlider, load_replay

    app = console_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("space")
        await wait_for(pilot, lambda: app.live is not None and app.live.state.phase == "ended")
        assert app.live is not None and app.live.folder is not None
        events, domain, _ = load_replay(app.live.folder / "trace.jsonl")
        app.push_screen(ReplayScreen(events, domain, app.live.folder / "trace.jsonl"))
        replay = await wait_for_screen(pilot, app, ReplayScreen)
        slider = replay.query_one(StepSlider)
        await pilot.press("home")
        assert slider.value == 0
        await pilot.press("slash", *"gate")  # the box opens, and shows what is typed in it
        bar = replay.query_one("#filter-bar")
        assert shown(bar) and "gate" in screen_lines(app)[bar.region.y]
        await pilot.press("enter")  # keep the filter: the box closes and gives the keys back to the slider
        await pilot.press("end")
        assert slider.value == len(slider.steps) - 1


# -------------------------------------------------------------------------------- the agent's compose form


async def compose_cancel(app: OperatorConsole, pilot: Any) -> ComposeScreen:
    """The agent seat's compose form with cancel_pending_order chosen, the tool select focused."""
    screen: ComposeScreen = await compose_tool_call(pilot, app, "cancel_pending_order")
    return screen


async def test_compose_tab_goes_to_the_next_field_and_the_typed_value_lands_there(
        console_app: Callable[..., OperatorConsole]) -> None:
    """Select the tool, Tab, `#W4821002`, Tab, `no longer needed`: the first value vanished into an invisible
    stop and the second went into `order_id`."""
    app = console_app(model="operator")
    async with app.run_test(size=(120, 35)) as pilot:
        screen = await compose_cancel(app, pilot)
        await pilot.press("tab", *"#W4821002", "tab", *"no longer needed")
        assert screen.query_one("#arg-order_id", Input).value == "#W4821002"
        assert screen.query_one("#arg-reason", Input).value == "no longer needed"
        order = [w.id for w in screen.focus_chain]
        drawn = sorted(order, key=lambda i: (screen.query_one(f"#{i}").region.y, screen.query_one(f"#{i}").region.x))
        assert order == drawn  # Tab follows the fields as drawn


@pytest.mark.parametrize("size", [(80, 24), (120, 35)])
async def test_the_dry_run_result_is_on_screen(console_app: Callable[..., OperatorConsole],
                                               size: tuple[int, int]) -> None:
    app = console_app(model="operator")
    async with app.run_test(size=size) as pilot:
        screen = await compose_cancel(app, pilot)
        screen.query_one("#arg-order_id", Input).value = "#W4821002"
        screen.query_one("#arg-reason", Input).value = "no longer needed"
        await pilot.press("ctrl+d")
        verdict = screen.query_one("#compose-verdict")
        await wait_for(pilot, lambda: "dry-run" in str(verdict.render()))
        await pilot.pause()
        assert on_screen(verdict, size), verdict.region
        for button in screen.query(Button):
            assert on_screen(button, size), button.id


async def test_on_the_desk_v_then_the_message_then_enter_enter_is_a_veto(tmp_path: Path) -> None:
    """The desk opens the same dialog with `v`: the message and Enter veto; the second Enter decides nothing."""
    from console.runtime.desk.audit import read_audit
    from console.tui.desk_app import SupervisorApp
    from console.tui.screens.desk_decide import DeskReviewScreen
    from tests.support.desk import ManualClock, make_desk, of_type, spec, trace_of, until, until_screen

    desk = make_desk([spec("airline", "cancel-outside-window", N)], tmp_path, ManualClock())
    app = SupervisorApp(desk, operator="alice", lifecycle=desk)
    async with app.run_test(size=(120, 35)) as pilot:
        screen = app.desk_screen
        await until(pilot, lambda: len(screen.inbox.item_ids) == 1 and screen.claimed is not None)
        assert desk.snapshot().items[0].verdict == "BLOCK"
        await pilot.press("v")
        modal = await until_screen(pilot, app, DeskReviewScreen)
        await until(pilot, lambda: isinstance(app.focused, Input))
        await pilot.press(*"No. Tell her about the 24-hour rule", "enter", "enter")
        await until(pilot, lambda: not isinstance(app.screen, DeskReviewScreen) and bool(
            read_audit(tmp_path / "desk" / "audit.jsonl").decisions))
        assert modal.closed
        await until(pilot, lambda: bool(of_type(trace_of(desk.snapshot(), "s01"), "tool_result")))
    audit = read_audit(tmp_path / "desk" / "audit.jsonl")
    assert [(d["decision"], d["reason"]) for d in audit.decisions] == [("veto", "No. Tell her about the 24-hour rule")]
    results = of_type(trace_of(desk.snapshot(), "s01"), "tool_result")
    assert [r["executed"] for r in results if r["call"]["name"] == "cancel_reservation"] == [False]
