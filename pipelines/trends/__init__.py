"""Trends: daily direction and strength per symbol, merged into segments (docs/trends.md)."""
