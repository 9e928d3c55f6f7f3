"""The replay's on-demand timeline (`TraceIndex` + `TraceTimeline`) shows exactly what the whole-trace rebuild
(`LedgerTimeline`, every event in memory) shows, at every step, forwards, backwards and across its ledger
snapshots, while reading only what a step needs: a big trace's first step reads a handful of lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.big_trace import write_big_trace
from core.events import GateDecided, SupervisorDecided, ToolResultEvent
from core.timeline import CHECKPOINT_EVERY, REPLAY_WINDOW, LedgerTimeline, TraceTimeline
from core.trace import load_trace
from core.trace_index import TraceIndex
from domains.retail import DOMAIN


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("trace") / "trace.jsonl"
    write_big_trace(path, REPLAY_WINDOW + 3 * CHECKPOINT_EVERY, distinct=300)
    return path


def test_the_index_finds_every_event_without_parsing_them(trace: Path) -> None:
    events = load_trace(trace)
    index = TraceIndex.of_file(trace)
    assert len(index) == len(events) and index.problems == []
    assert list(index.seqs) == [e.seq for e in events]
    assert [index.kind(i) for i in range(len(index))] == [e.type for e in events]
    linked = {i: e.call.id for i, e in enumerate(events) if isinstance(e, GateDecided | SupervisorDecided |
                                                                             ToolResultEvent)}
    assert index.call_ids == linked
    assert index.steps() == sorted({e.step for e in events})
    assert index.read([5, 0]) == [events[5], events[0]]


def test_every_step_shows_what_the_whole_trace_rebuild_shows(trace: Path) -> None:
    events = load_trace(trace)
    reference = LedgerTimeline.build(events, DOMAIN.path_map)
    lazy = TraceTimeline(TraceIndex.of_file(trace), DOMAIN.path_map)
    steps = lazy.steps()
    assert steps == reference.steps()
    assert lazy.gate_rows() == reference.gate_rows()
    # forwards, a jump back across snapshots, the end, the start again
    for step in [steps[0], steps[1], steps[len(steps) // 2], steps[len(steps) // 4], steps[-1], steps[3], steps[0]]:
        view = lazy.view(step)
        cut = reference.last_seq_of_step(step)
        assert cut is not None
        assert view.ledger.to_dict() == reference.at(cut).to_dict()
        assert view.ledger.version == reference.at(cut).version
        assert view.flash == reference.step_changes(step).added
        shown = list(view.events)
        assert shown == reference.events_until(cut)[-REPLAY_WINDOW:]
        before_window = reference.events_until(cut)[:-REPLAY_WINDOW] if len(reference.events_until(cut)) > \
            REPLAY_WINDOW else []
        decisions = [e for e in before_window if isinstance(e, GateDecided)]
        assert [e for e in view.gate_events if isinstance(e, GateDecided)] == decisions
        gated = {e.call.id for e in decisions}
        assert [e for e in view.gate_events if isinstance(e, ToolResultEvent)] == [
            e for e in before_window if isinstance(e, ToolResultEvent) and e.call.id in gated]


def test_the_first_step_of_a_big_trace_reads_only_its_own_lines(trace: Path) -> None:
    lazy = TraceTimeline(TraceIndex.of_file(trace), DOMAIN.path_map)
    first = lazy.steps()[0]
    assert lazy.cost(first) < 10
    view = lazy.view(first)
    assert [e.type for e in view.events][:2] == ["session_started", "message"] and view.gate_events == ()
    assert lazy.cost(lazy.steps()[-1]) > REPLAY_WINDOW  # the end is a worker's job in the console


def test_an_unreadable_line_is_reported_once_and_skipped(tmp_path: Path, trace: Path) -> None:
    lines = trace.read_bytes().splitlines(keepends=True)[:40]
    lines[7] = lines[7][: len(lines[7]) * 2 // 3] + b"\n"  # the header reads, the body does not
    lines[9] = b"{not json\n"
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b"".join(lines))
    index = TraceIndex.of_file(broken)
    assert [p.line for p in index.problems] == [10]
    lazy = TraceTimeline(index, DOMAIN.path_map)
    end = lazy.view(lazy.steps()[-1])
    assert [p.split(":")[0] for p in end.problems] == ["line 8"]
    assert lazy.view(lazy.steps()[-1]).problems == ()  # said once
    assert len(end.events) == len(index) - 1


def test_seqs_that_do_not_increase_are_refused(tmp_path: Path, trace: Path) -> None:
    lines = trace.read_bytes().splitlines(keepends=True)[:5]
    shuffled = tmp_path / "shuffled.jsonl"
    shuffled.write_bytes(lines[0] + lines[2] + lines[1])
    with pytest.raises(ValueError, match="strictly increasing seq"):
        TraceIndex.of_file(shuffled)


def test_stepping_forward_appends_each_steps_own_events(trace: Path) -> None:
    """What the slider's → does: each view holds only the events after the step shown before, and they add up
    to exactly the events a full view of the same step shows (and the same ledger)."""
    events = load_trace(trace)
    reference = LedgerTimeline.build(events, DOMAIN.path_map)
    lazy = TraceTimeline(TraceIndex.of_file(trace), DOMAIN.path_map)
    steps = lazy.steps()
    shown = list(lazy.view(steps[0]).events)
    for previous, step in zip(steps[:40], steps[1:41], strict=True):
        view = lazy.view(step, after=previous)
        assert view.appended and view.gate_events == () and view.skipped == 0
        shown += view.events
        cut = reference.last_seq_of_step(step)
        assert cut is not None
        assert shown == reference.events_until(cut)
        assert view.ledger.to_dict() == reference.at(cut).to_dict()
        assert view.flash == reference.step_changes(step).added
    far = lazy.view(steps[-1], after=steps[40])  # too far to append: a full view of the end
    assert not far.appended and far.skipped > 0
    assert lazy.view(steps[3], after=steps[-1]).appended is False  # going back never appends
