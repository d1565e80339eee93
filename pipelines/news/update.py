"""One market's raw news brought up to now: read the feed documents that changed, keep new articles only."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import polars as pl

from pipelines.catalog import NEWS_REJECTS, RAW_NEWS
from pipelines.catalog.state import NEWS_FILES
from pipelines.news.batch import RawNewsBatch, build_batch
from pipelines.news.model import FeedDocument
from pipelines.news.parse import ParsePolicy
from pipelines.news.sources import NewsSource
from pipelines.prices.update import ListedFile, changed_files, stage_files_read
from pipelines.warehouse.staging import RunTransaction
from pipelines.warehouse.tables import (
    append_segments,
    counted_rows,
    scan,
    stage_market_file,
    stored_rows,
)

KNOWN_BY = ("article_id", "guid", "link")
"""What a stored article is recognised by (`batch.known_keys`)."""
PUBLISHED_DAY = pl.col("published_at").dt.date()
"""The day raw_news is segmented by: the article's publication day, UTC (its briefs' `date`)."""


@runtime_checkable
class ListedNewsSource(Protocol):
    """A source of feed files (the file drop): a refresh reads only documents new or changed."""

    def listing(self, market: str) -> Sequence[ListedFile]: ...

    def documents_at(self, market: str, paths: Sequence[str]) -> list[FeedDocument]: ...


@dataclass(frozen=True)
class MarketNews:
    """What one refresh read of one market and what it kept."""

    batch: RawNewsBatch
    """Articles new to the warehouse, and the rejects of what was read."""
    documents: str
    """What was read, in words (for metadata)."""
    stored: int
    """Articles in the table after this refresh."""
    rejects_stored: int
    """Rows of the rejects log after this refresh."""


def update_news(
    tx: RunTransaction, source: NewsSource, market: str, policy: ParsePolicy, full: bool
) -> MarketNews:
    """Read the market's feeds (only documents new or changed since the last refresh when the
    source lists files), keep the articles not stored yet, and stage raw_news, news_rejects and
    the files read."""
    stored = {} if full else tx.partitions(RAW_NEWS.name, market)
    # Only what recognises a stored article: the table's other columns grow with its history.
    known = scan(tx.store.storage, stored.values(), RAW_NEWS).select(KNOWN_BY).collect()
    documents, read, described = _documents(tx, source, market, full or known.is_empty())
    batch = build_batch(market, documents, policy, known)
    articles = append_segments(tx, RAW_NEWS, market, stored, batch.articles, PUBLISHED_DAY, full)
    tx.stage(RAW_NEWS.name, market, articles)
    rejects = NEWS_REJECTS.empty() if full else stored_rows(tx, NEWS_REJECTS, market)
    log = pl.concat([rejects, batch.rejects]).unique(
        ["record", "reason"], keep="first", maintain_order=True
    )
    stage_market_file(tx, NEWS_REJECTS, market, log)
    if read is not None:
        stage_files_read(tx, NEWS_FILES, market, read, full)
    return MarketNews(batch, described, counted_rows(tx, RAW_NEWS, market), log.height)


def _documents(
    tx: RunTransaction, source: NewsSource, market: str, everything: bool
) -> tuple[list[FeedDocument], list[ListedFile] | None, str]:
    if not isinstance(source, ListedNewsSource):
        documents = source.documents(market)
        return documents, None, f"{len(documents)} feeds"
    listing = list(source.listing(market))
    seen = stored_rows(tx, NEWS_FILES, market)
    wanted = listing if everything else changed_files(listing, seen)
    documents = source.documents_at(market, [f.path for f in wanted])
    return documents, wanted, f"{len(wanted)} of {len(listing)} documents"
