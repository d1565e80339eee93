"""Injected defects: exactly the documented ones, each where the manifest says, nothing else."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import date
from email.utils import parsedate_to_datetime
from pathlib import Path

import pytest

from pipelines.catalog import MARKETS
from pipelines.embedded_market import MarketManifest, write_embedded_market
from tests.pipelines.embedded_market.conftest import AS_OF, ATOM, day_files, feed_items

PRICE_KINDS = {
    "price_duplicate_date",
    "price_non_positive",
    "price_unparseable_date",
    "price_high_below_low",
}
NEWS_KINDS = {"news_missing_title", "news_missing_guid_and_link", "news_unparseable_date"}
SMALL = {"seed": 3, "as_of": AS_OF, "instruments": 3, "start": date(2026, 1, 20)}


def _row_problem(fields: list[str], seen: set[str]) -> str | None:
    """Why a day file's row is bad, or None: an independent oracle of the connector's rules."""
    try:
        date.fromisoformat(fields[1])
    except ValueError:
        return "price_unparseable_date"
    o, h, low, c = (float(x) for x in fields[2:6])
    if min(o, h, low, c) <= 0:
        return "price_non_positive"
    if h < low:
        return "price_high_below_low"
    if fields[0] in seen:
        return "price_duplicate_date"
    return None


def _price_problems(root: Path, market: str) -> set[tuple[str, str, str, str]]:
    found = set()
    for path in day_files(root, market):
        seen: set[str] = set()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines()[1:], start=2):
            fields = line.split(",")
            problem = _row_problem(fields, seen)
            if problem is None:
                seen.add(fields[0])
                assert fields[1] == path.stem  # every clean row is dated its file's day
            else:
                where = path.relative_to(root).as_posix()
                found.add((problem, where, f"line {number}", line))
    return found


@pytest.mark.parametrize("market", MARKETS)
def test_day_files_hold_exactly_the_documented_defect_rows(
    default_root: Path, manifests: dict[str, MarketManifest], market: str
) -> None:
    documented = {(d.kind, d.path, d.location, d.record) for d in manifests[market].defects}
    found = _price_problems(default_root, market)
    assert found == {d for d in documented if d[0] in PRICE_KINDS}
    assert sorted(d[0] for d in found) == sorted(PRICE_KINDS)  # one of each


def _feed_problems(root: Path, market: str) -> set[tuple[str, str, str]]:
    found = set()
    for path in sorted((root / "news" / market).rglob("*.xml")):
        relative = path.relative_to(root).as_posix()
        rss = "wire" in (path.stem, path.parent.name)
        if rss:
            channel = ET.parse(path).getroot().find("channel")
            assert channel is not None
            for index, item in enumerate(channel.iter("item"), start=1):
                where = (relative, f"item {index}")
                if item.findtext("title") is None:
                    found.add(("news_missing_title", *where))
                if item.findtext("guid") is None and item.findtext("link") is None:
                    found.add(("news_missing_guid_and_link", *where))
                try:
                    parsedate_to_datetime(str(item.findtext("pubDate")))
                except (TypeError, ValueError):
                    found.add(("news_unparseable_date", *where))
        else:
            for index, entry in enumerate(ET.parse(path).getroot().iter(f"{ATOM}entry"), start=1):
                where = (relative, f"item {index}")
                try:
                    date.fromisoformat(str(entry.findtext(f"{ATOM}published"))[:10])
                except ValueError:
                    found.add(("news_unparseable_date", *where))
                if entry.findtext(f"{ATOM}title") is None:
                    found.add(("news_missing_title", *where))
    return found


@pytest.mark.parametrize("market", MARKETS)
def test_feeds_hold_exactly_the_documented_malformed_items(
    default_root: Path, manifests: dict[str, MarketManifest], market: str
) -> None:
    documented = {(d.kind, d.path, d.location) for d in manifests[market].defects}
    assert _feed_problems(default_root, market) == {d for d in documented if d[0] in NEWS_KINDS}
    assert {d[0] for d in documented} == PRICE_KINDS | NEWS_KINDS


def test_a_news_defect_is_listed_in_every_document_that_carries_it(tmp_path: Path) -> None:
    """Within the last 31 days, a defect item is in the current document and its month's archive."""
    manifest = write_embedded_market(tmp_path, "stocks", **(SMALL | {"start": date(2026, 2, 2)}))
    news = [d for d in manifest.defects if d.kind in NEWS_KINDS]
    assert {(d.kind, d.path.count("/")) for d in news} == {
        (k, n) for k in NEWS_KINDS for n in (2, 3)
    }
    assert _feed_problems(tmp_path, "stocks") == {(d.kind, d.path, d.location) for d in news}


def test_defects_are_extra_records_on_top_of_the_clean_files(tmp_path: Path) -> None:
    dirty = write_embedded_market(tmp_path / "dirty", "stocks", **SMALL, defects=True)
    clean = write_embedded_market(tmp_path / "clean", "stocks", **SMALL, defects=False)
    assert clean.defects == ()
    assert dirty.files == clean.files
    skip: dict[str, set[int]] = {}
    for d in dirty.defects:
        number = int(d.location.split(" ")[1])
        skip.setdefault(d.path, set()).add(number)
    for path in clean.files:
        if path.startswith("prices/"):
            lines = (tmp_path / "dirty" / path).read_text(encoding="utf-8").splitlines()
            kept = [x for n, x in enumerate(lines, start=1) if n not in skip.get(path, set())]
            assert kept == (tmp_path / "clean" / path).read_text(encoding="utf-8").splitlines()
        if path.startswith("news/"):
            items = feed_items(tmp_path / "dirty" / path)
            kept_items = [i for n, i in enumerate(items, start=1) if n not in skip.get(path, set())]
            assert kept_items == feed_items(tmp_path / "clean" / path)
    news_defects = sum(d.kind in NEWS_KINDS for d in dirty.defects)
    assert dirty.news_items == clean.news_items + news_defects
    assert _feed_problems(tmp_path / "clean", "stocks") == set()
    assert _price_problems(tmp_path / "clean", "stocks") == set()
