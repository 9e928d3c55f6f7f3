"""The `ledgeragent` command line: `main` (the parser and the dispatch), one module per sub-command (`console`,
`run`, `check`, `predicates`, `scenarios`, `eval`, `supervise` with `audit`, `serve`, `mcp`; `tab` is the command a
browser tab's process runs), the shared option declarations (`options`, `model_options`, `eval_options`,
`supervise_options`, `mcp_options`), the reports `check` prints (`check_report`, `recorded_report`) and the error
contract (`errors`: one line and an exit status, never a traceback).

May import every group of the console and every lower layer. The Textual apps (`console.tui`), the web server
(`console.web.server`) and the MCP server (`console.mcp`) are imported only inside the sub-command that runs
them, so building the parser (`ledgeragent --help`, a headless `run` or `check`) loads none of them.
"""
