"""Contract with the embedded market generator: its feeds parse, and each news defect it injects is caught."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl

from pipelines.embedded_market.market import write_embedded_market
from pipelines.news.batch import build_batch
from pipelines.news.parse import ParsePolicy
from pipelines.news.sources import FileDropNewsSource

AS_OF = datetime(2025, 1, 10, 12, tzinfo=UTC)
EXPECTED_REASONS = {
    "news_missing_guid_and_link": "no guid and no link",
    "news_unparseable_date": "unparseable date",
}


def test_embedded_feeds_parse_and_every_injected_news_defect_is_rejected_or_kept(
    tmp_path: Path,
) -> None:
    manifest = write_embedded_market(tmp_path, "crypto", seed=7, as_of=AS_OF, days=20)
    batch = build_batch(
        "crypto",
        FileDropNewsSource(tmp_path).documents("crypto"),
        ParsePolicy(now=AS_OF + timedelta(hours=1)),
    )
    assert batch.items_read == manifest.news_items
    assert batch.items_read == batch.articles.height + len(batch.duplicates) + batch.item_rejects
    reasons = sorted(batch.rejects.get_column("reason").str.split(":").list.first().to_list())
    news_defects = {d.kind for d in manifest.defects if d.kind.startswith("news")}
    assert news_defects == {*EXPECTED_REASONS, "news_missing_title"}
    assert reasons == sorted(EXPECTED_REASONS.values())
    # The untitled defect is kept: a missing title alone is not a reason to reject.
    assert batch.articles.filter(pl.col("guid").str.ends_with("-untitled")).get_column(
        "title"
    ).to_list() == [None]


def test_each_news_reject_points_at_the_item_the_generator_broke(tmp_path: Path) -> None:
    manifest = write_embedded_market(tmp_path, "crypto", seed=7, as_of=AS_OF, days=20)
    batch = build_batch(
        "crypto",
        FileDropNewsSource(tmp_path).documents("crypto"),
        ParsePolicy(now=AS_OF + timedelta(hours=1)),
    )
    rejected = {
        (Path(source).relative_to(tmp_path).as_posix(), location)
        for source, location in batch.rejects.select("source", "location").iter_rows()
    }
    broken = {(d.path, d.location) for d in manifest.defects if d.kind in EXPECTED_REASONS}
    assert rejected == broken
