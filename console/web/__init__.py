"""The web server behind `ledgeragent serve`: textual-serve, extended to be safe by default (`server`), the pure
network policy it applies (`policy`: token, exact Origin allowlist, Host check, sizes; the MCP server applies the
same), and the Textual driver each browser tab's console process runs with (`driver`: it draws only once it has
the tab's size).

May import the session runtime (`console.runtime`) and the lower layers; never the Textual apps (a tab's console
is a separate process, started by name) nor the command line.
"""
