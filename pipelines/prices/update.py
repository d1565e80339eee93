"""One market's daily prices brought up to a day: fetch what is new, detect revisions, write shard by shard.

A symbol's stored bars change in exactly three ways, each recorded in `price_state` so that every
downstream domain knows what to recompute: new days are appended (same `history_id`); a first load
or a revision of a stored bar rewrites the symbol's history (a new `history_id`); a symbol no longer
listed is removed. A fetched bar equal to the stored one changes nothing.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Protocol, runtime_checkable

import polars as pl

from pipelines.catalog import DAILY_PRICES, PRICE_REJECTS, PartitionFile, Table
from pipelines.catalog.state import PRICE_FILES, PRICE_STATE
from pipelines.incremental.shards import Shard, shard_count, shard_index, shards_of
from pipelines.incremental.tables import EVERYTHING, by_shard, rewrite_snapshot, scan, upsert_series
from pipelines.prices.sources.base import PriceSource, RawBars
from pipelines.prices.validate import validate_bars
from pipelines.warehouse.staging import RunTransaction

VALUES = ("open", "high", "low", "close", "volume")
"""What a revision compares: a re-fetched bar with any of these different is a new history."""


@runtime_checkable
class ListedFile(Protocol):
    @property
    def path(self) -> str: ...

    @property
    def size(self) -> int: ...

    @property
    def mtime_ns(self) -> int: ...


@runtime_checkable
class FileSource(Protocol):
    """A connector over files (the file drop): the pipeline reads only files new or changed."""

    def listing(self, market: str) -> Sequence[ListedFile]: ...

    def read_bars(self, market: str, paths: Sequence[str]) -> RawBars: ...


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
    written: list[pl.DataFrame] = field(default_factory=list)
    """The bars this run wrote (for the checks)."""
    rejects: pl.DataFrame = field(default_factory=PRICE_REJECTS.empty)
    fetched: dict[str, str] = field(default_factory=dict)

    def bars(self) -> pl.DataFrame:
        return pl.concat([DAILY_PRICES.empty(), *self.written])


def update_market(tx: RunTransaction, source: PriceSource, request: Request) -> MarketPrices:
    """Fetch, validate and store one market's bars through `request.through`; stage every table."""
    market = request.market
    state = _stored(tx, PRICE_STATE, market)
    count = shard_count(len(request.symbols), request.shard_symbols)
    stored_count = {s.count for s in by_shard(tx.partitions(PRICE_STATE.name, market))}
    full = request.full or state.is_empty() or stored_count != {count}
    raw, read_files, fetched = _fetch(tx, source, request, state, full)
    clean, rejects = validate_bars(raw, market, request.symbols, source.name)
    clean = clean.filter(pl.col("date") <= request.through)
    result = MarketPrices(market, count, rejects=rejects, fetched=fetched)
    prices_files: dict[str, PartitionFile] = {}
    state_files: dict[str, PartitionFile] = {}
    stored_prices = {} if full else by_shard(tx.partitions(DAILY_PRICES.name, market))
    stored_state = {} if full else by_shard(tx.partitions(PRICE_STATE.name, market))
    members = shards_of(market, pl.Series(request.symbols, dtype=pl.String), count)
    for shard, symbols in members.items():
        in_shard = pl.col("symbol").is_in(pl.Series(symbols, dtype=pl.String).implode())
        known = state.filter(in_shard) if not full else PRICE_STATE.empty()
        gone = [] if full else _removed(state, shard, members)
        change = _shard_change(
            tx, shard, stored_prices.get(shard, {}), clean.filter(in_shard), known, gone
        )
        if change is None:
            prices_files |= stored_prices.get(shard, {})
            state_files |= stored_state.get(shard, {})
            continue
        rows, cutoffs, new_state = change
        prices_files |= upsert_series(
            tx, DAILY_PRICES, shard, stored_prices.get(shard, {}), rows, cutoffs
        )
        replaced = list(cutoffs) + new_state["symbol"].to_list()
        state_files |= rewrite_snapshot(
            tx, PRICE_STATE, shard, stored_state.get(shard, {}), new_state, replaced
        )
        _tally(result, known, new_state, gone, rows)
    tx.stage(DAILY_PRICES.name, market, prices_files)
    tx.stage(PRICE_STATE.name, market, state_files)
    _stage_rejects(tx, market, rejects, full)
    if read_files is not None:
        _stage_files_read(tx, market, read_files, raw, request.through, full)
    return result


