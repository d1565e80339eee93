"""The warehouse catalog: every table's name, key and Parquet schema, written by the pipeline and read by the API.

Each domain's tables live in a module of their own here; `TABLES` registers them all. The API imports
nothing from `pipelines` but this package.
"""

from __future__ import annotations

from pipelines.catalog import indicators, newsroom, quality, raw, trades, trends
from pipelines.catalog.indicators import (
    FIRST_PERIOD,
    INDICATOR_SNAPSHOTS,
    LAST_PERIOD,
    PERIOD_COUNT,
)
from pipelines.catalog.manifest import (
    MANIFEST_NAME,
    Manifest,
    PartitionFile,
    read_manifest,
    write_manifest,
)
from pipelines.catalog.newsroom import (
    BRIEFS,
    INSTRUMENT_ANALYSES,
    MARKET_SUMMARIES,
    SENTIMENT_DAILY,
    SENTIMENT_TOPICS,
)
from pipelines.catalog.quality import NEWS_DAYS, PRICE_DAYS
from pipelines.catalog.raw import (
    ADJUSTMENTS,
    CORPORATE_ACTION_KINDS,
    CORPORATE_ACTION_REJECTS,
    CORPORATE_ACTIONS,
    DAILY_PRICES,
    INSTRUMENT_REJECTS,
    INSTRUMENTS,
    NEWS_REJECTS,
    PRICE_ADJUSTMENTS,
    PRICE_REJECTS,
    RAW_NEWS,
)
from pipelines.catalog.schema import (
    FILLS,
    MARKETS,
    STRATEGIES,
    WEEKDAY_MARKETS,
    Column,
    Table,
    rejects_table,
)
from pipelines.catalog.storage import (
    LocalStorage,
    S3Location,
    WarehouseStorage,
    open_storage,
    read_partitions,
)
from pipelines.catalog.trades import (
    BACKTEST_SUMMARIES,
    BACKTEST_TRADES,
    CURRENT_ACTIONS,
    RECOMMENDATIONS,
    SCORECARDS,
)
from pipelines.catalog.trends import TREND_HISTORY, TREND_SEGMENTS

TABLES: dict[str, Table] = {
    t.name: t
    for module in (raw, trades, indicators, trends, newsroom, quality)
    for t in module.TABLES
}
"""Every warehouse table by name; the DuckDB views and the docs are generated from this."""

__all__ = [
    "ADJUSTMENTS",
    "BACKTEST_SUMMARIES",
    "BACKTEST_TRADES",
    "BRIEFS",
    "CORPORATE_ACTIONS",
    "CORPORATE_ACTION_KINDS",
    "CORPORATE_ACTION_REJECTS",
    "CURRENT_ACTIONS",
    "DAILY_PRICES",
    "FILLS",
    "FIRST_PERIOD",
    "INDICATOR_SNAPSHOTS",
    "INSTRUMENTS",
    "INSTRUMENT_ANALYSES",
    "INSTRUMENT_REJECTS",
    "LAST_PERIOD",
    "MANIFEST_NAME",
    "MARKETS",
    "MARKET_SUMMARIES",
    "NEWS_DAYS",
    "NEWS_REJECTS",
    "PERIOD_COUNT",
    "PRICE_ADJUSTMENTS",
    "PRICE_DAYS",
    "PRICE_REJECTS",
    "RAW_NEWS",
    "RECOMMENDATIONS",
    "SCORECARDS",
    "SENTIMENT_DAILY",
    "SENTIMENT_TOPICS",
    "STRATEGIES",
    "TABLES",
    "TREND_HISTORY",
    "TREND_SEGMENTS",
    "WEEKDAY_MARKETS",
    "Column",
    "LocalStorage",
    "Manifest",
    "PartitionFile",
    "S3Location",
    "Table",
    "WarehouseStorage",
    "open_storage",
    "read_manifest",
    "read_partitions",
    "rejects_table",
    "write_manifest",
]
