"""One market's daily prices brought up to a day: fetch what is new, detect revisions, write shard by shard.

A symbol's stored bars change in exactly three ways, each recorded in `price_state` so that every
downstream domain knows what to recompute: new days are appended (same `history_id`); a first load
or a revision of a stored bar rewrites the symbol's history (a new `history_id`); a symbol no longer
listed is removed. A fetched bar equal to the stored one changes nothing.
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from types import TracebackType
from typing import Protocol, runtime_checkable

import numpy as np
import polars as pl

from pipelines.catalog import DAILY_PRICES, PRICE_REJECTS, PartitionFile, Table
from pipelines.catalog.state import PRICE_FILES, PRICE_STATE
from pipelines.prices.sources.base import PROVENANCE, PriceSource, RawBars, check_answers
from pipelines.prices.sources.file_drop import BATCH_BYTES, KEY, BarLines
from pipelines.prices.validate import BAR_SCHEMA, check_bars, rejects_frame, stored_bars
from pipelines.warehouse.shards import Shard, shard_count, shard_index, shards_of
from pipelines.warehouse.staging import RunTransaction
from pipelines.warehouse.tables import (
    EVERYTHING,
    by_shard,
    rewrite_snapshot,
    scan,
    stage_market_file,
    stored_rows,
    upsert_series,
)

VALUES = ("open", "high", "low", "close", "volume")
"""What a revision compares: a re-fetched bar with any of these different is a new history."""
HELD_BYTES = 256 * 2**20
"""Clean bars a run holds in memory before it spills them to temporary files, shard by shard."""


@runtime_checkable
class ListedFile(Protocol):
    @property
    def path(self) -> str: ...

    @property
    def size(self) -> int: ...

    @property
    def mtime_ns(self) -> int: ...

    @property
    def name(self) -> str:
        """The file's path under its source's root: the key of the files-read tables."""
        ...


@runtime_checkable
class FileSource(Protocol):
    """A connector over files (the file drop): the pipeline reads only files new or changed."""

    def listing(self, market: str) -> Sequence[ListedFile]: ...

    def bar_batches(
        self, market: str, paths: Sequence[str], batch_bytes: int | None
    ) -> Iterator[BarLines]: ...


@dataclass(frozen=True)
class Request:
    """What a run asks of one market's prices."""

    market: str
    symbols: list[str]
    through: date
    """Bars dated after this day are left for a later run."""
    since: date | None = None
    """Re-read the sources from this day (a backfill): revised bars are detected and recomputed."""
    full: bool = False
    """Forget what is stored and load every symbol's history again."""
    shard_symbols: int = 1_000


@dataclass
class MarketPrices:
    """What one run did to one market's prices."""

    market: str
    shards: int
    appended: list[str] = field(default_factory=list)
    reloaded: list[str] = field(default_factory=list)
    """Symbols whose history was (re)written: new, revised, or every symbol in a full run."""
    removed: list[str] = field(default_factory=list)
    written: list[pl.LazyFrame] = field(default_factory=list)
    """The bars this run wrote (for the checks), a lazy frame per shard: sorted by (symbol, date),
    or for a shard written whole (a full load) read back from its files, segment by segment (each
    sorted so), so that the run never holds every bar of the market at once; a consumer can check
    one shard at a time."""
    rejects: pl.DataFrame = field(default_factory=PRICE_REJECTS.empty)
    fetched: dict[str, str] = field(default_factory=dict)

    def bars(self) -> pl.DataFrame:
        """Every bar this run wrote (a full load's: the whole market, read back)."""
        return pl.concat([DAILY_PRICES.empty().lazy(), *self.written]).collect()


