"""`write_embedded_market`: one market's instruments, prices and feeds in the file-drop layout."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pipelines.catalog import MARKETS, WEEKDAY_MARKETS
from pipelines.embedded_market import news
from pipelines.embedded_market.files import (
    Defect,
    inject_price_defects,
    instruments_csv,
    price_lines,
    rounded,
    write_atomic,
)
from pipelines.embedded_market.model import ANCHOR, Bars, simulate, trading_days
from pipelines.embedded_market.universe import Universe, build_universe

GENERATOR_VERSION = "1"
"""Bump when the output for the same parameters changes: it invalidates every manifest."""
MANIFEST_DIR = ".manifest"


@dataclass(frozen=True)
class MarketManifest:
    """What one call wrote: its parameters, the files, counts and the injected defects."""

    market: str
    seed: int
    as_of: str
    """ISO 8601 UTC instant the market was generated for."""
    instruments_requested: int | None
    days: int
    defects_enabled: bool
    generator_version: str
    instruments: int
    bars: int
    news_items: int
    """Items across both feeds (a story carried by both counts twice), defects included."""
    first_date: str
    last_date: str
    files: tuple[str, ...]
    """Paths relative to the root, in writing order."""
    defects: tuple[Defect, ...]

    def parameters(self) -> dict[str, Any]:
        return {
            "market": self.market,
            "seed": self.seed,
            "as_of": self.as_of,
            "instruments_requested": self.instruments_requested,
            "days": self.days,
            "defects_enabled": self.defects_enabled,
            "generator_version": self.generator_version,
        }

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> MarketManifest:
        raw = json.loads(text)
        raw["files"] = tuple(raw["files"])
        raw["defects"] = tuple(Defect(**d) for d in raw["defects"])
        return cls(**raw)


def write_embedded_market(
    root: Path,
    market: str,
    *,
    seed: int,
    as_of: datetime,
    instruments: int | None = None,
    days: int = 1600,
    defects: bool = True,
) -> MarketManifest:
    """Write one market's files under `root` and return what was written.

    Deterministic in its arguments; a repeat call with the same arguments returns the manifest of
    the previous call without rewriting. The last bar is `as_of.date()` (the last weekday on or
    before it for weekday markets); history covers the `days` calendar days ending on that date.
    """
    if market not in MARKETS:
        raise ValueError(f"unknown market {market!r}; expected one of {MARKETS}")
    if days < 3:
        raise ValueError("days must be at least 3")
    as_of = _utc(as_of)
    wanted = {
        "market": market,
        "seed": seed,
        "as_of": as_of.isoformat(),
        "instruments_requested": instruments,
        "days": days,
        "defects_enabled": defects,
        "generator_version": GENERATOR_VERSION,
    }
    previous = read_manifest(root, market)
    if previous is not None and previous.parameters() == wanted and _all_exist(root, previous):
        return previous
    _manifest_path(root, market).unlink(missing_ok=True)  # a crash mid-write leaves no stale claim
    manifest = _generate(root, market, seed, as_of, instruments, days, defects)
    if previous is not None:
        _remove_stale(root, previous, manifest)
    write_atomic(_manifest_path(root, market), manifest.to_json())
    return manifest


def read_manifest(root: Path, market: str) -> MarketManifest | None:
    """The manifest of the last completed write of `market` under `root`, if any."""
    try:
        return MarketManifest.from_json(_manifest_path(root, market).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError, TypeError, KeyError):
        return None


def _manifest_path(root: Path, market: str) -> Path:
    return root / MANIFEST_DIR / f"{market}.json"


def _utc(moment: datetime) -> datetime:
    """`moment` as an aware UTC datetime (a naive one is taken to be UTC already)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _all_exist(root: Path, manifest: MarketManifest) -> bool:
    return all((root / f).is_file() for f in manifest.files)


def _remove_stale(root: Path, previous: MarketManifest, current: MarketManifest) -> None:
    """Delete files the previous write made that this one did not (a smaller universe)."""
    for stale in set(previous.files) - set(current.files):
        (root / stale).unlink(missing_ok=True)


