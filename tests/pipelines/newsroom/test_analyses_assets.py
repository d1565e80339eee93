"""The analyses multi-asset over small hand-checkable frames: facts, rows, checks, warehouse, DuckDB."""

from datetime import date, timedelta
from pathlib import Path

import dagster as dg
import duckdb
import polars as pl
import pytest

from pipelines.catalog import (
    CURRENT_ACTIONS,
    DAILY_PRICES,
    INDICATOR_SNAPSHOTS,
    INSTRUMENTS,
    TREND_SEGMENTS,
    Table,
)
from pipelines.catalog.newsroom import BRIEFS, INSTRUMENT_ANALYSES, MARKET_SUMMARIES
from pipelines.newsroom import analyses
from pipelines.newsroom.assets import build_analyses_assets
from pipelines.newsroom.writing import numbers as fmt
from pipelines.newsroom.writing.writer import TemplateWriter
from pipelines.warehouse.resource import WarehouseResource
from pipelines.warehouse.store import Warehouse
from tests.pipelines.synthetic import materialize_daily

DAY = date(2025, 1, 10)
DAY_MS = 1_736_467_200_000
START = DAY - timedelta(days=30)
COINS = {  # symbol: (name, close on day i of 0..30)
    "BTC": ("Bitcoin", lambda i: 40_000 + 100 * i),
    "ETH": ("Ethereum", lambda i: 4_000 - 10 * i),
    "DOGE": ("Dogecoin", lambda i: 0.01 + 0.0001 * i),
}
BRIEF_ROWS = [  # id, day offset from DAY, title, symbols, sentiment, clout
    ("b1", 0, "Bitcoin surges to record high", ["BTC"], 3.0, "high"),
    ("b2", 0, "Ether slides 5% as liquidations mount", ["ETH"], -2.5, "high"),
    ("b3", -3, "Dogecoin meme rally", ["DOGE"], 1.5, "medium"),
    ("b4", -10, "Bitcoin old news", ["BTC"], 4.0, "high"),
    ("b5", 0, "Quiet day", [], 0.0, "low"),
]


def prices(market: str) -> pl.DataFrame:
    rows = [
        {
            "market": market,
            "symbol": symbol,
            "date": START + timedelta(days=i),
            "timestamp": 0,
            "open": close(i),
            "high": close(i),
            "low": close(i),
            "close": float(close(i)),
            "volume": 1.0,
            "source": "test",
        }
        for symbol, (_, close) in COINS.items()
        for i in range(31)
    ]
    return pl.DataFrame(rows, schema=DAILY_PRICES.schema)


def instruments(market: str) -> pl.DataFrame:
    rows = [(s, n) for s, (n, _) in COINS.items()] + [("NOBAR", "No bars yet")]
    return pl.DataFrame(
        [{"market": market, "symbol": s, "name": n, "logo": "l", "source": "t"} for s, n in rows],
        schema=INSTRUMENTS.schema,
    )


def snapshots(market: str) -> pl.DataFrame:
    rsi = {"BTC": 72.43, "ETH": 28.0, "DOGE": 55.55}
    rows = []
    for symbol in COINS:
        for period, sma in ((14, None), (50, 41_000.0), (200, 45_000.0)):
            row = {"market": market, "symbol": symbol, "period": period, "date": DAY}
            rows.append(
                row | {"timestamp": DAY_MS, "rsi": rsi[symbol], "sma": sma, "macd_histogram": 1.0}
            )
    return pl.DataFrame(rows, schema=INDICATOR_SNAPSHOTS.schema)


def segments(market: str) -> pl.DataFrame:
    running = {"BTC": ("up", 2.5, 30), "ETH": ("down", -1.5, 12), "DOGE": ("neutral", 0.1, 7)}
    rows = [
        {"market": market, "symbol": s, "segment": 0, "is_running": True, "trend": t}
        | {"signal_strength": sig, "trend_duration_days": days}
        for s, (t, sig, days) in running.items()
    ]
    return pl.DataFrame(rows, schema=TREND_SEGMENTS.schema)


def actions(market: str) -> pl.DataFrame:
    rows = [
        {"market": market, "symbol": s, "strategy": st, "action": a, "message": "m", "date": DAY}
        for s in COINS
        for st, a in (("aggressive", "Hold"), ("conservative", "Stay"))
    ]
    return pl.DataFrame(rows, schema=CURRENT_ACTIONS.schema)


def briefs(market: str) -> pl.DataFrame:
    rows = [
        {"market": market, "article_id": i, "timestamp": DAY_MS + offset * 86_400_000}
        | {"date": DAY + timedelta(days=offset), "title": title, "symbols": symbols}
        | {"sentiment": sentiment, "clout": clout, "body": title, "topic": "price"}
        | {"enricher": "lexicon", "feed": "f"}
        for i, offset, title, symbols, sentiment, clout in BRIEF_ROWS
    ]
    return pl.DataFrame(rows, schema=BRIEFS.schema)


