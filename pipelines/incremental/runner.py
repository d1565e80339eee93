"""A domain's run over one market: shard by shard, only the symbols whose mode is not `unchanged`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date

import polars as pl

from pipelines.catalog import DAILY_PRICES, PartitionFile, Table
from pipelines.catalog.state import PRICE_STATE
from pipelines.incremental.modes import MODES, UNCHANGED, symbol_modes
from pipelines.incremental.shards import Shard
from pipelines.incremental.tables import by_shard, read_symbols, scan
from pipelines.warehouse.staging import RunTransaction

Files = dict[str, PartitionFile]


@dataclass(frozen=True)
class ShardWork:
    """What a domain is given for one shard: the modes, the prices' state, its own stored state and
    files, and the run's transaction to read bars and write files through."""

    tx: RunTransaction
    shard: Shard
    modes: pl.DataFrame
    """symbol, mode, and for `append` the state's last_date and bars (the new bars come after)."""
    prices: pl.DataFrame
    """price_state rows of the shard's listed symbols."""
    state: pl.DataFrame
    """The domain's stored state rows of the shard (empty when its layout changed)."""
    stored: Mapping[str, Files]
    """The shard's stored files of every table the domain writes, by table name."""

    def symbols(self, *modes: str) -> list[str]:
        return self.modes.filter(pl.col("mode").is_in(list(modes)))["symbol"].to_list()

    def bars(
        self,
        symbols: Sequence[str],
        since: Mapping[str, date] | None = None,
        columns: Sequence[str] | None = None,
    ) -> pl.DataFrame:
        """Stored bars of `symbols` (this run's, when it wrote prices), sorted by symbol and date;
        with `since`, each symbol's bars from its day on (a symbol not in `since`: all); with
        `columns`, only those besides symbol and date."""
        prices = by_shard(self.tx.partitions(DAILY_PRICES.name, self.shard.market))
        files = prices.get(self.shard, {})
        return read_symbols(self.tx.store.storage, DAILY_PRICES, files, symbols, since, columns)

    def stored_rows(
        self, table: Table, symbols: Sequence[str], since: Mapping[str, date] | None = None
    ) -> pl.DataFrame:
        """The shard's stored rows of one of the domain's own tables, for `symbols` (by `since`)."""
        return read_symbols(self.tx.store.storage, table, self.stored[table.name], symbols, since)


@dataclass(frozen=True)
class ShardResult:
    """What a domain wrote for one shard: the new files of its tables, and the rows it computed
    (by table: every row of the symbols it recomputed; what the checks look at)."""

    files: Mapping[str, Files]
    rows: Mapping[str, pl.DataFrame]


Update = Callable[[ShardWork], ShardResult]
"""A domain's work on one shard."""
Check = Callable[[Mapping[str, pl.DataFrame]], pl.DataFrame]
"""A property of a shard's computed rows (by table): the rows that break it."""
SHOWN_OFFENDING = 20
"""Offending rows a check keeps across shards (enough to diagnose; memory stays bounded)."""


@dataclass(frozen=True)
class Domain:
    """A domain that carries per-symbol state: the tables it writes and how it updates a shard."""

    name: str
    tables: tuple[Table, ...]
    """Every table it writes, its state table included."""
    state: Table
    version: Callable[[], str]
    """The code version its state is computed with (a change recomputes every symbol)."""
    update: Update
    checks: Mapping[tuple[str, str], Check] = field(default_factory=dict)
    """(asset, check name) -> the property, run on every shard's computed rows."""
    every_shard: bool = False
    """Update every shard on every run, even one whose symbols are all unchanged (a domain with a
    table derived from other domains' current tables as well as its own)."""


@dataclass
class DomainRun:
    """What one domain did in one market: symbols per mode, rows computed, check outcomes."""

    market: str
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MODES, 0))
    rows: dict[str, int] = field(default_factory=dict)
    """Rows computed per table (the recomputed symbols' rows)."""
    offending: dict[tuple[str, str], pl.DataFrame] = field(default_factory=dict)
    """The first offending rows of every check (empty when it holds)."""
    offending_count: dict[tuple[str, str], int] = field(default_factory=dict)
    shards_written: int = 0
    shards_kept: int = 0

    def record(self, domain: Domain, rows: Mapping[str, pl.DataFrame]) -> None:
        for name, frame in rows.items():
            self.rows[name] = self.rows.get(name, 0) + frame.height
        for key, check in domain.checks.items():
            found = check(rows)
            self.offending_count[key] = self.offending_count.get(key, 0) + found.height
            before = self.offending.get(key)
            shown = found if before is None else pl.concat([before, found], how="diagonal_relaxed")
            self.offending[key] = shown.head(SHOWN_OFFENDING)


def run_market(tx: RunTransaction, market: str, domain: Domain, full: bool = False) -> DomainRun:
    """Run the domain's update on every shard of `market` with something to do, then stage each
    table's complete set of files (shards left alone keep theirs)."""
    state_table, version = domain.state, domain.version()
    prices = by_shard(tx.partitions(PRICE_STATE.name, market))
    stored = {t.name: by_shard(tx.partitions(t.name, market)) for t in domain.tables}
    result = DomainRun(market)
    out: dict[str, Files] = {t.name: {} for t in domain.tables}
    for shard in sorted(prices):
        price_state = scan(tx.store.storage, prices[shard].values(), PRICE_STATE).collect()
        own = {name: shards.get(shard, {}) for name, shards in stored.items()}
        state = scan(tx.store.storage, own[state_table.name].values(), state_table).collect()
        modes = symbol_modes(price_state, state, version, full)
        for mode, count in modes.group_by("mode").len().iter_rows():
            result.counts[mode] += count
        if not domain.every_shard and modes.filter(pl.col("mode") != UNCHANGED).is_empty():
            result.shards_kept += 1
            for name in out:
                out[name] |= own[name]
            continue
        written = domain.update(ShardWork(tx, shard, modes, price_state, state, own))
        result.shards_written += 1
        result.record(domain, written.rows)
        for name in out:
            out[name] |= written.files.get(name, own[name])
    for name, files in out.items():
        tx.stage(name, market, files)
    return result
