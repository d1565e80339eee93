"""The HTTP connectors against recorded responses replayed by a loopback HTTP server."""

from __future__ import annotations

from datetime import date

import polars as pl
import pytest

from pipelines.prices.sources.base import SourceError
from pipelines.prices.sources.binance import BinanceSource
from pipelines.prices.sources.ecb import EcbSource
from pipelines.prices.sources.http import HttpFetcher, HttpPolicy, ListedInstrument
from pipelines.prices.sources.stooq import StooqSource, parse_stooq_csv
from pipelines.prices.validate import validate_bars
from tests.pipelines.prices.loopback import Reply, route, serve

FAST = HttpFetcher(
    HttpPolicy(
        timeout_seconds=5,
        max_retries=2,
        backoff_seconds=0.01,
        max_backoff_seconds=0.02,
        allowed_hosts=("127.0.0.1",),
    )
)
KLINES = "/api/v3/klines"
JAN_1, JAN_4 = "1704067200000", "1704326400000"
BTC = [ListedInstrument("BTC", "Bitcoin", remote="BTCUSDT")]
RECORDED_TODAY = date(2024, 1, 4)
"""The day of the newest kline in the recorded Binance answers (the still-open one)."""


def binance(base_url: str, page_limit: int = 3, today: date = RECORDED_TODAY) -> BinanceSource:
    return BinanceSource(
        BTC,
        "sources.toml",
        base_url=base_url,
        page_limit=page_limit,
        http=FAST,
        today=lambda: today,
    )


def reasons(rejects: pl.DataFrame) -> dict[str, str]:
    return dict(zip(rejects["location"], rejects["reason"], strict=True))


# Binance


def test_binance_klines_are_paginated_by_start_time_until_todays_kline() -> None:
    routes = [
        (route(KLINES, startTime=JAN_1), [Reply(fixture="binance/klines_BTCUSDT_2024-01-01.json")]),
        (route(KLINES, startTime=JAN_4), [Reply(fixture="binance/klines_BTCUSDT_2024-01-04.json")]),
    ]
    with serve(routes) as server:
        raw = binance(server.base_url).daily_bars("crypto", ["BTC"], date(2024, 1, 1))
    assert [r.query for r in server.requests] == [
        {"symbol": "BTCUSDT", "interval": "1d", "startTime": JAN_1, "limit": "3"},
        {"symbol": "BTCUSDT", "interval": "1d", "startTime": JAN_4, "limit": "3"},
    ]
    clean, rejects = validate_bars(raw, "crypto", {"BTC"}, "binance")
    assert rejects.is_empty()
    assert clean["date"].to_list() == [date(2024, 1, d) for d in (1, 2, 3, 4)]
    first = clean.row(0, named=True)
    assert (first["open"], first["high"], first["low"], first["close"]) == (
        42283.58,
        44184.10,
        42180.77,
        44179.55,
    )
    assert first["volume"] == 27174.29903
    assert first["timestamp"] == 1704067200000
    assert raw.rows["location"].to_list()[:2] == ["$[0]", "$[1]"]


def test_binance_retries_after_429_then_succeeds() -> None:
    too_much = Reply(429, "binance/error_429_too_much_weight.json", headers={"Retry-After": "1"})
    routes = [(route(KLINES), [too_much, Reply(fixture="binance/klines_BTCUSDT_2024-01-04.json")])]
    with serve(routes) as server:
        raw = binance(server.base_url).daily_bars("crypto", ["BTC"], date(2024, 1, 4))
    assert len(server.requests) == 2
    assert raw.rows["date"].to_list() == ["2024-01-04"]


def test_binance_500_after_the_retries_raises_an_error_naming_the_url() -> None:
    routes = [(route(KLINES), [Reply(500, "binance/error_500.html", content_type="text/html")])]
    with serve(routes) as server, pytest.raises(SourceError) as error:
        binance(server.base_url).daily_bars("crypto", ["BTC"], date(2024, 1, 1))
    assert len(server.requests) == 3
    assert f"{server.base_url}{KLINES}?symbol=BTCUSDT" in str(error.value)
    assert "HTTP 500 after 3 attempt(s)" in str(error.value)


