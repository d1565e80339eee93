"""How adjustment factors apply to a price series, stated once in SQL and once in Polars.

decisions.md, Corporate actions: adjustment runs backward from the latest bar, so the latest close
is the traded close; each earlier price is divided by the product of the split ratios after it
(and, for `all`, scaled by `1 - amount / previous close` of each later ex-date); volume is
multiplied by the split ratios after it. The prices domain derives the factors once per run
(`price_adjustments`, `pipelines/prices/adjustments.py`); the warehouse's views and the API apply
them with `adjusted_bars_sql`, the analytics with `adjusted`, in the same order of operations, so
the served series and the one the indicators saw are equal to the last bit.
"""

from __future__ import annotations

import polars as pl

from pipelines.catalog.raw import ADJUSTMENTS, DAILY_PRICES, PRICE_ADJUSTMENTS
from pipelines.catalog.sql import quote_identifier

PRICE_COLUMNS = ("open", "high", "low", "close")


def adjusted_bars_sql(adjustment: str, where: str = "TRUE") -> str:
    """A SELECT of `daily_prices`' columns, in the catalog's order, adjusted by `price_adjustments`
    (decisions.md, Corporate actions), of the bars `where` keeps (a condition on the bars' columns,
    written `p.<column>`): `raw` as traded; `split` each price divided by the split ratio of the
    adjustment row whose span holds the bar and its volume multiplied by it; `all` the split-adjusted
    prices multiplied by that row's dividend factor as well. A bar with no row after it is as traded.
    """
    if adjustment not in ADJUSTMENTS:
        raise ValueError(f"unknown adjustment {adjustment!r}")
    bars = quote_identifier(DAILY_PRICES.name)
    if adjustment == "raw":
        columns = ", ".join(f"p.{quote_identifier(c.name)}" for c in DAILY_PRICES.columns)
        return f"SELECT {columns} FROM {bars} p WHERE {where}"
    ratio = "coalesce(a.split_ratio, 1.0)"
    scale = " * coalesce(a.dividend_factor, 1.0)" if adjustment == "all" else ""
    selected = []
    for column in DAILY_PRICES.columns:
        name = quote_identifier(column.name)
        if column.name in PRICE_COLUMNS:
            selected.append(f"p.{name} / {ratio}{scale} AS {name}")
        elif column.name == "volume":
            selected.append(f"p.{name} * {ratio} AS {name}")
        else:
            selected.append(f"p.{name}")
    factors = quote_identifier(PRICE_ADJUSTMENTS.name)
    # A hash join on the symbol with the row's span as a filter, not an ASOF join: the spans are
    # disjoint (one row a bar at most), and the bars stream in their stored order through it.
    return (
        f"SELECT {', '.join(selected)} FROM {bars} p LEFT JOIN {factors} a "
        "ON a.market = p.market AND a.symbol = p.symbol "
        f"AND p.date >= a.bars_from AND p.date < a.date WHERE {where}"
    )


ADJUSTED_VIEWS: dict[str, str] = {"daily_prices_split": "split", "daily_prices_all": "all"}
"""Views of the warehouse database beside the tables' (docs/warehouse.md): each symbol's bars
split-adjusted and total-return adjusted, what get-price-history and bulk `daily-prices` serve
for `adjustment=split` and `all` (`daily_prices` itself is `raw`)."""


def adjusted_views_sql() -> list[str]:
    """`CREATE OR REPLACE VIEW` of each adjusted view, over the tables' views."""
    return [
        f"CREATE OR REPLACE VIEW {quote_identifier(name)} AS {adjusted_bars_sql(adjustment)}"
        for name, adjustment in ADJUSTED_VIEWS.items()
    ]


def adjusted(
    bars: pl.DataFrame, factors: pl.DataFrame, adjustment: str = "split", *, dividends: bool = False
) -> pl.DataFrame:
    """`bars` (sorted by symbol, date; any of open, high, low, close, volume) adjusted by
    `factors` (`price_adjustments` rows of their market): `split` or `all` as
    `adjusted_bars_sql` says, `raw` unchanged. `dividends` adds each bar's `dividend` (the cash per
    unit of the split-adjusted series paid on that ex-date, 0 on other days)."""
    if dividends:
        paid = factors.filter(pl.col("dividend") > 0).select("symbol", "date", "dividend")
        if paid.is_empty():
            bars = bars.with_columns(dividend=pl.lit(0.0))
        else:
            bars = bars.join(paid, on=["symbol", "date"], how="left", maintain_order="left")
            bars = bars.with_columns(pl.col("dividend").fill_null(0.0))
    if adjustment == "raw" or factors.is_empty():
        return bars
    after = factors.select(
        "symbol",
        pl.col("date").alias("_until"),
        pl.col("split_ratio").alias("_ratio"),
        pl.col("dividend_factor").alias("_factor"),
    ).sort("symbol", "_until")
    joined = bars.join_asof(
        after,
        left_on="date",
        right_on="_until",
        by="symbol",
        strategy="forward",
        allow_exact_matches=False,
        check_sortedness=False,
    )
    ratio, factor = pl.col("_ratio").fill_null(1.0), pl.col("_factor").fill_null(1.0)
    scaled = {
        c: (pl.col(c) / ratio * factor) if adjustment == "all" else (pl.col(c) / ratio)
        for c in PRICE_COLUMNS
        if c in bars.columns
    }
    if "volume" in bars.columns:
        scaled["volume"] = pl.col("volume") * ratio
    return joined.with_columns(**scaled).select(bars.columns)
