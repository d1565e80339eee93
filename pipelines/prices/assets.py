"""Dagster adapters of the daily prices domain: the `daily_prices` + `price_rejects` multi-asset."""

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import dagster as dg
import polars as pl

from pipelines.catalog import (
    CORPORATE_ACTIONS,
    DAILY_PRICES,
    INSTRUMENTS,
    PRICE_ADJUSTMENTS,
    PRICE_DAYS,
    PRICE_REJECTS,
)
from pipelines.catalog.quality import check_name
from pipelines.catalog.state import PRICE_FINDINGS, PRICE_STATE
from pipelines.platform.check_rows import markdown
from pipelines.platform.daily import in_daily_job
from pipelines.platform.runs import RunDays, RunOptions, run_days, step_name
from pipelines.prices import checks, condition
from pipelines.prices.adjustments import ADJUSTING, UNPRICED, adjustment_factors
from pipelines.prices.sources.config import SourceRegistry
from pipelines.prices.update import MarketPrices, Request, update_market
from pipelines.warehouse.metadata import row_counts
from pipelines.warehouse.resource import WarehouseResource
from pipelines.warehouse.staging import RunTransaction
from pipelines.warehouse.tables import scan, stage_market_file, stored_rows

EMBEDDED_PRICES = dg.AssetKey("embedded_market_prices")
"""The embedded market's price files (another domain's asset), depended on by key in embedded mode."""

PRICE_CHECKS = {
    "unique_symbol_date": "At most one bar per (symbol, date).",
    "positive_prices": "open, high, low and close are positive finite numbers.",
    "high_at_least_open_close": "high >= max(open, close).",
    "low_at_most_open_close": "low <= min(open, close).",
    "no_missing_trading_days": "No calendar day (crypto) or weekday (others) missing inside a series; warns, since holidays exist.",
    "fresh": "Every listed symbol has a stored bar, its newest within its market's freshness budget of the run's day.",
    "moves_explained": "A stock's close moves more than 40% from the previous close only on a day with a corporate action; warns.",
    "dividends_priced": "Every dividend among a symbol's bars is less than the close before its ex-date (else it adjusts nothing); warns.",
}


def check_result(
    check: str, asset: str, offending: pl.DataFrame, severity: dg.AssetCheckSeverity
) -> dg.AssetCheckResult:
    """A check result that fails when any row offends, carrying the first rows as Markdown."""
    return dg.AssetCheckResult(
        asset_key=asset,
        check_name=check,
        passed=offending.is_empty(),
        severity=severity,
        metadata={
            "offending_count": offending.height,
            "offending_rows": dg.MetadataValue.md(markdown(offending)),
        },
    )


ROW_CHECKS = {
    "unique_symbol_date": dg.AssetCheckSeverity.ERROR,
    "positive_prices": dg.AssetCheckSeverity.ERROR,
    "high_at_least_open_close": dg.AssetCheckSeverity.ERROR,
    "low_at_most_open_close": dg.AssetCheckSeverity.ERROR,
    "no_missing_trading_days": dg.AssetCheckSeverity.WARN,
}
"""The checks decided on the bars a run wrote; `no_missing_trading_days` only warns (holidays)."""


@dataclass
class WrittenBars:
    """What the checks found in the bars a run wrote, gathered shard by shard (a shard holds whole
    symbols, so every per-symbol property is decided inside one)."""

    rows: int = 0
    newest: date | None = None
    offending: dict[str, list[pl.DataFrame]] = field(
        default_factory=lambda: {name: [] for name in ROW_CHECKS}
    )
    starts: list[pl.DataFrame] = field(default_factory=list)
    """Per shard: each written symbol's first written day (market, symbol, first)."""

    def add(self, bars: pl.DataFrame) -> None:
        """Check one shard's written bars (one market's, sorted or not)."""
        if bars.is_empty():
            return
        self.rows += bars.height
        newest = bars["date"].max()
        if isinstance(newest, date) and (self.newest is None or newest > self.newest):
            self.newest = newest
        market = bars["market"][0]
        self.starts.append(bars.group_by("market", "symbol").agg(first=pl.col("date").min()))
        found = {
            "unique_symbol_date": checks.duplicate_bars(bars),
            "positive_prices": checks.non_positive_prices(bars),
            "high_at_least_open_close": checks.high_below_open_close(bars),
            "low_at_most_open_close": checks.low_above_open_close(bars),
            "no_missing_trading_days": checks.missing_trading_days(bars, market).with_columns(
                market=pl.lit(market)
            ),
        }
        for name, rows in found.items():
            if rows.height:
                self.offending[name].append(rows)

    def rows_of(self, check: str) -> pl.DataFrame:
        frames = self.offending[check]
        return pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()

    def written_from(self, market: str) -> pl.DataFrame:
        """Each symbol of `market` the run wrote, with its first written day (symbol, first)."""
        starts = pl.concat([pl.DataFrame(schema=_STARTS), *self.starts], how="vertical_relaxed")
        of_market = starts.filter(pl.col("market") == market)
        return of_market.group_by("symbol").agg(pl.col("first").min())

    def findings(self, market: str) -> pl.DataFrame:
        """The row checks' findings in `market`'s written bars, by symbol and day."""
        found = {
            check_name(DAILY_PRICES.name, name): (self.rows_of(name), severity.value)
            for name, severity in ROW_CHECKS.items()
        }
        return condition.row_findings(market, found)