def test_binance_400_is_not_retried_and_its_message_is_surfaced() -> None:
    routes = [(route(KLINES), [Reply(400, "binance/error_400_invalid_symbol.json")])]
    with serve(routes) as server, pytest.raises(SourceError, match=r"HTTP 400 .*Invalid symbol"):
        binance(server.base_url).daily_bars("crypto", ["BTC"], None)
    assert len(server.requests) == 1


def test_binance_malformed_klines_are_rejected_with_reasons() -> None:
    routes = [(route(KLINES), [Reply(fixture="binance/klines_malformed_rows.json")])]
    with serve(routes) as server:
        raw = binance(server.base_url, page_limit=1000).daily_bars("crypto", ["BTC"], None)
    clean, rejects = validate_bars(raw, "crypto", {"BTC"}, "binance")
    assert clean["date"].to_list() == [date(2024, 1, 1)]
    assert reasons(rejects) == {
        "$[1]": "kline is not an array of at least 6 fields",
        "$[2]": "open time 1704243600000 is not 00:00 UTC",
        "$[3]": "open is missing or not a number",
        "$[4]": "high is below max(open, close)",
    }
    records = dict(zip(rejects["location"], rejects["record"], strict=True))
    assert records["$[1]"] == '[1704153600000, "2.3010000", "2.3500000"]'


def test_binance_body_that_is_not_json_is_rejected_whole() -> None:
    body = Reply(fixture="binance/klines_truncated_body.txt")
    with serve([(route(KLINES), [body])]) as server:
        raw = binance(server.base_url).daily_bars("crypto", ["BTC"], None)
    assert raw.rows.is_empty()
    assert raw.unreadable["reason"].to_list() == ["response is not valid JSON"]


# ECB

EXR = "/service/data/EXR/D.GBP+JPY+USD.EUR.SP00.A"
FX = [
    ListedInstrument("EURUSD", "EUR/USD"),
    ListedInstrument("USDJPY", "USD/JPY"),
    ListedInstrument("GBPUSD", "GBP/USD"),
]


def ecb(base_url: str) -> EcbSource:
    return EcbSource(FX, "sources.toml", base_url=base_url, http=FAST)


def test_ecb_reference_rates_give_direct_and_cross_pairs() -> None:
    csvdata = Reply(
        fixture="ecb/EXR_D.GBP+JPY+USD.EUR.SP00.A_2024-01-02.csv", content_type="text/csv"
    )
    with serve([(route(EXR, format="csvdata", startPeriod="2024-01-02"), [csvdata])]) as server:
        raw = ecb(server.base_url).daily_bars(
            "forex", ["EURUSD", "USDJPY", "GBPUSD"], date(2024, 1, 2)
        )
    clean, rejects = validate_bars(raw, "forex", {"EURUSD", "USDJPY", "GBPUSD"}, "ecb")
    assert rejects.is_empty()
    jan2 = {
        r["symbol"]: r
        for r in clean.filter(pl.col("date") == date(2024, 1, 2)).iter_rows(named=True)
    }
    assert jan2["EURUSD"]["close"] == 1.0956
    assert jan2["USDJPY"]["close"] == pytest.approx(155.46 / 1.0956)
    assert jan2["GBPUSD"]["close"] == pytest.approx(1.0956 / 0.86365)
    for row in jan2.values():
        assert row["open"] == row["high"] == row["low"] == row["close"]
        assert row["volume"] == 0.0
    assert clean.height == 12
    usdjpy = raw.rows.filter(pl.col("symbol") == "USDJPY").row(0, named=True)
    assert usdjpy["location"] == "line 10 + line 6"  # quote leg (JPY) over base leg (USD)


