"""Raw-layer tables: instruments, daily prices and news as ingested, and what was rejected."""

from __future__ import annotations

import polars as pl

from pipelines.catalog.schema import Column, Table, rejects_table

INSTRUMENTS = Table(
    name="instruments",
    description="Instrument metadata per market: canonical upper-case symbol, display name and logo URI.",
    columns=(
        Column("market", pl.String(), "market: crypto, forex, commodities or stocks"),
        Column("symbol", pl.String(), "canonical upper-case symbol, unique within the market"),
        Column("name", pl.String(), "display name"),
        Column("logo", pl.String(), "logo URI"),
        Column("source", pl.String(), "connector that supplied the row"),
    ),
    key=("market", "symbol"),
)

DAILY_PRICES = Table(
    name="daily_prices",
    description=(
        "Daily OHLCV bars: one row per symbol and calendar day (crypto) or trading day (others); "
        "`timestamp` is midnight UTC of `date` in ms."
    ),
    columns=(
        Column("market", pl.String(), "market of the instrument"),
        Column("symbol", pl.String(), "canonical upper-case symbol"),
        Column("date", pl.Date(), "the bar's day (UTC)"),
        Column("timestamp", pl.Int64(), "midnight UTC of `date`, unix epoch milliseconds"),
        Column("open", pl.Float64(), "opening price, quote currency"),
        Column("high", pl.Float64(), "highest price of the day"),
        Column("low", pl.Float64(), "lowest price of the day"),
        Column("close", pl.Float64(), "closing price of the day"),
        Column(
            "volume",
            pl.Float64(),
            "traded volume in units of the instrument (0 where the source has none)",
        ),
        Column("source", pl.String(), "connector that supplied the row"),
    ),
    key=("market", "symbol", "date"),
)

RAW_NEWS = Table(
    name="raw_news",
    description="News items as parsed from the configured RSS/Atom feeds, deduplicated by article_id.",
    columns=(
        Column("market", pl.String(), "market whose feeds carried the item"),
        Column(
            "article_id", pl.String(), "stable id: hash of the item's guid, else its canonical link"
        ),
        Column("feed", pl.String(), "feed the item was first read from"),
        Column("guid", pl.String(), "the item's guid / Atom id", nullable=True),
        Column("link", pl.String(), "canonical link of the item", nullable=True),
        Column("title", pl.String(), "headline", nullable=True),
        Column("body", pl.String(), "text of the item, markup removed"),
        Column("published_at", pl.Datetime("ms", "UTC"), "publication instant, UTC"),
        Column("timestamp", pl.Int64(), "publication instant, unix epoch milliseconds"),
    ),
    key=("market", "article_id"),
)

CORPORATE_ACTION_KINDS: tuple[str, ...] = ("split", "dividend", "listing", "delisting")
"""What a corporate action is (decisions.md, Corporate actions)."""

CORPORATE_ACTIONS = Table(
    name="corporate_actions",
    description=(
        "Corporate actions per instrument as its source reports them: splits (forward and "
        "reverse), cash dividends, listings and delistings (docs/file-drop.md)."
    ),
    columns=(
        Column("market", pl.String(), "market of the instrument"),
        Column("symbol", pl.String(), "canonical upper-case symbol"),
        Column(
            "date",
            pl.Date(),
            "the day it takes effect: a split's first bar at the new share count, a dividend's "
            "ex-date, the first bar after a listing, the day after the last bar of a delisting",
        ),
        Column("kind", pl.String(), "split, dividend, listing or delisting"),
        Column(
            "ratio",
            pl.Float64(),
            "a split's new shares per old share (4 for 4-for-1, 0.1 for 1-for-10); null otherwise",
            nullable=True,
        ),
        Column(
            "amount",
            pl.Float64(),
            "a dividend's cash per share, in the quote currency; null otherwise",
            nullable=True,
        ),
        Column(
            "reason",
            pl.String(),
            "why, in the source's words (a delisting's acquired, bankrupt, moved); may be null",
            nullable=True,
        ),
        Column("source", pl.String(), "connector that supplied the row"),
    ),
    key=("market", "symbol", "date", "kind"),
)

ADJUSTMENTS: tuple[str, ...] = ("split", "all", "raw")
"""How a price series is adjusted for corporate actions (decisions.md, Corporate actions): `split`
(the default: split-adjusted prices and volume, what the analytics read), `all` (splits and
dividends: a total-return series) or `raw` (as traded)."""

PRICE_ADJUSTMENTS = Table(
    name="price_adjustments",
    description=(
        "Adjustment factors of each symbol's bars, one row per day with a split or an ex-dividend "
        "date among its bars: the bars dated from `bars_from` to the day before `date` are adjusted "
        "by the row; a bar on or after the symbol's last row's date is as traded. Derived backward "
        "from the latest bar, so the latest close is the traded close."
    ),
    columns=(
        Column("market", pl.String(), "market of the instrument"),
        Column("symbol", pl.String(), "canonical upper-case symbol"),
        Column("date", pl.Date(), "a split's first bar at the new share count or an ex-date"),
        Column(
            "bars_from",
            pl.Date(),
            "the first bar the row adjusts: the symbol's previous row's date, or its first bar",
        ),
        Column(
            "split_ratio",
            pl.Float64(),
            "product of the ratios of the splits on this day and every later one: an earlier "
            "bar's prices are divided by it and its volume multiplied by it",
        ),
        Column(
            "dividend_factor",
            pl.Float64(),
            "product of 1 - amount / previous close of the dividends on this day and every later "
            "one: the total-return series (`all`) multiplies the split-adjusted prices by it",
        ),
        Column(
            "dividend",
            pl.Float64(),
            "cash of this day's dividend per share of the split-adjusted series (0 without one): "
            "what a backtest credits a trade open over the ex-date, per unit held",
        ),
    ),
    key=("market", "symbol", "date"),
)

INSTRUMENT_REJECTS = rejects_table("instrument_rejects", "Instrument rows")
CORPORATE_ACTION_REJECTS = rejects_table("corporate_action_rejects", "Corporate action rows")
PRICE_REJECTS = rejects_table("price_rejects", "Price rows")
NEWS_REJECTS = rejects_table("news_rejects", "News items")


TABLES: tuple[Table, ...] = (
    INSTRUMENTS,
    DAILY_PRICES,
    CORPORATE_ACTIONS,
    PRICE_ADJUSTMENTS,
    RAW_NEWS,
    INSTRUMENT_REJECTS,
    CORPORATE_ACTION_REJECTS,
    PRICE_REJECTS,
    NEWS_REJECTS,
)
