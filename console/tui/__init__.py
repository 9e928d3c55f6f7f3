"""The Textual apps: the operator console (`app`), the supervision desk (`desk_app`), the compare view
(`compare_app`), their screens, widgets and styles (`*.tcss`).

May import the session runtime (`console.runtime`) and the lower layers; never the command line, the web
server or the MCP server."""
