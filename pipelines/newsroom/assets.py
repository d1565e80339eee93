"""Dagster adapters of the newsroom: `briefs`, the sentiment and the written-analyses multi-assets."""

# No `from __future__ import annotations`: Dagster reads the assets' annotations at definition time.

from collections.abc import Iterator

import dagster as dg
import polars as pl

from pipelines.catalog.newsroom import (
    BRIEFS,
    INSTRUMENT_ANALYSES,
    MARKET_SUMMARIES,
    SENTIMENT_DAILY,
    SENTIMENT_TOPICS,
)
from pipelines.newsroom import analyses, checks
from pipelines.newsroom.briefs import build_briefs
from pipelines.newsroom.enrichment import Enricher
from pipelines.newsroom.sentiment import sentiment_daily, sentiment_topics
from pipelines.newsroom.writing.writer import Writer
from pipelines.partitions import MARKET_PARTITIONS

BRIEFS_KEY = dg.AssetKey(BRIEFS.name)
SENTIMENT_DAILY_KEY = dg.AssetKey(SENTIMENT_DAILY.name)
SENTIMENT_TOPICS_KEY = dg.AssetKey(SENTIMENT_TOPICS.name)
RAW_NEWS_KEY = dg.AssetKey("raw_news")
INSTRUMENTS_KEY = dg.AssetKey("instruments")
ANALYSES_KEY = dg.AssetKey(INSTRUMENT_ANALYSES.name)
SUMMARIES_KEY = dg.AssetKey(MARKET_SUMMARIES.name)
ANALYSIS_INPUTS = (
    "daily_prices",
    "instruments",
    "indicator_snapshots",
    "trend_segments",
    "current_actions",
    "briefs",
)
"""The tables the analyses' facts come from (same market partition)."""

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
            "offending_rows": dg.MetadataValue.md(checks.markdown(offending)),
        },
    )


def brief_check_results(
    briefs: pl.DataFrame, instruments: pl.DataFrame
) -> Iterator[dg.AssetCheckResult]:
    error = dg.AssetCheckSeverity.ERROR
    yield _result(BRIEFS_KEY, "sentiment_finite", checks.non_finite_sentiment(briefs), error)
    yield _result(BRIEFS_KEY, "sentiment_in_range", checks.sentiment_out_of_range(briefs), error)
    unknown = checks.unknown_symbols(briefs, instruments)
    yield _result(BRIEFS_KEY, "symbols_are_instruments", unknown, error)
    values = checks.disallowed_values(briefs)
    yield _result(BRIEFS_KEY, "enrichment_values_allowed", values, error)
    repeated = checks.duplicate_keys(briefs, ["article_id"])
    yield _result(BRIEFS_KEY, "article_id_unique", repeated, error)


def build_briefs_asset() -> dg.AssetsDefinition:
    """`briefs` per market from raw_news and instruments, enriched by the `newsroom_enricher`."""

    @dg.asset(
        name=BRIEFS.name,
        description=BRIEFS.description,
        ins={
            "raw_news": dg.AssetIn(key=RAW_NEWS_KEY),
            "instruments": dg.AssetIn(key=INSTRUMENTS_KEY),
        },
        partitions_def=MARKET_PARTITIONS,
        group_name="newsroom",
        check_specs=[
            dg.AssetCheckSpec(name, asset=BRIEFS_KEY, description=text)
            for name, text in BRIEF_CHECKS.items()
        ],
    )
    def briefs(
        context: dg.AssetExecutionContext,
        raw_news: pl.DataFrame,
        instruments: pl.DataFrame,
        newsroom_enricher: dg.ResourceParam[Enricher],
    ) -> Iterator[dg.Output[pl.DataFrame] | dg.AssetCheckResult]:
        market = context.partition_key
        frame = build_briefs(raw_news, instruments, market, newsroom_enricher)
        by_enricher = dict(frame.group_by("enricher").len().rows())
        context.log.info(f"briefs {market}: {frame.height} briefs, enriched by {by_enricher}")
        yield dg.Output(
            frame,
            metadata={
                "dagster/row_count": frame.height,
                "tagged": frame.filter(pl.col("symbols").list.len() > 0).height,
                "enriched_by": dg.MetadataValue.json(by_enricher),
            },
        )
        market_instruments = instruments.filter(pl.col("market") == market)
        yield from brief_check_results(frame, market_instruments)

    return briefs


