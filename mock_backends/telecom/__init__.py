"""The telecom mock backend: tau2-bench's telecom tools and phone over SQLite, with the line <-> phone sync."""

from mock_backends.telecom.backend import TelecomBackend
from mock_backends.telecom.data import load_seed, read_source, read_tau2_files

BACKEND = TelecomBackend

__all__ = ["BACKEND", "TelecomBackend", "load_seed", "read_source", "read_tau2_files"]
