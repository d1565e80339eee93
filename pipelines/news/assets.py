"""The raw news multi-asset (raw_news + news_rejects, every market) of the news refresh, and its checks."""

# No `from __future__ import annotations`: Dagster reads the asset's annotations at definition time.

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import dagster as dg
import polars as pl

from pipelines.catalog import NEWS_DAYS, NEWS_REJECTS, RAW_NEWS
from pipelines.news import checks, condition
from pipelines.news.config import NewsPolicy
from pipelines.news.sources import NewsSource
from pipelines.news.update import MarketNews, update_news
from pipelines.platform.runs import RunOptions, step_name
from pipelines.warehouse.metadata import row_counts
from pipelines.warehouse.resource import WarehouseResource
from pipelines.warehouse.staging import RunTransaction
from pipelines.warehouse.tables import scan, stage_market_file, stored_rows

RAW_NEWS_KEY = dg.AssetKey(RAW_NEWS.name)
NEWS_REJECTS_KEY = dg.AssetKey(NEWS_REJECTS.name)
EMBEDDED_NEWS = dg.AssetKey("embedded_market_news")
"""The embedded market generator's feeds asset (another domain), named here so it is not imported."""

CHECKS: dict[str, tuple[dg.AssetKey, str]] = {
    "article_id_unique": (RAW_NEWS_KEY, "No two articles share an article_id."),
    "articles_complete": (RAW_NEWS_KEY, "Every article has a publication instant and a body."),
    "fresh": (
        RAW_NEWS_KEY,
        "Every market's newest article is within the configured number of hours.",
    ),
    "no_rejects": (
        NEWS_REJECTS_KEY,
        "No feed or item read by this refresh was rejected (WARN lists reasons by count).",
    ),
}


def build_raw_news_assets(embedded: bool) -> dg.AssetsDefinition:
    """raw_news and news_rejects of every market, read together; embedded mode waits for the feeds."""

    @dg.multi_asset(
        name="news_ingestion",
        specs=[
            dg.AssetSpec(
                RAW_NEWS.name,
                description=RAW_NEWS.description,
                deps=[EMBEDDED_NEWS] if embedded else [],
            ),
            dg.AssetSpec(NEWS_REJECTS.name, description=NEWS_REJECTS.description),
            dg.AssetSpec(NEWS_DAYS.name, description=NEWS_DAYS.description),
        ],
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
        warehouse: WarehouseResource,
        run_options: RunOptions,
    ) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
        tx = warehouse.transaction(context.run.run_id, step_name(context))
        now = run_options.news_now(news_policy.now)  # the launching command's clock
        parse = news_policy.parse_policy(now)
        results = {
            market: update_news(tx, news_source, market, parse, run_options.full)
            for market in run_options.markets
        }
        for market, result in results.items():
            context.log.info(f"news {market}: {_summary(result)}")
        yield dg.MaterializeResult(asset_key=RAW_NEWS_KEY, metadata=_articles_metadata(tx, results))
        rejects = pl.concat([r.batch.rejects for r in results.values()])
        yield dg.MaterializeResult(
            asset_key=NEWS_REJECTS_KEY,
            metadata={
                **row_counts(tx, NEWS_REJECTS.name, rejects.height),
                "documents": _documents(results),
            },
        )
        expected = {market: news_source.expects_news(market) for market in results}
        yield from _check_results(tx, results, rejects, news_policy, now, expected)

    return news_ingestion


def _summary(result: MarketNews) -> str:
    batch = result.batch
    return (
        f"{result.documents}, {batch.items_read} items read, {batch.articles.height} new articles, "
        f"{len(batch.duplicates)} duplicates or already stored, {batch.rejects.height} rejects"
    )


def _documents(results: dict[str, MarketNews]) -> dg.MetadataValue:
    return dg.MetadataValue.json({m: r.documents for m, r in results.items()})