def _stored(tx: RunTransaction, table: Table, market: str) -> pl.DataFrame:
    """Every stored row of one market's partition of `table`, as this run sees it."""
    return scan(tx.store.storage, tx.partitions(table.name, market).values(), table).collect()


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
    spans = bars.group_by("market", "symbol").agg(
        first_date=pl.col("date").min(), last_date=pl.col("date").max(), bars=pl.len()
    )
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


def _tally(
    result: MarketPrices,
    known: pl.DataFrame,
    state: pl.DataFrame,
    gone: list[str],
    rows: pl.DataFrame,
) -> None:
    before = dict(zip(known["symbol"], known["history_id"], strict=True))
    for symbol, history in zip(state["symbol"], state["history_id"], strict=True):
        (result.appended if before.get(symbol) == history else result.reloaded).append(symbol)
    result.removed += gone
    result.written.append(rows)


def _fetch(
    tx: RunTransaction, source: PriceSource, request: Request, state: pl.DataFrame, full: bool
) -> tuple[RawBars, list[ListedFile] | None, dict[str, str]]:
    """Raw bars of what may be new, the files read (file sources) and a summary for metadata."""
    if isinstance(source, FileSource):
        listing = list(source.listing(request.market))
        seen = _stored(tx, PRICE_FILES, request.market)
        new_symbols = set(request.symbols) - set(state["symbol"].to_list())
        everything = full or request.since is not None or bool(new_symbols)
        wanted = listing if everything else changed_files(listing, seen)
        raw = source.read_bars(request.market, [f.path for f in wanted])
        label = "every file" if everything else "new or changed files"
        return raw, wanted, {label: f"{len(wanted)} of {len(listing)} files"}
    plan = _http_plan(state, request, full)
    parts = [source.daily_bars(request.market, group, since) for since, group in plan.items()]
    fetched = {
        str(since or "full history"): f"{len(group)} symbols" for since, group in plan.items()
    }
    return RawBars.concat(parts), None, fetched


def changed_files(listing: Sequence[ListedFile], seen: pl.DataFrame) -> list[ListedFile]:
    """Files of `listing` not read yet, or changed (size or modification time) since they were."""
    before = {
        path: (size, mtime)
        for path, size, mtime in seen.select("path", "size", "mtime_ns").iter_rows()
    }
    return [f for f in listing if before.get(f.path) != (f.size, f.mtime_ns)]


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
    stored = PRICE_REJECTS.empty() if full else _stored(tx, PRICE_REJECTS, market)
    log = pl.concat([stored, rejects]).unique(
        ["source", "location", "record", "reason"], keep="first", maintain_order=True
    )
    tx.stage(PRICE_REJECTS.name, market, {market: tx.write_file(PRICE_REJECTS, market, log)})


def _stage_files_read(
    tx: RunTransaction,
    market: str,
    read: Sequence[ListedFile],
    raw: RawBars,
    through: date,
    full: bool,
) -> None:
    """Remember the files read, except those holding bars after `through` (read again later)."""
    later = raw.rows.filter(
        pl.col("date").str.strip_chars().str.to_date("%Y-%m-%d", strict=False) > through
    )["source"].unique()
    done = pl.DataFrame(
        {
            "market": market,
            "path": [f.path for f in read],
            "size": [f.size for f in read],
            "mtime_ns": [f.mtime_ns for f in read],
        },
        schema=PRICE_FILES.schema,
    ).filter(~pl.col("path").is_in(later.implode()))
    stored = PRICE_FILES.empty() if full else _stored(tx, PRICE_FILES, market)
    frame = pl.concat([stored.join(done.select("path"), on="path", how="anti"), done]).sort("path")
    tx.stage(PRICE_FILES.name, market, {market: tx.write_file(PRICE_FILES, market, frame)})