def test_ecb_no_results_404_is_an_empty_answer() -> None:
    empty = Reply(404, "ecb/error_404_no_results.txt", content_type="text/plain")
    with serve([(route(EXR), [empty])]) as server:
        raw = ecb(server.base_url).daily_bars(
            "forex", ["EURUSD", "USDJPY", "GBPUSD"], date(2030, 1, 1)
        )
    assert raw.rows.is_empty()
    assert raw.unreadable.is_empty()


def test_ecb_retries_a_503_then_reads_the_rates() -> None:
    unavailable = Reply(503, "ecb/error_503.html", content_type="text/html")
    csvdata = Reply(fixture="ecb/EXR_D.GBP+JPY+USD.EUR.SP00.A_2024-01-02.csv")
    with serve([(route("/service/data/EXR/D.USD.EUR.SP00.A"), [unavailable, csvdata])]) as server:
        raw = ecb(server.base_url).daily_bars("forex", ["EURUSD"], None)
    assert len(server.requests) == 2
    assert raw.rows.height == 4


def test_ecb_malformed_rows_are_rejected_with_reasons() -> None:
    bad = Reply(fixture="ecb/EXR_D.USD.EUR.SP00.A_malformed_rows.csv", content_type="text/csv")
    listing = [ListedInstrument("EURUSD", "EUR/USD")]
    with serve([(route("/service/data/EXR/D.USD.EUR.SP00.A"), [bad])]) as server:
        source = EcbSource(listing, "sources.toml", base_url=server.base_url, http=FAST)
        raw = source.daily_bars("forex", ["EURUSD"], None)
    clean, rejects = validate_bars(raw, "forex", {"EURUSD"}, "ecb")
    assert clean["date"].to_list() == [date(2024, 1, 2)]
    found = reasons(rejects)
    assert found["line 3"].startswith("open is missing or not a number")
    assert found["line 4"] == "unparseable date 2024-01-0X"
    assert found["line 5"].startswith("open is missing or not a number")
    assert found["line 6"] == "expected 32 fields, found 7"


def test_ecb_rejects_a_symbol_that_is_not_a_currency_pair() -> None:
    with pytest.raises(SourceError, match="not a pair of ISO currency codes"):
        ecb("http://127.0.0.1:9").daily_bars("forex", ["GOLD"], None)


# Stooq

QUOTES = "/q/d/l/"
STOCKS = [ListedInstrument("AAPL", "Apple Inc."), ListedInstrument("MSFT", "Microsoft")]


def stooq(base_url: str, listing: list[ListedInstrument] = STOCKS) -> StooqSource:
    return StooqSource(listing, "sources.toml", base_url=base_url, http=FAST)


def test_stooq_csv_is_read_with_the_default_us_ticker() -> None:
    csv = Reply(fixture="stooq/aapl.us_d.csv", content_type="text/csv")
    with serve([(route(QUOTES, s="aapl.us", i="d"), [csv])]) as server:
        raw = stooq(server.base_url).daily_bars("stocks", ["AAPL"], None)
    clean, rejects = validate_bars(raw, "stocks", {"AAPL"}, "stooq")
    assert rejects.is_empty()
    assert clean["date"].to_list() == [date(2024, 1, d) for d in (2, 3, 4, 5)]
    assert clean.row(0, named=True)["volume"] == 82488674.0
    assert "d1" not in server.requests[0].query


def test_stooq_commodity_uses_its_configured_ticker_and_since_sets_d1() -> None:
    gold = [ListedInstrument("GOLD", "Gold", remote="gc.f")]
    csv = Reply(fixture="stooq/gc.f_d.csv", content_type="text/csv")
    with serve([(route(QUOTES, s="gc.f"), [csv])]) as server:
        raw = stooq(server.base_url, gold).daily_bars("commodities", ["GOLD"], date(2024, 1, 2))
    assert server.requests[0].query["d1"] == "20240102"
    assert raw.rows["symbol"].unique().to_list() == ["GOLD"]
    assert raw.rows.height == 2


