"""Reading and rewriting a shard's files within a run: whole-shard snapshot tables and time-segmented series.

A snapshot table (one row or a few per symbol: indicator snapshots, backtests, state) has one file
per shard; a run rewrites the file of a shard whose symbols changed. A series table (one row per
symbol and day: daily prices, trend history) has one file per shard and time segment — a closed
year (`2025`) or a month of the newest year (`2026-03`) — so that a new day rewrites one small
file, and the months of a year are merged into the year's file once the next year begins.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import date

import numpy as np
import polars as pl

from pipelines.catalog import LocalStorage, PartitionFile, Table, WarehouseStorage
from pipelines.catalog.manifest import PARTITION_SEPARATOR
from pipelines.warehouse.shards import Shard
from pipelines.warehouse.staging import RunTransaction

EVERYTHING = date(1, 1, 1)
"""A cutoff that replaces every row of a symbol (a full recompute, or a symbol removed)."""


def scan(storage: WarehouseStorage, entries: Iterable[PartitionFile], table: Table) -> pl.LazyFrame:
    """The files' rows as one lazy frame in catalog schema (no file: an empty frame)."""
    paths = [entry.path for entry in entries]
    if not paths:
        return table.empty().lazy()
    if isinstance(storage, LocalStorage):
        return pl.scan_parquet([storage.arrow_path(p) for p in paths])
    import pyarrow.dataset as ds  # here: with pandas its import would slow every command

    dataset = ds.dataset(
        [storage.arrow_path(p) for p in paths], filesystem=storage.filesystem(), format="parquet"
    )
    return pl.scan_pyarrow_dataset(dataset)


def by_shard(partitions: Mapping[str, PartitionFile]) -> dict[Shard, dict[str, PartitionFile]]:
    """A market's partition keys grouped by the shard they belong to (unsharded keys are left out)."""
    grouped: dict[Shard, dict[str, PartitionFile]] = {}
    for key, entry in partitions.items():
        shard = Shard.parse(key)
        if shard is not None:
            grouped.setdefault(shard, {})[key] = entry
    return grouped


def order(table: Table) -> list[str]:
    """The columns a file of `table` is sorted by: its key without the market."""
    return [c for c in table.key if c != "market"]


def rewrite_snapshot(
    tx: RunTransaction,
    table: Table,
    shard: Shard,
    stored: Mapping[str, PartitionFile],
    rows: pl.DataFrame,
    replaced: Iterable[str],
    dropped: pl.DataFrame | None = None,
) -> dict[str, PartitionFile]:
    """The shard's new file of `snapshot`'s rows."""
    frame = snapshot(tx, table, stored, rows, replaced, dropped)
    return {shard.key: tx.write_file(table, shard.key, frame)}


