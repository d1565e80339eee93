"""Analytics routes over fixture tables: shapes, orderings, clamps, defaults, 400/404/422/503."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from tests.api.routes import tables
from tests.api.routes.conftest import ClientFor, Warehouse

Client = TestClient[Litestar]
C = "/api/v2/crypto"


@pytest.fixture
def full(base_warehouse: Warehouse, client_for: ClientFor) -> Client:
    """Every analytics table published next to instruments and prices."""
    base_warehouse.publish(
        indicator_snapshots=tables.indicator_snapshots(),
        trend_history=tables.trend_history(),
        trend_segments=tables.trend_segments(),
        backtest_trades=tables.backtest_trades(),
        backtest_summaries=tables.backtest_summaries(),
        current_actions=tables.current_actions(),
        scorecards=tables.scorecards(),
        recommendations=tables.recommendations(),
        briefs=tables.briefs(int(time.time() * 1000)),
        sentiment_daily=tables.sentiment_daily(),
        sentiment_topics=tables.sentiment_topics(),
        instrument_analyses=tables.instrument_analyses(),
        market_summaries=tables.market_summaries(),
        corporate_actions=tables.corporate_actions(),
    )
    return client_for()


ROUTES_AND_TABLES = [
    (f"{C}/technical-analysis/get-indicators/BTC", "indicator_snapshots"),
    (f"{C}/trades/get-trend-history/BTC/10", "trend_history"),
    ("/api/v2/forex/trades/get-current-trend/EURUSD", "trend_segments"),
    ("/api/v2/forex/trades/get-trend-segments/EURUSD", "trend_segments"),
    (f"{C}/trades/get-backtest-history/BTC/aggressive", "backtest_trades"),
    (f"{C}/trades/get-backtest-summary/BTC/aggressive", "backtest_summaries"),
    (f"{C}/trades/get-current-action/BTC/aggressive", "current_actions"),
    (f"{C}/trades/get-recent-buys", "backtest_trades"),
    (f"{C}/trades/get-recent-sells", "backtest_trades"),
    (f"{C}/trades/get-recommendations", "recommendations"),
    (f"{C}/instruments/scorecard/BTC", "scorecards"),
    (f"{C}/newsroom/get-article/a1", "briefs"),
    (f"{C}/newsroom/get-recent-briefs/BTC", "briefs"),
    (f"{C}/newsroom/search-briefs/BTC", "briefs"),
    (f"{C}/sentiment/get-sentiment-history/BTC", "sentiment_daily"),
    (f"{C}/newsroom/get-instrument-analysis/BTC", "instrument_analyses"),
    (f"{C}/newsroom/get-market-summary", "market_summaries"),
    (f"{C}/reference/get-corporate-actions/BTC", "corporate_actions"),
    ("/api/v2/market/trends/BTC", "trend_segments"),
    ("/api/v2/sentiment/sentiment/BTC/30", "sentiment_topics"),
]


@pytest.mark.parametrize(("url", "table"), ROUTES_AND_TABLES)
def test_a_route_whose_table_is_not_materialized_answers_503_with_retry_after(
    api: Client, url: str, table: str
) -> None:
    response = api.get(url)
    assert response.status_code == 503
    assert int(response.headers["Retry-After"]) > 0
    assert table.replace("_", " ") in response.json()["error"] or table in response.json()["error"]


@pytest.mark.parametrize("url", [url for url, _ in ROUTES_AND_TABLES])
def test_every_route_serves_200_once_its_table_exists(full: Client, url: str) -> None:
    response = full.get(url)
    assert response.status_code == 200, response.text
    assert response.headers["ETag"]


@pytest.mark.parametrize(
    "url",
    [
        f"{C}/technical-analysis/get-indicators/NOPE",
        f"{C}/trades/get-trend-history/NOPE/5",
        "/api/v2/forex/trades/get-current-trend/BTC",
        f"{C}/trades/get-backtest-summary/NOPE/aggressive",
        f"{C}/sentiment/get-sentiment-history/EURUSD",
        "/api/v2/market/trends/NOPE",
    ],
)
def test_a_symbol_that_is_not_an_instrument_of_the_market_is_a_404(full: Client, url: str) -> None:
    response = full.get(url)
    assert response.status_code == 404
    assert "not an instrument" in response.json()["error"]


@pytest.mark.parametrize(
    "url",
    [
        "/api/v2/forex/trades/get-trend-history/EURUSD/5",
        "/api/v2/forex/trades/get-recent-buys",
        "/api/v2/stocks/newsroom/get-market-summary",
        "/api/v2/forex/trades/get-backtest-summary/EURUSD/aggressive",
    ],
)
def test_crypto_only_routes_under_another_market_are_404_naming_crypto(
    full: Client, url: str
) -> None:
    response = full.get(url)
    assert response.status_code == 404
    assert "serves the crypto market only" in response.json()["error"]


@pytest.mark.parametrize("route", ["get-current-trend/BTC", "get-trend-segments/BTC"])
def test_non_crypto_trend_routes_under_crypto_are_404_naming_their_markets(
    full: Client, route: str
) -> None:
    response = full.get(f"{C}/trades/{route}")
    assert response.status_code == 404
    assert "forex, commodities, stocks" in response.json()["error"]


@pytest.mark.parametrize(
    "url",
    [
        f"{C}/trades/get-backtest-history/BTC/yolo",
        f"{C}/trades/get-current-action/BTC/yolo",
        f"{C}/trades/get-recent-buys?strategy=yolo",
        f"{C}/trades/get-recommendations?strategy=yolo",
    ],
)
def test_a_bad_strategy_is_a_400_naming_it_and_the_valid_ones(full: Client, url: str) -> None:
    response = full.get(url)
    assert response.status_code == 400
    assert response.json() == {
        "error": "Invalid strategy 'yolo'; valid strategies: aggressive, conservative"
    }


def test_strategy_segments_match_case_insensitively(full: Client) -> None:
    response = full.get(f"{C}/trades/get-current-action/btc/AGGRESSIVE")
    assert response.json() == {"message": "aggressive: Buy", "action": "Buy", "symbol": "BTC"}


@pytest.mark.parametrize(
    "url",
    [
        f"{C}/trades/get-trend-history/BTC/abc",
        f"{C}/technical-analysis/get-indicators/BTC?period=x",
        "/api/v2/sentiment/sentiment/BTC/abc",
        f"{C}/trades/get-recommendations?min_score=high",
    ],
)
def test_ill_typed_parameters_are_422(full: Client, url: str) -> None:
    response = full.get(url)
    assert response.status_code == 422
    assert "Invalid parameter" in response.json()["error"]


HUGE = "45006006736823993237504"
"""An integer outside the signed 64-bit range (decisions.md's example)."""


@pytest.mark.parametrize(
    ("url", "name"),
    [
        (f"{C}/trades/get-recent-sells?skip={HUGE}", "skip"),
        (f"{C}/trades/get-recent-buys?limit=-{HUGE}", "limit"),
        (f"{C}/trades/get-recommendations?limit={HUGE}", "limit"),
        (f"{C}/trades/get-backtest-history/BTC/aggressive?years={HUGE}", "years"),
        (f"{C}/trades/get-backtest-summary/BTC/aggressive?years={HUGE}", "years"),
        (f"{C}/trades/get-trend-history/BTC/{HUGE}", "limit"),
        (f"{C}/technical-analysis/get-indicators/BTC?period={HUGE}", "period"),
        (f"{C}/technical-analysis/get-price-history/BTC?limit={HUGE}", "limit"),
        (f"{C}/technical-analysis/get-price-history/BTC?from=-{HUGE}", "from"),
        (f"{C}/instruments/list-symbols?skip={HUGE}", "skip"),
        (f"{C}/newsroom/get-recent-briefs/BTC?limit={HUGE}", "limit"),
        (f"{C}/sentiment/get-sentiment-history/BTC?limit={HUGE}", "limit"),
        ("/api/v2/sentiment/sentiment/BTC/" + HUGE, "days"),
    ],
)
def test_an_integer_outside_64_bits_is_a_422_naming_it_never_a_500(
    full: Client, url: str, name: str
) -> None:
    """decisions.md: an integer outside the signed 64-bit range answers 422 naming the parameter,
    where it is clamped as where it is not (clamping it would hide a client's bug)."""
    response = full.get(url)
    assert response.status_code == 422, response.text
    assert f"Invalid parameter '{name}'" in response.json()["error"]


@pytest.mark.parametrize(("period", "served"), [(None, 30), (1, 2), (9999, 365), (30, 30)])
def test_indicators_period_defaults_to_30_and_is_clamped(
    full: Client, period: int | None, served: int
) -> None:
    query = "" if period is None else f"?period={period}"
    body = full.get(f"{C}/technical-analysis/get-indicators/btc{query}").json()
    assert body["period"] == served
    assert body["symbol"] == "BTC"
    values = body["indicators"]
    assert set(values) == {
        "adx",
        "atr",
        "bollinger_bands",
        "ema",
        "fibonacci_retracement",
        "macd",
        "obv",
        "roc",
        "rsi",
        "sma",
        "stochastic_oscillator",
        "vwap",
    }
    assert values["rsi"] is None
    assert values["sma"] == float(served)
    assert values["macd"] == {"histogram": -1.0, "macd_line": 11.0, "signal_line": 12.0}
    assert values["bollinger_bands"] == {"upper": 8.0, "lower": 10.0, "middle": 9.0}
    assert values["fibonacci_retracement"]["levels"]["23.6"] == 107.6
    assert set(values["fibonacci_retracement"]["levels"]) == {
        "0",
        "23.6",
        "38.2",
        "50",
        "61.8",
        "78.6",
        "100",
    }


def test_trend_history_is_newest_first_and_limited(full: Client) -> None:
    body = full.get(f"{C}/trades/get-trend-history/btc/3").json()
    assert [p["date"] for p in body["trends"]] == ["2024-01-05", "2024-01-04", "2024-01-03"]
    assert body["trends"][0] == {
        "timestamp": 1704412800000,
        "date": "2024-01-05",
        "price": 104.0,
        "strength": "weak",
        "trend": "up",
    }
    assert len(full.get(f"{C}/trades/get-trend-history/BTC/0").json()["trends"]) == 1


def test_current_trend_is_the_running_segment(full: Client) -> None:
    body = full.get("/api/v2/forex/trades/get-current-trend/eurusd").json()
    assert body["last_updated"] == 1_700_000_000_000
    entry = body["current_trend"]
    assert entry["started_on"] == "2024-01-21"
    assert entry["max_price_day"] == {
        "close": 112.5,
        "timestamp": 1706054400000,
        "date": "2024-01-24",
        "trend": "up",
    }
    assert set(entry) == {
        "close",
        "started_at",
        "started_on",
        "peak_loss",
        "trend",
        "long_term_average",
        "mid_term_average",
        "short_term_average",
        "max_price",
        "min_price",
        "max_price_day",
        "min_price_day",
        "peak_gain",
        "signal_strength",
        "trend_duration_days",
    }


@pytest.mark.parametrize(
    ("limit", "count"), [("", 3), ("?limit=2", 2), ("?limit=0", 1), ("?limit=999", 3)]
)
def test_trend_segments_newest_first_limit_clamped(full: Client, limit: str, count: int) -> None:
    body = full.get(f"/api/v2/forex/trades/get-trend-segments/EURUSD{limit}").json()
    starts = [s["started_at"] for s in body["trend_segments"]]
    assert len(starts) == count
    assert starts == sorted(starts, reverse=True)


def test_backtest_history_defaults_to_two_years_newest_first(full: Client) -> None:
    trades = full.get(f"{C}/trades/get-backtest-history/BTC/aggressive").json()["trades"]
    assert [t["start_date"] for t in trades] == ["2024-01-06", "2024-01-01"]
    assert trades[0]["exit_reason"] == "signal"


def test_backtest_years_beyond_the_history_serve_the_largest_window(full: Client) -> None:
    summary = full.get(f"{C}/trades/get-backtest-summary/BTC/aggressive?years=15").json()
    assert summary["profit_percent"] == 30.0
    assert summary["annualized_return"] is None
    assert summary["start_date"] == "2024-01-01"


@pytest.mark.parametrize(("years", "window"), [("0", 1), ("-5", 1), ("1", 1), ("2", 2)])
def test_backtest_years_below_one_are_clamped_to_one_not_rejected(
    full: Client, years: str, window: int
) -> None:
    summary = full.get(f"{C}/trades/get-backtest-summary/BTC/aggressive?years={years}").json()
    assert summary["profit_percent"] == 10.0 * window


def test_backtest_years_of_the_wrong_type_is_422_naming_it(full: Client) -> None:
    response = full.get(f"{C}/trades/get-backtest-history/BTC/aggressive?years=two")
    assert response.status_code == 422
    assert "years" in response.json()["error"]


def test_backtest_history_fills_at_the_close_unless_next_open_is_asked(full: Client) -> None:
    route = f"{C}/trades/get-backtest-history/BTC/aggressive"
    at_close, next_open = full.get(route), full.get(f"{route}?fill=next_open")
    assert at_close.headers["x-fill"] == "close"
    assert next_open.headers["x-fill"] == "next_open"
    assert [t["start_date"] for t in next_open.json()["trades"]] == ["2024-01-07", "2024-01-02"]
    assert {t["start_price"] for t in next_open.json()["trades"]} == {101.0}
    assert full.get(f"{route}?fill=close").json() == at_close.json()


def test_backtest_summary_of_next_open_fills_is_its_own_window(full: Client) -> None:
    route = f"{C}/trades/get-backtest-summary/BTC/aggressive?years=15"
    response = full.get(f"{route}&fill=next_open")
    assert response.headers["x-fill"] == "next_open"
    assert response.json()["profit_percent"] == 29.0


@pytest.mark.parametrize("fill", ["NEXT_OPEN", "open", "", "next-open"])
@pytest.mark.parametrize("route", ["get-backtest-history", "get-backtest-summary"])
def test_a_fill_other_than_close_or_next_open_is_422_naming_it(
    full: Client, route: str, fill: str
) -> None:
    response = full.get(f"{C}/trades/{route}/BTC/aggressive?fill={fill}")
    assert response.status_code == 422
    assert "'fill'" in response.json()["error"]


def test_every_answer_after_the_fill_is_read_says_it(full: Client) -> None:
    route = f"{C}/trades/get-backtest-summary/BTC/aggressive?fill=next_open"
    etag = full.get(route).headers["etag"]
    revalidated = full.get(route, headers={"If-None-Match": etag})
    assert revalidated.status_code == 304
    assert revalidated.headers["x-fill"] == "next_open"
    missing = full.get(f"{C}/trades/get-backtest-history/NOPE/aggressive?fill=next_open")
    assert missing.status_code == 404
    assert missing.headers["x-fill"] == "next_open"


def test_corporate_actions_are_oldest_first_with_their_numbers(full: Client) -> None:
    body = full.get(f"{C}/reference/get-corporate-actions/btc").json()
    assert body["corporate_actions"][:2] == [
        {"date": "2020-01-02", "kind": "listing", "ratio": None, "amount": None, "reason": None},
        {"date": "2022-06-01", "kind": "split", "ratio": 4.0, "amount": None, "reason": None},
    ]
    assert [a["kind"] for a in body["corporate_actions"]] == [
        "listing",
        "split",
        "dividend",
        "split",
        "delisting",
    ]


@pytest.mark.parametrize(
    ("query", "days"),
    [
        ("?from=2023-03-01", ["2023-03-01", "2023-03-01", "2024-05-01"]),
        ("?to=2022-06-01", ["2020-01-02", "2022-06-01"]),
        ("?from=2022-01-01&to=2022-12-31", ["2022-06-01"]),
        ("?from=2025-01-01", []),
    ],
)
def test_corporate_actions_from_and_to_narrow_the_days(
    full: Client, query: str, days: list[str]
) -> None:
    body = full.get(f"{C}/reference/get-corporate-actions/BTC{query}").json()
    assert [a["date"] for a in body["corporate_actions"]] == days


def test_an_instrument_without_actions_answers_an_empty_list(full: Client) -> None:
    response = full.get("/api/v2/crypto/reference/get-corporate-actions/SOL")
    assert response.status_code == 200
    assert response.json() == {"corporate_actions": []}


@pytest.mark.parametrize(
    ("path", "status", "word"),
    [
        (f"{C}/reference/get-corporate-actions/NOPE", 404, "NOPE"),
        (f"{C}/reference/get-corporate-actions/BTC?from=2023-13-01", 422, "'from'"),
        (f"{C}/reference/get-corporate-actions/BTC?to=", 422, "'to'"),
        (f"{C}/reference/get-corporate-actions/BTC?from=20230301", 422, "'from'"),
        (f"{C}/reference/get-corporate-actions/BTC?from=2024-01-02&to=2024-01-01", 422, "'from'"),
        (f"{C}/reference/get-corporate-actions/BTC?since=2024-01-01", 422, "since"),
    ],
)
def test_corporate_actions_refuse_what_they_cannot_answer(
    full: Client, path: str, status: int, word: str
) -> None:
    response = full.get(path)
    assert response.status_code == status
    assert word in response.json()["error"]


def test_recent_buys_cover_both_strategies_newest_first(full: Client) -> None:
    trades = full.get(f"{C}/trades/get-recent-buys?limit=3").json()["trades"]
    assert trades[0]["start_date"] == "2024-02-10"
    assert {t["strategy"] for t in full.get(f"{C}/trades/get-recent-buys").json()["trades"]} == {
        "aggressive",
        "conservative",
    }
    sells = full.get(f"{C}/trades/get-recent-sells?strategy=conservative").json()["trades"]
    assert all(t["sell_date"] for t in sells)
    assert {t["strategy"] for t in sells} == {"conservative"}


def test_recommendations_filter_by_min_score_best_first(full: Client) -> None:
    body = full.get(f"{C}/trades/get-recommendations").json()
    assert [(r["symbol"], r["score"]) for r in body["recommendations"]] == [
        ("ADA", 5.0),
        ("BTC", 4.5),
        ("ETH", 3.5),
    ]
    assert full.get(f"{C}/trades/get-recommendations?min_score=9").json() == {"recommendations": []}


def test_scorecard_shows_the_preferred_strategy(full: Client) -> None:
    body = full.get(f"{C}/instruments/scorecard/btc").json()
    assert body["strategy"] == "aggressive"
    assert body["symbol"] == "BTC"
    assert body["trend"] is None


def test_briefs_are_newest_first_with_every_field(full: Client) -> None:
    briefs = full.get(f"{C}/newsroom/get-recent-briefs/btc").json()["briefs"]
    assert [b["article_id"] for b in briefs] == ["a1", "a2", "a3"]
    assert briefs[0]["impacted_coins"] is None
    assert len(briefs[0]) == 13


def test_search_briefs_matches_title_keywords_within_24_hours(full: Client) -> None:
    found = full.get(f"{C}/newsroom/search-briefs/BTC?keywords=BITCOIN").json()["briefs"]
    assert [b["article_id"] for b in found] == ["a1", "a2"]
    assert full.get(f"{C}/newsroom/search-briefs/BTC?keywords=nothing").json() == {"briefs": []}


def test_get_article_of_an_unknown_id_is_a_404(full: Client) -> None:
    assert full.get(f"{C}/newsroom/get-article/zzz").status_code == 404


def test_sentiment_history_is_newest_first(full: Client) -> None:
    points = full.get(f"{C}/sentiment/get-sentiment-history/BTC?limit=2").json()["sentiment"]
    assert [p["date"] for p in points] == ["2024-01-05", "2024-01-04"]
    assert points[0] == {
        "positive": 4,
        "timestamp": 1704412800000,
        "total": 5,
        "date": "2024-01-05",
        "symbol": "BTC",
        "neutral": 1,
        "negative": 0,
    }


def test_legacy_routes_use_the_success_envelope(full: Client) -> None:
    trends = full.get("/api/v2/market/trends/btc").json()["Success"]
    assert trends["coin"] == "BTC"
    assert trends["trends"][0]["trend_started_on"] == "2024-01-11"
    sentiment = full.get("/api/v2/sentiment/sentiment/btc/2").json()["Success"]
    assert [p["positive"] for p in sentiment] == [4, 3]
    assert isinstance(sentiment[0]["timestamp"], float)


def test_the_newest_analysis_and_summary_are_served(full: Client) -> None:
    analysis = full.get("/api/v2/crypto/newsroom/get-instrument-analysis/btc").json()
    assert analysis == {
        "timestamp": tables.ms(tables.START + timedelta(days=2)),
        "date": (tables.START + timedelta(days=2)).isoformat(),
        "analysis": "Bitcoin analysis of day 2.",
    }
    summary = full.get("/api/v2/crypto/newsroom/get-market-summary").json()
    assert summary["summary"] == "Crypto market summary of day 2."
