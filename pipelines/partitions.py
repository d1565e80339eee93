"""Partitions shared by every domain: one partition per market."""

from __future__ import annotations

import dagster as dg

from pipelines.catalog import MARKETS

MARKET_PARTITIONS = dg.StaticPartitionsDefinition(list(MARKETS))