def update_market(
    tx: RunTransaction,
    source: PriceSource,
    request: Request,
    *,
    batch_bytes: int = BATCH_BYTES,
    held_bytes: int = HELD_BYTES,
) -> MarketPrices:
    """Fetch, validate and store one market's bars through `request.through`; stage every table.

    Files are read and validated `batch_bytes` at a time and only their clean bars are kept, by
    shard (spilled to temporary files beyond `held_bytes`); each shard is then written in turn.
    """
    market = request.market
    state = stored_rows(tx, PRICE_STATE, market)
    count = shard_count(len(request.symbols), request.shard_symbols)
    stored_count = {s.count for s in by_shard(tx.partitions(PRICE_STATE.name, market))}
    full = request.full or state.is_empty() or stored_count != {count}
    members = shards_of(market, pl.Series(request.symbols, dtype=pl.String), count)
    with _ShardBars(members, held_bytes) as held:
        fetch = _fetch(tx, source, request, state, full, held, batch_bytes)
        result = MarketPrices(market, count, rejects=fetch.rejects, fetched=fetch.summary)
        prices_files: dict[str, PartitionFile] = {}
        state_files: dict[str, PartitionFile] = {}
        stored_prices = {} if full else by_shard(tx.partitions(DAILY_PRICES.name, market))
        stored_state = {} if full else by_shard(tx.partitions(PRICE_STATE.name, market))
        for shard, symbols in members.items():
            in_shard = pl.col("symbol").is_in(pl.Series(symbols, dtype=pl.String).implode())
            known = state.filter(in_shard) if not full else PRICE_STATE.empty()
            gone = [] if full else _removed(state, shard, members)
            # The shard's bars are referenced from `_update_shard` only: freed before the next's.
            prices, states = _update_shard(
                tx,
                result,
                shard,
                held.take(shard),
                request.through,
                known,
                gone,
                stored_prices.get(shard, {}),
                stored_state.get(shard, {}),
                source.name,
                full,
            )
            prices_files |= prices
            state_files |= states
    tx.stage(DAILY_PRICES.name, market, prices_files)
    tx.stage(PRICE_STATE.name, market, state_files)
    _stage_rejects(tx, market, fetch.rejects, full)
    if fetch.files is not None:
        # Files holding bars after the run's day are not remembered: a later run reads them again.
        read = [f for f in fetch.files if f.path not in fetch.later]
        stage_files_read(tx, PRICE_FILES, market, read, full)
    return result


def _update_shard(
    tx: RunTransaction,
    result: MarketPrices,
    shard: Shard,
    bars: pl.DataFrame,
    through: date,
    known: pl.DataFrame,
    gone: list[str],
    stored_prices: Mapping[str, PartitionFile],
    stored_state: Mapping[str, PartitionFile],
    connector: str,
    full: bool,
) -> tuple[Mapping[str, PartitionFile], Mapping[str, PartitionFile]]:
    """One shard's new price and state files from its fetched bars (sorted by symbol, date);
    bars dated after `through` are left for a later run."""
    newest = bars["date"].max()
    if isinstance(newest, date) and newest > through:
        bars = bars.filter(pl.col("date") <= through)
    fetched = stored_bars(bars, result.market, connector)
    del bars
    change = _shard_change(tx, shard, stored_prices, fetched, known, gone)
    if change is None:
        return stored_prices, stored_state
    rows, cutoffs, new_state = change
    del fetched, change
    if full:
        files = upsert_series(tx, DAILY_PRICES, shard, {}, rows, {})
        written = scan(tx.store.storage, files.values(), DAILY_PRICES)
    else:
        files = upsert_series(tx, DAILY_PRICES, shard, stored_prices, rows, cutoffs)
        written = rows.lazy()
    replaced = list(cutoffs) + new_state["symbol"].to_list()
    states = rewrite_snapshot(tx, PRICE_STATE, shard, stored_state, new_state, replaced)
    _tally(result, known, new_state, gone, written)
    return files, states


class _ShardBars:
    """A market's clean bars (`BAR_SCHEMA`) by shard, as batches of files are validated.

    They are held in memory up to `budget` bytes; beyond it every shard's bars so far are spilled
    to a temporary Arrow file, so that a full load holds one shard's bars (and a batch) at a time.
    """

    def __init__(self, members: Mapping[Shard, Sequence[str]], budget: int) -> None:
        self.shards = list(members)
        self.budget = budget
        symbols = sorted({s for listed in members.values() for s in listed})
        self._names = pl.Series(symbols, dtype=pl.String)
        self._symbols = pl.Enum(symbols)
        """A symbol's position among the sorted symbols orders and routes the bars; it is also
        the physical value of the Enum `check_bars` gives."""
        where = {s: k for k, listed in enumerate(members.values()) for s in listed}
        self._shard_of = np.array([where[s] for s in symbols], dtype=np.int64)
        self._held: dict[int, list[pl.DataFrame]] = {}
        self._bytes = 0
        self._spilled: dict[int, list[Path]] = {}
        self._folder: Path | None = None

    def __enter__(self) -> _ShardBars:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)

    def add(self, bars: pl.DataFrame) -> None:
        """Keep these bars (of listed symbols only) with their shard's, in the order given."""
        if bars.is_empty():
            return
        index = bars["symbol"].cast(self._symbols).to_physical().alias(_INDEX)
        # Only the symbol's position is held: 2 bytes a bar instead of a string.
        tagged = bars.drop("symbol").with_columns(index)
        if len(self.shards) == 1:
            parts = {0: tagged}
        else:
            shard = self._shard_of[index.to_numpy()]
            split = tagged.with_columns(_shard=shard).partition_by(
                "_shard", as_dict=True, include_key=False, maintain_order=True
            )
            parts = {int(str(key[0])): part for key, part in split.items()}
        for k, part in parts.items():
            self._held.setdefault(k, []).append(part)
            self._bytes += int(part.estimated_size())
        if self._bytes > self.budget and len(self.shards) > 1:
            self._spill()

    def take(self, shard: Shard) -> pl.DataFrame:
        """Every bar added for `shard` (`BAR_SCHEMA`), sorted by (symbol, date); forgotten then."""
        k = self.shards.index(shard)
        parts = [pl.read_ipc(path) for path in self._spilled.pop(k, [])]
        parts += self._held.pop(k, [])
        if not parts:
            return pl.DataFrame(schema=BAR_SCHEMA)
        bars = _by_symbol_and_date(pl.concat(parts, rechunk=True))
        symbols = self._names.gather(bars[_INDEX])
        return bars.with_columns(symbol=symbols).select(BAR_SCHEMA.names())

    def _spill(self) -> None:
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix="prices-"))
        for k, parts in self._held.items():
            path = self._folder / f"{k}-{len(self._spilled.get(k, []))}.arrow"
            pl.concat(parts).write_ipc(path, compression="uncompressed")
            self._spilled.setdefault(k, []).append(path)
        self._held.clear()
        self._bytes = 0


