"""The daily partitions of the daily job: partition `D` is every bar dated up to and including `D`."""

from __future__ import annotations

import dagster as dg

DAILY_START = "2024-01-01"
"""The first day a run can be asked for (bars before it are history loaded by that run)."""

DAILY_PARTITIONS = dg.DailyPartitionsDefinition(
    start_date=DAILY_START, end_offset=1, timezone="UTC", fmt="%Y-%m-%d"
)
"""One partition per UTC day, today's included (`end_offset=1`): `mi materialize` brings the
warehouse to today; the schedule closes yesterday."""
