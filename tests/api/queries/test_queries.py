"""Each named query of the API answers what the same rule computed with Polars over the same
tables answers: the rows it keeps, their order and its limit."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from api.queries import Row, legacy, newsroom, reference, sentiment, technical_analysis, trades
from api.queries import instruments as instrument_queries
from api.warehouse import WarehouseSnapshot
from api.warehouse.duckdb_reader import DuckDBSnapshot
from pipelines.catalog import read_manifest
from tests.api.routes import tables
from tests.api.routes.conftest import Warehouse, instruments_frame, prices_frame

NOW_MS = int(datetime(2024, 3, 1, 12, tzinfo=UTC).timestamp() * 1000)
DAY_MS = 86_400_000
FRAMES: dict[str, pl.DataFrame] = {
    "instruments": instruments_frame(),
    "daily_prices": pl.concat(
        [prices_frame([100.0 + i for i in range(12)]), prices_frame([5.0, 6.0], symbol="ETH")]
    ),
    "indicator_snapshots": tables.indicator_snapshots(),
    "trend_history": tables.trend_history(),
    "trend_segments": tables.trend_segments(),
    "backtest_trades": tables.backtest_trades(),
    "backtest_summaries": tables.backtest_summaries(),
    "current_actions": tables.current_actions(),
    "scorecards": tables.scorecards(),
    "recommendations": tables.recommendations(),
    "briefs": tables.briefs(NOW_MS),
    "sentiment_daily": tables.sentiment_daily(),
    "sentiment_topics": tables.sentiment_topics(),
    "corporate_actions": tables.corporate_actions(),
    "instrument_analyses": tables.instrument_analyses(),
    "market_summaries": tables.market_summaries(),
}


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WarehouseSnapshot]:
    root: Path = tmp_path_factory.mktemp("queries")
    Warehouse(root).publish(FRAMES)
    manifest = read_manifest(root)
    assert manifest is not None
    opened = DuckDBSnapshot.in_place(root, manifest)
    yield opened
    opened.close()


def run(query: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(query)


def expected(
    table: str,
    keep: pl.Expr,
    order: list[str] | None = None,
    descending: bool | list[bool] = True,
    limit: int | None = None,
    columns: list[str] | None = None,
) -> list[Row]:
    frame = FRAMES[table].filter(keep)
    if order:
        frame = frame.sort(order, descending=descending, nulls_last=True)
    if limit is not None:
        frame = frame.head(limit)
    return (frame.select(columns) if columns else frame).to_dicts()


def same(found: list[Row], wanted: list[Row], order: Callable[[Row], Any] | None = None) -> None:
    """The same rows; when the rule leaves ties, in any order among them."""
    assert len(found) == len(wanted)
    if order is None:
        assert found == wanted
        return
    assert [order(r) for r in found] == [order(r) for r in wanted]
    assert sorted(map(repr, found)) == sorted(map(repr, wanted))


def is_symbol(market: str, symbol: str) -> pl.Expr:
    return (pl.col("market") == market) & (pl.col("symbol").str.to_uppercase() == symbol)


def test_instrument_list_is_every_instrument(snapshot: WarehouseSnapshot) -> None:
    found = instrument_queries.instrument_list(snapshot).sort("market", "symbol")
    wanted = FRAMES["instruments"].select("market", "symbol", "name", "logo")
    assert found.to_dicts() == wanted.sort("market", "symbol").to_dicts()


def test_scorecard_is_the_symbols_first_row_and_none_for_another(
    snapshot: WarehouseSnapshot,
) -> None:
    row = run(instrument_queries.scorecard(snapshot, "forex", "EURUSD"))
    assert row in expected("scorecards", is_symbol("forex", "EURUSD"))
    assert run(instrument_queries.scorecard(snapshot, "crypto", "ETH")) is None


@pytest.mark.parametrize(
    ("start", "end", "limit"),
    [(None, None, None), (None, None, 3), (3, 8, None), (3, 8, 2), (None, 5, 4), (20, None, 1)],
)
def test_price_points_are_the_range_then_its_most_recent_limit_newest_first(
    snapshot: WarehouseSnapshot, start: int | None, end: int | None, limit: int | None
) -> None:
    day = FRAMES["daily_prices"]["timestamp"].min()
    lo = None if start is None else day + start * DAY_MS
    hi = None if end is None else day + end * DAY_MS
    keep = is_symbol("crypto", "BTC")
    keep &= pl.lit(True) if lo is None else pl.col("timestamp") >= lo
    keep &= pl.lit(True) if hi is None else pl.col("timestamp") <= hi
    wanted = expected(
        "daily_prices",
        keep,
        ["timestamp"],
        limit=limit,
        columns=["timestamp", "date", "close", "volume"],
    )
    wanted = [{**{k: v for k, v in r.items() if k != "close"}, "price": r["close"]} for r in wanted]
    found = run(technical_analysis.price_points(snapshot, "crypto", "BTC", "split", lo, hi, limit))
    assert [sorted(r.items()) for r in found] == [sorted(r.items()) for r in wanted]


def test_indicator_snapshot_is_the_period_asked(snapshot: WarehouseSnapshot) -> None:
    period = int(FRAMES["indicator_snapshots"]["period"][1])
    keep = is_symbol("crypto", "BTC") & (pl.col("period") == period)
    assert (
        run(technical_analysis.indicator_snapshot(snapshot, "crypto", "btc".upper(), period))
        == (expected("indicator_snapshots", keep)[0])
    )
    assert run(technical_analysis.indicator_snapshot(snapshot, "crypto", "BTC", 999)) is None


def test_sentiment_days_are_the_newest_limit_first(snapshot: WarehouseSnapshot) -> None:
    symbol = FRAMES["sentiment_daily"]["symbol"][0].upper()
    market = FRAMES["sentiment_daily"]["market"][0]
    found = run(sentiment.sentiment_days(snapshot, market, symbol, 2))
    same(found, expected("sentiment_daily", is_symbol(market, symbol), ["date"], limit=2))


def test_legacy_trend_segments_are_every_segment_newest_first(
    snapshot: WarehouseSnapshot,
) -> None:
    found = run(legacy.trend_segments(snapshot, "crypto", "BTC"))
    same(found, expected("trend_segments", is_symbol("crypto", "BTC"), ["segment"]))


@pytest.mark.parametrize("days", [1, 2, 30])
def test_topic_sentiment_counts_days_back_from_the_markets_newest(
    snapshot: WarehouseSnapshot, days: int
) -> None:
    topics = FRAMES["sentiment_topics"]
    market, symbol = topics["market"][0], topics["symbol"][0].upper()
    newest = topics.filter(pl.col("market") == market)["timestamp"].max()
    keep = is_symbol(market, symbol) & (pl.col("timestamp") > newest - days * DAY_MS)
    columns = ["timestamp", "topic", "positive", "negative"]
    found = run(legacy.topic_sentiment(snapshot, market, symbol, days))
    same(
        found,
        expected("sentiment_topics", keep, ["timestamp"], columns=columns),
        order=lambda r: r["timestamp"],
    )


def test_article_is_one_brief_by_id(snapshot: WarehouseSnapshot) -> None:
    article_id = FRAMES["briefs"]["article_id"][0]
    keep = (pl.col("market") == "crypto") & (pl.col("article_id") == article_id)
    assert run(newsroom.article(snapshot, "crypto", article_id)) == expected("briefs", keep)[0]
    assert run(newsroom.article(snapshot, "crypto", "no-such-article")) is None


def test_recent_briefs_name_the_symbol_newest_first_undated_last(
    snapshot: WarehouseSnapshot,
) -> None:
    keep = (pl.col("market") == "crypto") & pl.col("symbols").list.contains("BTC")
    wanted = expected("briefs", keep, ["timestamp", "article_id"], [True, False], limit=3)
    same(run(newsroom.recent_briefs(snapshot, "crypto", "BTC", 3)), wanted)


@pytest.mark.parametrize("words", [[], ["bitcoin"], ["bitcoin", "etf"]])
def test_search_briefs_keep_the_window_and_every_word_of_the_title(
    snapshot: WarehouseSnapshot, words: list[str]
) -> None:
    since, until = NOW_MS - DAY_MS, NOW_MS
    keep = (pl.col("market") == "crypto") & pl.col("symbols").list.contains("BTC")
    keep &= pl.col("timestamp").is_between(since, until)
    for word in words:
        keep &= pl.col("title").str.to_lowercase().str.contains(word, literal=True)
    wanted = expected("briefs", keep, ["timestamp", "article_id"], [True, False], limit=10)
    found = run(newsroom.search_briefs(snapshot, "crypto", "BTC", since, until, words, 10))
    same(found, wanted)


def test_the_written_analyses_are_the_newest(snapshot: WarehouseSnapshot) -> None:
    analyses = FRAMES["instrument_analyses"]
    market, symbol = analyses["market"][0], analyses["symbol"][0].upper()
    newest = expected("instrument_analyses", is_symbol(market, symbol), ["timestamp"], limit=1)
    assert run(newsroom.instrument_analysis(snapshot, market, symbol)) == newest[0]
    summary = expected("market_summaries", pl.col("market") == market, ["timestamp"], limit=1)
    assert run(newsroom.market_summary(snapshot, market)) == summary[0]
    assert run(newsroom.market_summary(snapshot, "stocks")) is None


def window(table: str, strategy: str, years: int, fill: str) -> pl.Expr:
    """The `years` window of BTC's `strategy` filled at `fill`, or its longest when `years` is
    beyond it."""
    backtest = (
        is_symbol("crypto", "BTC") & (pl.col("strategy") == strategy) & (pl.col("fill") == fill)
    )
    stored = FRAMES[table].filter(backtest & (pl.col("years") <= years))["years"]
    return backtest & (pl.col("years") == stored.max())


@pytest.mark.parametrize("fill", ["close", "next_open"])
@pytest.mark.parametrize(("years", "limit"), [(1, 50), (2, 1), (3, 50), (20, 2)])
def test_backtest_trades_are_the_window_and_fill_asked_or_the_longest_newest_first(
    snapshot: WarehouseSnapshot, years: int, limit: int, fill: str
) -> None:
    keep = window("backtest_trades", "aggressive", years, fill)
    wanted = expected("backtest_trades", keep, ["start_date"], limit=limit)
    found = run(trades.backtest_trades(snapshot, "crypto", "BTC", "aggressive", fill, years, limit))
    same(found, wanted, order=lambda r: r["start_date"])
    assert {r["fill"] for r in found} == {fill}


@pytest.mark.parametrize("fill", ["close", "next_open"])
@pytest.mark.parametrize("years", [1, 3, 20])
def test_backtest_summary_is_the_window_and_fill_asked_or_the_longest(
    snapshot: WarehouseSnapshot, years: int, fill: str
) -> None:
    keep = window("backtest_summaries", "conservative", years, fill)
    found = run(trades.backtest_summary(snapshot, "crypto", "BTC", "conservative", fill, years))
    assert found == expected("backtest_summaries", keep)[0]


def test_current_action_is_the_strategys(snapshot: WarehouseSnapshot) -> None:
    keep = is_symbol("crypto", "BTC") & (pl.col("strategy") == "conservative")
    found = run(trades.current_action(snapshot, "crypto", "BTC", "conservative"))
    assert found == expected("current_actions", keep)[0]
    assert run(trades.current_action(snapshot, "crypto", "ETH", "conservative")) is None


@pytest.mark.parametrize("side", ["buys", "sells"])
@pytest.mark.parametrize(
    ("strategies", "limit", "skip"),
    [
        (("aggressive", "conservative"), 10, 0),
        (("aggressive",), 2, 1),
        (("conservative",), 5, 1),
        (("conservative",), 5, 9),
    ],
)
def test_recent_trades_are_the_whole_historys_newest_signals(
    snapshot: WarehouseSnapshot,
    side: str,
    strategies: tuple[str, ...],
    limit: int,
    skip: int,
) -> None:
    day = "start_date" if side == "buys" else "sell_date"
    longest = pl.col("years") == pl.col("years").max().over("market", "symbol", "strategy")
    frame = FRAMES["backtest_trades"].filter(pl.col("fill") == "close").filter(longest)
    frame = frame.filter(
        (pl.col("market") == "crypto")
        & pl.col(day).is_not_null()
        & pl.col("strategy").is_in(strategies)
    ).sort([day, "symbol", "strategy"], descending=[True, False, False])
    wanted = frame.slice(skip, limit).to_dicts()
    found = run(trades.recent_trades(snapshot, "crypto", side, strategies, limit, skip))  # type: ignore[arg-type]
    same(found, wanted, order=lambda r: (r[day], r["symbol"], r["strategy"]))


@pytest.mark.parametrize(("min_score", "limit"), [(0.0, 10), (3.5, 10), (3.5, 1), (9.0, 5)])
def test_recommendations_are_the_best_scored_at_least_the_minimum(
    snapshot: WarehouseSnapshot, min_score: float, limit: int
) -> None:
    keep = (
        (pl.col("market") == "crypto")
        & (pl.col("strategy") == "aggressive")
        & (pl.col("score") >= min_score)
    )
    wanted = expected(
        "recommendations",
        keep,
        ["score", "symbol"],
        [True, False],
        limit,
        ["strategy", "symbol", "score"],
    )
    assert run(trades.recommendations(snapshot, "crypto", "aggressive", min_score, limit)) == wanted


def test_trend_history_is_the_newest_days_first(snapshot: WarehouseSnapshot) -> None:
    history = FRAMES["trend_history"]
    market, symbol = history["market"][0], history["symbol"][0].upper()
    columns = ["timestamp", "date", "price", "strength", "trend"]
    wanted = expected(
        "trend_history", is_symbol(market, symbol), ["date"], limit=3, columns=columns
    )
    assert run(trades.trend_history(snapshot, market, symbol, 3)) == wanted


def test_running_trend_and_trend_segments(snapshot: WarehouseSnapshot) -> None:
    running = expected("trend_segments", is_symbol("forex", "EURUSD") & pl.col("is_running"))
    assert run(trades.running_trend(snapshot, "forex", "EURUSD")) == running[0]
    assert run(trades.running_trend(snapshot, "forex", "GBPUSD")) is None
    newest = expected("trend_segments", is_symbol("forex", "EURUSD"), ["segment"], limit=2)
    assert run(trades.trend_segments(snapshot, "forex", "EURUSD", 2)) == newest


@pytest.mark.parametrize(
    ("first", "last"),
    [(date.min, date.max), (date(2023, 3, 1), date.max), (date(2021, 1, 1), date(2023, 2, 28))],
)
def test_corporate_actions_are_the_days_asked_oldest_first(
    snapshot: WarehouseSnapshot, first: date, last: date
) -> None:
    keep = is_symbol("crypto", "BTC") & pl.col("date").is_between(first, last)
    columns = ["date", "kind", "ratio", "amount", "reason"]
    wanted = expected(
        "corporate_actions", keep, ["date", "kind"], descending=False, columns=columns
    )
    found = run(reference.corporate_actions(snapshot, "crypto", "BTC", first, last))
    assert found == wanted