def build_sentiment_assets() -> dg.AssetsDefinition:
    """`sentiment_daily` and `sentiment_topics` per market, both counted from `briefs`."""
    specs = [
        dg.AssetCheckSpec(name, asset=SENTIMENT_DAILY_KEY, description=text)
        for name, text in DAILY_CHECKS.items()
    ] + [
        dg.AssetCheckSpec(name, asset=SENTIMENT_TOPICS_KEY, description=text)
        for name, text in TOPIC_CHECKS.items()
    ]

    @dg.multi_asset(
        name="newsroom_sentiment",
        outs={
            SENTIMENT_DAILY.name: dg.AssetOut(description=SENTIMENT_DAILY.description),
            SENTIMENT_TOPICS.name: dg.AssetOut(description=SENTIMENT_TOPICS.description),
        },
        ins={"briefs": dg.AssetIn(key=BRIEFS_KEY)},
        partitions_def=MARKET_PARTITIONS,
        group_name="newsroom",
        check_specs=specs,
    )
    def newsroom_sentiment(
        briefs: pl.DataFrame,
    ) -> Iterator[dg.Output[pl.DataFrame] | dg.AssetCheckResult]:
        daily = sentiment_daily(briefs)
        topics = sentiment_topics(briefs)
        yield dg.Output(daily, SENTIMENT_DAILY.name, metadata={"dagster/row_count": daily.height})
        yield dg.Output(
            topics, SENTIMENT_TOPICS.name, metadata={"dagster/row_count": topics.height}
        )
        error = dg.AssetCheckSeverity.ERROR
        key = ["symbol", "date"]
        yield _result(SENTIMENT_DAILY_KEY, "total_is_sum", checks.total_not_sum(daily), error)
        repeated = checks.duplicate_keys(daily, key)
        yield _result(SENTIMENT_DAILY_KEY, "unique_symbol_date", repeated, error)
        repeated = checks.duplicate_keys(topics, key)
        yield _result(SENTIMENT_TOPICS_KEY, "unique_symbol_date", repeated, error)

    return newsroom_sentiment


def build_analyses_assets() -> dg.AssetsDefinition:
    """`instrument_analyses` and `market_summaries` per market, written by `newsroom_writer`."""
    specs = [
        dg.AssetCheckSpec(name, asset=ANALYSES_KEY, description=text)
        for name, text in ANALYSIS_CHECKS.items()
    ] + [
        dg.AssetCheckSpec(name, asset=SUMMARIES_KEY, description=text)
        for name, text in SUMMARY_CHECKS.items()
    ]

    @dg.multi_asset(
        name="newsroom_analyses",
        outs={
            INSTRUMENT_ANALYSES.name: dg.AssetOut(description=INSTRUMENT_ANALYSES.description),
            MARKET_SUMMARIES.name: dg.AssetOut(description=MARKET_SUMMARIES.description),
        },
        ins={name: dg.AssetIn(key=dg.AssetKey(name)) for name in ANALYSIS_INPUTS},
        partitions_def=MARKET_PARTITIONS,
        group_name="newsroom",
        check_specs=specs,
    )
    def newsroom_analyses(
        context: dg.AssetExecutionContext,
        daily_prices: pl.DataFrame,
        instruments: pl.DataFrame,
        indicator_snapshots: pl.DataFrame,
        trend_segments: pl.DataFrame,
        current_actions: pl.DataFrame,
        briefs: pl.DataFrame,
        newsroom_writer: dg.ResourceParam[Writer],
    ) -> Iterator[dg.Output[pl.DataFrame] | dg.AssetCheckResult]:
        market = context.partition_key
        tables = (daily_prices, instruments, indicator_snapshots, trend_segments, current_actions)
        facts = analyses.gather_facts(market, *tables, briefs)
        written = newsroom_writer.analyses(facts)
        table = analyses.analyses_table(market, facts, written)
        market_facts = analyses.gather_market_facts(market, facts, briefs)
        summary = newsroom_writer.summaries([market_facts]) if market_facts else []
        summaries = analyses.summaries_table(market, market_facts, summary[0] if summary else None)
        by_writer = dict(table.group_by("writer").len().rows())
        context.log.info(f"analyses {market}: {table.height} written by {by_writer}")
        yield dg.Output(
            table,
            INSTRUMENT_ANALYSES.name,
            metadata={
                "dagster/row_count": table.height,
                "writers": dg.MetadataValue.json(by_writer),
            },
        )
        yield dg.Output(
            summaries, MARKET_SUMMARIES.name, metadata={"dagster/row_count": summaries.height}
        )
        error = dg.AssetCheckSeverity.ERROR
        missing = analyses.missing_analyses(market, daily_prices, instruments, table)
        yield _result(ANALYSES_KEY, "analysis_for_every_instrument", missing, error)
        numbers = analyses.unsupported_numbers(table, facts)
        yield _result(ANALYSES_KEY, "numbers_match_facts", numbers, error)
        absent = analyses.missing_summary(market, market_facts, summaries)
        yield _result(SUMMARIES_KEY, "summary_for_latest_day", absent, error)
        numbers = analyses.unsupported_summary_numbers(summaries, market_facts)
        yield _result(SUMMARIES_KEY, "numbers_match_facts", numbers, error)

    return newsroom_analyses
