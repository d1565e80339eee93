"""The raw news multi-asset (raw_news + news_rejects per market) and its checks."""

# No `from __future__ import annotations`: Dagster reads the asset's annotations at definition time.

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import dagster as dg

from pipelines.catalog import NEWS_REJECTS, RAW_NEWS
from pipelines.news import checks
from pipelines.news.batch import RawNewsBatch, build_batch
from pipelines.news.config import NewsPolicy
from pipelines.news.sources import NewsSource
from pipelines.partitions import MARKET_PARTITIONS

RAW_NEWS_KEY = dg.AssetKey(RAW_NEWS.name)
NEWS_REJECTS_KEY = dg.AssetKey(NEWS_REJECTS.name)
EMBEDDED_MARKET_FILES_KEY = dg.AssetKey("embedded_market_files")
"""The embedded market generator's asset (another domain), named here so it is not imported."""

DUPLICATES_SHOWN = 20

CHECKS: dict[str, tuple[dg.AssetKey, str]] = {
    "article_id_unique": (RAW_NEWS_KEY, "No two articles share an article_id."),
    "articles_complete": (RAW_NEWS_KEY, "Every article has a publication instant and a body."),
    "fresh": (RAW_NEWS_KEY, "The newest article is within the configured number of hours."),
    "no_rejects": (
        NEWS_REJECTS_KEY,
        "No feed or item was rejected (WARN lists reasons by count).",
    ),
}


def build_raw_news_assets(embedded: bool) -> dg.AssetsDefinition:
    """raw_news and news_rejects, read together; embedded mode waits for the generated files."""
    deps = [EMBEDDED_MARKET_FILES_KEY] if embedded else []

    @dg.multi_asset(
        name="news_ingestion",
        outs={
            RAW_NEWS.name: dg.AssetOut(description=RAW_NEWS.description, is_required=True),
            NEWS_REJECTS.name: dg.AssetOut(description=NEWS_REJECTS.description, is_required=True),
        },
        deps=deps,
        partitions_def=MARKET_PARTITIONS,
        group_name="news",
        check_specs=[
            dg.AssetCheckSpec(name, asset=key, description=text)
            for name, (key, text) in CHECKS.items()
        ],
    )
    def news_ingestion(
        context: dg.AssetExecutionContext,
        news_source: dg.ResourceParam[NewsSource],
        news_policy: dg.ResourceParam[NewsPolicy],
    ) -> Iterator[dg.Output[object] | dg.AssetCheckResult]:
        market = context.partition_key
        now = news_policy.now()
        batch = build_batch(market, news_source.documents(market), news_policy.parse_policy(now))
        context.log.info(f"news {market}: {_summary(batch)}")
        yield dg.Output(batch.articles, RAW_NEWS.name, metadata=_articles_metadata(batch))
        yield dg.Output(batch.rejects, NEWS_REJECTS.name, metadata=_rejects_metadata(batch))
        yield from _check_results(batch, news_policy, now)

    return news_ingestion


def _summary(batch: RawNewsBatch) -> str:
    return (
        f"{batch.feeds} feeds, {batch.items_read} items read, {batch.articles.height} articles, "
        f"{len(batch.duplicates)} duplicates merged, {batch.rejects.height} rejects"
    )


def _articles_metadata(batch: RawNewsBatch) -> dict[str, Any]:
    newest = batch.newest
    return {
        "feeds": batch.feeds,
        "items_read": batch.items_read,
        "unique_articles": batch.articles.height,
        "duplicates_merged": len(batch.duplicates),
        "item_rejects": batch.item_rejects,
        "feed_rejects": batch.rejects.height - batch.item_rejects,
        "newest_item": dg.MetadataValue.timestamp(newest) if newest else None,
        "duplicates": [
            {
                "article_id": d.article_id,
                "feed": d.feed,
                "location": d.location,
                "kept_feed": d.kept_feed,
            }
            for d in batch.duplicates[:DUPLICATES_SHOWN]
        ],
    }


def _rejects_metadata(batch: RawNewsBatch) -> dict[str, Any]:
    return {"rejects": batch.rejects.height, "items_read": batch.items_read, "feeds": batch.feeds}


def _check_results(
    batch: RawNewsBatch, policy: NewsPolicy, now: datetime
) -> Iterator[dg.AssetCheckResult]:
    outcomes = {
        "article_id_unique": (
            checks.article_id_unique(batch.articles),
            dg.AssetCheckSeverity.ERROR,
        ),
        "articles_complete": (
            checks.articles_complete(batch.articles),
            dg.AssetCheckSeverity.ERROR,
        ),
        "fresh": (
            checks.fresh(batch.newest, now, policy.freshness_hours),
            dg.AssetCheckSeverity.WARN,
        ),
        "no_rejects": (checks.no_rejects(batch.rejects), dg.AssetCheckSeverity.WARN),
    }
    for name, (outcome, severity) in outcomes.items():
        yield dg.AssetCheckResult(
            asset_key=CHECKS[name][0],
            check_name=name,
            passed=outcome.passed,
            severity=severity,
            metadata=outcome.metadata,
        )
