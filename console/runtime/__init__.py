"""The session runtime, without Textual: live sessions and their folders (`live`, `live_task`, `task_sessions`,
`storage`), the supervision desk's engine (`desk`, `desk_specs`), the two sides of a compare run
(`compare_run`, `compare_export`), the three facts of a gated call in words (`facts`, `textview`), Markdown
exports, rule sources and coverage (`rules`, `coverage`), operator identities (`operators`), what the user
named (`lookup`) and the one user-error type (`errors`).

May import the lower layers (core, domains, mock_backends) and rich; never Textual, the command line, the web
server, the Textual apps or the MCP server: everything above builds on it.
"""
