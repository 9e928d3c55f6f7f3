"""Opening any results file a user may hand us: ours (finished or interrupted) or tau2-bench's.

Apart from `results` (our format) and `tau2_format` (theirs) so neither imports the other: this is the one
module that knows both.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from core import strict_json
from core.evaluation.results import EvalResults, ResultsError, ResultStore, TrialResult, read_trial_line
from core.evaluation.tau2_format import is_tau2, load_tau2


def load_results(path: Path, kind_of: Callable[[str], str] | None = None) -> EvalResults:
    """Load a finished run (`results.json`, or a run folder), an interrupted one (a folder with only
    run.json and trials.jsonl), or a tau2-bench results file (`tau2_format.from_tau2`; `kind_of` gives its
    tools' kinds, "unknown" without it): the public entry point for a results viewer."""
    if path.is_dir():
        if (path / "results.json").is_file():
            path = path / "results.json"
        else:
            store = ResultStore(path)
            header = store.read_header()
            if header is None:
                raise ResultsError(f"{path}: no results.json and no run.json: not a run folder")
            latest: dict[tuple[str, str, str, int], TrialResult] = {}  # a re-run trial's newer line wins
            for _offset, _length, line in store._lines():
                trial = read_trial_line(TrialResult, line)
                if trial is None:
                    continue
                latest.pop(trial.key, None)
                latest[trial.key] = trial
            return EvalResults(header=header, trials=list(latest.values()))
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ResultsError(f"no such results file: {path}") from exc
    except (UnicodeDecodeError, IsADirectoryError) as exc:
        raise ResultsError(f"{path}: not a results file ({exc})") from exc
    try:  # strict JSON first: pydantic's own parser takes NaN and 1e999 for numbers
        raw = strict_json.loads(text)
    except strict_json.StrictJSONError as exc:
        raise ResultsError(f"{path}: not a results file ({exc.message})") from exc
    try:
        return EvalResults.model_validate(raw)
    except ValidationError as exc:
        if is_tau2(raw):
            return load_tau2(path, raw, kind_of)
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ResultsError(f"{path}: not a LedgerAgent or tau2-bench results file ({where + ': ' if where else ''}"
                           f"{first['msg']})") from exc
