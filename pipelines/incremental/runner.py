"""A domain's run over one market: shard by shard, only the symbols whose mode is not `unchanged`."""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date
from typing import Any

import polars as pl

from pipelines.catalog import (
    CORPORATE_ACTIONS,
    DAILY_PRICES,
    PRICE_ADJUSTMENTS,
    WEEKDAY_MARKETS,
    PartitionFile,
    Table,
)
from pipelines.catalog.adjustments import adjusted
from pipelines.catalog.state import PRICE_STATE
from pipelines.incremental.actions import actions_digest, delisted_after_last_bar, with_actions
from pipelines.incremental.modes import MODES, STATE_COLUMNS, UNCHANGED, symbol_modes
from pipelines.platform.check_rows import SHOWN_ROWS
from pipelines.warehouse.shards import Shard
from pipelines.warehouse.staging import RunTransaction
from pipelines.warehouse.tables import by_shard, read_symbols, scan, stored_rows

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
    """price_state rows of the shard's listed symbols, each `history_id` naming the symbol's
    corporate actions too (`with_actions`): the id a domain's state records."""
    state: pl.DataFrame
    """The domain's stored state rows of the shard (empty when its layout changed)."""
    stored: Mapping[str, Files]
    """The shard's stored files of every table the domain writes, by table name."""
    factors: pl.DataFrame = field(default_factory=PRICE_ADJUSTMENTS.empty)
    """The market's `price_adjustments` rows: every series a domain reads is split-adjusted."""
    delisted: frozenset[str] = frozenset()
    """The shard's symbols whose delisting ends their bars (`delisted_after_last_bar`)."""

    def symbols(self, *modes: str) -> list[str]:
        return self.modes.filter(pl.col("mode").is_in(list(modes)))["symbol"].to_list()

    def bars(
        self,
        symbols: Sequence[str],
        since: Mapping[str, date] | None = None,
        columns: Sequence[str] | None = None,
        *,
        dividends: bool = False,
    ) -> pl.DataFrame:
        """Stored bars of `symbols` (this run's, when it wrote prices), split-adjusted (decisions.md,
        Corporate actions), sorted by symbol and date; with `since`, each symbol's bars from its
        day on (a symbol not in `since`: all); with `columns`, only those besides symbol and date;
        with `dividends`, each bar's `dividend` per unit of the adjusted series too."""
        prices = by_shard(self.tx.partitions(DAILY_PRICES.name, self.shard.market))
        files = prices.get(self.shard, {})
        bars = read_symbols(self.tx.store.storage, DAILY_PRICES, files, symbols, since, columns)
        return self.adjusted(bars, dividends=dividends)

    def adjusted(self, bars: pl.DataFrame, *, dividends: bool = False) -> pl.DataFrame:
        """Stored bars read otherwise (symbol, date and any prices), split-adjusted as `bars` are."""
        return adjusted(bars, self.factors, "split", dividends=dividends)

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
"""A property of a shard's computed rows (by table): the rows that break it; a shard keeps the
first SHOWN_ROWS of them across shards (enough to diagnose, memory bounded)."""


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

    def add(self, outcome: ShardOutcome) -> None:
        """Count one shard's outcome in the market's."""
        for mode, count in outcome.counts.items():
            self.counts[mode] = self.counts.get(mode, 0) + count
        if outcome.kept:
            self.shards_kept += 1
            return
        self.shards_written += 1
        for name, rows in outcome.rows.items():
            self.rows[name] = self.rows.get(name, 0) + rows
        for key, found in outcome.offending.items():
            self.offending_count[key] = self.offending_count.get(key, 0) + outcome.found[key]
            before = self.offending.get(key)
            shown = found if before is None else pl.concat([before, found], how="diagonal_relaxed")
            self.offending[key] = shown.head(SHOWN_ROWS)


