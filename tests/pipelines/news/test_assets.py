"""The raw news multi-asset: one partition materialised over a file drop, its checks and build_defs."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from pipelines.catalog import NEWS_REJECTS, RAW_NEWS
from pipelines.news.assets import (
    EMBEDDED_MARKET_FILES_KEY,
    NEWS_REJECTS_KEY,
    RAW_NEWS_KEY,
    build_raw_news_assets,
)
from pipelines.news.config import NewsPolicy
from pipelines.news.definitions import build_defs
from pipelines.news.sources import FileDropNewsSource
from pipelines.settings import PipelineSettings

from .conftest import NOW


def settings(data_dir: Path, sources: Path | None = None) -> PipelineSettings:
    return PipelineSettings(data_dir=data_dir, sources_config=sources, seed=1, end_date=None)


def materialize(file_drop: Path, policy: NewsPolicy) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [build_raw_news_assets(embedded=False)],
        partition_key="crypto",
        resources={
            "news_source": FileDropNewsSource(file_drop),
            "news_policy": policy,
            "io_manager": dg.mem_io_manager,
        },
    )


@pytest.fixture
def result(file_drop: Path) -> dg.ExecuteInProcessResult:
    return materialize(file_drop, NewsPolicy(clock=lambda: NOW))


def checks_by_name(result: dg.ExecuteInProcessResult) -> dict[str, dg.AssetCheckEvaluation]:
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def test_materialize_one_partition_writes_conformed_articles_and_rejects(
    result: dg.ExecuteInProcessResult,
) -> None:
    assert result.success
    articles = result.output_for_node("news_ingestion", RAW_NEWS.name)
    rejects = result.output_for_node("news_ingestion", NEWS_REJECTS.name)
    assert isinstance(articles, pl.DataFrame)
    assert isinstance(rejects, pl.DataFrame)
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
    assert metadata["unique_articles"] == 7
    assert metadata["duplicates_merged"] == 2
    assert (metadata["item_rejects"], metadata["feed_rejects"]) == (6, 4)
    # Nothing is dropped silently: every item read is an article, a merged duplicate or a reject.
    assert metadata["items_read"] == 7 + 2 + 6
    assert metadata["newest_item"] == pytest.approx(
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


def test_freshness_check_warns_when_the_newest_article_is_too_old(file_drop: Path) -> None:
    later = NOW.replace(month=3)
    result = materialize(file_drop, NewsPolicy(freshness_hours=24, clock=lambda: later))
    fresh = checks_by_name(result)["fresh"]
    assert not fresh.passed
    assert fresh.severity == dg.AssetCheckSeverity.WARN
    assert fresh.metadata["now"].value == later.isoformat()


def test_an_empty_market_materialises_empty_tables_and_fails_freshness(tmp_path: Path) -> None:
    result = materialize(tmp_path, NewsPolicy(clock=lambda: NOW))
    assert result.success
    assert result.output_for_node("news_ingestion", RAW_NEWS.name).is_empty()
    assert not checks_by_name(result)["fresh"].passed


def test_embedded_mode_depends_on_the_embedded_market_files_asset(tmp_path: Path) -> None:
    graph = build_defs(settings(tmp_path)).resolve_asset_graph()
    assert EMBEDDED_MARKET_FILES_KEY in graph.get(RAW_NEWS_KEY).parent_keys
    assert graph.get(RAW_NEWS_KEY).partitions_def is not None


def test_configured_mode_reads_the_sources_toml_and_has_no_embedded_dependency(
    tmp_path: Path,
) -> None:
    toml = tmp_path / "sources.toml"
    toml.write_text('[news.crypto]\nfeeds = ["feeds/a.xml"]\n', encoding="utf-8")
    defs = build_defs(settings(tmp_path, toml))
    graph = defs.resolve_asset_graph()
    assert graph.get(RAW_NEWS_KEY).parent_keys == set()
    assert {RAW_NEWS_KEY, NEWS_REJECTS_KEY} <= set(graph.get_all_asset_keys())


def test_build_defs_loads_and_declares_the_news_resources(tmp_path: Path) -> None:
    defs = build_defs(settings(tmp_path))
    defs.resolve_all_job_defs()
    assert set(defs.resources or {}) == {"news_source", "news_policy"}
    assert {k.name for k in defs.resolve_asset_graph().asset_check_keys} == {
        "article_id_unique",
        "articles_complete",
        "fresh",
        "no_rejects",
    }
