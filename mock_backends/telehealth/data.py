"""Where telehealth data comes from: our shipped seed, or a tau-Trait telehealth data folder.

Both give the tau-Trait folder layout (one entry per file: `patients`, `appointments`, ...), which is
what `TelehealthBackend.create` takes and validates. The seed is one JSON file in that layout; a
tau-Trait folder is one JSON file per collection (other files there, such as `tasks.json`, are ignored).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from mock_backends.telehealth.models import COLLECTIONS, REQUIRED


def load_seed() -> dict[str, Any]:
    """The shipped `seed.json` (read through importlib.resources, so it works from a wheel too)."""
    text = resources.files("mock_backends.telehealth").joinpath("seed.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def read_folder(path: Path | str) -> dict[str, Any]:
    """A tau-Trait telehealth data folder (its JSON files, as in tau-Trait's `tau_trait/envs/telehealth/`).

    Raises ValueError naming what is missing when the folder lacks one of the four core files
    (patients, providers, appointments, medical_records); the other five are optional.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise ValueError(f"{folder} is not a folder")
    missing = [f"{name}.json" for name in REQUIRED if not (folder / f"{name}.json").is_file()]
    if missing:
        raise ValueError(f"not a tau-Trait telehealth data folder: missing {', '.join(missing)}")
    data: dict[str, Any] = {}
    for name in COLLECTIONS:
        file = folder / f"{name}.json"
        if file.is_file():
            data[name] = json.loads(file.read_text(encoding="utf-8"))
    return data


def read_source(path: Path | str) -> dict[str, Any]:
    """A data folder, or one JSON file in the folder layout (like the shipped seed)."""
    source = Path(path)
    if source.is_dir():
        return read_folder(source)
    data = json.loads(source.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{source}: expected a JSON object with one entry per telehealth collection")
    return data
