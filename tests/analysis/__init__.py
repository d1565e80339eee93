"""Tests of the analysis package (charts)."""
