"""Tests of the newsroom: tagging, enrichment, the LLM enricher, sentiment counts and the assets."""
