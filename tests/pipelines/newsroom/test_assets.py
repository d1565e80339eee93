"""The newsroom's news-refresh assets over small stored raw_news and instruments: briefs, sentiment, checks."""

from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import duckdb
import polars as pl
import pytest

from pipelines.catalog import INSTRUMENTS, RAW_NEWS
from pipelines.catalog.newsroom import BRIEFS, SENTIMENT_DAILY, SENTIMENT_TOPICS
from pipelines.newsroom.assets import build_briefs_asset, build_sentiment_assets
from pipelines.newsroom.definitions import build_defs
from pipelines.newsroom.enrichment import LexiconEnricher
from pipelines.newsroom.llm import LlmEnricher
from pipelines.platform.settings import PipelineSettings
from pipelines.warehouse.resource import WarehouseResource
from pipelines.warehouse.store import Warehouse
from tests.pipelines.synthetic import materialize_news

ARTICLES = [
    ("a1", "Bitcoin surges to record high as ETF inflows jump", "Bitcoin (BTC) rose 6%.", "2025-01-10T09:00:00"),
    ("a2", "Ether slides as liquidations mount", "ETH fell 5%; the link to $SOL held.", "2025-01-10T11:00:00"),
    ("a3", "Exchange hacked: BTC and ETH stolen in breach", "Hackers drained $50 million.", "2025-01-09T15:00:00"),
    ("a4", "Solana developers publish roadmap", "Solana (SOL) plans a release.", "2025-01-09T08:00:00"),
    ("a5", "Crypto markets quiet on holiday", "Little news today.", "2025-01-09T07:00:00"),
]  # fmt: skip
COINS = [("BTC", "Bitcoin"), ("ETH", "Ethereum"), ("SOL", "Solana"), ("LINK", "Chainlink")]


def raw_news_frame(market: str = "crypto") -> pl.DataFrame:
    rows = []
    for article_id, title, body, at in ARTICLES:
        published = datetime.fromisoformat(at).replace(tzinfo=UTC)
        rows.append(
            {
                "market": market,
                "article_id": article_id,
                "feed": "wire",
                "guid": article_id,
                "link": f"https://news.example/{article_id}",
                "title": title,
                "body": body,
                "published_at": published,
                "timestamp": int(published.timestamp() * 1000),
            }
        )
    return RAW_NEWS.conform(pl.DataFrame(rows, schema=RAW_NEWS.schema))


def instruments_frame(market: str = "crypto") -> pl.DataFrame:
    rows = [
        {"market": market, "symbol": s, "name": n, "logo": "https://x/l.svg", "source": "test"}
        for s, n in COINS
    ]
    return pl.DataFrame(rows, schema=INSTRUMENTS.schema)


def materialize(warehouse: Warehouse) -> dg.ExecuteInProcessResult:
    warehouse.write(RAW_NEWS, "crypto", raw_news_frame("crypto"))
    warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto"))
    return materialize_news(
        warehouse,
        [build_briefs_asset(), build_sentiment_assets()],
        ["crypto"],
        {"newsroom_enricher": LexiconEnricher()},
    )


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    warehouse = Warehouse(tmp_path_factory.mktemp("newsroom") / "warehouse")
    assert materialize(warehouse).success
    return warehouse


@pytest.fixture(scope="module")
def result(stored: Warehouse) -> dg.ExecuteInProcessResult:
    warehouse = Warehouse(stored.root.with_name("again") / "warehouse")
    return materialize(warehouse)


def test_materialize_one_market_writes_conformed_briefs_and_sentiment(stored: Warehouse) -> None:
    briefs = stored.read(BRIEFS)
    daily = stored.read(SENTIMENT_DAILY)
    topics = stored.read(SENTIMENT_TOPICS)
    assert briefs.schema == BRIEFS.schema
    assert daily.schema == SENTIMENT_DAILY.schema
    assert topics.schema == SENTIMENT_TOPICS.schema
    assert briefs["article_id"].to_list() == ["a2", "a1", "a3", "a4", "a5"]  # newest first


def test_briefs_carry_tagged_symbols_coins_and_enrichment(stored: Warehouse) -> None:
    briefs = stored.read(BRIEFS)
    by_id = {row["article_id"]: row for row in briefs.iter_rows(named=True)}
    assert by_id["a1"]["symbols"] == ["BTC"]
    assert by_id["a2"]["symbols"] == ["ETH", "SOL"]  # "link" in lower case is not LINK
    assert by_id["a3"]["impacted_coins"] == ["BTC", "ETH"]
    assert by_id["a5"]["symbols"] == []
    assert by_id["a5"]["impacted_coins"] is None
    assert by_id["a1"]["tone"] == "bullish"
    assert by_id["a2"]["tone"] == "bearish"
    assert by_id["a3"]["topic"] == "security"
    assert by_id["a1"]["date"].isoformat() == "2025-01-10"