_INDEX = "_symbol_index"


def _by_symbol_and_date(bars: pl.DataFrame) -> pl.DataFrame:
    """Bars sorted by (symbol, date), one per pair, by each symbol's position (`_INDEX`).

    Bars read day by day come in date order for every symbol: a stable sort by the symbol's
    position (a radix sort of small integers) then orders them fully, which is checked; other
    orders take a full sort.
    """
    if bars.height < 2:
        return bars
    order = np.argsort(bars[_INDEX].to_numpy(), kind="stable")
    ordered = bars[order]
    index = ordered[_INDEX].to_numpy()
    days = ordered["date"].to_physical().to_numpy()
    if bool(np.all((np.diff(index) > 0) | (np.diff(days) > 0))):
        return ordered
    return bars.sort(_INDEX, "date")


def _removed(state: pl.DataFrame, shard: Shard, members: Mapping[Shard, list[str]]) -> list[str]:
    """Symbols stored in this shard's state that are no longer listed."""
    listed = {s for symbols in members.values() for s in symbols}
    stored = state["symbol"].to_list()
    index = shard_index(stored, shard.count).tolist()
    return sorted(
        s for s, k in zip(stored, index, strict=True) if k == shard.index and s not in listed
    )


def _shard_change(
    tx: RunTransaction,
    shard: Shard,
    stored: Mapping[str, PartitionFile],
    fetched: pl.DataFrame,
    known: pl.DataFrame,
    gone: list[str],
) -> tuple[pl.DataFrame, dict[str, date], pl.DataFrame] | None:
    """(rows to write, per-symbol cutoffs, new price_state rows), or None when nothing changed."""
    if known.is_empty() and not gone:  # a first load: every symbol's history is new
        if fetched.is_empty():
            return None
        state = _state_of(fetched, fresh=True, known=known)
        return fetched, dict.fromkeys(state["symbol"].to_list(), EVERYTHING), state
    last = known.select("symbol", pl.col("last_date").alias("_last"))
    tagged = fetched.join(last, on="symbol", how="left")
    new = tagged.filter(pl.col("_last").is_null()).drop("_last")
    appended = tagged.filter(pl.col("date") > pl.col("_last")).drop("_last")
    overlap = tagged.filter(pl.col("date") <= pl.col("_last")).drop("_last")
    revised = _revised(tx, stored, overlap)
    if new.is_empty() and appended.is_empty() and not revised and not gone:
        return None
    history = _reloaded_history(tx, stored, fetched, revised)
    reload = pl.concat([new, history]).sort("symbol", "date")
    growing = appended.filter(
        ~pl.col("symbol").is_in(pl.Series(revised, dtype=pl.String).implode())
    )
    cutoffs = dict.fromkeys([*reload["symbol"].unique().to_list(), *gone], EVERYTHING)
    state = pl.concat(
        [
            _state_of(reload, fresh=True, known=known),
            _state_of(growing, fresh=False, known=known),
        ]
    )
    return pl.concat([reload, growing]).sort("symbol", "date"), cutoffs, state


