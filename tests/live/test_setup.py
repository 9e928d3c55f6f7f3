"""The contract of tests/live/setup.sh: a config naming, for every server and the model, either what to run or
why it cannot run here (so every live test either runs or skips with that reason)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.live_servers import CONFIG


def test_setup_wrote_a_usable_config_or_a_reason_for_everything() -> None:
    assert CONFIG.is_file(), "tests/live/setup.sh writes it; `make test-live` runs the setup first"
    config = json.loads(CONFIG.read_text(encoding="utf-8"))
    assert set(config["servers"]) == {"llama-cpp-python", "native"}
    for name, reason in config["servers"].items():
        assert reason is None or (isinstance(reason, str) and reason.strip()), name
    if config["model"] is None:
        assert config["model_reason"]
    else:
        assert Path(config["model"]).stat().st_size > 50_000_000  # the GGUF itself, not a pointer or a stub
    if any(reason is None for reason in config["servers"].values()):
        assert Path(config["python"]).is_file()
