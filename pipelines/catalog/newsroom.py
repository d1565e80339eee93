"""Newsroom tables: enriched briefs, daily sentiment counts, the legacy topic series and written analyses."""

from __future__ import annotations

import polars as pl

from pipelines.catalog.schema import Column, Table

BRIEFS = Table(
    name="briefs",
    description=(
        "One enriched brief per raw_news article: instruments tagged, sentiment on -5..+5, tone, "
        "FUD/FOMO bias and score, clout and speculation score (scales in docs/newsroom.md)."
    ),
    columns=(
        Column("market", pl.String(), "market whose feeds carried the article"),
        Column("article_id", pl.String(), "the raw_news article_id"),
        Column("timestamp", pl.Int64(), "publication instant, unix epoch milliseconds"),
        Column("date", pl.Date(), "publication day (UTC); the API writes it YYYY-MM-DD"),
        Column("title", pl.String(), "headline", nullable=True),
        Column(
            "symbols",
            pl.List(pl.String()),
            "instruments of the market named, in order of first mention (empty when none)",
        ),
        Column("body", pl.String(), "text of the article"),
        Column("fud_fomo_bias", pl.String(), "'fud', 'fomo' or 'neutral'", nullable=True),
        Column("fud_fomo_score", pl.String(), "'0'..'10': strength of the bias", nullable=True),
        Column("sentiment", pl.Float64(), "-5 (most bearish) to +5 (most bullish)", nullable=True),
        Column("tone", pl.String(), "'bullish', 'bearish' or 'neutral'", nullable=True),
        Column("clout", pl.String(), "'high', 'medium' or 'low'", nullable=True),
        Column(
            "impacted_coins",
            pl.List(pl.String()),
            "crypto: the coins named (null when none); other markets: null",
            nullable=True,
        ),
        Column("speculation_score", pl.String(), "'0'..'10': speculative language", nullable=True),
        Column("topic", pl.String(), "theme: price, regulation, security, adoption, macro, ..."),
        Column("enricher", pl.String(), "what filled the enrichment fields: 'lexicon' or 'llm'"),
        Column("feed", pl.String(), "feed the article was first read from"),
        Column("link", pl.String(), "canonical link of the article", nullable=True),
    ),
    key=("market", "article_id"),
)

SENTIMENT_DAILY = Table(
    name="sentiment_daily",
    description=(
        "Daily brief counts per symbol: positive (sentiment >= 1), negative (<= -1), neutral "
        "(otherwise, unscored included); one row per symbol and UTC day that has news."
    ),
    columns=(
        Column("market", pl.String(), "market of the symbol"),
        Column("symbol", pl.String(), "canonical upper-case symbol"),
        Column("date", pl.Date(), "the UTC day"),
        Column("timestamp", pl.Int64(), "midnight UTC of `date`, unix epoch milliseconds"),
        Column("positive", pl.Int64(), "briefs naming the symbol with sentiment >= 1"),
        Column("neutral", pl.Int64(), "briefs with -1 < sentiment < 1 or no sentiment"),
        Column("negative", pl.Int64(), "briefs with sentiment <= -1"),
        Column("total", pl.Int64(), "positive + neutral + negative"),
    ),
    key=("market", "symbol", "date"),
)

SENTIMENT_TOPICS = Table(
    name="sentiment_topics",
    description=(
        "The legacy sentiment series: per symbol and UTC day with news, the day's dominant topic "
        "and its positive and negative brief counts."
    ),
    columns=(
        Column("market", pl.String(), "market of the symbol"),
        Column("symbol", pl.String(), "canonical upper-case symbol"),
        Column("date", pl.Date(), "the UTC day"),
        Column("timestamp", pl.Int64(), "midnight UTC of `date`, unix epoch milliseconds"),
        Column("topic", pl.String(), "the most frequent brief topic of the day"),
        Column("positive", pl.Int64(), "briefs naming the symbol with sentiment >= 1"),
        Column("negative", pl.Int64(), "briefs naming the symbol with sentiment <= -1"),
    ),
    key=("market", "symbol", "date"),
)

WRITERS: tuple[str, ...] = ("template", "llm")
"""Every value of a `writer` column: the offline template writer or the optional LLM writer."""

INSTRUMENT_ANALYSES = Table(
    name="instrument_analyses",
    description=(
        "A written analysis per crypto instrument and day (its latest bar): price move, indicators, "
        "trend, the strategies' actions and the news, every number from the warehouse "
        "(docs/newsroom.md). Other markets: empty."
    ),
    columns=(
        Column("market", pl.String(), "market of the instrument (crypto)"),
        Column("symbol", pl.String(), "canonical upper-case symbol"),
        Column("date", pl.Date(), "the day analysed: the symbol's latest bar (UTC)"),
        Column("timestamp", pl.Int64(), "midnight UTC of `date`, unix epoch milliseconds"),
        Column("analysis", pl.String(), "one or two paragraphs of plain text"),
        Column("writer", pl.String(), "what wrote it: 'template' or 'llm'"),
    ),
    key=("market", "symbol", "date"),
)

MARKET_SUMMARIES = Table(
    name="market_summaries",
    description=(
        "A written summary of the crypto market per day (the latest bar): breadth, leaders and "
        "laggards, the news tone and notable stories (docs/newsroom.md). Other markets: empty."
    ),
    columns=(
        Column("market", pl.String(), "the market summarised (crypto)"),
        Column("date", pl.Date(), "the day summarised (UTC)"),
        Column("timestamp", pl.Int64(), "midnight UTC of `date`, unix epoch milliseconds"),
        Column("summary", pl.String(), "one or two paragraphs of plain text"),
        Column("writer", pl.String(), "what wrote it: 'template' or 'llm'"),
    ),
    key=("market", "date"),
)

TABLES: tuple[Table, ...] = (
    BRIEFS,
    SENTIMENT_DAILY,
    SENTIMENT_TOPICS,
    INSTRUMENT_ANALYSES,
    MARKET_SUMMARIES,
)
