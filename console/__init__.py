"""The Textual operator console and the ledgeragent CLI."""
