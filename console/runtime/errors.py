"""The one error type for a problem with what the user asked for, raised anywhere below the command line.

The command line prints it as one line on stderr with exit status 2 (console.cli.errors, the error contract);
the session runtime, the desk and the screens raise it where a user's choice (a domain, a scenario, an option,
a socket path) cannot be honoured, without knowing how it will be shown.
"""

from __future__ import annotations


class CliError(Exception):
    """A problem with the user's input: printed on stderr without a traceback, exit status 2."""