@dataclass(frozen=True)
class ShardOutcome:
    """What a domain's run did to one shard: the shard's files of every table (its stored ones when
    kept), symbols per mode, rows computed and what the checks found. Small, and JSON: a shard may
    run in another process or host than the step that stages the market (docs/pipeline.md)."""

    shard: Shard
    files: Mapping[str, Files]
    counts: Mapping[str, int]
    kept: bool
    rows: Mapping[str, int] = field(default_factory=dict)
    found: Mapping[tuple[str, str], int] = field(default_factory=dict)
    """Offending rows per check, counted."""
    offending: Mapping[tuple[str, str], pl.DataFrame] = field(default_factory=dict)
    """The first offending rows per check."""

    def to_json(self) -> dict[str, Any]:
        return {
            "shard": self.shard.key,
            "files": {
                name: {key: asdict(entry) for key, entry in files.items()}
                for name, files in self.files.items()
            },
            "counts": dict(self.counts),
            "kept": self.kept,
            "rows": dict(self.rows),
            "checks": [
                {
                    "asset": asset,
                    "check": check,
                    "found": count,
                    "rows": self.offending[(asset, check)].serialize(format="json"),
                }
                for (asset, check), count in self.found.items()
            ],
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> ShardOutcome:
        shard = Shard.parse(raw["shard"])
        if shard is None:
            raise ValueError(f"not a shard key: {raw['shard']!r}")
        checks = {(c["asset"], c["check"]): c for c in raw["checks"]}
        return cls(
            shard=shard,
            files={
                name: {key: PartitionFile(**entry) for key, entry in files.items()}
                for name, files in raw["files"].items()
            },
            counts=raw["counts"],
            kept=raw["kept"],
            rows=raw["rows"],
            found={key: c["found"] for key, c in checks.items()},
            offending={
                key: pl.DataFrame.deserialize(io.StringIO(c["rows"]), format="json")
                for key, c in checks.items()
            },
        )


def market_shards(tx: RunTransaction, market: str) -> list[Shard]:
    """The shards of `market` a domain's run updates: those of the prices' state as the run sees it."""
    return sorted(by_shard(tx.partitions(PRICE_STATE.name, market)))


def run_shard(tx: RunTransaction, shard: Shard, domain: Domain, full: bool = False) -> ShardOutcome:
    """The domain's update of one shard, when any of its symbols is not `unchanged` (or the domain
    updates every shard); its files are written, not staged (`stage_market` stages a market)."""
    market = shard.market
    prices = by_shard(tx.partitions(PRICE_STATE.name, market)).get(shard, {})
    own = {t.name: by_shard(tx.partitions(t.name, market)).get(shard, {}) for t in domain.tables}
    factors = stored_rows(tx, PRICE_ADJUSTMENTS, market)
    bars_state = scan(tx.store.storage, prices.values(), PRICE_STATE).collect()
    delistings = stored_rows(tx, CORPORATE_ACTIONS, market).filter(pl.col("kind") == "delisting")
    delisted = delisted_after_last_bar(delistings, bars_state, market in WEEKDAY_MARKETS)
    price_state = with_actions(bars_state, actions_digest(factors, delisted))
    stored_state = scan(tx.store.storage, own[domain.state.name].values(), domain.state)
    # The modes need a few columns; the whole state (24 KB a symbol for the indicators) is read
    # only for a shard with work: a day with no bar for a market (a weekend's stocks) skips it.
    known = stored_state.select(STATE_COLUMNS).collect()
    modes = symbol_modes(price_state, known, domain.version(), full)
    counts = dict(modes.group_by("mode").len().iter_rows())
    if not domain.every_shard and modes.filter(pl.col("mode") != UNCHANGED).is_empty():
        return ShardOutcome(shard, own, counts, kept=True)
    state = stored_state.collect()
    work = ShardWork(
        tx, shard, modes, price_state, state, own, factors, frozenset(delisted["symbol"])
    )
    written = domain.update(work)
    found: dict[tuple[str, str], int] = {}
    offending: dict[tuple[str, str], pl.DataFrame] = {}
    for key, check in domain.checks.items():
        rows = check(written.rows)
        found[key], offending[key] = rows.height, rows.head(SHOWN_ROWS)
    return ShardOutcome(
        shard,
        {name: written.files.get(name, own[name]) for name in own},
        counts,
        kept=False,
        rows={name: frame.height for name, frame in written.rows.items()},
        found=found,
        offending=offending,
    )


def stage_market(
    tx: RunTransaction, market: str, domain: Domain, outcomes: Sequence[ShardOutcome]
) -> DomainRun:
    """Stage each table's complete set of files of `market` from its shards' outcomes (a market
    without shards stages empty tables). Every shard of the market must have an outcome: a shard
    whose step recorded none fails the stage, never a market staged without its symbols."""
    planned = market_shards(tx, market)
    mine = {o.shard: o for o in outcomes if o.shard in planned}
    missing = sorted(set(planned) - set(mine))
    if missing:
        keys = [shard.key for shard in missing]
        raise RuntimeError(f"{domain.name}: no outcome recorded for shards {keys}")
    result = DomainRun(market)
    out: dict[str, Files] = {t.name: {} for t in domain.tables}
    for shard in planned:
        result.add(mine[shard])
        for name in out:
            out[name] |= mine[shard].files[name]
    for name, files in out.items():
        tx.stage(name, market, files)
    return result


def run_market(tx: RunTransaction, market: str, domain: Domain, full: bool = False) -> DomainRun:
    """Every shard of `market` updated in turn in this process, then the market staged: what the
    Dagster step graph does shard step by shard step (`pipelines/incremental/assets.py`)."""
    outcomes = [run_shard(tx, shard, domain, full) for shard in market_shards(tx, market)]
    return stage_market(tx, market, domain, outcomes)
