"""`python -m benchmarks [--json PATH] [--db PATH]`: measure every figure and print the table."""

from benchmarks.suite import main

raise SystemExit(main())
