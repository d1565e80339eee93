"""Tests of the trends domain."""
