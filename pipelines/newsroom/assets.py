"""Dagster adapters of the newsroom: `briefs`, the sentiment and the written-analyses multi-assets."""

# No `from __future__ import annotations`: Dagster reads the assets' annotations at definition time.

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import dagster as dg
import polars as pl

from pipelines.catalog import (
    CURRENT_ACTIONS,
    DAILY_PRICES,
    INDICATOR_SNAPSHOTS,
    INSTRUMENTS,
    PRICE_ADJUSTMENTS,
    TREND_SEGMENTS,
    Table,
)
from pipelines.catalog.adjustments import adjusted
from pipelines.catalog.newsroom import (
    BRIEFS,
    INSTRUMENT_ANALYSES,
    MARKET_SUMMARIES,
    SENTIMENT_DAILY,
    SENTIMENT_TOPICS,
)
from pipelines.catalog.state import BRIEFS_STATE
from pipelines.newsroom import analyses, checks
from pipelines.newsroom.enrichment import Enricher
from pipelines.newsroom.update import MarketBriefs, new_briefs, update_briefs, update_sentiment
from pipelines.newsroom.writing.facts import MONTH_DAYS, RSI_PERIOD, SMA_PERIODS, WEEK_DAYS
from pipelines.newsroom.writing.writer import Writer
from pipelines.platform.check_rows import markdown
from pipelines.platform.daily import in_daily_job
from pipelines.platform.runs import RunOptions, step_name
from pipelines.warehouse.metadata import row_counts
from pipelines.warehouse.resource import WarehouseResource
from pipelines.warehouse.staging import RunTransaction
from pipelines.warehouse.tables import counted_rows, scan, stage_market_file, stored_rows

BRIEFS_KEY = dg.AssetKey(BRIEFS.name)
SENTIMENT_DAILY_KEY = dg.AssetKey(SENTIMENT_DAILY.name)
SENTIMENT_TOPICS_KEY = dg.AssetKey(SENTIMENT_TOPICS.name)
RAW_NEWS_KEY = dg.AssetKey("raw_news")
INSTRUMENTS_KEY = dg.AssetKey("instruments")
ANALYSES_KEY = dg.AssetKey(INSTRUMENT_ANALYSES.name)
SUMMARIES_KEY = dg.AssetKey(MARKET_SUMMARIES.name)
ANALYSIS_INPUTS = (
    "daily_prices",
    "price_adjustments",
    "instruments",
    "indicator_snapshots",
    "trend_segments",
    "current_actions",
    "briefs",
)
"""The tables the analyses' facts come from."""

BRIEF_CHECKS = {
    "sentiment_finite": "No sentiment is NaN or infinite.",
    "sentiment_in_range": "Every sentiment lies in -5..+5.",
    "symbols_are_instruments": "Every symbol a brief names is an instrument of its market.",
    "enrichment_values_allowed": "tone, fud_fomo_bias, clout and the scores take documented values.",
    "article_id_unique": "One brief per article_id.",
}
DAILY_CHECKS = {
    "total_is_sum": "total = positive + neutral + negative on every row.",
    "unique_symbol_date": "One row per (symbol, date).",
}
TOPIC_CHECKS = {"unique_symbol_date": "One row per (symbol, date)."}
ANALYSIS_CHECKS = {
    "analysis_for_every_instrument": "Every crypto instrument with prices has a non-empty analysis.",
    "numbers_match_facts": "Every number an analysis cites is one of its facts, as formatted.",
}
SUMMARY_CHECKS = {
    "summary_for_latest_day": "Crypto has a non-empty summary of its latest day.",
    "numbers_match_facts": "Every number the summary cites is one of the market's facts.",
}


def _result(
    key: dg.AssetKey, check: str, offending: pl.DataFrame, severity: dg.AssetCheckSeverity
) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        asset_key=key,
        check_name=check,
        passed=offending.is_empty(),
        severity=severity,
        metadata={
            "offending_count": offending.height,
            "offending_rows": dg.MetadataValue.md(markdown(offending)),
        },
    )


