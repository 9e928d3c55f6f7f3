"""`--tool-choice`, `--max-tokens`, `--timeout`, `--retries`, `--model-args` on console, run and eval."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.cli.main import build_parser, main
from console.cli.model_options import model_settings
from tests.support.openai_stub import OpenAIStub

MODEL_OPTIONS = ["--tool-choice", "required", "--max-tokens", "77", "--timeout", "9.5", "--retries", "0",
                 "--model-args", '{"top_p": 0.5, "seed": 7}']


@pytest.mark.parametrize("command", [["console"], ["run", "--scenario", "x"], ["eval"], ["serve"]])
def test_every_command_takes_the_model_options(command: list[str]) -> None:
    args = build_parser().parse_args([*command, *MODEL_OPTIONS])
    settings = model_settings(args)
    assert (settings.tool_choice, settings.max_tokens, settings.timeout, settings.retries) == ("required", 77, 9.5, 0)
    assert dict(settings.extra_body) == {"top_p": 0.5, "seed": 7}


def test_defaults_are_bounded_and_auto() -> None:
    settings = model_settings(build_parser().parse_args(["console"]))
    assert (settings.tool_choice, settings.max_tokens, settings.timeout) == ("auto", 1024, 120.0)


def test_eval_keeps_its_old_timeout_spelling() -> None:
    assert model_settings(build_parser().parse_args(["eval", "--request-timeout", "30"])).timeout == 30.0


def test_serve_hands_the_options_to_every_tab() -> None:
    from console.cli.serve import console_argv

    argv = console_argv(build_parser().parse_args(["serve", "--model", "m", *MODEL_OPTIONS]))
    assert argv[1:3] == ["-m", "console.cli.tab"]  # each tab runs `ledgeragent console` through console.cli.tab
    reparsed = build_parser().parse_args(["console", *argv[3:]])
    assert model_settings(reparsed) == model_settings(build_parser().parse_args(["console", *MODEL_OPTIONS]))


@pytest.mark.parametrize(("options", "message"), [
    (["--model-args", "[1, 2]"], "must be a JSON object"),
    (["--model-args", '{"top_p": NaN}'], "NaN is not allowed"),
    (["--model-args", "{"], "not valid JSON"),
    (["--model-args", '{"stream": true}'], "cannot set stream"),
    (["--timeout", "nan"], "argument --timeout: must be a finite number above 0, got nan"),
    (["--timeout", "0"], "argument --timeout: must be a finite number above 0, got 0"),
    (["--max-tokens", "-1"], "argument --max-tokens: must be 0 or more, got -1"),
    (["--retries", "-1"], "argument --retries: must be 0 or more, got -1"),
])
def test_bad_model_options_are_one_line_errors(options: list[str], message: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    try:  # a bad value is refused by the parser (it exits), a bad --model-args by the command (it returns)
        code = main(["run", "--scenario", "refund-to-original-payment", "--model", "m",
                     "--base-url", "http://127.0.0.1:9/v1", "--out", str(tmp_path), *options])
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and message in " ".join(err.split()) and "Traceback" not in err
    assert err.count("error:") == 1  # one message (rich may wrap it at the terminal width)


def test_run_sends_the_settings_to_the_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LEDGERAGENT_HOME", str(tmp_path / "home"))
    with OpenAIStub() as stub:
        stub.reply_text("Hello, how can I help?")
        code = main(["run", "--headless", "--scenario", "refund-to-original-payment", "--model", "m",
                     "--base-url", stub.base_url, "--out", str(tmp_path / "s"), "--max-steps", "3", *MODEL_OPTIONS])
    capsys.readouterr()
    body = stub.requests[0]
    assert (body["tool_choice"], body["max_tokens"], body["top_p"], body["seed"]) == ("required", 77, 0.5, 7)
    assert code in (0, 1)  # the scenario's expectations are not met by a one-line model; the request is what counts
