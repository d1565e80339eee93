"""The raw layer's series checks find exactly the bars and days their rules name, however the
bars come: repeated, out of order, on weekends, with gaps."""

from __future__ import annotations

from datetime import date, timedelta

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.catalog import WEEKDAY_MARKETS
from pipelines.prices import checks

START = date(2025, 12, 20)


def _bars(days_by_symbol: dict[str, list[int]], market: str) -> pl.DataFrame:
    rows = [
        {"market": market, "symbol": symbol, "date": START + timedelta(days=d), "close": 1.0}
        for symbol, days in days_by_symbol.items()
        for d in days
    ]
    schema = {"market": pl.String, "symbol": pl.String, "date": pl.Date, "close": pl.Float64}
    return pl.DataFrame(rows, schema=schema)


def _missing_by_every_day(prices: pl.DataFrame, market: str) -> pl.DataFrame:
    """The rule spelled out: every expected day between each series' first and last bar, less
    the days it has."""
    spans = prices.group_by("symbol").agg(first=pl.col("date").min(), last=pl.col("date").max())
    expected = spans.select("symbol", date=pl.date_ranges("first", "last", interval="1d")).explode(
        "date"
    )
    if market in WEEKDAY_MARKETS:
        expected = expected.filter(pl.col("date").dt.weekday() <= 5)
    present = prices.select("symbol", "date")
    return expected.join(present, on=["symbol", "date"], how="anti").sort("symbol", "date")


series = st.dictionaries(
    st.sampled_from(["AAA", "BBB", "CCC", "DDD"]),
    st.lists(st.integers(0, 40), min_size=1, max_size=45),
    min_size=1,
)


@settings(max_examples=80, deadline=None)
@given(days_by_symbol=series, market=st.sampled_from(["crypto", "stocks"]))
def test_missing_trading_days_are_every_expected_day_a_series_lacks(
    days_by_symbol: dict[str, list[int]], market: str
) -> None:
    prices = _bars(days_by_symbol, market).sample(fraction=1.0, shuffle=True, seed=1)
    found = checks.missing_trading_days(prices, market)
    assert found.equals(_missing_by_every_day(prices, market))


@settings(max_examples=80, deadline=None)
@given(days_by_symbol=series)
def test_duplicate_bars_are_every_bar_whose_day_repeats_in_its_series(
    days_by_symbol: dict[str, list[int]],
) -> None:
    prices = _bars(days_by_symbol, "crypto")
    found = checks.duplicate_bars(prices)
    expected = checks.duplicate_keys(prices, ["market", "symbol", "date"])
    assert found.equals(expected)
    repeats = sum(len(days) - len(set(days)) for days in days_by_symbol.values())
    assert found.height >= 2 * (repeats > 0)


def test_a_complete_weekday_series_with_a_saturday_bar_still_reports_its_missing_monday() -> None:
    # 2025-12-20 is a Saturday: the series has it, and lacks Monday the 22nd.
    prices = _bars({"AAA": [0, 3, 4, 5, 6, 7]}, "stocks")
    found = checks.missing_trading_days(prices, "stocks")
    assert found.rows() == [("AAA", date(2025, 12, 22))]


def test_a_move_beyond_40_percent_is_unexplained_unless_an_action_falls_on_its_day() -> None:
    day = [date(2024, 1, d) for d in (1, 2, 3, 4, 5)]
    bars = pl.DataFrame(
        {
            "symbol": ["AAPL"] * 5 + ["GONE"] * 3,
            "date": day + day[:3],
            # AAPL: a 4-for-1 split on the 2nd (-75%), +41% on the 4th, -40% exactly on the 5th
            "close": [400.0, 100.0, 100.0, 141.0, 84.6, 10.0, 14.5, 14.0],
        }
    )
    actions = pl.DataFrame({"symbol": ["AAPL"], "date": [day[1]]})
    found = checks.unexplained_moves(bars, actions)
    assert found.select("symbol", "date").rows() == [("AAPL", day[3]), ("GONE", day[1])]
    assert found["move"].round(2).to_list() == [0.41, 0.45]