def snapshot(
    tx: RunTransaction,
    table: Table,
    stored: Mapping[str, PartitionFile],
    rows: pl.DataFrame,
    replaced: Iterable[str],
    dropped: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """A shard's rows after an update, sorted: the stored rows of symbols not in `replaced` and
    not matching a row of `dropped` (some of the table's key columns), plus `rows`."""
    gone = pl.Series(list(replaced), dtype=pl.String)
    kept = scan(tx.store.storage, stored.values(), table).filter(
        ~pl.col("symbol").is_in(gone.implode())
    )
    if dropped is not None and dropped.height:
        kept = kept.join(dropped.lazy(), on=dropped.columns, how="anti", maintain_order="left")
    frame = pl.concat([kept.collect(), table.conform(rows)], how="vertical_relaxed")
    return sorted_by(frame, order(table))


def kept_or_written(
    tx: RunTransaction,
    table: Table,
    partition: str,
    frame: pl.DataFrame,
    stored: PartitionFile | None,
) -> PartitionFile:
    """`stored` (the partition's current file) when it holds exactly `frame`'s rows, else a new
    file. A run that finds nothing new so leaves the table as it was, and with every table as it
    was, its commit publishes no new version (`pipelines.warehouse.commits.changes_nothing`)."""
    conformed = table.conform(frame)
    if (
        stored is not None
        and stored.rows == conformed.height
        and scan(tx.store.storage, [stored], table).collect().equals(conformed)
    ):
        return stored
    return tx.write_file(table, partition, conformed)


def stage_market_file(tx: RunTransaction, table: Table, market: str, frame: pl.DataFrame) -> None:
    """Stage `frame` as the market's one file of `table` (a state, a log, a per-market table),
    the stored file when it holds the same rows (`kept_or_written`)."""
    stored = tx.partitions(table.name, market).get(market)
    tx.stage(table.name, market, {market: kept_or_written(tx, table, market, frame, stored)})


def sorted_by(frame: pl.DataFrame, columns: Sequence[str]) -> pl.DataFrame:
    """`frame` sorted by `columns`: as it is when it already is (the common case: the rows of a
    day's update come sorted), which one pass checks far faster than a sort."""
    return frame if frame.select(_ascending(columns)).item() else frame.sort(columns)


def _ascending(columns: Sequence[str]) -> pl.Expr:
    """Whether every row is at or before the next in the order of `columns` (key columns are
    never null)."""
    rule: pl.Expr | None = None
    for name in reversed(columns):
        here, after = pl.col(name), pl.col(name).shift(-1)
        rule = here <= after if rule is None else (here < after) | ((here == after) & rule)
    if rule is None:
        raise ValueError("an order has at least one column")
    return rule.fill_null(True).all()


def segment_key(day: date, newest_year: int) -> str:
    """`YYYY` for a day of a closed year, `YYYY-MM` for a day of the newest year."""
    return f"{day.year}" if day.year < newest_year else f"{day:%Y-%m}"


def segment_start(segment: str) -> date:
    """The first day a segment key covers."""
    return date(int(segment[:4]), int(segment[5:7]) if len(segment) > 4 else 1, 1)


def segment_end(segment: str) -> date:
    """The last day a segment key covers."""
    if len(segment) == 4:
        return date(int(segment), 12, 31)
    start = segment_start(segment)
    following = date(start.year + (start.month == 12), start.month % 12 + 1, 1)
    return date.fromordinal(following.toordinal() - 1)


def _segment_codes(days: pl.Expr, newest_year: int) -> pl.Expr:
    """Each day's segment as a number (`YYYY00` for a closed year, `YYYYMM` in the newest): a
    date formatted per row cost a full write a tenth of its time, for a handful of names."""
    year = days.dt.year().cast(pl.Int32)
    return pl.when(year < newest_year).then(year * 100).otherwise(year * 100 + days.dt.month())


def _segment_name(code: int) -> str:
    """The key `_segment_codes`' number stands for (`segment_key`'s)."""
    year, month = divmod(code, 100)
    return segment_key(date(year, month or 1, 1), year + (month == 0))


Sources = dict[str, list[str]]
"""Stored segments by the segment they belong to now: the months of a year that has closed since
they were written belong to that year's file."""


def _plan(
    segments: Iterable[str], rows: pl.DataFrame, day: pl.Expr
) -> tuple[Sources, pl.DataFrame, dict[str, int]] | None:
    """The stored segments' targets, `rows` tagged with the number of the segment they fall in
    (`_segment`), and the numbers by segment key, by the newest year of either; None when there
    is neither."""
    years = [int(segment[:4]) for segment in segments]
    newest_row = rows.select(day.max()).item()
    if isinstance(newest_row, date):
        years.append(newest_row.year)
    if not years:
        return None
    newest = max(years)
    sources: Sources = {}
    for segment in sorted(segments):
        sources.setdefault(segment_key(segment_start(segment), newest), []).append(segment)
    tagged = rows.with_columns(_segment=_segment_codes(day, newest))
    codes = tagged["_segment"].unique().to_list()
    return sources, tagged, {_segment_name(code): code for code in codes}


def _touched(sources: Sources, numbers: Mapping[str, int]) -> set[str]:
    """Segments a write must rewrite: those the rows fall in, and those whose months merge."""
    merged = {target for target, found in sources.items() if found != [target]}
    return set(numbers) | merged


def _rows_in(tagged: pl.DataFrame, numbers: Mapping[str, int], target: str) -> pl.DataFrame:
    """The tagged rows that fall in `target`, in their order. One segment at a time: a write holds
    at most one copy of its rows besides them."""
    if target not in numbers:  # a stored segment rewritten for a cutoff or a merge alone
        return tagged.clear().drop("_segment")
    return tagged.filter(pl.col("_segment") == numbers[target]).drop("_segment")


def _untouched(
    prefix: str, segments: Mapping[str, PartitionFile], sources: Sources, affected: set[str]
) -> dict[str, PartitionFile]:
    """The stored files of the segments a write leaves as they are, by partition key."""
    return {
        f"{prefix}/{segment}": segments[segment]
        for target, found in sources.items()
        if target not in affected
        for segment in found
    }


def upsert_series(
    tx: RunTransaction,
    table: Table,
    shard: Shard,
    stored: Mapping[str, PartitionFile],
    rows: pl.DataFrame,
    cutoffs: Mapping[str, date],
) -> dict[str, PartitionFile]:
    """The shard's new segment files: each symbol of `cutoffs` loses its stored rows dated on or
    after its cutoff, `rows` are added; only segments that change are rewritten.

    `rows` must hold only dates on or after their symbol's cutoff (a symbol without a cutoff only
    adds days after its stored ones).
    """
    rows = table.conform(rows)
    segments = {key.rsplit("/", 1)[1]: entry for key, entry in stored.items()}
    plan = _plan(segments, rows, pl.col("date"))
    if plan is None:
        return {}
    sources, tagged, numbers = plan
    first_cut = min(cutoffs.values(), default=None)
    affected = _touched(sources, numbers) | {
        target for target in sources if first_cut is not None and first_cut <= segment_end(target)
    }
    out = _untouched(shard.key, segments, sources, affected)
    cut = pl.DataFrame(
        {"symbol": list(cutoffs), "_cutoff": list(cutoffs.values())},
        schema={"symbol": pl.String, "_cutoff": pl.Date},
    )
    for target in sorted(affected):
        kept = (
            scan(tx.store.storage, [segments[s] for s in sources.get(target, [])], table)
            .join(cut.lazy(), on="symbol", how="left")
            .filter(pl.col("_cutoff").is_null() | (pl.col("date") < pl.col("_cutoff")))
            .drop("_cutoff")
            .collect()
        )
        added = _rows_in(tagged, numbers, target)
        frame = sorted_by(pl.concat([table.conform(kept), added]), order(table))
        if frame.height:
            key = f"{shard.key}/{target}"
            out[key] = tx.write_file(table, key, frame)
    return out


def append_segments(
    tx: RunTransaction,
    table: Table,
    market: str,
    stored: Mapping[str, PartitionFile],
    rows: pl.DataFrame,
    day: pl.Expr,
    everything: bool = False,
) -> dict[str, PartitionFile]:
    """A market's time-segmented log (keys `<market>/<segment>`, segments as a series table's)
    with `rows` added: a segment that the rows fall in is written again as its stored rows, then
    the new ones in their order; every other segment keeps its file, so a refresh writes what its
    rows touch however long the history. `day` is a row's day (an expression of its columns).

    `everything`: `rows` are the whole table (the stored files are dropped). A stored file without
    a segment (a market's single file, the layout before segments) is split into segments once.
    """
    rows = table.conform(rows)
    if not everything and any(PARTITION_SEPARATOR not in key for key in stored):
        legacy = scan(tx.store.storage, stored.values(), table).collect()
        return append_segments(tx, table, market, {}, pl.concat([legacy, rows]), day, True)
    segments = (
        {} if everything else {k.split(PARTITION_SEPARATOR, 1)[1]: f for k, f in stored.items()}
    )
    plan = _plan(segments, rows, day)
    if plan is None:
        return {}
    sources, tagged, numbers = plan
    affected = _touched(sources, numbers)
    out = _untouched(market, segments, sources, affected)
    for target in sorted(affected):
        kept = scan(tx.store.storage, [segments[s] for s in sources.get(target, [])], table)
        added = _rows_in(tagged, numbers, target)
        key = f"{market}/{target}"
        out[key] = tx.write_file(table, key, pl.concat([table.conform(kept.collect()), added]))
    return out


def counted_rows(tx: RunTransaction, table: Table, market: str) -> int:
    """Rows of one market's partition of `table` as this run sees it, from the manifest's counts."""
    return sum(entry.rows for entry in tx.partitions(table.name, market).values())


def stored_rows(tx: RunTransaction, table: Table, market: str) -> pl.DataFrame:
    """Every row of one market's partition of `table`, as this run sees it (small tables)."""
    return scan(tx.store.storage, tx.partitions(table.name, market).values(), table).collect()


def read_symbols(
    storage: WarehouseStorage,
    table: Table,
    files: Mapping[str, PartitionFile],
    symbols: Iterable[str],
    since: Mapping[str, date] | None = None,
    columns: Sequence[str] | None = None,
) -> pl.DataFrame:
    """The files' rows of `symbols`, sorted by the table's order; with `since`, each symbol's rows
    dated on or after its day (a symbol not in `since`: all of its rows); with `columns`, only
    those (and the order's): a whole history read moves a third less data without the others."""
    wanted = pl.Series(list(symbols), dtype=pl.String)
    keys = sorted(files)
    # Every symbol from the same day (a market's calendar, the common case) is read with one date
    # comparison a row instead of a join on the symbol (cheaper on a shard's tail).
    common: date | None = None
    if since and set(wanted.to_list()) <= set(since):
        first = min(since.values())
        keys = [
            k for k in keys if (segment := _segment_of(k)) is None or segment_end(segment) >= first
        ]
        common = first if first == max(since.values()) else None
    entries = [files[k] for k in keys]
    frame = scan(storage, entries, table)
    if columns is not None:
        frame = frame.select(list(dict.fromkeys([*order(table), *columns])))
    frame = frame.filter(pl.col("symbol").is_in(wanted.implode()))
    if common is not None:
        frame = frame.filter(pl.col("date") >= common)
    elif since:
        cut = pl.DataFrame(
            {"symbol": list(since), "_since": list(since.values())},
            schema={"symbol": pl.String, "_since": pl.Date},
        )
        frame = (
            frame.join(cut.lazy(), on="symbol", how="left", maintain_order="left")
            .filter(pl.col("_since").is_null() | (pl.col("date") >= pl.col("_since")))
            .drop("_since")
        )
    return _in_order(frame.collect(), table, len(entries))


def _segment_of(key: str) -> str | None:
    """The time segment of a series file's key (`market/shard/segment`); None for a snapshot's."""
    parts = key.split("/")
    return parts[2] if len(parts) > 2 else None


def _in_order(frame: pl.DataFrame, table: Table, files: int) -> pl.DataFrame:
    """Rows read file after file in key order, sorted by the table's order.

    Every file is written sorted, so one file's rows already are; the segments of a series table
    (every one is ordered by symbol, then date) split the date in key order, so moving each
    symbol's runs finishes the job; any other table is sorted.
    """
    columns = order(table)
    if files <= 1:
        return frame
    if columns == ["symbol", "date"]:
        return _merged_by_symbol(frame)
    return frame.sort(columns)


def _merged_by_symbol(frame: pl.DataFrame) -> pl.DataFrame:
    """Rows of files each sorted by (symbol, date), read one after the other in date order, in
    (symbol, date) order: the runs of one symbol are moved, not the rows sorted.

    A stable sort by symbol compares every row's string (a shard's history: millions); this finds
    the runs (one per symbol and file), orders those (thousands), and gathers the rows once.
    """
    symbol = frame["symbol"]
    starts = np.flatnonzero(symbol.ne_missing(symbol.shift(1)).to_numpy())
    lengths = np.diff(np.append(starts, frame.height))
    # stable: a symbol's runs keep their files' order, which is its dates' order
    runs = np.argsort(symbol.gather(starts).to_numpy(), kind="stable")
    first, length = starts[runs], lengths[runs]
    index = np.repeat(first - np.cumsum(length) + length, length) + np.arange(frame.height)
    # one chunk first: a gather across the files' chunks looks up each row's chunk, several
    # times slower than the copy that joins them
    return frame.rechunk()[index]