def brief_check_results(
    briefs: pl.DataFrame, instruments: pl.DataFrame
) -> Iterator[dg.AssetCheckResult]:
    """The checks of the briefs a refresh wrote (only articles whose id is not stored yet are
    enriched, so ids unique among them stay unique in the table)."""
    error = dg.AssetCheckSeverity.ERROR
    yield _result(BRIEFS_KEY, "sentiment_finite", checks.non_finite_sentiment(briefs), error)
    yield _result(BRIEFS_KEY, "sentiment_in_range", checks.sentiment_out_of_range(briefs), error)
    unknown = checks.unknown_symbols(briefs, instruments)
    yield _result(BRIEFS_KEY, "symbols_are_instruments", unknown, error)
    values = checks.disallowed_values(briefs)
    yield _result(BRIEFS_KEY, "enrichment_values_allowed", values, error)
    repeated = checks.duplicate_keys(briefs, ["market", "article_id"])
    yield _result(BRIEFS_KEY, "article_id_unique", repeated, error)


def build_briefs_asset() -> dg.AssetsDefinition:
    """`briefs` of every market: articles without a brief yet, tagged and enriched."""

    @dg.asset(
        name=BRIEFS.name,
        description=BRIEFS.description,
        deps=[RAW_NEWS_KEY, INSTRUMENTS_KEY],
        group_name="newsroom",
        check_specs=[
            dg.AssetCheckSpec(name, asset=BRIEFS_KEY, description=text)
            for name, text in BRIEF_CHECKS.items()
        ],
    )
    def briefs(
        context: dg.AssetExecutionContext,
        newsroom_enricher: dg.ResourceParam[Enricher],
        warehouse: WarehouseResource,
        run_options: RunOptions,
    ) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
        tx = warehouse.transaction(context.run.run_id, step_name(context))
        written, instruments = [], []
        for market in run_options.markets:
            listed = stored_rows(tx, INSTRUMENTS, market)
            result = update_briefs(tx, newsroom_enricher, market, listed, run_options.full)
            context.log.info(
                f"briefs {market}: {result.enriched.height} enriched"
                f"{' (every article: first run, new instruments or new code)' if result.everything else ''}"
            )
            written.append(result.enriched)
            instruments.append(listed)
        frame = pl.concat(written)
        by_enricher = dict(frame.group_by("enricher").len().rows())
        yield dg.MaterializeResult(
            asset_key=BRIEFS_KEY,
            metadata={
                **row_counts(tx, BRIEFS.name, frame.height),
                "enriched_by": dg.MetadataValue.json(by_enricher),
            },
        )
        yield from brief_check_results(frame, pl.concat(instruments))

    return briefs


def build_sentiment_assets() -> dg.AssetsDefinition:
    """`sentiment_daily` and `sentiment_topics` of every market, recounted for the days touched."""
    specs = [
        dg.AssetCheckSpec(name, asset=SENTIMENT_DAILY_KEY, description=text)
        for name, text in DAILY_CHECKS.items()
    ] + [
        dg.AssetCheckSpec(name, asset=SENTIMENT_TOPICS_KEY, description=text)
        for name, text in TOPIC_CHECKS.items()
    ]

    @dg.multi_asset(
        name="newsroom_sentiment",
        specs=[
            dg.AssetSpec(
                SENTIMENT_DAILY.name, description=SENTIMENT_DAILY.description, deps=[BRIEFS_KEY]
            ),
            dg.AssetSpec(
                SENTIMENT_TOPICS.name, description=SENTIMENT_TOPICS.description, deps=[BRIEFS_KEY]
            ),
        ],
        group_name="newsroom",
        check_specs=specs,
    )
    def newsroom_sentiment(
        context: dg.AssetExecutionContext, warehouse: WarehouseResource, run_options: RunOptions
    ) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
        tx = warehouse.transaction(context.run.run_id, step_name(context))
        recounted = [
            update_sentiment(tx, market, _briefs_written(tx, market, run_options.full))
            for market in run_options.markets
        ]
        daily = pl.concat([d for d, _ in recounted])
        topics = pl.concat([t for _, t in recounted])
        for table in (SENTIMENT_DAILY, SENTIMENT_TOPICS):
            written = (daily if table is SENTIMENT_DAILY else topics).height
            yield dg.MaterializeResult(
                asset_key=table.name, metadata=row_counts(tx, table.name, written)
            )
        error = dg.AssetCheckSeverity.ERROR
        key = ["market", "symbol", "date"]
        yield _result(SENTIMENT_DAILY_KEY, "total_is_sum", checks.total_not_sum(daily), error)
        repeated = checks.duplicate_keys(daily, key)
        yield _result(SENTIMENT_DAILY_KEY, "unique_symbol_date", repeated, error)
        repeated = checks.duplicate_keys(topics, key)
        yield _result(SENTIMENT_TOPICS_KEY, "unique_symbol_date", repeated, error)

    return newsroom_sentiment


