"""A failing model server shows one line in the transcript; the server's full answer unfolds on demand."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rich.text import Text

from console.runtime.live import SessionSpec
from console.tui.app import OperatorConsole
from core.llm.openai_model import OpenAIChatModel
from tests.support.openai_stub import OpenAIStub
from tests.support.pilot import wait_for

DUMP = ("2 validation errors for CreateChatCompletionRequest\nmessages.2.typed-dict.content\n  Input should be a valid "
        "string [type=string_type, input_value=None, input_type=NoneType]\n    For further information visit "
        "https://errors.pydantic.dev/2.11/v/string_type\nmessages.2.typed-dict.role\n  Input should be 'user' "
        "[type=literal_error, input_value='assistant', input_type=str]\n    For further information visit "
        "https://errors.pydantic.dev/2.11/v/literal_error")


async def test_model_error_is_one_line_with_the_detail_on_demand(tmp_path: Path) -> None:
    with OpenAIStub() as stub:
        stub.reply_error(500, DUMP, error_type="internal_server_error")
        spec = replace(SessionSpec(), model="stub-model", base_url=stub.base_url)
        app = OperatorConsole(spec, root=tmp_path / "home", model_factory=lambda s: OpenAIChatModel(
            s.model, base_url=s.base_url, api_key="k", max_retries=0))
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.press("space")
            await wait_for(pilot, lambda: any(e.kind == "error" for e in app.transcript.items))
            entry = next(e for e in app.transcript.items if e.kind == "error")
            folded = entry.render(False)
            assert isinstance(folded, Text) and "\n" not in folded.plain
            assert "HTTP 500" in folded.plain and "Input should be a valid string" in folded.plain
            assert "errors.pydantic.dev" not in folded.plain
            assert entry.foldable
            unfolded = entry.render(True)
            assert isinstance(unfolded, Text) and "errors.pydantic.dev/2.11/v/literal_error" in unfolded.plain
            assert app.live is not None and app.live.state.error is not None and "\n" not in app.live.state.error
            await pilot.press("q")