def _articles_metadata(tx: RunTransaction, results: dict[str, MarketNews]) -> dict[str, Any]:
    batches = [r.batch for r in results.values()]
    newest = max((n for b in batches if (n := b.newest)), default=None)
    item_rejects = sum(b.item_rejects for b in batches)
    return {
        **row_counts(tx, RAW_NEWS.name, sum(b.articles.height for b in batches)),
        "feeds": sum(b.feeds for b in batches),
        "items_read": sum(b.items_read for b in batches),
        "new_articles": sum(b.articles.height for b in batches),
        "duplicates_merged": sum(len(b.duplicates) for b in batches),
        "item_rejects": item_rejects,
        "feed_rejects": sum(b.rejects.height for b in batches) - item_rejects,
        "documents": _documents(results),
        "newest_new_item": dg.MetadataValue.timestamp(newest) if newest else None,
    }


def _check_results(
    tx: RunTransaction,
    results: dict[str, MarketNews],
    rejects: pl.DataFrame,
    policy: NewsPolicy,
    now: datetime,
    expected: dict[str, bool],
) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
    """The checks' results, and `news_days` (staged from them) with its materialization; a market
    its source has no feed for (`expected` false) is never stale."""
    # The columns the checks read: the table's texts grow with its history.
    stored = pl.concat([_checked_columns(tx, m) for m in results])
    new = pl.concat([r.batch.articles for r in results.values()])
    freshness = [
        checks.fresh(_newest(stored.filter(pl.col("market") == m)), now, policy.freshness_hours)
        if expected[m]
        else checks.not_expected()
        for m in results
    ]
    unique = checks.article_id_unique(stored)
    days = sum(
        _stage_days(tx, market, stored, new, now, fresh.passed, unique.passed)
        for market, fresh in zip(results, freshness, strict=True)
    )
    yield dg.MaterializeResult(
        asset_key=NEWS_DAYS.name, metadata=row_counts(tx, NEWS_DAYS.name, days)
    )
    outcomes = {
        "article_id_unique": (unique, dg.AssetCheckSeverity.ERROR),
        "articles_complete": (checks.articles_complete(new), dg.AssetCheckSeverity.ERROR),
        "fresh": (
            checks.Outcome(
                passed=all(f.passed for f in freshness),
                metadata={
                    "markets": {m: f.metadata for m, f in zip(results, freshness, strict=True)}
                },
            ),
            dg.AssetCheckSeverity.WARN,
        ),
        "no_rejects": (checks.no_rejects(rejects), dg.AssetCheckSeverity.WARN),
    }
    for name, (outcome, severity) in outcomes.items():
        yield dg.AssetCheckResult(
            asset_key=CHECKS[name][0],
            check_name=name,
            passed=outcome.passed,
            severity=severity,
            metadata=outcome.metadata,
        )


def _stage_days(
    tx: RunTransaction,
    market: str,
    stored: pl.DataFrame,
    new: pl.DataFrame,
    now: datetime,
    fresh: bool,
    unique: bool,
) -> int:
    """Stage the market's `news_days` from its stored articles and this refresh's checks."""
    ours = pl.col("market") == market
    incomplete = checks.incomplete_articles(new.filter(ours))
    failed = {condition.FRESH: "WARN"} if not fresh else {}
    if not unique:  # the table's ids: every market's day shows it (the check is table-wide)
        failed[condition.UNIQUE] = "ERROR"
    rows = condition.news_days(
        market,
        stored.filter(ours)["published_at"],
        stored_rows(tx, NEWS_DAYS, market),
        incomplete["published_at"].dt.date().drop_nulls().to_list(),
        now.astimezone(UTC).date(),
        failed,
    )
    stage_market_file(tx, NEWS_DAYS, market, rows)
    return rows.height


def _checked_columns(tx: RunTransaction, market: str) -> pl.DataFrame:
    files = tx.partitions(RAW_NEWS.name, market).values()
    columns = ["market", "article_id", "published_at"]
    return scan(tx.store.storage, files, RAW_NEWS).select(columns).collect()


def _newest(articles: pl.DataFrame) -> datetime | None:
    value = articles.get_column("published_at").max()
    return value if isinstance(value, datetime) else None