TABLES = [
    (DAILY_PRICES, prices),
    (INSTRUMENTS, instruments),
    (INDICATOR_SNAPSHOTS, snapshots),
    (TREND_SEGMENTS, segments),
    (CURRENT_ACTIONS, actions),
    (BRIEFS, briefs),
]


def filled(table: Table, frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with the columns a hand-made frame leaves empty given neutral values (storable)."""
    neutral = {pl.String: "", pl.Date: date(1970, 1, 1), pl.Boolean: False}
    return frame.with_columns(
        pl.col(c.name).fill_null(pl.lit(neutral.get(type(c.dtype), 0)).cast(c.dtype))
        for c in table.columns
        if not c.nullable and not isinstance(c.dtype, pl.List)
    )


def materialize(market: str, warehouse: Warehouse) -> dg.ExecuteInProcessResult:
    """The analyses of `market` written over its tables stored in `warehouse`."""
    for table, make in TABLES:
        warehouse.write(table, market, filled(table, make(market)))
    return materialize_daily(
        warehouse,
        [build_analyses_assets()],
        DAY,
        [market],
        {
            "newsroom_writer": TemplateWriter(),
            "warehouse": WarehouseResource(
                warehouse_dir=str(warehouse.root),
                duckdb_path=str(warehouse.duckdb_path) if warehouse.duckdb_path else None,
            ),
        },
    )


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    warehouse = Warehouse(tmp_path_factory.mktemp("analyses") / "warehouse")
    assert materialize("crypto", warehouse).success
    return warehouse


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> dg.ExecuteInProcessResult:
    return materialize("crypto", Warehouse(tmp_path_factory.mktemp("checks") / "warehouse"))


def test_facts_are_gathered_from_the_latest_bar_of_each_table() -> None:
    facts = {
        f.symbol: f
        for f in analyses.gather_facts(
            "crypto",
            prices("crypto"),
            instruments("crypto"),
            snapshots("crypto"),
            segments("crypto"),
            actions("crypto"),
            briefs("crypto"),
        )
    }
    btc = facts["BTC"]
    assert set(facts) == {"BTC", "DOGE", "ETH"}  # NOBAR has no price bar
    assert (btc.date, btc.close) == ("2025-01-10", 43_000.0)
    assert btc.change_1d == pytest.approx(100 / 42_900 * 100)
    assert btc.change_7d == pytest.approx(700 / 42_300 * 100)
    assert btc.change_30d == pytest.approx(7.5)
    assert (btc.rsi, btc.sma_50, btc.sma_200) == (72.43, 41_000.0, 45_000.0)
    assert (btc.trend, btc.trend_strength, btc.trend_days) == ("up", "strong", 30)
    assert (facts["ETH"].trend_strength, facts["DOGE"].trend_strength) == ("moderate", None)
    assert (btc.aggressive_action, btc.conservative_action) == ("Hold", "Stay")
    assert (btc.briefs_today, btc.briefs_7d, btc.sentiment_7d) == (1, 1, 3.0)  # b4 is 10 days old
    assert btc.stories == ("Bitcoin surges to record high",)
    assert (facts["DOGE"].briefs_today, facts["DOGE"].briefs_7d) == (0, 1)


def test_the_market_facts_count_breadth_movers_and_the_days_briefs() -> None:
    frames = [prices, instruments, snapshots, segments, actions, briefs]
    facts = analyses.gather_facts("crypto", *(make("crypto") for make in frames))
    market = analyses.gather_market_facts("crypto", facts, briefs("crypto"))
    assert market is not None
    assert (market.instruments, market.advancers, market.decliners) == (3, 2, 1)
    assert [m.symbol for m in market.leaders] == ["DOGE", "BTC"]
    assert [m.symbol for m in market.laggards] == ["ETH"]
    assert (market.briefs, market.bullish, market.bearish) == (3, 1, 1)
    assert market.sentiment == pytest.approx(0.5 / 3)
    assert market.stories[:2] == (
        "Bitcoin surges to record high",
        "Ether slides 5% as liquidations mount",
    )


def test_materialize_writes_one_analysis_per_priced_instrument_and_a_summary(
    stored: Warehouse,
) -> None:
    table = stored.read(INSTRUMENT_ANALYSES).sort("symbol")
    summaries = stored.read(MARKET_SUMMARIES)
    assert table.schema == INSTRUMENT_ANALYSES.schema
    assert summaries.schema == MARKET_SUMMARIES.schema
    assert table["symbol"].to_list() == ["BTC", "DOGE", "ETH"]
    assert set(table["date"]) == {DAY}
    assert set(table["timestamp"]) == {DAY_MS}
    assert set(table["writer"]) == {"template"}
    assert summaries.rows() == [("crypto", DAY, DAY_MS, summaries["summary"][0], "template")]


def test_every_number_an_analysis_cites_matches_the_warehouse(stored: Warehouse) -> None:
    # An oracle independent of the facts code: each coin's numbers computed by hand from the frames.
    windows = {"7", "14", "30", "50", "200"}
    expected = {
        "BTC": {
            "43000",
            "0.2",
            "+0.2",
            "1.7",
            "+1.7",
            "7.5",
            "+7.5",
            "72.4",
            "41000",
            "45000",
            "1",
            "+3",
        },
        "ETH": {
            "3700",
            "0.3",
            "-0.3",
            "1.9",
            "-1.9",
            "7.5",
            "-7.5",
            "28",
            "41000",
            "45000",
            "12",
            "1",
            "-2.5",
        },
        "DOGE": {
            "0.013",
            "0.8",
            "+0.8",
            "5.7",
            "+5.7",
            "30",
            "+30",
            "55.5",
            "55.6",
            "41000",
            "45000",
            "0",
            "1",
            "+1.5",
        },
    }
    table = stored.read(INSTRUMENT_ANALYSES)
    for symbol, text in table.select("symbol", "analysis").rows():
        numbers = fmt.cited(
            text, [*(r[2] for r in BRIEF_ROWS), COINS[symbol][0], symbol, "10 January 2025"]
        )
        assert numbers, symbol
        assert set(numbers) <= expected[symbol] | windows, (symbol, text)
    by_symbol = dict(table.select("symbol", "analysis").rows())
    assert "$43,000.00" in by_symbol["BTC"]
    assert "$0.013" in by_symbol["DOGE"]
    assert "overbought" in by_symbol["BTC"]
    assert "oversold" in by_symbol["ETH"]


def test_every_check_passes_on_clean_input(result: dg.ExecuteInProcessResult) -> None:
    evaluations = result.get_asset_check_evaluations()
    assert {(e.asset_key.to_user_string(), e.check_name) for e in evaluations} == {
        ("instrument_analyses", "analysis_for_every_instrument"),
        ("instrument_analyses", "numbers_match_facts"),
        ("market_summaries", "summary_for_latest_day"),
        ("market_summaries", "numbers_match_facts"),
    }
    assert all(e.passed for e in evaluations)


def test_the_number_check_reports_an_analysis_citing_a_number_not_in_its_facts() -> None:
    frames = [prices, instruments, snapshots, segments, actions, briefs]
    facts = analyses.gather_facts("crypto", *(make("crypto") for make in frames))
    written = TemplateWriter().analyses(facts)
    table = analyses.analyses_table("crypto", facts, written)
    assert analyses.unsupported_numbers(table, facts).is_empty()
    tampered = table.with_columns(
        pl.col("analysis").str.replace("$43,000.00", "$43,500.00", literal=True)
    )
    offending = analyses.unsupported_numbers(tampered, facts)
    assert offending.rows() == [("BTC", "2025-01-10", "43500")]


def test_other_markets_get_empty_tables_and_passing_checks(tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path / "warehouse")
    result = materialize("forex", warehouse)
    assert result.success
    assert warehouse.read(INSTRUMENT_ANALYSES, ["forex"]).is_empty()
    assert warehouse.read(MARKET_SUMMARIES, ["forex"]).is_empty()
    assert all(e.passed for e in result.get_asset_check_evaluations())


def test_the_tables_land_in_the_warehouse_and_are_visible_in_duckdb(tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path / "warehouse", duckdb_path=tmp_path / "warehouse.duckdb")
    assert materialize("crypto", warehouse).success
    with duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True) as con:
        newest = con.execute(
            "SELECT symbol, timestamp, writer FROM instrument_analyses WHERE market = 'crypto' "
            "AND upper(symbol) = 'BTC' ORDER BY timestamp DESC LIMIT 1"
        ).fetchall()
        summary = con.execute(
            "SELECT date, timestamp, length(summary) > 0 FROM market_summaries "
            "WHERE market = 'crypto' ORDER BY timestamp DESC LIMIT 1"
        ).fetchall()
    assert newest == [("BTC", DAY_MS, "template")]
    assert summary == [(DAY, DAY_MS, True)]


def test_mean_sentiments_do_not_depend_on_the_order_of_the_briefs() -> None:
    # daily runs and one full run hold the same briefs in different row orders: a mean summed in
    # row order can land either side of a rounding boundary ((-2.92 + 1.38 + 1.99) / 3 is 0.15 in
    # this order, 0.15000000000000005 in the other, written +0.1 and +0.2)
    rows = [
        {"market": "crypto", "article_id": i, "timestamp": DAY_MS, "date": DAY}
        | {"title": f"Story {i}", "symbols": ["BTC"], "sentiment": score, "clout": "high"}
        | {"body": "", "topic": "price", "enricher": "lexicon", "feed": "f"}
        for i, score in enumerate([-2.92, 1.38, 1.99])
    ]
    frame = pl.DataFrame(rows, schema=BRIEFS.schema)
    days = pl.DataFrame({"symbol": ["BTC"], "day": [DAY]})
    news = analyses.news_by_symbol(frame, days)["BTC"]
    assert news == analyses.news_by_symbol(frame.reverse(), days)["BTC"]
    assert analyses.mean_sentiment(frame) == analyses.mean_sentiment(frame.reverse())
