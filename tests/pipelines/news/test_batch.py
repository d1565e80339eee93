"""A market's batch: cross-feed deduplication, reading order, accounting and catalog conformance."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl

from pipelines.catalog import NEWS_REJECTS, RAW_NEWS
from pipelines.news.batch import build_batch, deduplicate
from pipelines.news.model import FeedDocument, NewsItem
from pipelines.news.parse import ParsePolicy
from pipelines.news.text import article_id

from .conftest import fixture_document

CRYPTO = ["crypto/coinwire.xml", "crypto/ledgerdaily.xml"]
ALL = [
    *CRYPTO,
    "malformed/empty.xml",
    "malformed/latin1.xml",
    "malformed/not-xml.xml",
    "malformed/truncated.xml",
]


def item(feed: str, guid: str | None, link: str | None, n: int = 1) -> NewsItem:
    return NewsItem(
        article_id=article_id(guid, link),
        feed=feed,
        source=f"{feed}.xml",
        location=f"item {n}",
        guid=guid,
        link=link,
        title=None,
        body="text",
        published_at=datetime(2025, 1, 9, tzinfo=UTC),
    )


def test_same_guid_in_two_feeds_is_one_article_kept_from_the_first_feed_by_name(
    policy: ParsePolicy,
) -> None:
    batch = build_batch("crypto", [fixture_document(f) for f in reversed(CRYPTO)], policy)
    shared = batch.articles.filter(pl.col("guid") == "shared-story-42")
    assert shared.select("feed", "body").row(0) == (
        "coinwire",
        "Coinwire's copy of a syndicated story.",
    )
    assert shared.height == 1


def test_same_link_with_different_tracking_params_is_one_article(policy: ParsePolicy) -> None:
    batch = build_batch("crypto", [fixture_document(f) for f in CRYPTO], policy)
    etf = batch.articles.filter(pl.col("link") == "https://news.example.com/markets/eth-etf")
    assert etf.select("feed", "guid").rows() == [("coinwire", None)]
    assert [(d.feed, d.location, d.kept_feed) for d in batch.duplicates] == [
        ("ledgerdaily", "item 1", "coinwire"),
        ("ledgerdaily", "item 2", "coinwire"),
    ]


def test_dedup_result_does_not_depend_on_the_order_feeds_are_listed(policy: ParsePolicy) -> None:
    forward = build_batch("crypto", [fixture_document(f) for f in ALL], policy)
    backward = build_batch("crypto", [fixture_document(f) for f in reversed(ALL)], policy)
    assert forward.articles.equals(backward.articles)
    assert forward.rejects.equals(backward.rejects)


def test_items_chained_by_guid_then_link_are_one_article() -> None:
    kept, duplicates = deduplicate(
        [
            item("a", "g1", "https://x.example/1"),
            item("b", "g2", "https://x.example/1"),  # same link as a's
            item("c", "g2", "https://y.example/2"),  # same guid as b's
        ]
    )
    assert [k.feed for k in kept] == ["a"]
    assert {d.article_id for d in duplicates} == {article_id("g1", None)}


def test_a_repeated_item_within_one_feed_is_merged() -> None:
    kept, duplicates = deduplicate([item("a", "g1", None, 1), item("a", "g1", None, 2)])
    assert len(kept) == 1
    assert [(d.location, d.kept_location) for d in duplicates] == [("item 2", "item 1")]


def test_a_guid_equal_to_another_items_link_is_the_same_article() -> None:
    kept, _ = deduplicate(
        [item("a", "https://x.example/1", None), item("b", None, "https://x.example/1")]
    )
    assert len(kept) == 1


def test_every_item_read_is_an_article_a_duplicate_or_a_rejected_item(policy: ParsePolicy) -> None:
    batch = build_batch("crypto", [fixture_document(f) for f in ALL], policy)
    assert batch.items_read == batch.articles.height + len(batch.duplicates) + batch.item_rejects
    assert (batch.items_read, batch.articles.height, len(batch.duplicates), batch.item_rejects) == (
        15,
        7,
        2,
        6,
    )


def test_batch_frames_conform_to_the_catalog(policy: ParsePolicy) -> None:
    batch = build_batch("crypto", [fixture_document(f) for f in ALL], policy)
    assert batch.articles.schema == RAW_NEWS.schema
    assert batch.rejects.schema == NEWS_REJECTS.schema
    assert RAW_NEWS.conform(batch.articles).equals(batch.articles)
    first = batch.articles.row(0, named=True)
    assert first["timestamp"] == 1_736_429_400_000  # 2025-01-09T13:30:00Z in ms
    assert set(batch.rejects.get_column("market")) == {"crypto"}


def test_no_feeds_give_empty_conformed_frames(policy: ParsePolicy) -> None:
    batch = build_batch("forex", [], policy)
    assert batch.articles.schema == RAW_NEWS.schema
    assert batch.articles.is_empty()
    assert batch.rejects.is_empty()
    assert batch.newest is None


def test_newest_is_the_latest_publication_instant(policy: ParsePolicy) -> None:
    batch = build_batch("crypto", [fixture_document(f) for f in CRYPTO], policy)
    assert batch.newest == datetime(2025, 1, 9, 20, 45, tzinfo=UTC)


def test_a_feed_is_named_by_its_document_not_its_position() -> None:
    document = FeedDocument("zeta", "zeta.xml", b"")
    assert document.order == ("zeta", "zeta.xml")
