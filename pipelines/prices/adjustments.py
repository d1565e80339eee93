"""Adjustment factors of a market's bars, derived from its corporate actions (decisions.md,
Corporate actions): one `price_adjustments` row per day with a split or an ex-date among a symbol's
bars; `pipelines/catalog/adjustments.py` says how they apply."""

from __future__ import annotations

import polars as pl

from pipelines.catalog import PRICE_ADJUSTMENTS

ADJUSTING = ("split", "dividend")
"""The kinds that change a series (listings and delistings bound it)."""
UNPRICED = pl.Schema(
    {
        "market": pl.String(),
        "symbol": pl.String(),
        "date": pl.Date(),
        "amount": pl.Float64(),
        "previous_close": pl.Float64(),
    }
)
"""A dividend that adjusts nothing: its ex-date, cash and the close before it (null: no bar)."""


def adjustment_factors(
    actions: pl.DataFrame, bars: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(`price_adjustments` rows, dividends that could not be priced) of one market.

    `actions` are its `corporate_actions` rows, `bars` (symbol, date, close as traded) the bars of
    at least every symbol with a split or dividend. Only an action dated after the symbol's first
    bar and on or before its last adjusts anything: an action still to come changes nothing until
    its bar arrives. A dividend's previous close is the last bar's close before the ex-date, in the
    ex-date's share count (divided by a split of the same day); a dividend of at least that close
    adjusts nothing, is credited to no trade, and is returned as unpriced.
    """
    spans = bars.group_by("symbol").agg(
        pl.col("date").min().alias("_first"), pl.col("date").max().alias("_last")
    )
    days = (
        actions.filter(pl.col("kind").is_in(ADJUSTING))
        .join(spans, on="symbol")
        .filter((pl.col("date") > pl.col("_first")) & (pl.col("date") <= pl.col("_last")))
        .group_by("market", "symbol", "date", "_first")
        .agg(
            ratio=pl.col("ratio").filter(pl.col("kind") == "split").first().fill_null(1.0),
            amount=pl.col("amount").filter(pl.col("kind") == "dividend").first().fill_null(0.0),
        )
        .sort("symbol", "date")
    )
    closes = bars.select("symbol", "date", pl.col("close").alias("_previous")).sort(
        "symbol", "date"
    )
    priced = days.join_asof(
        closes, on="date", by="symbol", allow_exact_matches=False, check_sortedness=False
    ).with_columns(_basis=pl.col("_previous") / pl.col("ratio"))
    payable = (pl.col("amount") > 0) & (pl.col("amount") < pl.col("_basis")).fill_null(False)
    factored = priced.with_columns(
        _factor=pl.when(payable).then(1.0 - pl.col("amount") / pl.col("_basis")).otherwise(1.0)
    ).sort("symbol", "date", descending=[False, True])
    later = pl.col("split_ratio").shift(1).over("symbol").fill_null(1.0)
    earlier = pl.col("date").shift(1).over("symbol")
    rows = (
        factored.with_columns(
            split_ratio=pl.col("ratio").cum_prod().over("symbol"),
            dividend_factor=pl.col("_factor").cum_prod().over("symbol"),
        )
        .with_columns(dividend=pl.when(payable).then(pl.col("amount") / later).otherwise(0.0))
        .sort("symbol", "date")
        .with_columns(bars_from=earlier.fill_null(pl.col("_first")))
    )
    unpriced = rows.filter((pl.col("amount") > 0) & ~payable).select(
        "market", "symbol", "date", "amount", previous_close="_basis"
    )
    return PRICE_ADJUSTMENTS.conform(rows), unpriced.cast(UNPRICED)
