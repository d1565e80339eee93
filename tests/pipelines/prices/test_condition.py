"""decisions.md, Freshness: what each day of a market's prices is found to be, from the checks."""

from __future__ import annotations

from datetime import date

import polars as pl

from pipelines.catalog.state import PRICE_FINDINGS
from pipelines.prices import condition
from pipelines.prices.condition import FRESH, GAP

MONDAY = date(2026, 3, 2)


def findings(*rows: tuple[str, date, str, str]) -> pl.DataFrame:
    frame = pl.DataFrame(
        [("stocks", *r) for r in rows],
        schema=["market", "symbol", "date", "check", "severity"],
        orient="row",
    )
    return PRICE_FINDINGS.conform(frame)


def written(**first: date) -> pl.DataFrame:
    return pl.DataFrame({"symbol": list(first), "first": list(first.values())})


def test_a_gap_across_the_last_stored_bar_is_found_on_the_weekdays_it_skips() -> None:
    before = pl.DataFrame(
        {"symbol": ["AAPL", "MSFT"], "last_date": [date(2026, 2, 26), date(2026, 2, 27)]}
    )
    # AAPL's next bar after Thursday is the next Tuesday: Friday 27th and Monday 2nd are
    # missing, the weekend is not; MSFT's next bar after Friday is on Monday: nothing is missing.
    found = condition.boundary_gaps("stocks", written(AAPL=date(2026, 3, 3), MSFT=MONDAY), before)
    assert found.select("symbol", "date", "check").rows() == [
        ("AAPL", date(2026, 2, 27), GAP),
        ("AAPL", MONDAY, GAP),
    ]


def test_a_stale_symbol_fails_fresh_on_every_calendar_day_after_its_newest_bar() -> None:
    stale = pl.DataFrame(
        {"symbol": ["BTC", "NEW"], "newest": [date(2026, 2, 27), None]},
        schema={"symbol": pl.String, "newest": pl.Date},
    )
    crypto = condition.stale_findings("crypto", stale, MONDAY)
    assert crypto.select("symbol", "date").rows() == [
        ("BTC", date(2026, 2, 28)),
        ("BTC", date(2026, 3, 1)),
        ("BTC", MONDAY),
        ("NEW", MONDAY),
    ]
    assert set(crypto["check"]) == {FRESH}
    assert set(crypto["severity"]) == {"ERROR"}
    # On a Sunday, a weekday market's symbol without any bar fails on the Friday before.
    sunday = condition.stale_findings("stocks", stale.tail(1), date(2026, 3, 1))
    assert sunday.select("symbol", "date").rows() == [("NEW", date(2026, 2, 27))]


def test_findings_from_a_rewritten_day_on_are_replaced_and_a_removed_symbols_go() -> None:
    old = findings(
        ("AAPL", date(2026, 2, 20), GAP, "WARN"),
        ("AAPL", date(2026, 2, 25), GAP, "WARN"),
        ("MSFT", date(2026, 2, 20), GAP, "WARN"),
        ("GONE", date(2026, 2, 20), GAP, "WARN"),
        ("NVDA", date(2026, 2, 25), FRESH, "ERROR"),
        ("NVDA", date(2026, 2, 2), condition.MOVES, "WARN"),
    )
    kept = condition.carried_findings(old, written(AAPL=date(2026, 2, 24)), ["GONE"])
    # AAPL's bars from the 24th on were written again: its finding of the 25th is the run's to
    # make again; freshness and unexplained moves are always found afresh.
    assert kept.select("symbol", "date").rows() == [
        ("AAPL", date(2026, 2, 20)),
        ("MSFT", date(2026, 2, 20)),
    ]


def test_price_days_lists_every_calendar_day_with_its_bars_and_failed_checks() -> None:
    bars = pl.DataFrame(
        {"date": [date(2026, 2, 26), date(2026, 2, 27), MONDAY], "bars": [2, 1, 2]},
        schema={"date": pl.Date, "bars": pl.Int64},
    )
    found = findings(
        ("AAPL", date(2026, 2, 27), GAP, "WARN"),
        ("MSFT", date(2026, 2, 27), GAP, "WARN"),
        ("NVDA", date(2026, 3, 3), FRESH, "ERROR"),
    )
    days = condition.price_days("stocks", bars, found, date(2026, 3, 3))
    assert days.rows() == [
        ("stocks", date(2026, 2, 26), 2, [], []),
        ("stocks", date(2026, 2, 27), 1, [GAP], []),
        ("stocks", MONDAY, 2, [], []),
        ("stocks", date(2026, 3, 3), 0, [], [FRESH]),  # the run's day, absent
    ]
    assert condition.price_days("stocks", bars.clear(), found, MONDAY).is_empty()


def test_findings_are_one_row_per_key_in_key_order() -> None:
    twice = findings(("MSFT", MONDAY, GAP, "WARN"), ("AAPL", MONDAY, GAP, "WARN"))
    merged = condition.findings(twice, twice.head(1))
    assert merged["symbol"].to_list() == ["AAPL", "MSFT"]
