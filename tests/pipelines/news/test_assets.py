"""The raw news multi-asset of the news refresh: materialised over a file drop, its checks and build_defs."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from dagster._core.definitions.assets.graph.asset_graph import AssetGraph

from pipelines.catalog import MARKETS, NEWS_DAYS, NEWS_REJECTS, RAW_NEWS
from pipelines.news.assets import (
    EMBEDDED_NEWS,
    NEWS_REJECTS_KEY,
    RAW_NEWS_KEY,
    build_raw_news_assets,
)
from pipelines.news.config import NewsPolicy
from pipelines.news.definitions import build_defs
from pipelines.news.sources import (
    CombinedNewsSource,
    FeedListNewsSource,
    FileDropNewsSource,
    RecordedNewsSource,
)
from pipelines.platform.runs import RunOptions
from pipelines.platform.settings import PipelineSettings
from pipelines.warehouse.resource import WarehouseResource
from pipelines.warehouse.store import Warehouse
from tests.pipelines.synthetic import materialize_news

from .conftest import NOW


def settings(data_dir: Path, sources: Path | None = None) -> PipelineSettings:
    return PipelineSettings(data_dir=data_dir, sources_config=sources, seed=1, end_date=None)


def graph_of(defs: dg.Definitions, data_dir: Path) -> AssetGraph:
    """The domain's asset graph with the resources the root supplies to every domain."""
    root = dg.Definitions(
        resources={
            "warehouse": WarehouseResource(warehouse_dir=str(data_dir / "warehouse")),
            "run_options": RunOptions(),
        }
    )
    return dg.Definitions.merge(defs, root).resolve_asset_graph()


def materialize(
    file_drop: Path, policy: NewsPolicy, warehouse: Warehouse
) -> dg.ExecuteInProcessResult:
    return materialize_news(
        warehouse,
        [build_raw_news_assets(embedded=False)],
        ["crypto"],
        {"news_source": FileDropNewsSource(file_drop), "news_policy": policy},
    )


@pytest.fixture
def warehouse(tmp_path: Path) -> Warehouse:
    return Warehouse(tmp_path / "warehouse")


@pytest.fixture
def result(file_drop: Path, warehouse: Warehouse) -> dg.ExecuteInProcessResult:
    return materialize(file_drop, NewsPolicy(clock=lambda: NOW), warehouse)


def checks_by_name(result: dg.ExecuteInProcessResult) -> dict[str, dg.AssetCheckEvaluation]:
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def test_materialize_writes_conformed_articles_and_rejects(
    result: dg.ExecuteInProcessResult, warehouse: Warehouse
) -> None:
    assert result.success
    articles = warehouse.read(RAW_NEWS)
    rejects = warehouse.read(NEWS_REJECTS)
    assert articles.schema == RAW_NEWS.schema
    assert rejects.schema == NEWS_REJECTS.schema
    assert set(articles.get_column("market")) == {"crypto"}
    assert articles.height == 7
    assert rejects.height == 10


def test_materialization_metadata_counts_items_articles_duplicates_and_rejects(
    result: dg.ExecuteInProcessResult,
) -> None:
    (event,) = [
        m
        for m in result.asset_materializations_for_node("news_ingestion")
        if m.asset_key == RAW_NEWS_KEY
    ]
    metadata = {k: v.value for k, v in event.metadata.items()}
    assert metadata["feeds"] == 6
    assert metadata["items_read"] == 15
    assert metadata["new_articles"] == 7
    assert metadata["duplicates_merged"] == 2
    assert (metadata["item_rejects"], metadata["feed_rejects"]) == (6, 4)
    # Nothing is dropped silently: every item read is an article, a merged duplicate or a reject.
    assert metadata["items_read"] == 7 + 2 + 6
    assert metadata["newest_new_item"] == pytest.approx(
        NOW.replace(day=9, hour=20, minute=45).timestamp()
    )


def test_checks_pass_on_unique_complete_fresh_articles_and_warn_on_rejects(
    result: dg.ExecuteInProcessResult,
) -> None:
    checks = checks_by_name(result)
    assert {name: c.passed for name, c in checks.items()} == {
        "article_id_unique": True,
        "articles_complete": True,
        "fresh": True,
        "no_rejects": False,
    }
    rejects = checks["no_rejects"]
    assert rejects.severity == dg.AssetCheckSeverity.WARN
    assert rejects.asset_key == NEWS_REJECTS_KEY
    assert rejects.metadata["reasons"].value == {
        "no guid and no link": 2,
        "missing date": 2,
        "unparseable date": 1,
        "future date": 1,
        "empty title and body": 1,
        "empty document": 1,
        "character encoding": 1,
        "not an RSS or Atom feed": 1,
        "not well-formed XML": 1,
    }


