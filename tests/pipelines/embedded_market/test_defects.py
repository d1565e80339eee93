"""Injected defects: exactly the documented ones, each where the manifest says, nothing else."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import date
from email.utils import parsedate_to_datetime
from pathlib import Path

import pytest

from pipelines.catalog import MARKETS
from pipelines.embedded_market import MarketManifest, write_embedded_market
from tests.pipelines.embedded_market.conftest import AS_OF

PRICE_KINDS = {
    "price_duplicate_date",
    "price_non_positive",
    "price_unparseable_date",
    "price_high_below_low",
}
NEWS_KINDS = {"news_missing_title", "news_missing_guid_and_link", "news_unparseable_date"}
ATOM = "{http://www.w3.org/2005/Atom}"


def _row_problem(fields: list[str], previous: date | None) -> str | None:
    """Why a price row is bad, or None: an independent oracle of the connector's rules."""
    try:
        day = date.fromisoformat(fields[0])
    except ValueError:
        return "price_unparseable_date"
    o, h, low, c = (float(x) for x in fields[1:5])
    if min(o, h, low, c) <= 0:
        return "price_non_positive"
    if h < low:
        return "price_high_below_low"
    if previous is not None and day <= previous:
        return "price_duplicate_date"
    return None


@pytest.mark.parametrize("market", MARKETS)
def test_price_files_hold_exactly_the_documented_defect_rows(
    default_root: Path, manifests: dict[str, MarketManifest], market: str
) -> None:
    found = set()
    for path in sorted((default_root / f"prices/{market}").glob("*.csv")):
        previous: date | None = None
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines()[1:], start=2):
            problem = _row_problem(line.split(","), previous)
            if problem is None:
                previous = date.fromisoformat(line[:10])
            else:
                found.add((problem, f"prices/{market}/{path.name}", f"line {number}", line))
    documented = {(d.kind, d.path, d.location, d.record) for d in manifests[market].defects}
    assert found == {d for d in documented if d[0] in PRICE_KINDS}
    assert {d[0] for d in found} == PRICE_KINDS


def _feed_problems(root: Path, market: str) -> set[tuple[str, str, str]]:
    found = set()
    channel = ET.parse(root / f"news/{market}/wire.xml").getroot().find("channel")
    assert channel is not None
    for index, item in enumerate(channel.iter("item"), start=1):
        where = (f"news/{market}/wire.xml", f"item {index}")
        if item.findtext("title") is None:
            found.add(("news_missing_title", *where))
        if item.findtext("guid") is None and item.findtext("link") is None:
            found.add(("news_missing_guid_and_link", *where))
        try:
            parsedate_to_datetime(str(item.findtext("pubDate")))
        except (TypeError, ValueError):
            found.add(("news_unparseable_date", *where))
    feed = ET.parse(root / f"news/{market}/digest.xml").getroot()
    for index, entry in enumerate(feed.iter(f"{ATOM}entry"), start=1):
        where = (f"news/{market}/digest.xml", f"item {index}")
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
    assert len(manifests[market].defects) == len(PRICE_KINDS) + len(NEWS_KINDS)


def test_defects_are_extra_records_on_top_of_the_clean_files(tmp_path: Path) -> None:
    params = {"seed": 3, "as_of": AS_OF, "instruments": 3, "days": 90}
    dirty = write_embedded_market(tmp_path / "dirty", "stocks", **params, defects=True)
    clean = write_embedded_market(tmp_path / "clean", "stocks", **params, defects=False)
    assert clean.defects == ()
    skip: dict[str, set[int]] = {}
    for d in dirty.defects:
        if d.location.startswith("line "):
            skip.setdefault(d.path, set()).add(int(d.location.removeprefix("line ")))
    for path in clean.files:
        if path.startswith("prices/"):
            lines = (tmp_path / "dirty" / path).read_text(encoding="utf-8").splitlines()
            kept = [x for n, x in enumerate(lines, start=1) if n not in skip.get(path, set())]
            assert kept == (tmp_path / "clean" / path).read_text(encoding="utf-8").splitlines()
    assert dirty.news_items == clean.news_items + len(NEWS_KINDS)
    assert _feed_problems(tmp_path / "clean", "stocks") == set()