def test_stooq_malformed_rows_are_rejected_with_reasons() -> None:
    csv = Reply(fixture="stooq/msft.us_d_malformed_rows.csv", content_type="text/csv")
    with serve([(route(QUOTES, s="msft.us"), [csv])]) as server:
        raw = stooq(server.base_url).daily_bars("stocks", ["MSFT"], None)
    clean, rejects = validate_bars(raw, "stocks", {"MSFT"}, "stooq")
    assert clean["date"].to_list() == [date(2024, 1, 2), date(2024, 1, 4)]
    assert clean["volume"].to_list() == [25258626.0, 0.0]  # line 5 has no volume field
    found = reasons(rejects)
    assert found == {
        "line 3": "expected 6 fields, found 1",
        "line 4": "close is not a positive finite number (-370.6); low is above min(open, close)",
    }


def test_stooq_no_data_is_a_reject_naming_the_symbol() -> None:
    with serve(
        [(route(QUOTES), [Reply(fixture="stooq/no_data.txt", content_type="text/plain")])]
    ) as server:
        raw = stooq(server.base_url).daily_bars("stocks", ["AAPL"], None)
    assert raw.unreadable.select("location", "record", "reason").row(0) == (
        "body",
        "No data",
        "no data for AAPL",
    )


def test_stooq_daily_quota_exceeded_raises_an_error_naming_the_url() -> None:
    limit = Reply(fixture="stooq/exceeded_daily_hits_limit.txt", content_type="text/plain")
    with serve([(route(QUOTES), [limit])]) as server, pytest.raises(SourceError) as error:
        stooq(server.base_url).daily_bars("stocks", ["AAPL"], None)
    assert "s=aapl.us" in str(error.value)
    assert "Exceeded the daily hits limit" in str(error.value)


def test_configured_instruments_are_listed_with_their_place_in_the_sources_file() -> None:
    raw = stooq("http://127.0.0.1:9").instruments("stocks")
    assert raw.rows.select("symbol", "name", "location").row(1) == (
        "MSFT",
        "Microsoft",
        "markets.stocks.instruments[1]",
    )


# Paging and columns as the real services answer


def test_binance_paging_goes_on_after_a_page_shorter_than_page_limit() -> None:
    # Binance answers at most 1,000 klines whatever `limit` asks: a short page is not the end.
    routes = [
        (route(KLINES, startTime=JAN_1), [Reply(fixture="binance/klines_BTCUSDT_2024-01-01.json")]),
        (route(KLINES, startTime=JAN_4), [Reply(fixture="binance/klines_BTCUSDT_2024-01-04.json")]),
    ]
    with serve(routes) as server:
        raw = binance(server.base_url, page_limit=1000).daily_bars(
            "crypto", ["BTC"], date(2024, 1, 1)
        )
    assert [r.query["startTime"] for r in server.requests] == [JAN_1, JAN_4]
    assert raw.rows["date"].to_list() == [f"2024-01-0{d}" for d in (1, 2, 3, 4)]


def test_binance_paging_stops_on_an_empty_page() -> None:
    jan_5 = "1704412800000"
    routes = [
        (route(KLINES, startTime=JAN_1), [Reply(fixture="binance/klines_BTCUSDT_2024-01-01.json")]),
        (route(KLINES, startTime=JAN_4), [Reply(fixture="binance/klines_BTCUSDT_2024-01-04.json")]),
        (route(KLINES, startTime=jan_5), [Reply(fixture="binance/klines_empty.json")]),
    ]
    with serve(routes) as server:
        source = binance(server.base_url, page_limit=3, today=date(2024, 1, 10))
        raw = source.daily_bars("crypto", ["BTC"], date(2024, 1, 1))
    assert [r.query["startTime"] for r in server.requests] == [JAN_1, JAN_4, jan_5]
    assert raw.rows.height == 4
    assert raw.unreadable.is_empty()


@pytest.mark.parametrize("page_limit", [0, 1001, 5000])
def test_binance_page_limit_outside_1_to_1000_is_refused(page_limit: int) -> None:
    with pytest.raises(ValueError, match=rf"page_limit = {page_limit} is outside 1\.\.1000"):
        binance("http://127.0.0.1:9", page_limit=page_limit)


