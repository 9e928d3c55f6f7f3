"""Where the tests find the upstream reference data, named once.

The data is not part of the repository and is never committed: copies of tau2-bench's
`data/tau2/domains/{airline,retail}/{db.json,tasks.json}` and `data/tau2/domains/telecom/{db.toml,
user_db.toml,tasks_small.json}`, and of collinear-ai/tau-trait's telehealth data (`tau_trait/envs/telehealth/`,
its `TASKS_TEST` converted to tau2-style JSON), and a development set of real model recordings (gzipped tau2
results files and tau-bench / tau-Trait results lists, its README names each one's source), kept in a folder
named `shared` beside the repository's own folder. Every test that uses them is marked `shared` and skips with
the missing path when they are absent.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO.parent / "shared"
TAU2 = REFERENCE / "tau2"
TAU2_AIRLINE = TAU2 / "airline"
TAU2_RETAIL = TAU2 / "retail"
TAU2_TELECOM = TAU2 / "telecom"
TAU_TRAIT_TELEHEALTH = REFERENCE / "tau-trait" / "telehealth"
RECORDINGS = REFERENCE / "recordings"


def recording_names() -> list[str]:
    """The development set's recordings (file names, gzipped), [] when the folder is absent."""
    return sorted(p.name for p in RECORDINGS.glob("*.json.gz")) if RECORDINGS.is_dir() else []


def decompressed_recording(name: str, folder: Path) -> Path:
    """The recording `name` of the development set, decompressed into `folder` (a test's tmp_path); the test
    is skipped when the set is absent."""
    source = RECORDINGS / name
    if not source.is_file():
        pytest.skip(f"recordings not found at {source}")
    target = folder / name.removesuffix(".gz")
    target.write_bytes(gzip.decompress(source.read_bytes()))
    return target