def test_sentiment_daily_counts_the_tagged_briefs(stored: Warehouse) -> None:
    daily = stored.read(SENTIMENT_DAILY)
    got = {
        (r["symbol"], r["date"].isoformat()): (r["positive"], r["neutral"], r["negative"])
        for r in daily.iter_rows(named=True)
    }
    assert got == {
        ("BTC", "2025-01-10"): (1, 0, 0),
        ("ETH", "2025-01-10"): (0, 0, 1),
        ("SOL", "2025-01-10"): (0, 0, 1),
        ("BTC", "2025-01-09"): (0, 0, 1),
        ("ETH", "2025-01-09"): (0, 0, 1),
        ("SOL", "2025-01-09"): (0, 1, 0),
    }


def test_every_check_passes_on_clean_input(result: dg.ExecuteInProcessResult) -> None:
    evaluations = result.get_asset_check_evaluations()
    assert {(e.asset_key.to_user_string(), e.check_name) for e in evaluations} == {
        ("briefs", "sentiment_finite"),
        ("briefs", "sentiment_in_range"),
        ("briefs", "symbols_are_instruments"),
        ("briefs", "enrichment_values_allowed"),
        ("briefs", "article_id_unique"),
        ("sentiment_daily", "total_is_sum"),
        ("sentiment_daily", "unique_symbol_date"),
        ("sentiment_topics", "unique_symbol_date"),
    }
    assert all(e.passed for e in evaluations)


def test_the_tables_land_in_the_warehouse_and_are_visible_in_duckdb(tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path / "warehouse", duckdb_path=tmp_path / "warehouse.duckdb")
    warehouse.write(RAW_NEWS, "crypto", raw_news_frame("crypto"))
    warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto"))
    resource = WarehouseResource(
        warehouse_dir=str(warehouse.root), duckdb_path=str(warehouse.duckdb_path)
    )
    assert materialize_news(
        warehouse,
        [build_briefs_asset(), build_sentiment_assets()],
        ["crypto"],
        {"newsroom_enricher": LexiconEnricher(), "warehouse": resource},
    ).success
    assert warehouse.read(BRIEFS, ["crypto"]).height == len(ARTICLES)
    with duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT symbol, positive, neutral, negative, total FROM sentiment_daily "
            "WHERE market = 'crypto' AND date = DATE '2025-01-10' ORDER BY symbol"
        ).fetchall()
        briefs = con.execute(
            "SELECT count(*) FROM briefs WHERE list_contains(symbols, 'BTC')"
        ).fetchone()
    assert rows == [("BTC", 1, 0, 0, 1), ("ETH", 0, 0, 1, 1), ("SOL", 0, 0, 1, 1)]
    assert briefs == (2,)


def test_a_refresh_enriches_only_new_articles_and_recounts_their_days(tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path / "warehouse")
    assert materialize(warehouse).success
    before = warehouse.read(BRIEFS)
    newer = RAW_NEWS.conform(
        raw_news_frame("crypto")
        .head(1)
        .with_columns(
            article_id=pl.lit("a6"),
            guid=pl.lit("a6"),
            link=pl.lit("https://news.example/a6"),
            title=pl.lit("Bitcoin slumps as miners sell"),
        )
    )
    warehouse.write(RAW_NEWS, "crypto", pl.concat([raw_news_frame("crypto"), newer]))
    result = materialize_news(
        warehouse,
        [build_briefs_asset(), build_sentiment_assets()],
        ["crypto"],
        {"newsroom_enricher": LexiconEnricher()},
    )
    (event,) = result.asset_materializations_for_node("briefs")
    assert event.metadata["mi/rows_written"].value == 1
    after = warehouse.read(BRIEFS)
    assert event.metadata["dagster/row_count"].value == after.height
    assert after.height == before.height + 1
    assert (
        after.filter(pl.col("article_id") != "a6")
        .sort("article_id")
        .equals(before.sort("article_id"))
    )
    daily = warehouse.read(SENTIMENT_DAILY).filter(pl.col("symbol") == "BTC")
    btc_10 = daily.filter(pl.col("date") == pl.lit("2025-01-10").str.to_date())
    assert btc_10["total"].to_list() == [2]


def test_build_defs_uses_the_lexicon_without_llm_settings_and_the_llm_with_them(
    tmp_path: Path,
) -> None:
    settings = PipelineSettings(data_dir=tmp_path, sources_config=None, seed=1, end_date=None)
    plain = build_defs(settings, env={})
    assert isinstance(plain.resources["newsroom_enricher"], LexiconEnricher)
    env = {"MI_LLM_BASE_URL": "http://127.0.0.1:9/v1", "MI_LLM_MODEL": "m"}
    assert isinstance(build_defs(settings, env=env).resources["newsroom_enricher"], LlmEnricher)
    keys = {k.to_user_string() for a in plain.assets or [] for k in a.keys}  # type: ignore[union-attr]
    assert keys == {
        "briefs",
        "sentiment_daily",
        "sentiment_topics",
        "instrument_analyses",
        "market_summaries",
    }
