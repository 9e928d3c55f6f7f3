"""The live-model options of `console`, `run`, `eval` (and `serve`, which runs `console`): defined once here.

`add_model_arguments(parser)` adds `--tool-choice`, `--max-tokens`, `--timeout`, `--retries` and
`--model-args`; `model_settings(args)` turns them into a `core.llm.settings.ModelSettings` (or raises
`ValueError` with a one-line message for the command to print). `serve` hands every tab's console the same
settings by reading its parser's own actions (console.cli.serve.console_argv).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from console.cli.errors import non_negative_int, positive_float
from core.llm.openai_model import DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT, DEFAULT_TOOL_CHOICE, TOOL_CHOICES
from core.llm.settings import ModelSettings, parse_model_args

__all__ = ["add_model_arguments", "model_settings"]


def add_model_arguments(parser: argparse._ActionsContainer, *,
                        timeout_aliases: Sequence[str] = ()) -> None:
    """Add the shared options; `timeout_aliases` keeps an older spelling of --timeout working (eval's
    --request-timeout)."""
    parser.add_argument("--tool-choice", choices=TOOL_CHOICES, default=DEFAULT_TOOL_CHOICE,
                        help="tool_choice sent with the tools: auto (default; llama.cpp, Ollama, LM Studio, OpenAI), "
                             "required, none, or omit to leave the key out (vLLM without --enable-auto-tool-choice)")
    parser.add_argument("--max-tokens", type=non_negative_int, default=DEFAULT_MAX_TOKENS, metavar="N",
                        help="max_tokens per model call (default: %(default)s; 0 sends no limit)")
    parser.add_argument("--timeout", *timeout_aliases, dest="timeout", type=positive_float, default=DEFAULT_TIMEOUT,
                        metavar="SECONDS", help="seconds per model request (default: %(default)g; a cold CPU "
                                                "server can need more than a minute for its first call)")
    parser.add_argument("--retries", type=non_negative_int, default=3,
                        help="retries per model request on 429, 5xx and timeouts (default: %(default)s)")
    parser.add_argument("--model-args", metavar="JSON",
                        help="extra JSON body keys for every request, e.g. '{\"top_p\": 0.9, \"seed\": 1}' "
                             "(they win over --max-tokens and --tool-choice)")


def model_settings(args: argparse.Namespace) -> ModelSettings:
    """The parsed options as settings; ValueError (one line) for a bad value."""
    extra: dict[str, Any] = parse_model_args(args.model_args) if args.model_args else {}
    if args.max_tokens < 0:
        raise ValueError("--max-tokens must be 0 (no limit) or more")
    return ModelSettings(tool_choice=args.tool_choice, max_tokens=args.max_tokens or None, timeout=args.timeout,
                         retries=args.retries, extra_body=extra)
