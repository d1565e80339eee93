"""Fixtures of the news tests: the feed fixtures, a fixed reading instant and a file drop."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipelines.news.model import FeedDocument
from pipelines.news.parse import ParsePolicy

FEEDS = Path(__file__).parents[2] / "fixtures" / "feeds"
NOW = datetime(2025, 1, 10, 12, 0, tzinfo=UTC)
"""The reading instant of every test: a day after the fixtures' newest items."""


def fixture_document(relative: str) -> FeedDocument:
    path = FEEDS / relative
    return FeedDocument(path.stem, str(path), path.read_bytes())


@pytest.fixture
def policy() -> ParsePolicy:
    return ParsePolicy(now=NOW)


@pytest.fixture
def file_drop(tmp_path: Path) -> Path:
    """A file-drop root whose crypto market holds every fixture feed, well-formed or not."""
    market = tmp_path / "news" / "crypto"
    market.mkdir(parents=True)
    for feed in sorted((FEEDS / "crypto").glob("*.xml")) + sorted(
        (FEEDS / "malformed").glob("*.xml")
    ):
        shutil.copy(feed, market / feed.name)
    return tmp_path
