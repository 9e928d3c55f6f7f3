"""Drive the real `ledgeragent` binary in tmux, as a person would: keys in, screen text out."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.screen import decision_keys_shown
from tests.support.tmux import Tmux, binary

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")


def test_retail_demo_in_a_real_terminal(tmp_path: Path) -> None:
    home = tmp_path / "home"
    command = f"env -u COLUMNS -u LINES LEDGERAGENT_HOME={home} {binary()} --pace 0 --operator tester; sleep 30"
    term = Tmux(command)
    try:
        ready = term.wait(lambda s: "press space" in s and "─ Transcript" in s and "─ Gate" in s
                          and "Return a tablet" in s)
        assert "─ Ledger" in ready
        assert "Return a tablet" in ready  # the scenario's title, shown before it starts
        term.keys("space")
        # The panes are redrawn in their own frames: the ended session is read once all three show it.
        done = term.wait(lambda s: "session ended: the customer ended the conversation" in s
                         and "REVISE" in s and "ALLOW" in s and "#W4821001" in s)
        assert "REVISE" in done and "ALLOW" in done
        assert "#W4821001" in done  # the ledger pane shows the order
        term.keys("a")  # the audit screen
        term.wait(lambda s: "Audit: 0 operator decision(s)" in s)
        term.keys("Escape")
        term.keys("q")
        term.wait(lambda s: "LedgerAgent Console" not in s, timeout=10)
    finally:
        term.kill()
    traces = list((home / "sessions").glob("*/trace.jsonl"))
    assert len(traces) == 1 and '"type":"session_ended"' in traces[0].read_text()


def test_approval_with_keys_only(tmp_path: Path) -> None:
    home = tmp_path / "home"
    command = (f"env -u COLUMNS -u LINES LEDGERAGENT_HOME={home} {binary()} --scenario other-customers-order --mode "
               f"'approve non-ALLOW' --pace 0 --operator tester; sleep 30")
    term = Tmux(command)
    try:
        term.wait(lambda s: "press space" in s)
        term.keys("space")
        term.wait(lambda s: "A write waits for your review" in s and "F3" in s)  # announced, not opened
        term.keys("F3")
        modal = term.wait(lambda s: "Review write" in s and "Accept BLOCK (don't run)" in s)
        assert "BLOCK" in modal and "retail.order_owned_by_customer" in modal
        term.keys("a")  # accept the BLOCK: nothing runs
        term.wait(lambda s: "session ended: the customer ended the conversation" in s)
    finally:
        term.kill()
    trace = next((home / "sessions").glob("*/trace.jsonl")).read_text()
    # accepting the gate's BLOCK is its own decision, not an approval of the call
    assert '"decision":"accept_verdict"' in trace and '"who":"tester"' in trace


# -- one override of each kind, in each domain, with the real binary -----------------------------------------------
#
# Per domain a scenario whose first write the gate REVISEs and whose plan then proposes the corrected call (ALLOW),
# run in 'approve writes' so every write comes to the operator. Each review is announced and taken with F3. Each
# kind acts on one review and accepts the rest with `a` (an accepted REVISE does not run; an accepted ALLOW runs):
#   accept      `a` on every review (accept_verdict on the REVISE, approve on the ALLOW)
#   veto        the first ALLOW is vetoed with a message to the model: `v`, the message, Enter
#   edit        the first review's arguments are replaced (in the text area) by the plan's corrected call; escape
#               leaves the box (as its border says), then `e`
#   force_allow the first REVISE is force-allowed with a reason: `f`, the reason, Enter
# The 16 sessions run in one private tmux server, one window per domain: its console runs the four kinds one
# after the other, each in a new session (ctrl+n, ctrl+s: the same scenario and mode), the window resized before
# each to 80x24, 120x35 or 160x45, rotating so every kind and every domain is driven at more than one size, and
# every kind is the first session of a console in one domain. Four consoles at a time, not sixteen: a busy machine
# still gives each its share.

OVERRIDE_SCENARIOS = {"retail": "refund-to-original-payment", "airline": "unobserved-flight",
                      "telecom": "refuel-over-cap", "telehealth": "unobserved-supplier-price"}
KINDS = ("accept", "veto", "edit", "force_allow")
SIZES = ((80, 24), (120, 35), (160, 45))
ENDED = "— session ended: the customer"  # wraps after this in the 120x35 transcript


def override_cases() -> list[tuple[str, str, tuple[int, int]]]:
    return [(domain, kind, SIZES[(d + k) % len(SIZES)]) for d, domain in enumerate(OVERRIDE_SCENARIOS)
            for k, kind in enumerate(KINDS)]


# Where the plan's corrected call is its first proposal again (airline: the same call once the flight was read),
# an edit to it would change nothing, which is no edit (the dialog refuses it): the edit there changes an argument
# the rule that REVISEd the call does not look at (the customer's gift card instead of the card).
REAL_EDITS: dict[str, dict[str, Any]] = {"airline": {"payment_id": "gift_card_3391002"}}


def corrected_arguments(domain: str) -> str:
    """The plan's second proposal of its first write tool (the corrected call), as one line of JSON; changed
    where it is the first proposal again (`REAL_EDITS`)."""
    from core.tools import ToolKind
    from domains.registry import load_domain

    loaded = load_domain(domain)
    plan = json.loads((loaded.scenarios_dir / f"{OVERRIDE_SCENARIOS[domain]}.json").read_text())
    calls = [c for step in plan["agent"] for c in step.get("calls", [])]
    writes = [c for c in calls if (spec := loaded.tool(c["name"])) is not None and spec.kind is ToolKind.WRITE]
    same_tool = [c for c in writes if c["name"] == writes[0]["name"]]
    return json.dumps(same_tool[min(1, len(same_tool) - 1)]["arguments"] | REAL_EDITS.get(domain, {}))


class Server:
    """A private tmux server (its own socket), so the test never touches a user's sessions and ends all of its own."""

    def __init__(self) -> None:
        self.socket = f"la-{uuid.uuid4().hex[:8]}"

    def tmux(self, *args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=check)

    def close(self) -> None:
        self.tmux("kill-server")


