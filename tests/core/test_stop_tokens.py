"""The user simulator's stop tokens as small models really write them."""

from __future__ import annotations

import pytest

from core.tools import ToolCall
from core.users import stop_reason


@pytest.mark.parametrize(("text", "reason"), [
    ("###STOP###", "user_stop"),
    ("Thanks! ### STOP###", "user_stop"),
    ("###STOP ###", "user_stop"),
    ("#### stop ####", "user_stop"),
    ("### TRANSFER ###", "transfer"),
    ("###OUT-OF-SCOPE###", "out_of_scope"),
    ("### OUT OF SCOPE###", "out_of_scope"),
    ("###OUT_OF_SCOPE###", "out_of_scope"),
    ("###STOP### ###TRANSFER###", "transfer"),
])
def test_stop_tokens_with_stray_spaces_are_recognised(text: str, reason: str) -> None:
    assert stop_reason(text) == reason


@pytest.mark.parametrize("text", ["please stop", "STOP", "#STOP#", "## STOP ##", "transfer me to a human",
                                  "out of scope"])
def test_ordinary_prose_is_not_a_stop(text: str) -> None:
    assert stop_reason(text) is None


def test_unterminated_string_error_does_not_say_at_at() -> None:
    call = ToolCall.from_json_text("c1", "get_order_details", '{"order_id": "#W1')
    assert call.parse_error is not None
    assert "at at" not in call.parse_error
    assert "Unterminated string starting at column" in call.parse_error
