"""Writing one market in the file-drop layout: prices day by day, news by the clock."""

from __future__ import annotations

import json
import os
import re
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, fields
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

import pipelines.embedded_market.news as news
import pipelines.embedded_market.state as state
from pipelines.catalog import MARKETS, WEEKDAY_MARKETS
from pipelines.embedded_market.files import (
    PRICE_DEFECTS,
    DayFiles,
    Defect,
    instruments_csv,
    price_defect,
    write_atomic,
    write_if_changed,
)
from pipelines.embedded_market.model import (
    ANCHOR,
    CLOSE,
    HISTORY_START,
    RETURN,
    Moves,
    SimState,
    Stepper,
    last_trading_day,
    next_trading_day,
    trading_days,
)
from pipelines.embedded_market.universe import Universe, build_universe

GENERATOR_VERSION = "2"
"""Bump when the output for the same parameters changes: it invalidates every state and manifest."""
MANIFEST_DIR = ".manifest"
WINDOW_DAYS = 70
"""Calendar days of returns and closes the state keeps for the newsroom (the current documents'
31 days and the month before, so a month's archive is written without simulating again)."""
CURRENT_DAYS = 31
"""A feed's current document holds the items published in the last this many days."""
DEFECT_DAY = 7
"""The news defects copy a story of the history's eighth calendar day."""
_M = TypeVar("_M", "PricesManifest", "NewsManifest")
_DAY_FILE = re.compile(r"\d{4}-\d{2}-\d{2}\.csv")
_ARCHIVE_FILE = re.compile(r"\d{4}-\d{2}\.xml")


@dataclass(frozen=True)
class PricesManifest:
    """What a `write_embedded_prices` call left on disk: parameters, files, counts, defects."""

    market: str
    seed: int
    instruments_requested: int | None
    start: str
    defects_enabled: bool
    generator_version: str
    through: str
    instruments: int
    bars: int
    """Clean bars in the day files through `last_date` (defect rows not counted)."""
    first_date: str
    last_date: str
    """The last trading day on or before `through`."""
    files: tuple[str, ...]
    """The instrument list and every day file through `last_date`, relative to the root."""
    written: tuple[str, ...]
    """The files this call wrote (new or changed); the others were left untouched."""
    defects: tuple[Defect, ...]

    def parameters(self) -> dict[str, Any]:
        return _parameters(self)


@dataclass(frozen=True)
class NewsManifest:
    """What a `write_embedded_news` call left on disk: parameters, documents, counts, defects."""

    market: str
    seed: int
    instruments_requested: int | None
    start: str
    defects_enabled: bool
    generator_version: str
    now: str
    """ISO 8601 UTC instant (to the second) the documents were written for."""
    news_items: int
    """Items across every document (an item carried by two documents counts twice)."""
    first_date: str
    last_date: str
    files: tuple[str, ...]
    """The current documents, then the archives of the months closed by `now`."""
    items: tuple[int, ...]
    """Items per file, in the order of `files`."""
    written: tuple[str, ...]
    defects: tuple[Defect, ...]

    def parameters(self) -> dict[str, Any]:
        return _parameters(self)


@dataclass(frozen=True)
class MarketManifest:
    """What `write_embedded_market` did: its prices and news manifests together."""

    market: str
    seed: int
    as_of: str
    """ISO 8601 UTC instant the market was generated for."""
    instruments_requested: int | None
    start: str
    defects_enabled: bool
    generator_version: str
    instruments: int
    bars: int
    news_items: int
    """Items across every feed document (an item carried by two documents counts twice)."""
    first_date: str
    last_date: str
    files: tuple[str, ...]
    """Paths relative to the root: the price files, then the feed documents."""
    written: tuple[str, ...]
    defects: tuple[Defect, ...]

    @classmethod
    def combine(cls, prices: PricesManifest, feeds: NewsManifest) -> MarketManifest:
        return cls(
            market=prices.market,
            seed=prices.seed,
            as_of=feeds.now,
            instruments_requested=prices.instruments_requested,
            start=prices.start,
            defects_enabled=prices.defects_enabled,
            generator_version=prices.generator_version,
            instruments=prices.instruments,
            bars=prices.bars,
            news_items=feeds.news_items,
            first_date=prices.first_date,
            last_date=prices.last_date,
            files=prices.files + feeds.files,
            written=prices.written + feeds.written,
            defects=prices.defects + feeds.defects,
        )


