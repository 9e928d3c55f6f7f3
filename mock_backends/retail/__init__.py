"""The retail mock backend: tau2-bench's retail tools over SQLite, with our own seed data."""

from mock_backends.retail.backend import RetailBackend
from mock_backends.retail.data import load_seed, load_tau2_db

BACKEND = RetailBackend

__all__ = ["BACKEND", "RetailBackend", "load_seed", "load_tau2_db"]
