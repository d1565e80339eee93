"""The newsroom's tables updated by a news refresh: new articles enriched, the days they touch recounted."""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

from pipelines.catalog import BRIEFS, RAW_NEWS, SENTIMENT_DAILY, SENTIMENT_TOPICS, PartitionFile
from pipelines.catalog.state import BRIEFS_STATE
from pipelines.incremental.modes import code_version
from pipelines.newsroom.briefs import build_briefs
from pipelines.newsroom.enrichment import Enricher
from pipelines.newsroom.sentiment import sentiment_daily, sentiment_topics
from pipelines.warehouse.staging import RunTransaction
from pipelines.warehouse.tables import (
    append_segments,
    counted_rows,
    scan,
    stage_market_file,
    stored_rows,
)

HASHED = tuple(
    importlib.import_module(f"pipelines.newsroom.{name}")
    for name in (
        "briefs",
        "caseless",
        "enrichment",
        "finance_grammar",
        "finance_scope",
        "lexicon",
        "tagging",
        "terms",
        "topics",
    )
)
"""The modules briefs are tagged and enriched with."""
VERSION = code_version(*HASHED)
"""The code briefs are tagged and enriched with: a change re-enriches every article once.
Hashed when the code is imported: the source that runs, even if its files are edited later."""


def version() -> str:
    return VERSION


def instruments_hash(instruments: pl.DataFrame) -> str:
    """Changes whenever the instruments a market's articles are tagged with do."""
    rows = instruments.select("symbol", "name").sort("symbol").iter_rows()
    return hashlib.sha256("\n".join(f"{s}\t{n}" for s, n in rows).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class MarketBriefs:
    """What one refresh did to one market's briefs."""

    enriched: pl.DataFrame
    """The briefs this refresh wrote (every brief when `everything`)."""
    everything: bool
    """The market's articles were all enriched again (first refresh, new instruments, new code)."""
    stored: int


def update_briefs(
    tx: RunTransaction,
    enricher: Enricher,
    market: str,
    instruments: pl.DataFrame,
    full: bool,
) -> MarketBriefs:
    """Enrich the market's articles that have no brief yet (all of them when the instruments or
    the code changed since the briefs were written) and stage briefs and their state."""
    wanted = pl.DataFrame(
        {
            "market": [market],
            "instruments": [instruments_hash(instruments)],
            "code_version": [version()],
        }
    )
    state = stored_rows(tx, BRIEFS_STATE, market)
    everything = full or not state.equals(BRIEFS_STATE.conform(wanted))
    stored = {} if everything else tx.partitions(BRIEFS.name, market)
    articles = scan(tx.store.storage, tx.partitions(RAW_NEWS.name, market).values(), RAW_NEWS)
    new = articles.filter(_not_among(_ids(tx, stored))).collect()
    enriched = build_briefs(new, instruments, market, enricher)
    briefs = append_segments(tx, BRIEFS, market, stored, enriched, pl.col("date"), everything)
    tx.stage(BRIEFS.name, market, briefs)
    stage_market_file(tx, BRIEFS_STATE, market, wanted)
    return MarketBriefs(enriched, everything, counted_rows(tx, BRIEFS, market))


def new_briefs(
    tx: RunTransaction, market: str, before: Mapping[str, PartitionFile]
) -> pl.DataFrame:
    """The market's briefs as this run sees them whose article is not in the files `before`
    (every brief when there are none)."""
    briefs = scan(tx.store.storage, tx.partitions(BRIEFS.name, market).values(), BRIEFS)
    return briefs.filter(_not_among(_ids(tx, before))).collect()


def _ids(tx: RunTransaction, files: Mapping[str, PartitionFile]) -> pl.Series:
    """The article ids of briefs files."""
    stored = scan(tx.store.storage, files.values(), BRIEFS).select("article_id").collect()
    return stored["article_id"]


def _not_among(known: pl.Series) -> pl.Expr:
    """Rows whose article is not among `known`: a predicate the Parquet reader applies to the
    article_id column before it decodes the others, so whole rows are read for those only."""
    return ~pl.col("article_id").is_in(known.implode())


def update_sentiment(
    tx: RunTransaction, market: str, changed: MarketBriefs
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Recount the (symbol, day) rows of the days the refresh's briefs fall on (every day when
    every brief was rewritten); stage both tables; return the rows recounted."""
    days = pl.Series("date", changed.enriched["date"].unique().to_list(), dtype=pl.Date)
    stored = scan(tx.store.storage, tx.partitions(BRIEFS.name, market).values(), BRIEFS)
    # The days touched only: their segments' row groups are the ones read.
    briefs = (
        stored if changed.everything else stored.filter(pl.col("date").is_in(days.implode()))
    ).collect()
    daily, topics_ = sentiment_daily(briefs), sentiment_topics(briefs)
    for table, recounted in ((SENTIMENT_DAILY, daily), (SENTIMENT_TOPICS, topics_)):
        kept = (
            table.empty()
            if changed.everything
            else stored_rows(tx, table, market).filter(~pl.col("date").is_in(days.implode()))
        )
        frame = pl.concat([kept, recounted]).sort(["symbol", "date"], descending=[False, True])
        stage_market_file(tx, table, market, frame)
    return daily, topics_
