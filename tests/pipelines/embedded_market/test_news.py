"""The embedded feeds: RSS and Atom that parse, name instruments, overlap, and reach as_of."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import datetime, timedelta
from email.utils import parsedate_to_datetime
from pathlib import Path

import pytest

from pipelines.catalog import MARKETS
from pipelines.embedded_market import MarketManifest
from pipelines.embedded_market.universe import build_universe
from tests.pipelines.embedded_market.conftest import AS_OF

ATOM = "{http://www.w3.org/2005/Atom}"


def _rss(root: Path, market: str) -> list[dict[str, str | None]]:
    channel = ET.parse(root / f"news/{market}/wire.xml").getroot().find("channel")
    assert channel is not None
    return [
        {k: item.findtext(k) for k in ("title", "link", "guid", "pubDate", "description")}
        for item in channel.iter("item")
    ]


def _atom(root: Path, market: str) -> list[dict[str, str | None]]:
    feed = ET.parse(root / f"news/{market}/digest.xml").getroot()
    out = []
    for entry in feed.iter(f"{ATOM}entry"):
        link = entry.find(f"{ATOM}link")
        out.append(
            {
                "title": entry.findtext(f"{ATOM}title"),
                "link": None if link is None else link.get("href"),
                "guid": entry.findtext(f"{ATOM}id"),
                "published": entry.findtext(f"{ATOM}published"),
                "description": entry.findtext(f"{ATOM}summary"),
            }
        )
    return out


def _when(item: dict[str, str | None]) -> datetime | None:
    try:
        if item.get("pubDate"):
            return parsedate_to_datetime(str(item["pubDate"]))
        return datetime.fromisoformat(str(item["published"]))
    except (TypeError, ValueError):
        return None


@pytest.fixture(scope="module")
def feeds(default_root: Path, manifests: dict[str, MarketManifest]) -> dict[str, tuple[list, list]]:
    return {m: (_rss(default_root, m), _atom(default_root, m)) for m in MARKETS}


@pytest.mark.parametrize("market", MARKETS)
def test_feeds_parse_and_carry_several_items_a_day(
    feeds: dict[str, tuple[list, list]], manifests: dict[str, MarketManifest], market: str
) -> None:
    wire, digest = feeds[market]
    assert len(wire) + len(digest) == manifests[market].news_items
    assert len(wire) + len(digest) >= 2 * 1600


@pytest.mark.parametrize("market", MARKETS)
def test_items_reach_the_last_24_hours_and_none_is_after_as_of(
    feeds: dict[str, tuple[list, list]], market: str
) -> None:
    times = [t for t in map(_when, feeds[market][0] + feeds[market][1]) if t is not None]
    assert max(times) <= AS_OF
    assert sum(t > AS_OF - timedelta(hours=24) for t in times) >= 2


@pytest.mark.parametrize("market", MARKETS)
def test_some_stories_appear_in_both_feeds_by_guid_or_by_link(
    feeds: dict[str, tuple[list, list]], market: str
) -> None:
    wire, digest = feeds[market]
    same_guid = {i["guid"] for i in wire} & {i["guid"] for i in digest} - {None}
    same_link = {i["link"] for i in wire} & {i["link"] for i in digest} - {None}
    shared = same_guid | same_link
    assert same_guid
    assert same_link - {i["link"] for i in digest if i["guid"] in same_guid}
    stories = len({i["link"] or i["guid"] for i in wire + digest})
    assert 0.08 <= len(same_link) / stories <= 0.25
    assert shared


@pytest.mark.parametrize("market", MARKETS)
def test_every_item_names_an_instrument_by_ticker_and_by_name(
    feeds: dict[str, tuple[list, list]], market: str
) -> None:
    universe = build_universe(market)
    for item in feeds[market][0] + feeds[market][1]:
        body = str(item["description"])
        assert any(
            f"{n} ({s})" in body for s, n in zip(universe.symbols, universe.names, strict=True)
        )


def test_headlines_mix_tones_hype_and_name_forms(feeds: dict[str, tuple[list, list]]) -> None:
    titles = " ".join(str(i["title"]) for i in feeds["crypto"][0] + feeds["crypto"][1])
    for word in (
        "rallies",
        "slides",
        "little changed",
        "FOMO",
        "FUD",
        "speculat",
        "Bitcoin",
        "BTC",
        "ether",
    ):
        assert word in titles, word
    assert "EUR/USD" in " ".join(str(i["title"]) for i in feeds["forex"][0])
    assert "gold" in " ".join(str(i["title"]) for i in feeds["commodities"][0])
    assert "Apple" in " ".join(str(i["title"]) for i in feeds["stocks"][0])


def test_largest_instruments_get_the_most_stories(feeds: dict[str, tuple[list, list]]) -> None:
    bodies = [str(i["description"]) for i in feeds["crypto"][0]]
    bitcoin = sum("(BTC)" in b for b in bodies)
    kaspa = sum("(KAS)" in b for b in bodies)
    assert bitcoin > 5 * kaspa > 0


def test_tone_follows_the_day_move(default_root: Path, feeds: dict[str, tuple[list, list]]) -> None:
    bullish = bearish = 0
    for item in feeds["crypto"][0]:
        body, title = str(item["description"]), str(item["title"])
        rose = " rose " in body or " gained " in body or "Buyers lifted" in body
        bullish += rose and any(w in title for w in ("jumps", "rallies", "climbs", "gains"))
        bearish += rose and any(w in title for w in ("slides", "drops", "falls", "tumbles"))
    assert bullish > 5 * bearish


def test_feed_files_stay_a_few_megabytes(default_root: Path) -> None:
    sizes = [p.stat().st_size for p in (default_root / "news").rglob("*.xml")]
    assert max(sizes) < 5_000_000
