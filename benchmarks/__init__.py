"""Speed figures for LedgerAgent Console: `python -m benchmarks` (or `make bench`) prints one table.

Figures with a target (PASS/FAIL on the median):
1. `benchmarks.gate`     one gate decision, all retail predicates, 10,000-record ledger   < 100 µs
2. `benchmarks.step`     per agent step overhead (absorb, render, gate, events → trace)   < 2 ms
3. `benchmarks.restore`  restore() of the full tau2 retail DB after a trial's writes      < 5 ms
4. `benchmarks.tools`    one read tool call on the full DB                                < 1 ms
5-7. `benchmarks.evaluation` eval harness with zero-latency scripted models, retail tasks: overhead per agent
   step ≤ 5 ms; ≥ 20 task-trials/s at concurrency 2 (< 50 ms each); memory flat across 1,000 trials
Informative rows (`benchmarks.informative`, and the extra rows of 3 and 4): opening the backend, the state
hash, rendering a 10,000-record ledger, a write tool call, restore after 50 writes.

`--only SUBSTRING` runs the groups whose name contains it (`--list` names them, `benchmarks.suite`); `check`'s
memory rows run 50,000 calls unless `--long` asks for the 600k-call run (more than 15 minutes).

The report never fails the process: a missed target is printed as FAIL and the exit status stays 0.
Tests only check that every figure runs and returns positive numbers; speed is never asserted in tests.
"""
