"""Tests of the news domain."""
