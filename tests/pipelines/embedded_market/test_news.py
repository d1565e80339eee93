"""The embedded feeds: RSS and Atom by the clock, current documents and monthly archives."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from pipelines.catalog import MARKETS
from pipelines.embedded_market import (
    HISTORY_START,
    MarketManifest,
    write_embedded_news,
    write_embedded_prices,
)
from pipelines.embedded_market.universe import build_universe
from tests.pipelines.embedded_market.conftest import (
    AS_OF,
    feed_items,
    files_of,
    published,
    stamps_of,
)

Item = dict[str, str | None]
SMALL = {"seed": 5, "instruments": 6, "start": date(2026, 1, 12)}


def _documents(root: Path, market: str) -> dict[str, list[Item]]:
    """Every feed document of `market` (path relative to the root) and its items."""
    paths = sorted((root / "news" / market).rglob("*.xml"))
    return {p.relative_to(root).as_posix(): feed_items(p) for p in paths}


def _stories(documents: dict[str, list[Item]], feed: str) -> list[Item]:
    """The distinct items of one feed across its current document and its archives."""
    seen: dict[str | None, Item] = {}
    for path, items in documents.items():
        if path.split("/")[2].removesuffix(".xml") == feed:
            seen |= {i["guid"] or i["link"] or i["title"]: i for i in items}
    return list(seen.values())


@pytest.fixture(scope="module")
def feeds(
    default_root: Path, manifests: dict[str, MarketManifest]
) -> dict[str, tuple[list[Item], list[Item]]]:
    """Per market, the distinct items of the wire and of the digest."""
    out = {}
    for m in MARKETS:
        documents = _documents(default_root, m)
        out[m] = (_stories(documents, "wire"), _stories(documents, "digest"))
    return out


@pytest.mark.parametrize("market", MARKETS)
def test_documents_parse_and_carry_several_items_every_day(
    default_root: Path, manifests: dict[str, MarketManifest], market: str
) -> None:
    documents = _documents(default_root, market)
    assert sum(len(items) for items in documents.values()) == manifests[market].news_items
    days = Counter(
        t.date() for items in documents.values() for i in items if (t := published(i)) is not None
    )
    assert min(days) == HISTORY_START
    assert len(days) == (AS_OF.date() - HISTORY_START).days + 1  # every calendar day
    assert min(days.values()) >= 2


@pytest.mark.parametrize("market", MARKETS)
def test_the_current_documents_hold_the_last_31_days_newest_first(
    default_root: Path, manifests: dict[str, MarketManifest], market: str
) -> None:
    for feed in ("wire", "digest"):
        items = feed_items(default_root / f"news/{market}/{feed}.xml")
        times = [t for t in map(published, items) if t is not None]
        assert times == sorted(times, reverse=True)
        assert max(times) <= AS_OF
        assert min(times) > AS_OF - timedelta(days=31)
        assert min(times) < AS_OF - timedelta(days=30)
    current = feed_items(default_root / f"news/{market}/wire.xml") + feed_items(
        default_root / f"news/{market}/digest.xml"
    )
    assert sum(t > AS_OF - timedelta(hours=24) for t in map(published, current) if t) >= 2


@pytest.mark.parametrize("market", MARKETS)
def test_archives_hold_whole_closed_months_in_the_feeds_format(
    default_root: Path, manifests: dict[str, MarketManifest], market: str
) -> None:
    documents = _documents(default_root, market)
    days: set[date] = set()
    for feed in ("wire", "digest"):
        months = sorted(
            p.rsplit("/", 1)[1].removesuffix(".xml")
            for p in documents
            if p.startswith(f"news/{market}/{feed}/")
        )
        assert months[0] == "2022-01"
        assert months[-1] == "2026-02"  # March is not closed on AS_OF
        assert len(months) == 50
        for month in months:
            items = documents[f"news/{market}/{feed}/{month}.xml"]
            times = [t for t in map(published, items) if t is not None]
            assert {f"{t:%Y-%m}" for t in times} == {month}
            assert times == sorted(times, reverse=True)
            days |= {t.date() for t in times}
        # the current document's February items are the end of February's archive
        current = documents[f"news/{market}/{feed}.xml"]
        february = [i for i in current if (t := published(i)) and f"{t:%Y-%m}" == "2026-02"]
        assert february == documents[f"news/{market}/{feed}/2026-02.xml"][: len(february)]
    assert len(days) == (date(2026, 3, 1) - HISTORY_START).days  # every day up to March


@pytest.mark.parametrize("market", MARKETS)
def test_some_stories_appear_in_both_feeds_by_guid_or_by_link(
    feeds: dict[str, tuple[list[Item], list[Item]]], market: str
) -> None:
    wire, digest = feeds[market]
    same_guid = {i["guid"] for i in wire} & {i["guid"] for i in digest} - {None}
    same_link = {i["link"] for i in wire} & {i["link"] for i in digest} - {None}
    assert same_guid
    assert same_link - {i["link"] for i in digest if i["guid"] in same_guid}
    stories = len({i["link"] or i["guid"] for i in wire + digest})
    assert 0.08 <= len(same_link) / stories <= 0.25


@pytest.mark.parametrize("market", MARKETS)
def test_every_item_names_an_instrument_by_ticker_and_by_name(
    feeds: dict[str, tuple[list[Item], list[Item]]], market: str
) -> None:
    universe = build_universe(market)
    for item in feeds[market][0] + feeds[market][1]:
        body = str(item["description"])
        assert any(
            f"{n} ({s})" in body for s, n in zip(universe.symbols, universe.names, strict=True)
        )


def test_headlines_mix_tones_hype_and_name_forms(
    feeds: dict[str, tuple[list[Item], list[Item]]],
) -> None:
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


def test_largest_instruments_get_the_most_stories(
    feeds: dict[str, tuple[list[Item], list[Item]]],
) -> None:
    bodies = [str(i["description"]) for i in feeds["crypto"][0]]
    bitcoin = sum("(BTC)" in b for b in bodies)
    kaspa = sum("(KAS)" in b for b in bodies)
    assert bitcoin > 5 * kaspa > 0


def test_tone_follows_the_day_move(feeds: dict[str, tuple[list[Item], list[Item]]]) -> None:
    bullish = bearish = 0
    for item in feeds["crypto"][0]:
        body, title = str(item["description"]), str(item["title"])
        rose = " rose " in body or " gained " in body or "Buyers lifted" in body
        bullish += rose and any(w in title for w in ("jumps", "rallies", "climbs", "gains"))
        bearish += rose and any(w in title for w in ("slides", "drops", "falls", "tumbles"))
    assert bullish > 5 * bearish


def test_feed_documents_stay_small(
    default_root: Path, manifests: dict[str, MarketManifest]
) -> None:
    sizes = [p.stat().st_size for p in (default_root / "news").rglob("*.xml")]
    assert max(sizes) < 500_000


# --- by the clock -----------------------------------------------------------------------------


def _times(root: Path, path: str) -> set[tuple[str | None, datetime | None]]:
    return {(i["guid"] or i["title"], published(i)) for i in feed_items(root / path)}


def test_a_call_15_minutes_later_publishes_the_stories_timed_in_between_and_nothing_later(
    tmp_path: Path,
) -> None:
    feeds = ("news/stocks/wire.xml", "news/stocks/digest.xml")
    # every story up to a day later, as a later call shows them; the quarter hour starts 5
    # minutes before one of them, so it holds at least one story
    horizon = datetime(2026, 2, 11, 9, 0, tzinfo=UTC)
    write_embedded_news(tmp_path / "day", "stocks", now=horizon, **SMALL)
    stories = {feed: _times(tmp_path / "day", feed) for feed in feeds}
    target = max(t for t in (t for s in stories.values() for _, t in s) if t and t.hour < 20)
    now = target - timedelta(minutes=5)
    later = now + timedelta(minutes=15)
    write_embedded_news(tmp_path / "clock", "stocks", now=now, **SMALL)
    before = {feed: _times(tmp_path / "clock", feed) for feed in feeds}
    write_embedded_news(tmp_path / "clock", "stocks", now=later, **SMALL)
    for feed in feeds:
        after = _times(tmp_path / "clock", feed)
        due = {(key, t) for key, t in stories[feed] if t and now < t <= later}
        assert after - before[feed] == due
        assert all(t <= later for _, t in after if t is not None)  # None: the undated defect
        gone = before[feed] - after  # the 31 days moved on by 15 minutes too
        assert all(t and t <= later - timedelta(days=31) for _, t in gone)


def test_a_call_when_no_story_is_due_rewrites_nothing(tmp_path: Path) -> None:
    now = datetime(2026, 2, 10, 9, 0, tzinfo=UTC)
    write_embedded_news(tmp_path, "stocks", now=now, **SMALL)
    stamps = stamps_of(tmp_path)
    again = write_embedded_news(tmp_path, "stocks", now=now + timedelta(seconds=1), **SMALL)
    assert again.written == ()
    assert stamps_of(tmp_path) == stamps


def test_archives_are_written_once_when_their_month_closes_and_never_change(
    tmp_path: Path,
) -> None:
    january = ["news/crypto/wire/2026-01.xml", "news/crypto/digest/2026-01.xml"]
    end_of_january = datetime(2026, 1, 31, 23, 59, 59, tzinfo=UTC)
    closed = write_embedded_news(tmp_path, "crypto", now=end_of_january, **SMALL)
    assert not (tmp_path / january[0]).exists()
    assert not set(january) & set(closed.files)
    first = write_embedded_news(
        tmp_path, "crypto", now=end_of_january + timedelta(seconds=1), **SMALL
    )
    assert set(january) <= set(first.written)
    content = {p: (tmp_path / p).read_bytes() for p in january}
    stamps = {p: (tmp_path / p).stat().st_mtime_ns for p in january}
    for hours in (1, 30, 24 * 20, 24 * 40):
        later = write_embedded_news(
            tmp_path, "crypto", now=end_of_january + timedelta(hours=hours), **SMALL
        )
        assert not set(january) & set(later.written)
    assert {p: (tmp_path / p).read_bytes() for p in january} == content
    assert {p: (tmp_path / p).stat().st_mtime_ns for p in january} == stamps
    assert (tmp_path / "news/crypto/wire/2026-02.xml").is_file()  # 40 days on, February closed


def test_an_earlier_now_rewrites_the_current_documents_and_keeps_the_archives(
    tmp_path: Path,
) -> None:
    late = datetime(2026, 3, 3, 8, tzinfo=UTC)
    early = datetime(2026, 2, 20, 8, tzinfo=UTC)
    write_embedded_news(tmp_path / "a", "forex", now=late, **SMALL)
    february = (tmp_path / "a/news/forex/wire/2026-02.xml").read_bytes()
    manifest = write_embedded_news(tmp_path / "a", "forex", now=early, **SMALL)
    write_embedded_news(tmp_path / "b", "forex", now=early, **SMALL)
    a, b = files_of(tmp_path / "a"), files_of(tmp_path / "b")
    assert a["news/forex/wire.xml"] == b["news/forex/wire.xml"]
    assert a["news/forex/wire/2026-02.xml"] == february  # kept, though February is open again
    assert "news/forex/wire/2026-02.xml" not in manifest.files
    assert set(b) < set(a)


def test_stories_of_days_after_the_last_day_file_use_moves_simulated_in_memory(
    tmp_path: Path,
) -> None:
    now = datetime(2026, 2, 10, 15, tzinfo=UTC)
    write_embedded_prices(tmp_path / "behind", "commodities", through=date(2026, 2, 6), **SMALL)
    write_embedded_news(tmp_path / "behind", "commodities", now=now, **SMALL)
    write_embedded_prices(tmp_path / "current", "commodities", through=now.date(), **SMALL)
    write_embedded_news(tmp_path / "current", "commodities", now=now, **SMALL)
    write_embedded_news(tmp_path / "news only", "commodities", now=now, **SMALL)
    behind, current = files_of(tmp_path / "behind"), files_of(tmp_path / "current")
    only = files_of(tmp_path / "news only")
    assert max(p for p in behind if p.startswith("prices/")).endswith("2026-02-06.csv")
    assert not any(p.startswith("prices/") for p in only)
    for path in ("news/commodities/wire.xml", "news/commodities/digest.xml"):
        assert behind[path] == current[path] == only[path]
