"""Adjusted series: the SQL the API serves and the Polars the analytics read give the same
numbers, checked by hand on a 2-for-1 split, a dividend and a 1-for-10 reverse split."""

from __future__ import annotations

from datetime import date, timedelta

import duckdb
import polars as pl
import pytest

from pipelines.catalog import CORPORATE_ACTIONS, DAILY_PRICES, PRICE_ADJUSTMENTS
from pipelines.catalog.adjustments import adjusted, adjusted_bars_sql
from pipelines.prices.adjustments import adjustment_factors

START = date(2024, 1, 1)
CLOSES = [100.0, 100.0, 50.0, 50.0, 50.0, 500.0, 500.0]
VOLUMES = [10.0, 10.0, 20.0, 20.0, 20.0, 2.0, 2.0]


def traded() -> pl.DataFrame:
    days = [START + timedelta(days=i) for i in range(len(CLOSES))]
    return DAILY_PRICES.conform(
        pl.DataFrame(
            {
                "market": "stocks",
                "symbol": "A",
                "date": days,
                "timestamp": [0] * len(days),
                "open": CLOSES,
                "high": [c * 1.1 for c in CLOSES],
                "low": [c * 0.9 for c in CLOSES],
                "close": CLOSES,
                "volume": VOLUMES,
                "source": "test",
            }
        )
    )


def factors() -> pl.DataFrame:
    rows = [
        (2, "split", 2.0, None),
        (4, "dividend", None, 1.0),
        (5, "split", 0.1, None),
    ]
    actions = CORPORATE_ACTIONS.conform(
        pl.DataFrame(
            {
                "market": "stocks",
                "symbol": "A",
                "date": [START + timedelta(days=r[0]) for r in rows],
                "kind": [r[1] for r in rows],
                "ratio": [r[2] for r in rows],
                "amount": [r[3] for r in rows],
                "reason": None,
                "source": "test",
            },
            schema_overrides={"ratio": pl.Float64, "amount": pl.Float64, "reason": pl.String},
        )
    )
    found, _ = adjustment_factors(actions, traded())
    return found


def served(adjustment: str) -> pl.DataFrame:
    con = duckdb.connect()
    con.register("daily_prices", traded().to_arrow())
    con.register("price_adjustments", factors().to_arrow())
    return con.sql(adjusted_bars_sql(adjustment) + " ORDER BY p.date").pl()


def test_split_adjusted_prices_are_divided_and_volume_multiplied_by_later_splits() -> None:
    series = served("split")
    assert series["close"].to_list() == pytest.approx([500.0] * 7)
    assert series["volume"].to_list() == pytest.approx([2.0] * 7)
    assert series["high"].to_list() == pytest.approx([550.0] * 7)


def test_total_return_scales_bars_before_each_ex_date_by_its_factor() -> None:
    # 1 paid on a close of 50: the bars before the ex-date are worth 2% less.
    assert served("all")["close"].to_list() == pytest.approx([490.0] * 4 + [500.0] * 3)


def test_raw_is_as_traded_and_the_latest_bar_is_as_traded_under_every_adjustment() -> None:
    assert served("raw")["close"].to_list() == CLOSES
    for adjustment in ("split", "all"):
        latest = served(adjustment).row(-1, named=True)
        assert (latest["close"], latest["volume"]) == (CLOSES[-1], VOLUMES[-1])


@pytest.mark.parametrize("adjustment", ["split", "all", "raw"])
def test_the_analytics_series_equals_the_served_one_to_the_last_bit(adjustment: str) -> None:
    computed = adjusted(traded(), factors(), adjustment)
    assert computed.equals(served(adjustment))


def test_dividends_are_credited_per_unit_of_the_split_adjusted_series() -> None:
    computed = adjusted(traded(), factors(), dividends=True)
    # 1 a share before the 1-for-10 reverse split: 10 a share of the adjusted series.
    assert computed["dividend"].to_list() == [0.0, 0.0, 0.0, 0.0, 10.0, 0.0, 0.0]


def test_no_factor_leaves_every_series_as_traded() -> None:
    assert adjusted(traded(), PRICE_ADJUSTMENTS.empty()).equals(traded())