def _revised(
    tx: RunTransaction, stored: Mapping[str, PartitionFile], overlap: pl.DataFrame
) -> list[str]:
    """Symbols with a re-fetched bar that differs from the stored one or fills a stored gap."""
    if overlap.is_empty():
        return []
    symbols = pl.Series(overlap["symbol"].unique().to_list(), dtype=pl.String)
    first = overlap["date"].min()
    kept = (
        scan(tx.store.storage, stored.values(), DAILY_PRICES)
        .filter(pl.col("symbol").is_in(symbols.implode()), pl.col("date") >= first)
        .select("symbol", "date", *[pl.col(c).alias(f"_{c}") for c in VALUES])
        .collect()
    )
    compared = overlap.join(kept, on=["symbol", "date"], how="left")
    differs = pl.any_horizontal(
        [pl.col(f"_{c}").is_null() | (pl.col(c) != pl.col(f"_{c}")) for c in VALUES]
    )
    return sorted(compared.filter(differs)["symbol"].unique().to_list())


def _reloaded_history(
    tx: RunTransaction,
    stored: Mapping[str, PartitionFile],
    fetched: pl.DataFrame,
    revised: list[str],
) -> pl.DataFrame:
    """The whole history of revised symbols: stored bars, replaced by the fetched ones."""
    if not revised:
        return DAILY_PRICES.empty()
    wanted = pl.Series(revised, dtype=pl.String).implode()
    fresh = fetched.filter(pl.col("symbol").is_in(wanted))
    old = (
        scan(tx.store.storage, stored.values(), DAILY_PRICES)
        .filter(pl.col("symbol").is_in(wanted))
        .collect()
        .join(fresh.select("symbol", "date"), on=["symbol", "date"], how="anti")
    )
    return pl.concat([DAILY_PRICES.conform(old), fresh])


def _state_of(bars: pl.DataFrame, fresh: bool, known: pl.DataFrame) -> pl.DataFrame:
    """price_state rows of the symbols in `bars`: a new history id for a reloaded history, the
    same id and more bars for appended days."""
    spans = _spans(bars)
    if fresh:
        ids = [secrets.randbits(62) for _ in range(spans.height)]
        return PRICE_STATE.conform(spans.with_columns(history_id=pl.Series(ids, dtype=pl.Int64)))
    before = known.select("symbol", "first_date", "history_id", pl.col("bars").alias("_before"))
    grown = (
        spans.drop("first_date")
        .join(before, on="symbol")
        .with_columns(bars=pl.col("bars") + pl.col("_before"))
    )
    return PRICE_STATE.conform(grown)


def _spans(bars: pl.DataFrame) -> pl.DataFrame:
    """Each symbol's market, first and last date and number of bars.

    Bars come sorted by (symbol, date) here: a symbol's span is a run of rows, found without
    hashing; other orders are grouped.
    """
    new = (pl.col("symbol") != pl.col("symbol").shift(1)).fill_null(True)
    checked = bars.select(new.alias("new"), (pl.col("date").diff() > 0).alias("later"))
    starts = checked["new"].arg_true()
    first = bars.select("market", "symbol", first_date="date")[starts]
    dated = checked["new"] | checked["later"].fill_null(True)
    if bars.height and first["symbol"].is_sorted() and dated.all():
        ends = pl.concat([starts.slice(1), pl.Series([bars.height], dtype=starts.dtype)]) - 1
        return first.with_columns(
            last_date=bars["date"].gather(ends), bars=(ends - starts + 1).cast(pl.Int64)
        )
    return bars.group_by("market", "symbol").agg(
        first_date=pl.col("date").min(), last_date=pl.col("date").max(), bars=pl.len()
    )


def _tally(
    result: MarketPrices,
    known: pl.DataFrame,
    state: pl.DataFrame,
    gone: list[str],
    written: pl.LazyFrame,
) -> None:
    before = dict(zip(known["symbol"], known["history_id"], strict=True))
    for symbol, history in zip(state["symbol"], state["history_id"], strict=True):
        (result.appended if before.get(symbol) == history else result.reloaded).append(symbol)
    result.removed += gone
    result.written.append(written)


@dataclass(frozen=True)
class _Fetched:
    """What a run read of one market: the clean bars went to the shards, the rest is here."""

    rejects: pl.DataFrame
    files: list[ListedFile] | None
    """The files read (file sources)."""
    later: set[str]
    """Files holding a bar dated after the run's day."""
    summary: dict[str, str]


