"""Adjustment factors derived from corporate actions, checked by hand (decisions.md, Corporate actions)."""

from __future__ import annotations

from datetime import date, timedelta

import polars as pl
import pytest

from pipelines.catalog import CORPORATE_ACTIONS, PRICE_ADJUSTMENTS
from pipelines.prices.adjustments import adjustment_factors

START = date(2024, 1, 1)


def day(n: int) -> date:
    return START + timedelta(days=n)


def bars(symbol: str, closes: list[float]) -> pl.DataFrame:
    return pl.DataFrame(
        {"symbol": symbol, "date": [day(i) for i in range(len(closes))], "close": closes}
    )


def actions(*rows: tuple[str, int, str, float | None, float | None]) -> pl.DataFrame:
    return CORPORATE_ACTIONS.conform(
        pl.DataFrame(
            {
                "market": "stocks",
                "symbol": [r[0] for r in rows],
                "date": [day(r[1]) for r in rows],
                "kind": [r[2] for r in rows],
                "ratio": [r[3] for r in rows],
                "amount": [r[4] for r in rows],
                "reason": None,
                "source": "test",
            },
            schema_overrides={"ratio": pl.Float64, "amount": pl.Float64, "reason": pl.String},
        )
    )


# A 2-for-1 split on day 2, a dividend of 1 on day 4 (the close before it: 50), a 1-for-10
# reverse split on day 5: traded closes 100, 100, 50, 50, 50, 500, 500.
TRADED = bars("A", [100.0, 100.0, 50.0, 50.0, 50.0, 500.0, 500.0])
A_ACTIONS = actions(
    ("A", 2, "split", 2.0, None),
    ("A", 4, "dividend", None, 1.0),
    ("A", 5, "split", 0.1, None),
)


def test_each_row_carries_the_product_of_its_own_and_every_later_action() -> None:
    factors, unpriced = adjustment_factors(A_ACTIONS, TRADED)
    assert factors.schema == PRICE_ADJUSTMENTS.schema
    assert unpriced.is_empty()
    rows = factors.select("date", "bars_from", "split_ratio", "dividend_factor", "dividend").rows()
    assert rows == [
        (day(2), day(0), pytest.approx(0.2), pytest.approx(0.98), 0.0),
        (day(4), day(2), pytest.approx(0.1), pytest.approx(0.98), pytest.approx(10.0)),
        (day(5), day(4), pytest.approx(0.1), 1.0, 0.0),
    ]


def test_a_dividend_is_priced_on_the_close_before_it_in_its_own_share_count() -> None:
    # A 2-for-1 split and a dividend of 1 on the same day: the close before (100) is 50 a new share.
    traded = bars("B", [100.0, 100.0, 50.0, 50.0])
    both = actions(("B", 2, "split", 2.0, None), ("B", 2, "dividend", None, 1.0))
    factors, _ = adjustment_factors(both, traded)
    assert factors.select("split_ratio", "dividend_factor", "dividend").rows() == [
        (2.0, pytest.approx(0.98), 1.0)
    ]


def test_actions_outside_the_bars_adjust_nothing() -> None:
    # On the first bar (nothing before it), after the last (still to come), delistings, listings.
    factors, unpriced = adjustment_factors(
        actions(
            ("A", 0, "split", 3.0, None),
            ("A", 9, "split", 4.0, None),
            ("A", 9, "dividend", None, 1.0),
            ("A", 7, "delisting", None, None),
            ("A", 1, "listing", None, None),
        ),
        TRADED,
    )
    assert factors.is_empty()
    assert unpriced.is_empty()


def test_a_dividend_of_at_least_the_previous_close_is_unpriced_and_adjusts_nothing() -> None:
    factors, unpriced = adjustment_factors(actions(("A", 3, "dividend", None, 50.0)), TRADED)
    assert factors.select("split_ratio", "dividend_factor", "dividend").rows() == [(1.0, 1.0, 0.0)]
    assert unpriced.select("symbol", "date", "amount", "previous_close").rows() == [
        ("A", day(3), 50.0, 50.0)
    ]


def test_symbols_are_factored_apart() -> None:
    traded = pl.concat([TRADED, bars("C", [10.0, 10.0, 2.5])])
    both = pl.concat([A_ACTIONS, actions(("C", 2, "split", 4.0, None))])
    factors, _ = adjustment_factors(both, traded)
    assert factors.filter(symbol="C").select("date", "bars_from", "split_ratio").rows() == [
        (day(2), day(0), 4.0)
    ]
    assert factors.filter(symbol="A").height == 3
