"""SQLite implementations of every domain's tools."""
