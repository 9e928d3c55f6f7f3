"""Where retail data comes from: our shipped seed, or a tau2-bench `db.json`. Both come out normalised
through the models, so whichever is loaded, stored documents look exactly like tau2's dumps."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from mock_backends.retail.models import normalise


def load_seed() -> dict[str, dict[str, Any]]:
    """The shipped `seed.json` (read through importlib.resources, so it works from a wheel too)."""
    text = resources.files("mock_backends.retail").joinpath("seed.json").read_text(encoding="utf-8")
    return normalise(json.loads(text))


def load_tau2_db(path: Path | str) -> dict[str, dict[str, Any]]:
    """A tau2 retail `db.json` (tau2-bench's `data/tau2/domains/retail/db.json`)."""
    with open(path, encoding="utf-8") as handle:
        return normalise(json.load(handle))