def _fetch(
    tx: RunTransaction,
    source: PriceSource,
    request: Request,
    state: pl.DataFrame,
    full: bool,
    held: _ShardBars,
    batch_bytes: int,
) -> _Fetched:
    """Read and validate what may be new: clean bars go to `held`, the rest is returned."""
    market = request.market
    if isinstance(source, FileSource):
        listing = list(source.listing(market))
        seen = stored_rows(tx, PRICE_FILES, market)
        new_symbols = set(request.symbols) - set(state["symbol"].to_list())
        everything = full or request.since is not None or bool(new_symbols)
        wanted = listing if everything else changed_files(listing, seen)
        invalid, duplicates, unreadable, later = [], [], [], set()
        paths = [f.path for f in wanted]
        for lines in source.bar_batches(market, paths, batch_bytes):
            checked = check_bars(lines.rows, market, request.symbols, lines.provenance)
            held.add(checked.clean)
            invalid.append(checked.invalid)
            duplicates.append(checked.duplicates)
            unreadable.append(lines.unreadable)
            later |= _dated_after(lines, checked.dates, request.through)
        # Rejects in the order one reading of every file gives them (as `validate_bars` would).
        unread = pl.concat([BarLines.no_unreadable(), *unreadable]).sort(
            "rank", KEY, maintain_order=True
        )
        rejects = rejects_frame(market, *invalid, *duplicates, unread)
        label = "every file" if everything else "new or changed files"
        return _Fetched(rejects, wanted, later, {label: f"{len(wanted)} of {len(listing)} files"})
    plan = _http_plan(state, request, full)
    raw = RawBars.concat([source.daily_bars(market, group, since) for since, group in plan.items()])
    check_answers(market, raw.answers)
    rows = raw.rows.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias(KEY))
    checked = check_bars(rows, market, request.symbols, lambda some: some.select(PROVENANCE))
    held.add(checked.clean)
    rejects = rejects_frame(market, checked.invalid, checked.duplicates, raw.unreadable)
    summary = {
        str(since or "full history"): f"{len(group)} symbols" for since, group in plan.items()
    }
    return _Fetched(rejects, None, set(), summary)


def _dated_after(lines: BarLines, dates: pl.Series, through: date) -> set[str]:
    """The files of these lines that hold a bar dated after `through` (`dates`: of every line)."""
    after = lines.rows.filter(dates > through)
    if after.is_empty():
        return set()
    return set(lines.provenance(after)["source"].to_list())


def changed_files(listing: Sequence[ListedFile], seen: pl.DataFrame) -> list[ListedFile]:
    """Files of `listing` not read yet, or changed (size or modification time) since they were."""
    before = {
        name: (size, mtime)
        for name, size, mtime in seen.select("path", "size", "mtime_ns").iter_rows()
    }
    return [f for f in listing if before.get(f.name) != (f.size, f.mtime_ns)]


def _http_plan(state: pl.DataFrame, request: Request, full: bool) -> dict[date | None, list[str]]:
    """Symbols grouped by the day to fetch from: their newest stored bar (re-fetched: the source
    may have revised it) or the backfill's first day if earlier; None for a whole history."""
    newest = {} if full else dict(zip(state["symbol"], state["last_date"], strict=True))
    plan: dict[date | None, list[str]] = {}
    for symbol in request.symbols:
        since = newest.get(symbol)
        if since is not None and request.since is not None:
            since = min(since, request.since)
        plan.setdefault(since, []).append(symbol)
    return plan


def _stage_rejects(tx: RunTransaction, market: str, rejects: pl.DataFrame, full: bool) -> None:
    """The rejects table is a log of what runs read: each rejected record once, where first seen."""
    stored = PRICE_REJECTS.empty() if full else stored_rows(tx, PRICE_REJECTS, market)
    log = pl.concat([stored, rejects]).unique(
        ["source", "location", "record", "reason"], keep="first", maintain_order=True
    )
    stage_market_file(tx, PRICE_REJECTS, market, log)


def stage_files_read(
    tx: RunTransaction, table: Table, market: str, read: Sequence[ListedFile], full: bool
) -> None:
    """Remember the files read in a files-read table (price_files, news_files), each by its name
    under its source's root with the size and modification time it was read at."""
    done = pl.DataFrame(
        {
            "market": market,
            "path": [f.name for f in read],
            "size": [f.size for f in read],
            "mtime_ns": [f.mtime_ns for f in read],
        },
        schema=table.schema,
    )
    stored = table.empty() if full else stored_rows(tx, table, market)
    frame = pl.concat([stored.join(done.select("path"), on="path", how="anti"), done]).sort("path")
    stage_market_file(tx, table, market, frame)