def _briefs_written(tx: RunTransaction, market: str, full: bool) -> MarketBriefs:
    """What the briefs step of this run wrote for `market`: the briefs new to the table."""
    committed = tx.manifest.partitions(BRIEFS.name, market) if tx.manifest and not full else {}
    everything = full or not committed or _rewritten(tx, market)
    new = new_briefs(tx, market, {} if everything else committed)
    return MarketBriefs(new, everything, counted_rows(tx, BRIEFS, market))


def _rewritten(tx: RunTransaction, market: str) -> bool:
    """The briefs of `market` were all written again by this run (the state says so)."""
    committed = tx.manifest.partitions(BRIEFS_STATE.name, market) if tx.manifest else {}
    before = scan(tx.store.storage, committed.values(), BRIEFS_STATE).collect()
    return not before.equals(stored_rows(tx, BRIEFS_STATE, market))


def build_analyses_assets() -> dg.AssetsDefinition:
    """`instrument_analyses` and `market_summaries` of every analysed market, written by
    `newsroom_writer` from the run's tables and the briefs of the latest refresh."""
    specs = [
        dg.AssetCheckSpec(name, asset=ANALYSES_KEY, description=text)
        for name, text in ANALYSIS_CHECKS.items()
    ] + [
        dg.AssetCheckSpec(name, asset=SUMMARIES_KEY, description=text)
        for name, text in SUMMARY_CHECKS.items()
    ]

    def build() -> dg.AssetsDefinition:
        @dg.multi_asset(
            name="newsroom_analyses",
            specs=[
                dg.AssetSpec(
                    INSTRUMENT_ANALYSES.name,
                    description=INSTRUMENT_ANALYSES.description,
                    deps=list(ANALYSIS_INPUTS),
                ),
                dg.AssetSpec(
                    MARKET_SUMMARIES.name,
                    description=MARKET_SUMMARIES.description,
                    deps=list(ANALYSIS_INPUTS),
                ),
            ],
            group_name="newsroom",
            check_specs=specs,
        )
        def newsroom_analyses(
            context: dg.AssetExecutionContext,
            newsroom_writer: dg.ResourceParam[Writer],
            warehouse: WarehouseResource,
            run_options: RunOptions,
        ) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
            tx = warehouse.transaction(context.run.run_id, step_name(context))
            written = [_write_market(tx, newsroom_writer, m) for m in run_options.markets]
            tables = pl.concat([w[0] for w in written])
            summaries = pl.concat([w[1] for w in written])
            by_writer = dict(tables.group_by("writer").len().rows())
            context.log.info(f"analyses: {tables.height} written by {by_writer}")
            yield dg.MaterializeResult(
                asset_key=ANALYSES_KEY,
                metadata={
                    **row_counts(tx, INSTRUMENT_ANALYSES.name, tables.height),
                    "writers": dg.MetadataValue.json(by_writer),
                },
            )
            yield dg.MaterializeResult(
                asset_key=SUMMARIES_KEY,
                metadata=row_counts(tx, MARKET_SUMMARIES.name, summaries.height),
            )
            error = dg.AssetCheckSeverity.ERROR
            for check, frames in (
                ("analysis_for_every_instrument", [w[2] for w in written]),
                ("numbers_match_facts", [w[3] for w in written]),
            ):
                yield _result(ANALYSES_KEY, check, pl.concat(frames, how="diagonal_relaxed"), error)
            for check, frames in (
                ("summary_for_latest_day", [w[4] for w in written]),
                ("numbers_match_facts", [w[5] for w in written]),
            ):
                yield _result(
                    SUMMARIES_KEY, check, pl.concat(frames, how="diagonal_relaxed"), error
                )

        return newsroom_analyses

    return in_daily_job(build())