def _generate(
    root: Path,
    market: str,
    seed: int,
    as_of: datetime,
    instruments: int | None,
    days: int,
    defects: bool,
) -> MarketManifest:
    end = as_of.date()
    start = end - timedelta(days=days - 1)
    if start < ANCHOR + timedelta(days=365):
        raise ValueError(f"history must start after {ANCHOR + timedelta(days=365)}, got {start}")
    weekdays = market in WEEKDAY_MARKETS
    universe = build_universe(market, instruments)
    bars = simulate(
        universe, seed, MARKETS.index(market), trading_days(ANCHOR, end, weekdays), start
    )
    files = [f"instruments/{market}.csv"]
    write_atomic(root / files[0], instruments_csv(universe))
    price_files, price_defects = _price_files(universe, bars, defects)
    for symbol, lines in price_files.items():
        files.append(f"prices/{market}/{symbol}.csv")
        write_atomic(root / files[-1], "\n".join(lines) + "\n")
    stories = news.make_stories(universe, bars, seed, MARKETS.index(market), start, as_of)
    feed_files, news_defects, items = _feeds(market, stories, as_of, defects)
    for path, text in feed_files.items():
        files.append(path)
        write_atomic(root / path, text)
    return MarketManifest(
        market=market,
        seed=seed,
        as_of=as_of.isoformat(),
        instruments_requested=instruments,
        days=days,
        defects_enabled=defects,
        generator_version=GENERATOR_VERSION,
        instruments=len(universe),
        bars=len(bars.days) * len(universe),
        news_items=items,
        first_date=bars.days[0].isoformat(),
        last_date=bars.days[-1].isoformat(),
        files=tuple(files),
        defects=tuple(price_defects + news_defects),
    )


def _price_files(
    universe: Universe, bars: Bars, defects: bool
) -> tuple[dict[str, list[str]], list[Defect]]:
    ohlc = rounded(bars, universe)
    dates = [d.isoformat() for d in bars.days]
    files = {
        symbol: price_lines(dates, ohlc, bars.volume, i, int(universe.decimals[i]))
        for i, symbol in enumerate(universe.symbols)
    }
    if not defects:
        return files, []
    weekdays = universe.market in WEEKDAY_MARKETS
    before = trading_days(bars.days[0] - timedelta(days=6), bars.days[0], weekdays)[-3:-1]
    found = inject_price_defects(files, universe.symbols, universe.market, (before[0], before[1]))
    return files, found


def _feeds(
    market: str, stories: list[news.Story], as_of: datetime, defects: bool
) -> tuple[dict[str, str], list[Defect], int]:
    """Both feed documents (newest item first), their defects, and the number of items."""
    wire = [(s.published, s.story_id, news.rss_item(s)) for s in stories if s.in_wire]
    digest = [(s.published, s.story_id, news.atom_entry(s)) for s in stories if s.in_digest]
    marks: dict[str, tuple[str, str]] = {}  # story id -> (defect kind, identifying record)
    if defects and stories:
        for kind, bad in news.defect_stories(stories).items():
            undated = kind == "news_unparseable_date"
            record = bad.guid or bad.title or ""
            marks[bad.story_id] = (kind, record)
            target = digest if undated else wire
            render = news.atom_entry if undated else news.rss_item
            target.append((bad.published, bad.story_id, render(bad, undated)))
    found: list[Defect] = []
    documents: dict[str, str] = {}
    for name, items, build in (
        (news.WIRE, wire, news.rss_document),
        (news.DIGEST, digest, news.atom_document),
    ):
        items.sort(key=lambda item: (item[0], item[1]), reverse=True)
        path = f"news/{market}/{name}"
        for index, (_, story_id, _) in enumerate(
            items, start=1
        ):  # 1-based, as the connectors count
            if story_id in marks:
                found.append(Defect(marks[story_id][0], path, f"item {index}", marks[story_id][1]))
        documents[path] = build(market, [text for _, _, text in items], as_of)
    return documents, sorted(found, key=lambda d: d.kind), len(wire) + len(digest)