def test_freshness_check_warns_when_the_newest_article_is_too_old(
    file_drop: Path, warehouse: Warehouse
) -> None:
    later = NOW.replace(month=3)
    result = materialize(file_drop, NewsPolicy(freshness_hours=24, clock=lambda: later), warehouse)
    fresh = checks_by_name(result)["fresh"]
    assert not fresh.passed
    assert fresh.severity == dg.AssetCheckSeverity.WARN
    assert fresh.metadata["markets"].value["crypto"]["now"] == later.isoformat()


def test_an_empty_market_materialises_empty_tables_and_fails_freshness(
    tmp_path: Path, warehouse: Warehouse
) -> None:
    for market in MARKETS:  # the drop's folders are there, with no feed in them
        (tmp_path / "nothing" / "news" / market).mkdir(parents=True)
    result = materialize(tmp_path / "nothing", NewsPolicy(clock=lambda: NOW), warehouse)
    assert result.success
    assert warehouse.read(RAW_NEWS).is_empty()
    assert not checks_by_name(result)["fresh"].passed


def test_a_market_the_source_has_no_feed_for_is_never_stale(
    file_drop: Path, warehouse: Warehouse
) -> None:
    """Sources list feeds for crypto only: forex has no news to be late, so the refresh warns of
    nothing for it and its days carry no failed check (data-status does not call them degraded)."""
    source = FeedListNewsSource({"crypto": [str(file_drop / "news" / "crypto")]})
    result = materialize_news(
        warehouse,
        [build_raw_news_assets(embedded=False)],
        ["crypto", "forex"],
        {"news_source": source, "news_policy": NewsPolicy(clock=lambda: NOW)},
    )
    fresh = checks_by_name(result)["fresh"]
    assert fresh.passed
    markets = fresh.metadata["markets"].value
    assert markets["forex"] == {"feeds": "none: the source carries no news for it"}
    assert markets["crypto"]["age_hours"] is not None
    forex = warehouse.read(NEWS_DAYS).filter(pl.col("market") == "forex")
    assert forex["warnings"].list.len().sum() == 0
    assert forex["errors"].list.len().sum() == 0


def test_a_source_expects_news_only_for_the_markets_it_has_feeds_for(tmp_path: Path) -> None:
    listed = FeedListNewsSource({"crypto": ["https://example.com/feed.xml"], "forex": []})
    assert listed.expects_news("crypto")
    assert not listed.expects_news("forex")
    assert not listed.expects_news("stocks")
    recorded = RecordedNewsSource({"stocks": []})
    assert CombinedNewsSource([listed, recorded]).expects_news("stocks")
    assert FileDropNewsSource(tmp_path).expects_news("commodities")  # its folder is the source


def test_a_second_refresh_reads_only_changed_documents_and_keeps_articles_once(
    file_drop: Path, warehouse: Warehouse
) -> None:
    materialize(file_drop, NewsPolicy(clock=lambda: NOW), warehouse)
    again = materialize(file_drop, NewsPolicy(clock=lambda: NOW), warehouse)
    (event,) = [
        m
        for m in again.asset_materializations_for_node("news_ingestion")
        if m.asset_key == RAW_NEWS_KEY
    ]
    assert event.metadata["items_read"].value == 0
    assert event.metadata["new_articles"].value == 0
    assert warehouse.read(RAW_NEWS).height == 7


def test_embedded_mode_depends_on_the_embedded_news_asset(tmp_path: Path) -> None:
    graph = graph_of(build_defs(settings(tmp_path)), tmp_path)
    assert EMBEDDED_NEWS in graph.get(RAW_NEWS_KEY).parent_keys
    assert graph.get(RAW_NEWS_KEY).partitions_def is None


def test_configured_mode_reads_the_sources_toml_and_has_no_embedded_dependency(
    tmp_path: Path,
) -> None:
    toml = tmp_path / "sources.toml"
    toml.write_text('[news.crypto]\nfeeds = ["feeds/a.xml"]\n', encoding="utf-8")
    graph = graph_of(build_defs(settings(tmp_path, toml)), tmp_path)
    assert graph.get(RAW_NEWS_KEY).parent_keys == set()
    assert {RAW_NEWS_KEY, NEWS_REJECTS_KEY} <= set(graph.get_all_asset_keys())


def test_build_defs_loads_and_declares_the_news_resources(tmp_path: Path) -> None:
    defs = build_defs(settings(tmp_path))  # warehouse and run_options come from the root
    assert set(defs.resources or {}) == {"news_source", "news_policy"}
    assert {k.name for k in graph_of(defs, tmp_path).asset_check_keys} == {
        "article_id_unique",
        "articles_complete",
        "fresh",
        "no_rejects",
    }
