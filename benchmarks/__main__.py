"""`python -m benchmarks [--only SUBSTRING] [--list] [--long | --check-calls N] [--json PATH] [--db PATH]`: measure
the figures (every group, or those `--only` names) and print the table."""

from benchmarks.suite import main

raise SystemExit(main())