def _parameters(manifest: PricesManifest | NewsManifest) -> dict[str, Any]:
    return {
        "market": manifest.market,
        "seed": manifest.seed,
        "instruments_requested": manifest.instruments_requested,
        "start": manifest.start,
        "defects_enabled": manifest.defects_enabled,
        "generator_version": manifest.generator_version,
    }


def _params(
    market: str, seed: int, instruments: int | None, start: date, defects: bool
) -> dict[str, Any]:
    return {
        "market": market,
        "seed": seed,
        "instruments_requested": instruments,
        "start": start.isoformat(),
        "defects_enabled": defects,
        "generator_version": GENERATOR_VERSION,
    }


def _simulation_key(params: dict[str, Any]) -> tuple[Any, ...]:
    """What the simulated path depends on (not the history start, not the defects)."""
    return (
        params["market"],
        params["seed"],
        params["instruments_requested"],
        params["generator_version"],
    )


# --- prices -----------------------------------------------------------------------------------


def write_embedded_prices(
    root: Path,
    market: str,
    *,
    seed: int,
    through: date,
    instruments: int | None = None,
    start: date = HISTORY_START,
    defects: bool = True,
) -> PricesManifest:
    """Write the instrument list and one day file per trading day from `start` through `through`.

    Day files already written are never rewritten unless their content would change. With the
    parameters of the stored state (`<root>/.state/<market>.npz`), only the days after its last day
    are simulated and written; other parameters start over from ANCHOR, rewrite what differs and
    remove the day files outside the new range. An earlier `through` than the stored day writes
    nothing and leaves the newer day files in place (the manifest covers `through`).
    """
    return _write_prices(root, market, seed, through, instruments, start, defects)[0]


def _write_prices(
    root: Path,
    market: str,
    seed: int,
    through: date,
    instruments: int | None,
    start: date,
    defects: bool,
) -> tuple[PricesManifest, Moves]:
    """The manifest, and the returns and closes this call has at hand (for the newsroom)."""
    _check(market, start)
    weekdays = market in WEEKDAY_MARKETS
    first = next_trading_day(start, weekdays)
    last = last_trading_day(through, weekdays)
    if last < first:
        raise ValueError(f"no trading day from {start} through {through}")
    universe = build_universe(market, instruments)
    params = _params(market, seed, instruments, start, defects)
    folder = root / "prices" / market / "days"
    stored = state.load(root, market)
    kept = stored if stored is not None and stored.params == params else None
    complete = kept is not None and _all_written(folder, first, min(last, kept.state.day), weekdays)
    writer = _DayWriter(root, universe, first, defects)
    if kept is not None and complete:  # step on from the stored state
        stepper = Stepper(universe, seed, MARKETS.index(market), kept.state)
        writer.defects = list(kept.defects)
        moves = kept.window.then(writer.run(stepper, last, stepper.state.day))
    else:  # from ANCHOR: files that would not change are left as they are
        stepper = Stepper(universe, seed, MARKETS.index(market), SimState.initial(universe))
        end = last if kept is None else max(last, kept.state.day)  # keep the newer days' state
        moves = writer.run(stepper, end, last_trading_day(start, weekdays))
        if kept is None:  # other parameters, or none known: what they wrote is stale
            _remove_stale_prices(root, market, folder, set(writer.names))
    if write_if_changed(root / f"instruments/{market}.csv", instruments_csv(universe)):
        writer.written.insert(0, f"instruments/{market}.csv")
    if writer.stepped:
        window = moves.since(stepper.state.day - timedelta(days=WINDOW_DAYS - 1))
        state.save(root, market, state.Stored(params, stepper.state, window, tuple(writer.defects)))
    days = trading_days(first, last, weekdays)
    manifest = PricesManifest(
        **params,
        through=through.isoformat(),
        instruments=len(universe),
        bars=len(days) * len(universe),
        first_date=first.isoformat(),
        last_date=last.isoformat(),
        files=(f"instruments/{market}.csv", *(_day_path(market, d) for d in days)),
        written=tuple(writer.written),
        defects=tuple(
            sorted(
                (d for d in writer.defects if _defect_day(d) <= last),
                key=lambda d: PRICE_DEFECTS.index(d.kind),
            )
        ),
    )
    _write_manifest(root, market, "prices", manifest)
    return manifest, moves


