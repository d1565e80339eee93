"""Internal tables the pipeline carries between runs: what it has read, and each domain's per-symbol state.

They live in the warehouse beside the data tables and are committed with them (a run's state and
its tables become visible together), but no reader serves them: they are not in `TABLES`, the API
and the DuckDB views never see them. docs/pipeline.md says what each domain keeps.
"""

from __future__ import annotations

import polars as pl

from pipelines.catalog.indicators import PERIOD_COUNT
from pipelines.catalog.schema import Column, Table

STATE_COLUMNS: tuple[Column, ...] = (
    Column("market", pl.String(), "market of the instrument"),
    Column("symbol", pl.String(), "canonical upper-case symbol"),
    Column("code_version", pl.String(), "hash of the domain's code the state was computed with"),
    Column(
        "history_id", pl.Int64(), "price_state.history_id of the bars the state was computed from"
    ),
    Column("last_date", pl.Date(), "the last bar the state includes"),
    Column("bars", pl.Int64(), "bars the state includes"),
)
"""What every domain's state row starts with: enough to decide the symbol's mode in the next run."""

PRICE_STATE = Table(
    name="price_state",
    description="Per symbol: the stored history's span and an id that changes whenever a stored bar does.",
    columns=(
        Column("market", pl.String(), "market of the instrument"),
        Column("symbol", pl.String(), "canonical upper-case symbol"),
        Column("first_date", pl.Date(), "first stored bar"),
        Column("last_date", pl.Date(), "last stored bar"),
        Column("bars", pl.Int64(), "stored bars"),
        Column(
            "history_id",
            pl.Int64(),
            "random id, new whenever the symbol's stored bars change other than by appending days "
            "(a revision, a first load): a domain whose state names another id recomputes in full",
        ),
    ),
    key=("market", "symbol"),
)


def files_read(name: str, what: str) -> Table:
    """Source files a connector has read: a later run reads only files that are new or changed."""
    return Table(
        name=name,
        description=f"{what} files read so far, with the size and modification time seen then.",
        columns=(
            Column("market", pl.String(), "market the file belongs to"),
            Column("path", pl.String(), "the file's path under the source's root"),
            Column("size", pl.Int64(), "size in bytes when read"),
            Column("mtime_ns", pl.Int64(), "modification time when read, ns since the epoch"),
        ),
        key=("market", "path"),
    )


PRICE_FILES = files_read("price_files", "Price")
NEWS_FILES = files_read("news_files", "News feed")

TREND_STATE = Table(
    name="trend_state",
    description="Per symbol: the trend labelling state after its last bar, and its last final segment.",
    columns=(
        *STATE_COLUMNS,
        Column("machine_state", pl.Int64(), "the label in force: 1 up, 0 neutral, -1 down"),
        Column("machine_pending", pl.Int64(), "the label wanted on the last bar"),
        Column("machine_run", pl.Int64(), "bars in a row it has been wanted"),
        Column(
            "final_segment",
            pl.Int64(),
            "segment of the newest bar no later bar can relabel (CONFIRM_BARS - 1 before the last)",
        ),
        Column("final_segment_start", pl.Date(), "the first day of that segment"),
        Column(
            "context_start",
            pl.Date(),
            "the first of the last bars the next run reads again (2 x 200 + 5 of them)",
        ),
    ),
    key=("market", "symbol"),
)

INDICATOR_PERIODS = PERIOD_COUNT
"""The periods of `indicator_snapshots`: the width of every per-period state column."""
INDICATOR_SCALARS: tuple[str, ...] = (
    "prev_close",
    "prev_high",
    "prev_low",
    "close_sum",
    "gain_sum",
    "loss_sum",
    "tr_sum",
    "plus_dm_sum",
    "minus_dm_sum",
    "macd_fast",
    "macd_slow",
    "macd_signal",
    "macd_fast_sum",
    "macd_signal_sum",
    "obv",
)
INDICATOR_GRIDS: tuple[str, ...] = (
    "ema",
    "avg_gain",
    "avg_loss",
    "atr",
    "plus_dm",
    "minus_dm",
    "tr",
    "adx",
    "dx_total",
)

INDICATOR_STATE = Table(
    name="indicator_state",
    description=(
        "Per symbol: the recursive indicators' state after its last bar (pipelines/indicators/"
        "recursive.py): running sums, MACD and OBV, and per period EMA, Wilder averages and ADX."
    ),
    columns=(
        *STATE_COLUMNS,
        Column(
            "context_start", pl.Date(), "the first of the last 370 bars the next run reads again"
        ),
        *(
            Column(name, pl.Float64(), "recursion state (NaN until seeded)")
            for name in INDICATOR_SCALARS
        ),
        *(
            Column(name, pl.Array(pl.Float64, INDICATOR_PERIODS), "per-period recursion state")
            for name in INDICATOR_GRIDS
        ),
    ),
    key=("market", "symbol"),
    compressed=False,
)