_STARTS = {"market": pl.String(), "symbol": pl.String(), "first": pl.Date()}


def price_check_results(
    written: Iterable[pl.DataFrame],
    states: dict[str, pl.DataFrame],
    reference: date,
    budgets: dict[str, int],
    listed: Mapping[str, Sequence[str]] | None = None,
) -> Iterator[dg.AssetCheckResult]:
    """One result per property: of the bars this run wrote (given shard by shard), and of every
    market's stored spans (and `listed` symbols: market -> the instruments the run asked for)."""
    found = WrittenBars()
    for bars in written:
        found.add(bars)
    yield from row_check_results(found)
    stale = stale_by_market(states, reference, budgets, listed)
    yield freshness_result(states, stale, reference, budgets)


def row_check_results(found: WrittenBars) -> Iterator[dg.AssetCheckResult]:
    for name, severity in ROW_CHECKS.items():
        yield check_result(name, "daily_prices", found.rows_of(name), severity)


def freshness_result(
    states: dict[str, pl.DataFrame],
    stale_symbols: dict[str, pl.DataFrame],
    reference: date,
    budgets: dict[str, int],
) -> dg.AssetCheckResult:
    """Fails (ERROR) when any symbol's newest stored bar is stale, when a listed symbol has no
    stored bar at all (its source answered nothing usable), or when a market holds no bar
    (`stale_symbols`: `stale_by_market` of the same states)."""
    stale = [rows.with_columns(market=pl.lit(market)) for market, rows in stale_symbols.items()]
    empty = sorted(market for market, state in states.items() if state.is_empty())
    offending = pl.concat(stale, how="diagonal_relaxed") if stale else pl.DataFrame()
    without_bars = offending.filter(pl.col("newest").is_null()) if stale else offending
    days = [d for s in states.values() for d in s["last_date"].to_list()]
    newest = max(days, default=None)
    return dg.AssetCheckResult(
        asset_key="daily_prices",
        check_name="fresh",
        passed=offending.is_empty() and not empty,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={
            "reference_day": reference.isoformat(),
            "max_age_days": dg.MetadataValue.json(budgets),
            "newest_date": str(newest) if newest is not None else "none",
            "markets_without_bars": dg.MetadataValue.json(empty),
            "symbols_without_bars": without_bars.height,
            "stale_symbols": dg.MetadataValue.md(markdown(offending)),
        },
    )


def stale_by_market(
    states: dict[str, pl.DataFrame],
    reference: date,
    budgets: dict[str, int],
    listed: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, pl.DataFrame]:
    """Per market, the symbols the fresh check finds stale at `reference` (symbol, newest, age)."""
    listed = listed or {}
    return {
        market: checks.stale_symbols(
            state.select("symbol", pl.col("last_date").alias("date")),
            reference,
            budgets[market],
            listed.get(market, ()),
        )
        for market, state in states.items()
    }


def rejects_result(asset: str, rejects: pl.DataFrame) -> dg.AssetCheckResult:
    """Warns when the run has rejects; metadata counts them by reason."""
    return dg.AssetCheckResult(
        asset_key=asset,
        check_name="no_rejects",
        passed=rejects.is_empty(),
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "reject_count": rejects.height,
            "reasons": dg.MetadataValue.md(markdown(checks.reasons_by_count(rejects))),
            "first_rejects": dg.MetadataValue.md(markdown(rejects)),
        },
    )


def _summary(results: list[MarketPrices]) -> dict[str, Any]:
    return {
        r.market: {
            "shards": r.shards,
            "appended": len(r.appended),
            "reloaded": len(r.reloaded),
            "removed": len(r.removed),
            "fetched": r.fetched,
        }
        for r in results
    }