def test_stooq_rows_without_a_volume_field_are_stored_with_volume_0() -> None:
    spx = [ListedInstrument("SPX", "S&P 500", remote="^spx")]
    csv = Reply(fixture="stooq/spx_d_volume_partly_missing.csv", content_type="text/csv")
    with serve([(route(QUOTES, s="^spx"), [csv])]) as server:
        raw = stooq(server.base_url, spx).daily_bars("stocks", ["SPX"], None)
    clean, rejects = validate_bars(raw, "stocks", {"SPX"}, "stooq")
    assert rejects.is_empty()
    assert clean["date"].to_list() == [date(2024, 1, d) for d in (2, 3, 4, 5)]
    assert clean["volume"].to_list() == [2561850000.0, 0.0, 2422050000.0, 0.0]
    assert clean["close"].to_list() == [4742.83, 4704.81, 4688.68, 4697.24]


def test_stooq_columns_are_read_by_header_name_and_open_interest_is_ignored() -> None:
    crude = [ListedInstrument("WTI", "WTI crude oil", remote="cl.f")]
    csv = Reply(fixture="stooq/cl.f_d_open_interest.csv", content_type="text/csv")
    with serve([(route(QUOTES, s="cl.f"), [csv])]) as server:
        raw = stooq(server.base_url, crude).daily_bars("commodities", ["WTI"], None)
    clean, rejects = validate_bars(raw, "commodities", {"WTI"}, "stooq")
    assert rejects.is_empty()
    first = clean.row(0, named=True)
    assert (first["open"], first["close"], first["volume"]) == (71.65, 70.38, 302615.0)


def test_stooq_header_names_are_matched_in_any_case_and_order() -> None:
    body = "close,DATE,Volume,open,High,LOW\n1.5,2024-01-02,10,1,2,0.5\n1.5,2024-01-03\n"
    raw = parse_stooq_csv(body, "http://stooq/q/d/l/?s=x", "X")
    assert raw.rows.select("date", "open", "high", "low", "close", "volume").row(0) == (
        "2024-01-02",
        "1",
        "2",
        "0.5",
        "1.5",
        "10",
    )
    # Too short to reach every price column: unreadable, not a bar with holes.
    assert raw.unreadable.select("location", "reason").row(0) == (
        "line 3",
        "expected 6 fields, found 2",
    )


def test_stooq_line_with_more_fields_than_the_header_is_rejected() -> None:
    raw = parse_stooq_csv("Date,Open,High,Low,Close\n2024-01-02,1,2,0.5,1.5,7\n", "u", "X")
    assert raw.rows.is_empty()
    assert raw.unreadable["reason"].to_list() == ["expected 5 fields, found 6"]


def test_an_answer_larger_than_its_bound_is_not_read_and_fails_the_fetch() -> None:
    """docs/connectors.md: `[http] max_answer_mb` bounds what a connector reads of one answer
    (today a price API's body was read whole, however large)."""
    bounded = HttpFetcher(
        HttpPolicy(timeout_seconds=5, max_retries=0, max_answer_mb=1, allowed_hosts=("127.0.0.1",))
    )
    huge = Reply(body=b"[" + b"0," * 1_000_000 + b"0]")
    with serve([(route(KLINES), [huge])]) as server, pytest.raises(SourceError) as failed:
        bounded.get(f"{server.base_url}{KLINES}", {"symbol": "BTCUSDT"})
    assert "the answer is larger than 1,048,576 bytes" in str(failed.value)


def test_a_price_api_on_a_host_inside_the_network_is_not_asked_unless_allowed() -> None:
    with (
        serve([(route(KLINES), [Reply(body=b"[]")])]) as server,
        pytest.raises(SourceError) as failed,
    ):
        HttpFetcher(HttpPolicy(max_retries=0)).get(f"{server.base_url}{KLINES}", {})
    assert "an address inside a network" in str(failed.value)
    assert server.requests == []