BRIEFS_STATE = Table(
    name="briefs_state",
    description="Per market: what its briefs were tagged and enriched with (a change re-enriches every article).",
    columns=(
        Column("market", pl.String(), "market of the briefs"),
        Column("instruments", pl.String(), "hash of the instrument list articles were tagged with"),
        Column("code_version", pl.String(), "hash of the tagging and enrichment code"),
    ),
    key=("market",),
)

SIGNAL_PERIODS = 5
"""The strategies' indicator periods (EMA 10, 20, 30, 50; RSI and ADX 14): 10, 14, 20, 30, 50."""

SIGNAL_STATE = Table(
    name="signal_state",
    description=(
        "Per symbol: what the strategies' signals carry after its last bar (pipelines/simulator/"
        "signals.py): the indicators' recursion state for periods 10, 14, 20, 30, 50, the SMA "
        "running sums and whether the conservative trend held."
    ),
    columns=(
        *STATE_COLUMNS,
        Column(
            "context_start", pl.Date(), "the first of the last 199 bars the next run reads again"
        ),
        *(
            Column(name, pl.Float64(), "recursion state (NaN until seeded)")
            for name in INDICATOR_SCALARS
        ),
        *(
            Column(name, pl.Array(pl.Float64, SIGNAL_PERIODS), "per-period recursion state")
            for name in INDICATOR_GRIDS
        ),
        Column("sma_exit_total", pl.Float64(), "SMA(50) running sum, ready for the next bar"),
        Column("sma_trend_total", pl.Float64(), "SMA(200) running sum, ready for the next bar"),
        Column("trending", pl.Boolean(), "the conservative trend held on the last bar"),
    ),
    key=("market", "symbol"),
)

STRATEGY_SIGNALS = Table(
    name="strategy_signals",
    description="Each strategy's entry and exit signal on every bar (what the backtests replay).",
    columns=(
        Column("market", pl.String(), "market of the instrument"),
        Column("symbol", pl.String(), "canonical upper-case symbol"),
        Column("date", pl.Date(), "the bar's day (UTC)"),
        Column("aggressive_entry", pl.Boolean(), "EMA(10) crossed above EMA(30) with RSI(14) < 70"),
        Column("aggressive_exit", pl.Boolean(), "EMA(10) crossed below EMA(30)"),
        Column(
            "conservative_entry", pl.Boolean(), "the conservative trend began, close >= SMA(50)"
        ),
        Column("conservative_exit", pl.Boolean(), "close < SMA(50)"),
    ),
    key=("market", "symbol", "date"),
)

BACKTEST_STATE = Table(
    name="backtest_state",
    description=(
        "Per symbol, strategy and backtest window: what its run carries on from after the last "
        "bar besides the stored trades and summary (pipelines/simulator/resume.py)."
    ),
    columns=(
        Column("market", pl.String(), "market of the instrument"),
        Column("symbol", pl.String(), "canonical upper-case symbol"),
        Column("strategy", pl.String(), "aggressive or conservative"),
        Column("fill", pl.String(), "close or next_open, as in backtest_summaries"),
        Column("years", pl.Int32(), "the window, as in backtest_summaries"),
        Column("peak", pl.Float64(), "running maximum of the window's equity"),
        Column("trough", pl.Float64(), "running minimum of the window's equity"),
        Column("drawdown", pl.Float64(), "largest fall from a running maximum (fraction, <= 0)"),
        Column("run_up", pl.Float64(), "largest rise over a running minimum (fraction, >= 0)"),
        Column("max_close", pl.Float64(), "highest close since the open trade's entry (NaN: flat)"),
        Column(
            "pending",
            pl.Int32(),
            "next_open fills: the order the last bar placed (0 none, 1..4 an exit's reason code "
            "as in pipelines/simulator/engine.py, 5 an entry); 0 for close fills",
        ),
        Column(
            "first_entry", pl.Date(), "day of the window's first trade (null: none)", nullable=True
        ),
    ),
    key=("market", "symbol", "strategy", "fill", "years"),
)

PRICE_FINDINGS = Table(
    name="price_findings",
    description=(
        "What the daily prices' checks found, per symbol and day: `price_days` counts them by day. "
        "A symbol's findings from a day on are replaced whenever its bars from that day on are "
        "written again, and a removed symbol's go."
    ),
    columns=(
        Column("market", pl.String(), "market of the instrument"),
        Column("symbol", pl.String(), "canonical upper-case symbol"),
        Column("date", pl.Date(), "the day the finding is about"),
        Column("check", pl.String(), "`asset.check` name of the failed check"),
        Column("severity", pl.String(), "WARN or ERROR"),
    ),
    key=("market", "symbol", "date", "check"),
)

STATE_TABLES: dict[str, Table] = {
    t.name: t
    for t in (
        PRICE_STATE,
        PRICE_FINDINGS,
        PRICE_FILES,
        NEWS_FILES,
        TREND_STATE,
        INDICATOR_STATE,
        BRIEFS_STATE,
        SIGNAL_STATE,
        STRATEGY_SIGNALS,
        BACKTEST_STATE,
    )
}
"""Every internal table by name (domain states register here as they are defined)."""
