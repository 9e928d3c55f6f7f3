"""`ledgeragent mcp`: a domain behind the ledger and gate for any agent that speaks the Model Context Protocol.

`session` is one MCP client as a LedgerAgent session (the console's `LiveSession`, driven by the client's
calls instead of a model loop), `manager` keeps one such session per client on a supervision desk, `results`
words a call's recorded events as an MCP tool result, `server` is the MCP server (the SDK's low-level
`Server`), `stdio` and `http` its two transports; the command is `console.cli.mcp`. Only this package (and that
command) imports the `mcp` SDK, and only when `ledgeragent mcp` runs: the console's cold start never pays for it.

May import the session runtime (`console.runtime`) and the web server's network policy (`console.web.policy`:
the same token, Origin and Host checks as `serve`); never the Textual apps or the command line.
"""
