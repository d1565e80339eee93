"""Tests of the Python SDK (clients/python) against a real `mi serve`."""
