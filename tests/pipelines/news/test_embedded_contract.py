"""Contract with the embedded market generator: its feeds parse, and each news defect it injects is caught."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from pipelines.embedded_market import MarketManifest, write_embedded_market
from pipelines.news.batch import RawNewsBatch, build_batch
from pipelines.news.parse import ParsePolicy
from pipelines.news.sources import FileDropNewsSource

AS_OF = datetime(2025, 1, 10, 12, tzinfo=UTC)
START = (AS_OF - timedelta(days=25)).date()
"""Late enough to stay small; the defects' day (a week in) is in December's archive and in the
current documents."""
EXPECTED_REASONS = {
    "news_missing_guid_and_link": "no guid and no link",
    "news_unparseable_date": "unparseable date",
}


@pytest.fixture
def embedded(tmp_path: Path) -> tuple[MarketManifest, RawNewsBatch]:
    manifest = write_embedded_market(tmp_path, "crypto", seed=7, as_of=AS_OF, start=START)
    batch = build_batch(
        "crypto",
        FileDropNewsSource(tmp_path).documents("crypto"),
        ParsePolicy(now=AS_OF + timedelta(hours=1)),
    )
    return manifest, batch


def test_embedded_feeds_parse_and_every_injected_news_defect_is_rejected_or_kept(
    embedded: tuple[MarketManifest, RawNewsBatch],
) -> None:
    manifest, batch = embedded
    assert batch.items_read == manifest.news_items
    assert batch.items_read == batch.articles.height + len(batch.duplicates) + batch.item_rejects
    reasons = sorted(batch.rejects.get_column("reason").str.split(":").list.first().to_list())
    news_defects = [d.kind for d in manifest.defects if d.kind.startswith("news")]
    assert set(news_defects) == {*EXPECTED_REASONS, "news_missing_title"}
    assert len(news_defects) == 6  # each in the current document and in December's archive
    assert reasons == sorted(2 * list(EXPECTED_REASONS.values()))
    # The untitled defect is kept (a missing title alone is no reason to reject), once.
    assert batch.articles.filter(pl.col("guid").str.ends_with("-untitled")).get_column(
        "title"
    ).to_list() == [None]


def test_each_news_reject_points_at_the_item_the_generator_broke(
    tmp_path: Path, embedded: tuple[MarketManifest, RawNewsBatch]
) -> None:
    manifest, batch = embedded
    rejected = {
        (Path(source).relative_to(tmp_path).as_posix(), location)
        for source, location in batch.rejects.select("source", "location").iter_rows()
    }
    broken = {(d.path, d.location) for d in manifest.defects if d.kind in EXPECTED_REASONS}
    assert rejected == broken


def test_an_article_read_from_an_archive_and_a_current_document_is_one_article_of_its_feed(
    embedded: tuple[MarketManifest, RawNewsBatch],
) -> None:
    manifest, batch = embedded
    assert any("/wire/" in f for f in manifest.files)
    assert set(batch.articles.get_column("feed")) == {"wire", "digest"}
    assert batch.articles.get_column("article_id").is_unique().all()
    assert len(batch.duplicates) > 0  # December's last days are in both documents
