"""Where telecom data comes from: our shipped seed, or tau2-bench's `db.toml` with `user_db.toml` beside it.

Both give `{"db": <TelecomDB as tau2 stores it>, "user_db": <TelecomUserDB>}`, which is what
`TelecomBackend.create` takes and validates. Accepted sources (`--db`):

- a tau2 agent DB file, `db.toml` (read with tomllib), with the phone's `user_db.toml` in the same folder;
- a folder holding those two files;
- one JSON file in our layout (`{"db": ..., "user_db": ...}`), like the shipped `seed.json`.

The user DB is required, not defaulted: in a dual-control domain the phone is half of the world, and a
session silently started on a default phone would test something other than what the data describes.
"""

from __future__ import annotations

import json
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

AGENT_FILE, USER_FILE = "db.toml", "user_db.toml"


def load_seed() -> dict[str, Any]:
    """The shipped `seed.json` (read through importlib.resources, so it works from a wheel too)."""
    text = resources.files("mock_backends.telecom").joinpath("seed.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def _toml(path: Path) -> dict[str, Any]:
    with path.open("rb") as handle:
        return tomllib.load(handle)


def read_tau2_files(agent_db: Path | str) -> dict[str, Any]:
    """tau2's `db.toml` and the `user_db.toml` beside it."""
    agent_path = Path(agent_db)
    if agent_path.name == USER_FILE:
        raise ValueError(f"give the agent DB ({AGENT_FILE}); {USER_FILE} is read from the same folder")
    user_path = agent_path.with_name(USER_FILE)
    if not user_path.is_file():
        raise ValueError(f"no {USER_FILE} beside {agent_path.name} (the customer's phone state is needed too): "
                         f"expected {user_path}")
    return {"db": _toml(agent_path), "user_db": _toml(user_path)}


def read_source(path: Path | str) -> dict[str, Any]:
    """A tau2 db.toml (with user_db.toml beside it), a folder holding both, or one JSON file in our layout."""
    source = Path(path)
    if source.is_dir():
        if not (source / AGENT_FILE).is_file():
            raise ValueError(f"not a tau2 telecom data folder: no {AGENT_FILE} in {source}")
        return read_tau2_files(source / AGENT_FILE)
    if source.suffix == ".toml":
        return read_tau2_files(source)
    data = json.loads(source.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or "db" not in data:
        raise ValueError(f"{source}: expected a JSON object {{'db': ..., 'user_db': ...}} (or a tau2 {AGENT_FILE})")
    return data