class _DayWriter:
    """Steps a simulation and writes each kept day's file (with its defect row, if any)."""

    def __init__(self, root: Path, universe: Universe, first: date, defects: bool) -> None:
        self.root, self.universe, self.first = root, universe, first
        self.files = DayFiles(universe)
        weekdays = universe.market in WEEKDAY_MARKETS
        later = trading_days(first, first + timedelta(days=14), weekdays)[1:5]
        self.defect_days = dict(zip(later, PRICE_DEFECTS, strict=True)) if defects else {}
        self.defects: list[Defect] = []
        self.written: list[str] = []
        self.names: list[str] = []
        self.stepped = False

    def run(self, stepper: Stepper, end: date, collect_from: date) -> Moves:
        """Step through `end`, writing day files from `first`; the moves from `collect_from` on.

        A worker thread renders and writes day `d` while the next days are simulated (both
        kernels release the GIL); one file at a time, in day order.
        """
        days: list[date] = []
        returns: list[np.ndarray] = []
        closes: list[np.ndarray] = []
        folder = self.root / "prices" / self.universe.market / "days"
        folder.mkdir(parents=True, exist_ok=True)
        with ThreadPoolExecutor(max_workers=1) as pool:
            pending: Future[None] | None = None
            for day in stepper.days_through(end):
                self.stepped = True
                keep = day >= self.first
                bars = stepper.step(day, keep_bar=keep, record=day >= collect_from).bars
                if day >= collect_from:
                    days.append(day)
                    returns.append(bars[RETURN].copy())
                    closes.append(bars[CLOSE].copy())
                if keep:
                    kept = bars.copy()  # the stepper reuses its buffer for the next day
                    if pending is not None:
                        pending.result()
                    pending = pool.submit(self._write_day, day, kept)
            if pending is not None:
                pending.result()
        return Moves.collect(days, returns, closes, len(self.universe))

    def _write_day(self, day: date, bars: np.ndarray) -> None:
        self._write(day, self.files.render(day, bars))

    def _write(self, day: date, content: bytes) -> None:
        path = _day_path(self.universe.market, day)
        kind = self.defect_days.get(day)
        if kind is not None:
            symbols = self.universe.symbols
            symbol = symbols[(PRICE_DEFECTS.index(kind) + 1) % len(symbols)]
            content, defect = price_defect(kind, content, symbol, path)
            self.defects = [d for d in self.defects if d.kind != kind] + [defect]
        self.names.append(path.rsplit("/", 1)[1])
        if write_if_changed(self.root / path, content):
            self.written.append(path)


def _all_written(folder: Path, first: date, last: date, weekdays: bool) -> bool:
    """Whether every day file from `first` through `last` is there."""
    present = set(os.listdir(folder)) if folder.is_dir() else set()
    return all(f"{day}.csv" in present for day in trading_days(first, last, weekdays))


def _day_path(market: str, day: date) -> str:
    return f"prices/{market}/days/{day.isoformat()}.csv"


def _defect_day(defect: Defect) -> date:
    return date.fromisoformat(defect.path.rsplit("/", 1)[1].removesuffix(".csv"))


def _remove_stale_prices(root: Path, market: str, folder: Path, keep: set[str]) -> None:
    """Remove the day files other parameters wrote outside this range, and the per-symbol files
    of the generator's first layout (listed by its manifest)."""
    for name in os.listdir(folder):
        if _DAY_FILE.fullmatch(name) and name not in keep:
            (folder / name).unlink(missing_ok=True)
    legacy = root / MANIFEST_DIR / f"{market}.json"
    try:
        listed = json.loads(legacy.read_text(encoding="utf-8")).get("files", [])
    except (OSError, ValueError, AttributeError):
        return
    for path in listed:
        if isinstance(path, str) and path.startswith(f"prices/{market}/") and "/days/" not in path:
            (root / path).unlink(missing_ok=True)
    legacy.unlink(missing_ok=True)


