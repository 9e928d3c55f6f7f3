"""`core.strict_json.inert`: every control character a terminal would act on, shown instead; and
`console.runtime.textview.shown`, the same for every string inside an event or a snapshot."""

from __future__ import annotations

import json

from console.runtime.desk.view import ItemKind, ItemView
from console.runtime.textview import shown
from core.events import CallInfo, MessageSent, ToolResultEvent
from core.strict_json import inert, inert_json


def test_controls_escapes_and_bidi_are_shown_not_sent() -> None:
    assert inert("a\x1b]0;t\x07b") == "a␛]0;t␇b"
    assert inert("\x00\x1f\x7f") == "␀␟␡"
    assert inert("\x9b2J\x85") == "\\x9b2J\\x85"  # C1: CSI, NEL
    assert inert("\u202eabc\u2066\u200f") == "\\u202eabc\\u2066\\u200f"
    assert inert("two\nlines\tand a tab") == "two␊lines␉and a tab"
    assert inert("two\nlines\tand a tab\r", lines=True) == "two\nlines\tand a tab␍"
    assert inert("\ud800") == "\\ud800"  # a lone surrogate, as `printable` writes it
    plain = "Mia García · 46281 ✓ 👩‍💻 [red]x[/red]"  # non-ASCII, emoji with a joiner, brackets: untouched
    assert inert(plain) is plain


def test_inert_json_is_the_same_json() -> None:
    value = {"a": "x\x1b\x9b\u202e\x7fé", "b": ["\u2069"]}
    text = inert_json(json.dumps(value, ensure_ascii=False))
    assert json.loads(text) == value and "é" in text
    assert not any(c in text for c in "\x1b\x9b\u202e\x7f\u2069")


def test_shown_makes_every_string_inert_and_copies_only_what_changed() -> None:
    clean = MessageSent(role="user", text="hello")
    assert shown(clean) is clean
    hostile = ToolResultEvent(call=CallInfo(id="c1", name="get", arguments={"k\x1b": ["v\x9b", 1, None]}),
                              kind="read", executed=True, ok=True, outcome="ok", content="{\"x\": \"\u202e\"}")
    drawn = shown(hostile)
    assert drawn.call.arguments == {"k␛": ["v\\x9b", 1, None]} and drawn.content == "{\"x\": \"\\u202e\"}"
    assert hostile.call.arguments == {"k\x1b": ["v\x9b", 1, None]}  # what was recorded is never changed
    item = ItemView(id="i1", session_id="s1", kind=ItemKind.WRITE, asked_at=0.0, asked_when="now",
                    arguments={"a": "\x1b"}, error="line\nbreak")
    view = shown(item)
    assert view.kind is ItemKind.WRITE and view.arguments == {"a": "␛"} and view.error == "line\nbreak"