def _write_market(tx: RunTransaction, writer: Writer, market: str) -> tuple[pl.DataFrame, ...]:
    """One market's analyses and summary staged; (analyses, summaries, and the four checks'
    offending rows)."""
    inputs = analysis_inputs(tx, market)
    facts = analyses.gather_facts(market, *inputs)
    table = analyses.analyses_table(market, facts, newsroom_texts(writer.analyses(facts)))
    market_facts = analyses.gather_market_facts(market, facts, inputs[-1])
    summary = writer.summaries([market_facts]) if market_facts else []
    summaries = analyses.summaries_table(market, market_facts, summary[0] if summary else None)
    for frame, target in ((table, INSTRUMENT_ANALYSES), (summaries, MARKET_SUMMARIES)):
        stage_market_file(tx, target, market, frame)
    prices, instruments = inputs[0], inputs[1]
    return (
        table,
        summaries,
        analyses.missing_analyses(market, prices, instruments, table),
        analyses.unsupported_numbers(table, facts),
        analyses.missing_summary(market, market_facts, summaries),
        analyses.unsupported_summary_numbers(summaries, market_facts),
    )


def newsroom_texts(written: list[Any]) -> list[tuple[str, str]]:
    return [(w.text, w.writer) for w in written]


def analysis_inputs(tx: RunTransaction, market: str) -> tuple[pl.DataFrame, ...]:
    """What an analysis cites, read narrowly: the last 31 days of prices (split-adjusted), the
    periods the facts use, running trends, current actions and the last week of briefs (for an
    analysed market)."""
    if market not in analyses.ANALYSED_MARKETS:
        empty = (
            DAILY_PRICES,
            INSTRUMENTS,
            INDICATOR_SNAPSHOTS,
            TREND_SEGMENTS,
            CURRENT_ACTIONS,
            BRIEFS,
        )
        return tuple(t.empty() for t in empty)
    storage = tx.store.storage

    def lazy(table: Table) -> pl.LazyFrame:
        return scan(storage, tx.partitions(table.name, market).values(), table)

    prices = lazy(DAILY_PRICES)
    newest = prices.select(pl.col("date").max()).collect().item()
    recent = pl.col("date") >= (newest - timedelta(days=MONTH_DAYS + 1)) if newest else pl.lit(True)
    periods = [RSI_PERIOD, *SMA_PERIODS]
    briefs = lazy(BRIEFS)
    week = pl.col("date") >= (newest - timedelta(days=WEEK_DAYS + 1)) if newest else pl.lit(True)
    # The moves an analysis cites are the split-adjusted series', as every other figure is.
    month = prices.filter(recent).collect().sort("symbol", "date")
    return (
        adjusted(month, stored_rows(tx, PRICE_ADJUSTMENTS, market)),
        stored_rows(tx, INSTRUMENTS, market),
        lazy(INDICATOR_SNAPSHOTS).filter(pl.col("period").is_in(periods)).collect(),
        lazy(TREND_SEGMENTS).filter("is_running").collect(),
        lazy(CURRENT_ACTIONS).collect(),
        briefs.filter(week).collect(),
    )
