"""The records that flow through news ingestion: fetched feed documents, parsed items and rejects."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

REASON_SEPARATOR = " | "
"""Joins the reasons of an item that fails several rules."""


@dataclass(frozen=True)
class FeedDocument:
    """One feed as fetched: its bytes, or why they could not be read.

    `feed` names the feed (a file's stem, or the URL); feeds are read in the order of
    `(feed, source)`, which decides which feed keeps an article seen in several.
    """

    feed: str
    source: str
    """File path or URL the bytes came from."""
    content: bytes | None
    error: str | None = None
    """Why `content` is None: a fetch or read failure, in words."""

    @property
    def order(self) -> tuple[str, str]:
        return (self.feed, self.source)


@dataclass(frozen=True)
class NewsItem:
    """One valid feed item, normalised; `article_id` identifies the story across feeds."""

    article_id: str
    feed: str
    source: str
    location: str
    guid: str | None
    link: str | None
    title: str | None
    body: str
    published_at: datetime
    """Publication instant, timezone-aware UTC."""


@dataclass(frozen=True)
class Reject:
    """A feed or an item that could not be used, kept with the reason (one row of news_rejects)."""

    source: str
    location: str
    """`feed` for a problem with the whole document, `item N` (1-based) for one item."""
    record: str
    reason: str
    """`<category>: <detail>`; several reasons are joined with REASON_SEPARATOR."""
