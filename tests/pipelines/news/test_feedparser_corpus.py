"""Our feed parser against feedparser's own test corpus (a subset kept in tests/fixtures/captures).

feedparser is the reference: an item it keeps with a date and a link or guid must reach us as an
item (not a reject) with the same instant. The corpus is feedparser's, not ours, so a rule that
fails here is a defect of ours or a documented policy of ours, and each such case is named below.
"""

from __future__ import annotations

import calendar
import io
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import feedparser
import pytest

from pipelines.news.model import FeedDocument
from pipelines.news.parse import ParsedFeed, ParsePolicy, parse_document

CORPUS = Path(__file__).parents[2] / "fixtures" / "captures" / "feedparser"
FEEDS = sorted(p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*.xml"))

FAR_FUTURE = ParsePolicy(now=datetime(9000, 1, 1, tzinfo=UTC))
"""Our parser drops no item for its age; it rejects items dated after `now` plus the clock skew.
The corpus has dates up to the 2000s, so a reading instant in year 9000 keeps that policy out of
the comparison (the future-date rule has its own tests in test_parse.py)."""

KNOWN_DEFECTS: dict[str, str] = {}
"""Corpus files that fail because of a defect being fixed elsewhere: file -> defect (xfail strict).
None of the 250 files fails today: link canonicalisation, html_to_text on `<![` and non-English
dates are not exercised by an item that feedparser keeps with a date and a link or guid."""


@dataclass(frozen=True)
class Expected:
    """An entry feedparser keeps with a date and a link or guid, as our parser must keep it."""

    location: str
    published_at: datetime
    link: str | None
    guid: str | None


def _param(name: str) -> Any:
    if name in KNOWN_DEFECTS:
        return pytest.param(
            name, id=name, marks=pytest.mark.xfail(strict=True, reason=KNOWN_DEFECTS[name])
        )
    return pytest.param(name, id=name)


def _reference(content: bytes) -> list[dict[str, Any]]:
    # A stream, as parse_document does: feedparser would take bytes for a path or URL to open.
    parsed = feedparser.parse(io.BytesIO(content))
    return list(dict.get(parsed, "entries", []))


def _text(entry: dict[str, Any], key: str) -> str | None:
    value = dict.get(entry, key)  # dict.get: FeedParserDict's own lookup warns on aliases
    return value.strip() or None if isinstance(value, str) else None


def _is_web_url(value: str | None) -> bool:
    parts = urlsplit(value or "")
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)


def expected_items(entries: list[dict[str, Any]]) -> list[Expected]:
    """Entries with a date (published, else updated) and a link or guid, in document order."""
    expected = []
    for index, entry in enumerate(entries):
        parsed = dict.get(entry, "published_parsed") or dict.get(entry, "updated_parsed")
        link, guid = _text(entry, "link"), _text(entry, "id")
        if isinstance(parsed, time.struct_time) and (link or guid):
            instant = datetime.fromtimestamp(calendar.timegm(parsed), UTC)
            expected.append(Expected(f"item {index + 1}", instant, link, guid))
    return expected


def documented_drop(item: Expected, entry: dict[str, Any]) -> str | None:
    """The policy of ours that rejects an entry feedparser keeps, or None when none applies."""
    if item.guid is None and not _is_web_url(item.link):
        return "no guid and no link"  # a link counts only as an absolute http(s) URL
    if not any(_text(entry, k) for k in ("title", "summary")) and not dict.get(entry, "content"):
        return "empty title and body"
    return None


def ours(name: str) -> tuple[list[dict[str, Any]], ParsedFeed]:
    content = (CORPUS / name).read_bytes()
    return _reference(content), parse_document(FeedDocument(name, name, content), FAR_FUTURE)


@pytest.mark.parametrize("name", [_param(n) for n in FEEDS])
def test_every_dated_item_feedparser_keeps_is_an_item_with_the_same_utc_instant(name: str) -> None:
    entries, parsed = ours(name)
    items = {item.location: item for item in parsed.items}
    rejects = {reject.location: reject.reason for reject in parsed.rejects}
    for expected in expected_items(entries):
        entry = entries[int(expected.location.removeprefix("item ")) - 1]
        policy = documented_drop(expected, entry)
        if policy is not None:
            assert policy in rejects.get(expected.location, ""), (expected, rejects)
            continue
        assert expected.location in items, (expected, rejects.get(expected.location))
        assert items[expected.location].published_at == expected.published_at


@pytest.mark.parametrize("name", [_param(n) for n in FEEDS])
def test_every_entry_feedparser_reads_is_an_item_or_a_reject_with_a_reason(name: str) -> None:
    entries, parsed = ours(name)
    assert parsed.items_read == len(entries)
    locations = [i.location for i in parsed.items] + [
        r.location for r in parsed.rejects if r.location != "feed"
    ]
    assert sorted(locations) == sorted(f"item {n}" for n in range(1, len(entries) + 1))
    assert all(r.reason for r in parsed.rejects)


def test_the_corpus_holds_dated_linked_items_for_the_comparison_to_bite() -> None:
    compared = sum(len(expected_items(ours(name)[0])) for name in FEEDS)
    assert len(FEEDS) >= 150
    assert compared >= 30