def build_daily_prices(embedded: bool) -> dg.AssetsDefinition:
    """The multi-asset: every listed market's bars through the run's day, shard by shard."""
    specs = [
        dg.AssetCheckSpec(n, asset="daily_prices", description=d) for n, d in PRICE_CHECKS.items()
    ]
    specs.append(
        dg.AssetCheckSpec(
            "no_rejects", asset="price_rejects", description="No price row was rejected."
        )
    )

    def build() -> dg.AssetsDefinition:
        @dg.multi_asset(
            name="raw_daily_prices",
            specs=[
                dg.AssetSpec(
                    DAILY_PRICES.name,
                    description=DAILY_PRICES.description,
                    deps=[
                        INSTRUMENTS.name,
                        CORPORATE_ACTIONS.name,
                        *([EMBEDDED_PRICES] if embedded else []),
                    ],
                ),
                dg.AssetSpec(PRICE_REJECTS.name, description=PRICE_REJECTS.description),
                dg.AssetSpec(PRICE_DAYS.name, description=PRICE_DAYS.description),
                dg.AssetSpec(
                    PRICE_ADJUSTMENTS.name,
                    description=PRICE_ADJUSTMENTS.description,
                    deps=[CORPORATE_ACTIONS.name],
                ),
            ],
            check_specs=specs,
            group_name="raw",
        )
        def raw_daily_prices(
            context: dg.AssetExecutionContext,
            price_sources: dg.ResourceParam[SourceRegistry],
            warehouse: WarehouseResource,
            run_options: RunOptions,
        ) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
            tx = warehouse.transaction(context.run.run_id, step_name(context))
            days = run_days(run_options)
            requests = [_request(tx, market, days, run_options) for market in run_options.markets]
            before = {r.market: stored_rows(tx, PRICE_STATE, r.market) for r in requests}
            results = [update_market(tx, price_sources.for_market(r.market), r) for r in requests]
            # One shard's bars at a time: the step's memory stays that of a shard.
            found = WrittenBars()
            for shard in (frame for r in results for frame in r.written):
                found.add(shard.collect())
            rejects = pl.concat([r.rejects for r in results])
            states = {r.market: stored_rows(tx, PRICE_STATE, r.market) for r in results}
            yield dg.MaterializeResult(
                asset_key=DAILY_PRICES.name,
                metadata={
                    **row_counts(tx, DAILY_PRICES.name, found.rows),
                    "through": str(days.through),
                    "newest_date": str(found.newest) if found.newest is not None else "none",
                    "markets": dg.MetadataValue.json(_summary(results)),
                },
            )
            yield dg.MaterializeResult(
                asset_key=PRICE_REJECTS.name,
                metadata=row_counts(tx, PRICE_REJECTS.name, rejects.height),
            )
            budgets = {m: price_sources.freshness_days[m] for m in states}
            # One read of each market's actions serves the fresh check and the staged tables.
            actions = {r.market: stored_rows(tx, CORPORATE_ACTIONS, r.market) for r in requests}
            gone = {
                m: _delisted(found_actions, days.through) for m, found_actions in actions.items()
            }
            listed = {r.market: [s for s in r.symbols if s not in gone[r.market]] for r in requests}
            trading = {
                m: state.filter(~pl.col("symbol").is_in(sorted(gone[m])))
                for m, state in states.items()
            }
            stale = stale_by_market(trading, days.through, budgets, listed)
            staged = [
                stage_days(
                    tx, r, found, before[r.market], stale[r.market], days.through, actions[r.market]
                )
                for r in results
            ]
            day_rows = sum(s.days for s in staged)
            yield dg.MaterializeResult(
                asset_key=PRICE_DAYS.name, metadata=row_counts(tx, PRICE_DAYS.name, day_rows)
            )
            factor_rows = sum(s.adjustments for s in staged)
            yield dg.MaterializeResult(
                asset_key=PRICE_ADJUSTMENTS.name,
                metadata=row_counts(tx, PRICE_ADJUSTMENTS.name, factor_rows),
            )
            yield from row_check_results(found)
            moves = pl.concat([s.moves for s in staged], how="vertical_relaxed")
            yield check_result(
                "moves_explained", DAILY_PRICES.name, moves, dg.AssetCheckSeverity.WARN
            )
            unpriced = pl.concat([s.unpriced for s in staged], how="vertical_relaxed")
            yield check_result(
                "dividends_priced", DAILY_PRICES.name, unpriced, dg.AssetCheckSeverity.WARN
            )
            yield freshness_result(states, stale, days.through, budgets)
            yield rejects_result("price_rejects", rejects)

        return raw_daily_prices

    return in_daily_job(build())


