"""Fixtures for the live tests: real llama.cpp servers, started once per session (tests/support/live_servers.py).

`make test-live` prepares them (tests/live/setup.sh writes .venv-live/live.json) and sets LEDGERAGENT_LIVE=1.
Without that, every live test skips with the reason.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.live_servers import N_CTX, LiveServer, free_port, load_config, start_server, threads, warm_up


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("LEDGERAGENT_LIVE") == "1":
        return
    skip = pytest.mark.skip(reason="live llama.cpp tests run with `make test-live`")
    for item in items:
        if "tests/live" in str(item.fspath):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def live_config() -> dict[str, Any]:
    return load_config()


@pytest.fixture(scope="session")
def llama_cpp_python(live_config: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """llama-cpp-python's `llama_cpp.server` with the `chatml-function-calling` chat format (its tool calling)."""
    reason = live_config["servers"].get("llama-cpp-python")
    if reason:
        pytest.skip(f"llama-cpp-python server unavailable: {reason}")
    port = free_port()
    command = [live_config["python"], "-m", "llama_cpp.server", "--model", live_config["model"], "--host", "127.0.0.1",
               "--port", str(port), "--chat_format", "chatml-function-calling", "--n_ctx", str(N_CTX),
               "--n_threads", str(threads()), "--n_threads_batch", str(threads()), "--verbose", "False"]
    server = start_server("llama-cpp-python", command, "/v1/models", port, tmp_path_factory.mktemp("lcp"))
    warm_up(server)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def native_server(live_config: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """llama.cpp's native server (llama-server, `--jinja`), as embedded in the `xllamacpp` wheel.

    SmolLM2's own chat template has no tool support, so the server gets a ChatML template that has
    (`chatml_tools.jinja`, Hermes-style `<tool_call>` tags), as `--chat-template-file` would give it.
    """
    reason = live_config["servers"].get("native")
    if reason:
        pytest.skip(f"native llama.cpp server unavailable: {reason}")
    port = free_port()
    here = Path(__file__).parent
    command = [live_config["python"], str(here / "native_server.py"), live_config["model"], str(port), str(N_CTX),
               str(threads()), str(here / "chatml_tools.jinja")]
    server = start_server("native", command, "/health", port, tmp_path_factory.mktemp("native"))
    warm_up(server)
    yield server
    server.stop()