class Window:
    """One console in a window of the private server, driven by keys and read by capture-pane."""

    def __init__(self, server: Server, name: str, command: str, size: tuple[int, int], trace_home: Path) -> None:
        self.server, self.name, self.home = server, name, trace_home
        width, height = str(size[0]), str(size[1])
        if server.tmux("has-session", "-t", "=la").returncode != 0:
            server.tmux("new-session", "-d", "-s", "la", "-n", name, "-x", width, "-y", height, command, check=True)
        else:
            server.tmux("new-window", "-d", "-t", "la", "-n", name, command, check=True)
        self.target = f"la:{name}"
        self.resize(size)
        self.finished: set[Path] = set()  # the traces of the sessions already driven in this console

    def resize(self, size: tuple[int, int]) -> None:
        self.server.tmux("resize-window", "-t", self.target, "-x", str(size[0]), "-y", str(size[1]))

    def screen(self) -> str:
        return self.server.tmux("capture-pane", "-t", self.target, "-p").stdout

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.server.tmux("send-keys", "-t", self.target, *(["-l"] if literal else []), *keys, check=True)

    def wait(self, condition: Callable[[str], bool], what: str, timeout: float = 120.0) -> str:
        """Poll the screen until `condition` holds; generous, because the machine may be busy."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.screen()
            if condition(text):
                return text
            time.sleep(0.3)
        raise AssertionError(f"{self.name}: never saw {what}; last screen:\n{self.screen()}")

    def trace(self) -> Path | None:
        """The trace of the session being driven: the one not driven before (None until its console opens it)."""
        fresh = [t for t in (self.home / "sessions").glob("*/trace.jsonl") if t not in self.finished]
        assert len(fresh) <= 1, fresh
        return fresh[0] if fresh else None

    def events(self) -> list[dict[str, Any]]:
        """The session's events so far (the trace is flushed per event; a half-written last line is skipped)."""
        trace = self.trace()
        if trace is None:
            return []
        lines = trace.read_text().splitlines()
        return [json.loads(line) for line in lines if line.endswith("}")]

    def wait_events(self, condition: Callable[[list[dict[str, Any]]], bool], what: str,
                    timeout: float = 120.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            events = self.events()
            if condition(events):
                return events
            time.sleep(0.3)
        raise AssertionError(f"{self.name}: the trace never showed {what}; screen:\n{self.screen()}")


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def buttons(screen: str) -> bool:
    """The review's keys are in the footer, saying what `a` does for this verdict: a button has focus, so a
    letter is a decision."""
    return decision_keys_shown(screen)


def typing(screen: str) -> bool:
    """The footer is empty while a text field has focus (printable keys are text).

    Keys are dispatched to the widget focused when they arrive, so a key after a focus change waits for this.
    """
    return "Review write" in screen and not buttons(screen)


def drive_override(window: Window, kind: str, edited: str) -> None:
    """Start the session, answer each review as `kind` says, and wait for the customer to end it.

    What is pending comes from the trace, not the screen: in 'approve writes' every gate decision is followed by
    a review, so review k+1 is up once the trace holds k+1 gate decisions; the screen is only waited on to show
    it (a capture may still show the previous, dismissed modal for a frame, which the trace cannot mistake).
    """
    window.wait(lambda s: "press space" in s and "New session" not in s, "the ready prompt")
    window.keys("space")
    acted = False
    answered = 0
    while True:
        events = window.wait_events(lambda ev, n=answered: len(of_type(ev, "gate_decision")) > n
                                    or bool(of_type(ev, "session_ended")), "a new gate decision or the end")
        gates = of_type(events, "gate_decision")
        if len(gates) <= answered:
            window.wait(lambda s: ENDED in s, "the end of the session")
            return
        window.wait(lambda s: "A write waits for your review" in s, "the review announced")
        window.keys("F3")  # the review opens only when the operator takes it
        window.wait(lambda s: "Review write" in s and buttons(s), "the review modal, its safe button focused")
        allowed = gates[answered]["verdict"] == "ALLOW"
        if acted or not (kind == "edit" or (kind == "veto" and allowed) or (kind == "force_allow" and not allowed)):
            window.keys("a")
        elif kind == "edit":
            acted = True
            window.keys("BTab")  # from the focused safe button (accept the REVISE) back to the reason box
            window.wait(typing, "the reason box focused", 30)
            window.keys("BTab")  # and on back to the arguments
            window.wait(lambda s: "editing: keys are text here" in s, "the arguments focused", 30)
            # Select all and delete, then type the corrected call. Typed at once after F7, the letters reached
            # the box before its select-all binding ran (Textual runs a widget's binding once the key has come
            # back up from it): wait until the box is seen empty.
            window.keys("F7", "Delete")
            window.wait(lambda s: '▊   "' not in s and "editing: keys are text here" in s, "the arguments cleared", 30)
            window.keys(edited, literal=True)
            window.keys("Escape")  # as the box's border says: escape leaves it, for the buttons
            window.wait(buttons, "the buttons focused again", 30)
            window.keys("e")
        else:
            acted = True
            key = "v" if kind == "veto" else "f"
            window.keys(key)  # the decision starts: the modal asks for the reason and puts the cursor in its box
            window.wait(lambda s: ("To veto" in s or "force-allow despite the" in s) and typing(s),
                        "the reason request", 30)
            reason = "no, not this one" if kind == "veto" else "the customer is right"
            window.keys(reason, literal=True)
            window.keys("Enter")  # completes the decision started with the key, with the reason as typed
        answered += 1
        window.wait_events(lambda ev, n=answered: len(of_type(ev, "supervisor_decision")) >= n,
                           f"operator decision {answered}")


def drive_domain(window: Window, domain: str, cases: list[tuple[str, tuple[int, int]]]) -> dict[str, Path]:
    """Each (kind, size) in turn in the window's console, each in a new session after the first; the trace of each."""
    traces: dict[str, Path] = {}
    for kind, size in cases:
        if traces:  # a new session of the same scenario and mode, from the console's own dialog
            window.keys("C-n")
            window.wait(lambda s: "New session" in s and "Start [ctrl+s]" in s, "the new-session dialog")
            window.keys("C-s")
        window.resize(size)
        drive_override(window, kind, corrected_arguments(domain))
        trace = window.trace()
        assert trace is not None
        traces[kind] = trace
        window.finished.add(trace)
    return traces


def test_one_override_of_each_kind_in_each_domain(tmp_path: Path) -> None:
    """Each kind of operator decision, in each domain, at 80x24, 120x35 and 160x45, reaches a clean end in a real
    terminal, recorded with the reason as typed."""
    from concurrent.futures import ThreadPoolExecutor

    server = Server()
    windows: dict[str, Window] = {}
    cases: dict[str, list[tuple[str, tuple[int, int]]]] = {}
    for domain, kind, size in override_cases():
        cases.setdefault(domain, []).append((kind, size))
    for d, domain in enumerate(cases):  # each kind is the first session of a fresh console in one domain
        cases[domain] = cases[domain][d:] + cases[domain][:d]
    traces: dict[tuple[str, str], Path] = {}
    try:
        for domain, domain_cases in cases.items():
            home = tmp_path / domain
            command = (f"env -u COLUMNS -u LINES LEDGERAGENT_HOME={home} {binary()} --domain {domain} --scenario "
                       f"{OVERRIDE_SCENARIOS[domain]} --mode 'approve writes' --pace 0 --operator tester; sleep 600")
            windows[domain] = Window(server, domain, command, domain_cases[0][1], home)
        with ThreadPoolExecutor(max_workers=len(windows)) as pool:
            futures = {domain: pool.submit(drive_domain, window, domain, cases[domain])
                       for domain, window in windows.items()}
            for domain, future in futures.items():
                traces |= {(domain, kind): trace for kind, trace in future.result().items()}
    finally:
        server.close()
    assert sorted(traces) == sorted((domain, kind) for domain, kind, _size in override_cases())
    for (domain, kind), trace in traces.items():
        events = [json.loads(line) for line in trace.read_text().splitlines()]
        ended = [e for e in events if e["type"] == "session_ended"]
        assert [e["reason"] for e in ended] == ["user_stop"], (domain, kind, ended)
        assert not [e for e in events if e["type"] == "model_error"], (domain, kind)
        decisions = [e["decision"] for e in events if e["type"] == "supervisor_decision"]
        expected = "accept_verdict" if kind == "accept" else kind
        assert expected in decisions, (domain, kind, decisions)
        assert set(decisions) <= {expected, "approve", "accept_verdict"}, (domain, kind, decisions)
        if kind == "edit":
            edited = next(e for e in events if e["type"] == "supervisor_decision" and e["decision"] == "edit")
            assert edited["edited_arguments"] == json.loads(corrected_arguments(domain)), (domain, edited)
        if kind in ("veto", "force_allow"):
            chosen = next(e for e in events if e["type"] == "supervisor_decision" and e["decision"] == kind)
            assert chosen["reason"] == ("no, not this one" if kind == "veto" else "the customer is right"), chosen


def test_growing_the_terminal_past_the_breakpoint_shows_the_three_panes(tmp_path: Path) -> None:
    """80x24 (stacked) grown to 160x45 in a real terminal: Ledger and Gate come back at once, not one resize later."""
    command = f"env -u COLUMNS -u LINES LEDGERAGENT_HOME={tmp_path / 'home'} {binary()} --pace 0; sleep 60"
    term = Tmux(command, width=80, height=24)
    try:
        ready = term.wait(lambda s: "press space" in s and "─ Transcript" in s, timeout=60)
        assert "─ Ledger" not in ready  # stacked: one pane at a time
        subprocess.run(["tmux", "resize-window", "-t", term.name, "-x", "160", "-y", "45"], check=True)
        wide = term.wait(lambda s: "─ Ledger" in s and "─ Gate" in s, timeout=60)
        assert "Return a tablet: the refund must go to the original" in wide  # the intro re-wrapped to its pane
    finally:
        term.kill()
