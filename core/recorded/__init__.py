"""Recorded conversations, audited as they happened: read any recording into one shape, then judge every write
in the context the agent really had (`ledgeragent check --as-recorded`).

- `model`: the shape every format is read into (conversations of turns, each call with the result the agent
  saw) and the problems found on the way, each with its position;
- `formats`: the readers (our check trajectory lines and session traces, tau2-bench results files, plain
  OpenAI chat messages) and the detection of which one a file is;
- `audit`: the judging loop, through `core.executor.CallExecutor` like every other path to the gate.
"""