# --- news -------------------------------------------------------------------------------------


def write_embedded_news(
    root: Path,
    market: str,
    *,
    seed: int,
    now: datetime,
    instruments: int | None = None,
    start: date = HISTORY_START,
    defects: bool = True,
) -> NewsManifest:
    """Write the market's feeds as they stand at `now` (to the second; a naive `now` is UTC).

    Each feed has a current document (`news/<market>/<feed>.xml`, the items of the last 31 days,
    newest first), rewritten only when its content changes, and one archive per calendar month
    closed by `now` (`news/<market>/<feed>/<YYYY-MM>.xml`), written once. A story of a day after
    the last day file uses that day's move, simulated in memory from the stored state.
    """
    return _write_news(root, market, seed, now, instruments, start, defects, None)


def _write_news(
    root: Path,
    market: str,
    seed: int,
    now: datetime,
    instruments: int | None,
    start: date,
    defects: bool,
    given: Moves | None,
) -> NewsManifest:
    _check(market, start)
    now = _utc(now).replace(microsecond=0)
    if now.date() < start:
        raise ValueError(f"now ({now.isoformat()}) is before the history start {start}")
    universe = build_universe(market, instruments)
    params = _params(market, seed, instruments, start, defects)
    previous = read_news_manifest(root, market)
    same = previous is not None and previous.parameters() == params
    known: dict[str, tuple[int, list[Defect]]] = {}
    if previous is not None and same:
        for path, count in zip(previous.files, previous.items, strict=True):
            known[path] = (count, [d for d in previous.defects if d.path == path])
    months = _closed_months(start, now)
    archives = {
        (feed, month): _archive_path(market, feed, month) for feed in news.FEEDS for month in months
    }
    reused = {p for p in archives.values() if p in known and (root / p).is_file()}
    todo = sorted({m for (_, m), p in archives.items() if p not in reused})
    window_start = now - timedelta(days=CURRENT_DAYS)
    days = _calendar(max(start, window_start.date()), now.date())
    for month in todo:
        days |= _calendar(max(start, month), _month_end(month))
    stories = _stories(root, universe, seed, instruments, start, sorted(days), given, defects)
    stories = [(s, kind) for s, kind in stories if s.published <= now]

    current = {feed: f"news/{market}/{feed}.xml" for feed in news.FEEDS}
    archive_of = {(feed, f"{m:%Y-%m}"): path for (feed, m), path in archives.items() if m in todo}
    entries: dict[str, list[tuple[news.Story, str | None]]] = {
        path: [] for path in [*current.values(), *archive_of.values()]
    }
    for story, kind in stories:
        label = f"{story.published:%Y-%m}"
        for feed in news.FEEDS:
            if story.in_wire if feed == news.WIRE else story.in_digest:
                if story.published > window_start:
                    entries[current[feed]].append((story, kind))
                if (feed, label) in archive_of:
                    entries[archive_of[(feed, label)]].append((story, kind))
    written: list[str] = []
    counts: dict[str, tuple[int, list[Defect]]] = {p: known[p] for p in reused}
    rendered: dict[tuple[str, str], str] = {}
    fallback = datetime.combine(start, datetime.min.time(), UTC)
    for path, items in entries.items():
        feed, _, name = path.removeprefix(f"news/{market}/").rpartition("/")
        archive = name.removesuffix(".xml") if feed else None
        feed = feed or name.removesuffix(".xml")
        text, found = _document(market, feed, path, items, archive, rendered, fallback)
        counts[path] = (len(items), found)
        if write_if_changed(root / path, text):
            written.append(path)
    if not same:
        _remove_stale_archives(root, market, set(archives.values()))
    files = [f"news/{market}/{feed}.xml" for feed in news.FEEDS] + sorted(archives.values())
    manifest = NewsManifest(
        **params,
        now=now.isoformat(),
        news_items=sum(counts[p][0] for p in files),
        first_date=start.isoformat(),
        last_date=now.date().isoformat(),
        files=tuple(files),
        items=tuple(counts[p][0] for p in files),
        written=tuple(written),
        defects=tuple(
            sorted(
                (d for p in files for d in counts[p][1]),
                key=lambda d: (d.kind, d.path),
            )
        ),
    )
    _write_manifest(root, market, "news", manifest)
    return manifest


