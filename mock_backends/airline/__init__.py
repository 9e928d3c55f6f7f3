"""The airline mock backend: tau2-bench's airline tools over SQLite, with our own seed data."""

from mock_backends.airline.backend import AirlineBackend
from mock_backends.airline.data import load_seed, load_tau2_db

BACKEND = AirlineBackend

__all__ = ["BACKEND", "AirlineBackend", "load_seed", "load_tau2_db"]
