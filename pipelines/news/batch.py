"""A market's news batch: every feed parsed, articles deduplicated across feeds, rejects collected."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import partial

import polars as pl

from pipelines.catalog import NEWS_REJECTS, RAW_NEWS
from pipelines.news.model import FeedDocument, NewsItem, Reject
from pipelines.news.parse import ParsePolicy, parse_documents
from pipelines.platform.parallel import map_chunks

PARSE_CHUNK = 25
"""Fewest feed documents a parsing worker is given (a first load reads hundreds of them)."""


@dataclass(frozen=True)
class Duplicate:
    """An item merged into an article read earlier (same guid or same canonical link)."""

    article_id: str
    feed: str
    location: str
    kept_feed: str
    kept_location: str


@dataclass(frozen=True)
class RawNewsBatch:
    """What one read of a market's feeds produced, as catalog-conformed frames plus counts.

    Every item read is accounted for: `items_read == len(articles) + len(duplicates) + item_rejects`.
    """

    market: str
    feeds: int
    items_read: int
    articles: pl.DataFrame
    """RAW_NEWS rows, in reading order."""
    rejects: pl.DataFrame
    """NEWS_REJECTS rows, in reading order."""
    duplicates: tuple[Duplicate, ...]

    @property
    def item_rejects(self) -> int:
        """Rejected items, as opposed to rejected documents (location `feed`)."""
        return self.rejects.filter(pl.col("location") != "feed").height

    @property
    def newest(self) -> datetime | None:
        newest = self.articles.get_column("published_at").max()
        return newest if isinstance(newest, datetime) else None


def build_batch(
    market: str,
    documents: Iterable[FeedDocument],
    policy: ParsePolicy,
    stored: pl.DataFrame | None = None,
) -> RawNewsBatch:
    """Parse `documents` in `(feed, source)` order and merge items that are the same article.

    With `stored` (raw_news rows kept from earlier reads), an item that is one of those articles
    (the same guid or canonical link) counts as a duplicate too: `articles` holds new ones only.
    """
    ordered = sorted(documents, key=lambda d: d.order)
    items: list[NewsItem] = []
    rejects: list[Reject] = []
    items_read = 0
    for parsed in map_chunks(partial(parse_documents, policy=policy), ordered, PARSE_CHUNK):
        items.extend(parsed.items)
        rejects.extend(parsed.rejects)
        items_read += parsed.items_read
    articles, duplicates = deduplicate(items, known_keys(stored))
    return RawNewsBatch(
        market=market,
        feeds=len(ordered),
        items_read=items_read,
        articles=articles_frame(market, articles),
        rejects=rejects_frame(market, rejects),
        duplicates=tuple(duplicates),
    )


STORED = "stored"
"""`kept_feed` of a duplicate whose article was stored by an earlier read."""


def known_keys(stored: pl.DataFrame | None) -> dict[str, str]:
    """The identity keys ("guid:…", "link:…", "id:…") of stored articles, to their article_id."""
    if stored is None or stored.is_empty():
        return {}
    rows = stored.select("article_id", "guid", "link").iter_rows()
    keys: dict[str, str] = {}
    for article_id, guid, link in rows:
        keys[f"id:{article_id}"] = article_id
        if guid:
            keys[f"guid:{guid}"] = article_id
        if link:
            keys[f"link:{link}"] = article_id
    return keys


def deduplicate(
    items: Iterable[NewsItem], known: dict[str, str] | None = None
) -> tuple[list[NewsItem], list[Duplicate]]:
    """Keep the first item of each article; a later item with a known guid or link merges into it.

    The first item's `article_id` names the article; the keys of every merged item are learnt too,
    so a chain (A shares a guid with B, B a link with C) is one article. `known` holds the keys of
    articles stored earlier: their items merge into them and are not kept again.
    """
    kept: dict[str, NewsItem] = {}
    owner: dict[str, str] = dict(known or {})  # key -> article_id of the kept (or stored) item
    duplicates: list[Duplicate] = []
    for item in items:
        keys = _identity_keys(item)
        match = next((owner[k] for k in keys if k in owner), None)
        if match is None and (item.article_id in kept or f"id:{item.article_id}" in owner):
            match = owner.get(
                f"id:{item.article_id}", item.article_id
            )  # a guid equal to another item's link hashes alike
        if match is None:
            kept[item.article_id] = item
            match = item.article_id
        else:
            first = kept.get(match)
            kept_feed, kept_at = (first.feed, first.location) if first else (STORED, STORED)
            duplicates.append(Duplicate(match, item.feed, item.location, kept_feed, kept_at))
        owner.update(dict.fromkeys(keys, match))
    return list(kept.values()), duplicates


def _identity_keys(item: NewsItem) -> list[str]:
    keys = [f"guid:{item.guid}"] if item.guid else []
    return keys + ([f"link:{item.link}"] if item.link else [])


def articles_frame(market: str, items: list[NewsItem]) -> pl.DataFrame:
    rows = [
        {
            "market": market,
            "article_id": i.article_id,
            "feed": i.feed,
            "guid": i.guid,
            "link": i.link,
            "title": i.title,
            "body": i.body,
            "published_at": i.published_at,
        }
        for i in items
    ]
    schema = {c: t for c, t in RAW_NEWS.schema.items() if c != "timestamp"}
    frame = pl.DataFrame(rows, schema=schema)
    return RAW_NEWS.conform(frame.with_columns(timestamp=pl.col("published_at").dt.epoch("ms")))


def rejects_frame(market: str, rejects: list[Reject]) -> pl.DataFrame:
    rows = [
        {
            "market": market,
            "source": r.source,
            "location": r.location,
            "record": r.record,
            "reason": r.reason,
        }
        for r in rejects
    ]
    return NEWS_REJECTS.conform(pl.DataFrame(rows, schema=NEWS_REJECTS.schema))