def _document(
    market: str,
    feed: str,
    path: str,
    entries: list[tuple[news.Story, str | None]],
    archive: str | None,
    rendered: dict[tuple[str, str], str],
    fallback: datetime,
) -> tuple[str, list[Defect]]:
    """One feed document (newest item first) and the defects it carries, with their locations."""
    ordered = sorted(entries, key=lambda e: (e[0].published, e[0].story_id), reverse=True)
    items = []
    found = []
    for index, (story, kind) in enumerate(ordered, start=1):
        key = (feed, story.story_id)
        if key not in rendered:
            undated = kind == "news_unparseable_date"
            render = news.rss_item if feed == news.WIRE else news.atom_entry
            rendered[key] = render(story, undated)
        items.append(rendered[key])
        if kind is not None:
            found.append(Defect(kind, path, f"item {index}", story.guid or story.title or ""))
    built = ordered[0][0].published if ordered else fallback
    build = news.rss_document if feed == news.WIRE else news.atom_document
    return build(market, items, built, archive), found


def _stories(
    root: Path,
    universe: Universe,
    seed: int,
    instruments: int | None,
    start: date,
    days: list[date],
    given: Moves | None,
    defects: bool,
) -> list[tuple[news.Story, str | None]]:
    """Every story of `days` (with each defect item's kind), from the moves of those days."""
    market_index = MARKETS.index(universe.market)
    moves = _moves(root, universe, seed, instruments, days[0], days[-1], given)
    room = news.Newsroom(universe, seed, market_index)
    out: list[tuple[news.Story, str | None]] = []
    defect_day = start + timedelta(days=DEFECT_DAY)
    for day in days:
        row = int(np.searchsorted(moves.days, day.toordinal(), side="right")) - 1
        trading = moves.days[row] == day.toordinal()
        today = room.stories(day, moves.returns[row] if trading else None, moves.closes[row])
        out += [(s, None) for s in today]
        if defects and day == defect_day:
            base = today[(len(today) - 1) // 2]
            out += [(s, kind) for kind, s in news.defect_stories(base).items()]
    return out


def _moves(
    root: Path,
    universe: Universe,
    seed: int,
    instruments: int | None,
    first: date,
    last: date,
    given: Moves | None,
) -> Moves:
    """Returns and closes of the trading days from the one on or before `first` through `last`.

    From what the caller has at hand, else the stored state's window, stepped on in memory past
    the last day file when `last` is later; else simulated from ANCHOR in memory.
    """
    market = universe.market
    weekdays = market in WEEKDAY_MARKETS
    low, high = last_trading_day(first, weekdays), last_trading_day(last, weekdays)
    if given is not None and given.covers(low, high):
        return given
    market_index = MARKETS.index(market)
    stored = state.load(root, market)
    wanted = _simulation_key(_params(market, seed, instruments, first, False))
    if stored is not None and _simulation_key(stored.params) == wanted:
        # what the caller has (if anything) ends on the stored day, like the stored window
        window = stored.window
        if given is not None and given.starts_by(stored.state.day) and not window.starts_by(low):
            window = given
        if stored.state.day < low:
            return _collect(Stepper(universe, seed, market_index, stored.state.copy()), high, low)
        if window.starts_by(low):
            have = window.since(low)
            if stored.state.day >= high:
                return have
            ahead = _collect(Stepper(universe, seed, market_index, stored.state.copy()), high, low)
            return have.then(ahead)
    return _collect(Stepper(universe, seed, market_index, SimState.initial(universe)), high, low)


def _collect(stepper: Stepper, end: date, collect_from: date) -> Moves:
    """Step through `end` without writing anything; the moves from `collect_from` on."""
    days: list[date] = []
    returns: list[np.ndarray] = []
    closes: list[np.ndarray] = []
    for day in stepper.days_through(end):
        bars = stepper.step(day, keep_bar=False, record=day >= collect_from).bars
        if day >= collect_from:
            days.append(day)
            returns.append(bars[RETURN].copy())
            closes.append(bars[CLOSE].copy())
    return Moves.collect(days, returns, closes, len(stepper.universe))


def _closed_months(start: date, now: datetime) -> list[date]:
    """First days of the calendar months from `start`'s through the one before `now`'s."""
    months = []
    month = start.replace(day=1)
    while month < now.date().replace(day=1):
        months.append(month)
        month = _month_end(month) + timedelta(days=1)
    return months


def _month_end(month: date) -> date:
    return (month.replace(day=28) + timedelta(days=4)).replace(day=1) - timedelta(days=1)


def _calendar(first: date, last: date) -> set[date]:
    return {first + timedelta(days=i) for i in range((last - first).days + 1)}


def _archive_path(market: str, feed: str, month: date) -> str:
    return f"news/{market}/{feed}/{month:%Y-%m}.xml"


def _remove_stale_archives(root: Path, market: str, keep: set[str]) -> None:
    """Remove the archives other parameters wrote for months this call does not close."""
    for feed in news.FEEDS:
        folder = root / "news" / market / feed
        if folder.is_dir():
            for name in os.listdir(folder):
                path = f"news/{market}/{feed}/{name}"
                if _ARCHIVE_FILE.fullmatch(name) and path not in keep:
                    (folder / name).unlink(missing_ok=True)


# --- both -------------------------------------------------------------------------------------


def write_embedded_market(
    root: Path,
    market: str,
    *,
    seed: int,
    as_of: datetime,
    instruments: int | None = None,
    start: date = HISTORY_START,
    defects: bool = True,
) -> MarketManifest:
    """Prices through `as_of`'s day and the feeds as of `as_of` (a naive `as_of` is UTC)."""
    as_of = _utc(as_of)
    prices, moves = _write_prices(root, market, seed, as_of.date(), instruments, start, defects)
    feeds = _write_news(root, market, seed, as_of, instruments, start, defects, moves)
    return MarketManifest.combine(prices, feeds)


def read_prices_manifest(root: Path, market: str) -> PricesManifest | None:
    """The manifest of the last `write_embedded_prices` of `market` under `root`, if any."""
    return _read_manifest(root, market, "prices", PricesManifest)


def read_news_manifest(root: Path, market: str) -> NewsManifest | None:
    """The manifest of the last `write_embedded_news` of `market` under `root`, if any."""
    return _read_manifest(root, market, "news", NewsManifest)


def read_manifest(root: Path, market: str) -> MarketManifest | None:
    """The last prices and news manifests of `market` together, if both exist."""
    prices, feeds = read_prices_manifest(root, market), read_news_manifest(root, market)
    if prices is None or feeds is None:
        return None
    return MarketManifest.combine(prices, feeds)


def _manifest_path(root: Path, market: str, kind: str) -> Path:
    return root / MANIFEST_DIR / f"{market}.{kind}.json"


def _write_manifest(
    root: Path, market: str, kind: str, manifest: PricesManifest | NewsManifest
) -> None:
    write_atomic(_manifest_path(root, market, kind), json.dumps(asdict(manifest), indent=1))


def _read_manifest(root: Path, market: str, kind: str, cls: type[_M]) -> _M | None:
    try:
        raw = json.loads(_manifest_path(root, market, kind).read_text(encoding="utf-8"))
        values = {}
        for field in fields(cls):
            value = raw[field.name]
            if field.name == "defects":
                value = tuple(Defect(**d) for d in value)
            elif isinstance(value, list):
                value = tuple(value)
            values[field.name] = value
        return cls(**values)
    except (OSError, ValueError, TypeError, KeyError):
        return None


def _check(market: str, start: date) -> None:
    if market not in MARKETS:
        raise ValueError(f"unknown market {market!r}; expected one of {MARKETS}")
    if start < ANCHOR + timedelta(days=365):
        raise ValueError(f"history must start after {ANCHOR + timedelta(days=365)}, got {start}")


def _utc(moment: datetime) -> datetime:
    """`moment` as an aware UTC datetime (a naive one is taken to be UTC already)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)