@dataclass(frozen=True)
class StagedDays:
    """What staging one market's derived tables found: rows of `price_days` and
    `price_adjustments`, the unexplained moves and the dividends that could not be priced."""

    days: int
    adjustments: int
    moves: pl.DataFrame
    unpriced: pl.DataFrame


def stage_days(
    tx: RunTransaction,
    result: MarketPrices,
    found: WrittenBars,
    before: pl.DataFrame,
    stale: pl.DataFrame,
    through: date,
    actions: pl.DataFrame,
) -> StagedDays:
    """Stage one market's `price_findings`, `price_days` and `price_adjustments` after its bars
    (`actions`: the market's `corporate_actions` rows)."""
    market, written = result.market, found.written_from(result.market)
    carried = condition.carried_findings(
        stored_rows(tx, PRICE_FINDINGS, market), written, result.removed
    )
    stored = _stored_closes(tx, market, actions)
    moves = _unexplained_moves(market, stored, actions)
    factors, unpriced = _adjustment_factors(stored, actions)
    stage_market_file(tx, PRICE_ADJUSTMENTS, market, factors)
    kept = condition.findings(
        carried,
        found.findings(market),
        condition.boundary_gaps(market, written, before),
        condition.stale_findings(market, stale, through),
        condition.move_findings(market, moves),
        condition.dividend_findings(market, unpriced),
    )
    bars = stored.group_by("date").agg(bars=pl.len())
    rows = condition.price_days(market, bars, kept, through)
    stage_market_file(tx, PRICE_FINDINGS, market, kept)
    stage_market_file(tx, PRICE_DAYS, market, rows)
    return StagedDays(
        rows.height, factors.height, moves.with_columns(market=pl.lit(market)), unpriced
    )


def _stored_closes(tx: RunTransaction, market: str, actions: pl.DataFrame) -> pl.DataFrame:
    """Every stored bar's date and, in a market whose moves are checked or that has a split or a
    dividend, its symbol and close: one read serves the days' bar counts, the moves and the
    adjustment factors."""
    closes = market in checks.MOVE_MARKETS or actions["kind"].is_in(ADJUSTING).any()
    columns = ("symbol", "date", "close") if closes else ("date",)
    files = tx.partitions(DAILY_PRICES.name, market).values()
    return scan(tx.store.storage, files, DAILY_PRICES).select(columns).collect()


def _unexplained_moves(market: str, stored: pl.DataFrame, actions: pl.DataFrame) -> pl.DataFrame:
    """Every stored bar of a market with corporate actions that moved beyond the limit on a day
    without one (found over the whole history each run: an action reported later explains a
    move of an old day)."""
    if market not in checks.MOVE_MARKETS:
        return pl.DataFrame(schema={"symbol": pl.String, "date": pl.Date, "move": pl.Float64})
    return checks.unexplained_moves(stored, actions)


def _adjustment_factors(
    stored: pl.DataFrame, actions: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The market's `price_adjustments` rows and its unpriced dividends, from every stored bar
    (an action or a revised bar of any day changes them)."""
    adjusting = actions.filter(pl.col("kind").is_in(ADJUSTING))
    if adjusting.is_empty():
        return PRICE_ADJUSTMENTS.empty(), pl.DataFrame(schema=UNPRICED)
    wanted = pl.Series(adjusting["symbol"].unique().to_list(), dtype=pl.String).implode()
    return adjustment_factors(adjusting, stored.filter(pl.col("symbol").is_in(wanted)))


def _delisted(actions: pl.DataFrame, through: date) -> set[str]:
    """The symbols of a market's `actions` delisted on or before the run's day: no bar is due from
    them, so the fresh check leaves them out (their data stays, decisions.md, Corporate actions)."""
    gone = actions.filter((pl.col("kind") == "delisting") & (pl.col("date") <= through))
    return set(gone["symbol"].to_list())


def _request(tx: RunTransaction, market: str, days: RunDays, options: RunOptions) -> Request:
    instruments = stored_rows(tx, INSTRUMENTS, market)
    return Request(
        market=market,
        symbols=instruments["symbol"].to_list(),
        through=days.through,
        since=days.since,
        full=options.full,
        shard_symbols=options.shard_symbols,
    )
