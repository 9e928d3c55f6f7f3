"""The telehealth mock backend: tau-Trait's telehealth tools over SQLite, tau2 conventions, our own seed."""

from mock_backends.telehealth.backend import TelehealthBackend
from mock_backends.telehealth.data import load_seed, read_folder, read_source

BACKEND = TelehealthBackend

__all__ = ["BACKEND", "TelehealthBackend", "load_seed", "read_folder", "read_source"]
