"""The API's resources as msgspec Structs, field for field as the API specification names them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Literal

import msgspec

if TYPE_CHECKING:
    import polars as pl

Market = Literal["crypto", "forex", "commodities", "stocks"]
Dataset = Literal[
    "daily-prices",
    "indicator-snapshots",
    "trend-history",
    "trend-segments",
    "backtest-trades",
    "backtest-summaries",
    "briefs",
    "sentiment-daily",
    "corporate-actions",
]
"""The datasets bulk export offers, each a warehouse table of one market."""
FileFormat = Literal["parquet", "arrow", "csv"]
"""Bulk export's file formats: Parquet, the Arrow IPC stream format, CSV."""
Strategy = Literal["aggressive", "conservative"]
Fill = Literal["close", "next_open"]
Adjustment = Literal["split", "all", "raw"]
"""How a price series is adjusted for corporate actions: split (the API's default), all (splits
and dividends: total return) or raw (as traded)."""
"""How a backtest fills its orders: at the signal bar's close, or at the next bar's open."""
Action = Literal["Buy", "Sell", "Hold", "Stay"]
CheckStatus = Literal["ok", "degraded", "error"]


class Resource(msgspec.Struct, frozen=True, kw_only=True):
    """Base of every body the client decodes.

    Field names are the specification's exactly, so a resource reads like the API's documentation.
    Unknown fields are ignored rather than rejected: a server that adds a field must not break a
    client already deployed. Frozen, because the ETag cache hands the same decoded body out again.
    """


def _frame(
    rows: Sequence[Resource], row_type: type[Resource], dates: tuple[str, ...] = ("date",)
) -> pl.DataFrame:
    """Rows as a Polars frame in the resource's field order, `YYYY-MM-DD` columns as dates.

    Polars is imported here only, so the client runs without it.
    """
    try:
        import polars as pl
    except ImportError as missing:  # pragma: no cover (polars is installed where tests run)
        raise ImportError(
            "to_polars() needs Polars: pip install 'market-intelligence-client[polars]'"
        ) from missing
    columns = list(row_type.__struct_fields__)
    if not rows:
        return pl.DataFrame({name: [] for name in columns})
    # Every row is scanned: a column whose first values are null still gets its real type.
    frame = pl.DataFrame(msgspec.to_builtins(rows), infer_schema_length=None).select(columns)
    text = [name for name in dates if frame.schema[name] == pl.String]
    return frame.with_columns(pl.col(text).str.to_date("%Y-%m-%d"))


# -- system (/api/v1)


class Ping(Resource, frozen=True):
    text: str


class Check(Resource, frozen=True):
    """One backing datastore's health; `latency_ms` is null where no round trip was measured."""

    status: CheckStatus
    latency_ms: float | None


class SystemStatus(Resource, frozen=True):
    status: CheckStatus
    version: str
    time: datetime
    checks: dict[str, Check]


class DataVersion(Resource, frozen=True):
    version: str
    published: str
    changed: dict[str, list[str]]


class VersionList(Resource, frozen=True):
    versions: list[DataVersion]


DayCondition = Literal["available", "degraded", "pending", "missing"]


class DayStatus(Resource, frozen=True):
    """One day of a market's calendar: `checks` names the checks that failed on it."""

    date: str
    status: DayCondition
    checks: list[str]


class DataStatus(Resource, frozen=True):
    market: str
    days: list[DayStatus]


# -- instruments


class CorporateAction(Resource, frozen=True):
    """A split (`ratio`: new shares per old), a cash dividend (`amount` per share on the
    ex-date), a listing or a delisting, on `date` (YYYY-MM-DD)."""

    date: str
    kind: str
    ratio: float | None
    amount: float | None
    reason: str | None


class CorporateActionList(Resource, frozen=True):
    corporate_actions: list[CorporateAction]


class Instrument(Resource, frozen=True):
    name: str
    symbol: str
    logo: str


class InstrumentSearch(Resource, frozen=True):
    """At most 5 instruments, best match first."""

    instruments: list[Instrument]


class SymbolList(Resource, frozen=True):
    """One page of a market's symbols, sorted."""

    symbols: list[str]


class Scorecard(Resource, frozen=True):
    """An instrument's technical scorecard; `score` is 0 to 5, higher is better."""

    name: str
    strategy: str
    action: Action
    symbol: str
    icon: str
    total_trades: int | None
    score: float
    buy_and_hold_percentage: float
    in_trade: bool
    percentage_profit: float
    trend: str | None
    trend_duration: int | None


# -- newsroom and sentiment


class InstrumentAnalysis(Resource, frozen=True):
    timestamp: int
    date: str
    analysis: str


class MarketSummary(Resource, frozen=True):
    timestamp: int
    date: str
    summary: str


class Brief(Resource, frozen=True):
    """A news brief; `sentiment` runs from -5 (most bearish) to +5 (most bullish)."""

    timestamp: int | None
    date: str
    title: str | None
    symbols: list[str] | None
    body: str
    fud_fomo_bias: str | None
    fud_fomo_score: str | None
    sentiment: float | None
    tone: str | None
    article_id: str
    clout: str | None
    impacted_coins: list[str] | str | None
    speculation_score: str | None


class BriefList(Resource, frozen=True):
    """Briefs, newest first."""

    briefs: list[Brief]

    def to_polars(self) -> pl.DataFrame:
        return _frame(self.briefs, Brief, dates=())


class SentimentPoint(Resource, frozen=True):
    positive: int
    timestamp: int
    total: int
    date: str
    symbol: str
    neutral: int
    negative: int


class SentimentHistory(Resource, frozen=True):
    """Daily brief counts, newest first."""

    sentiment: list[SentimentPoint]

    def to_polars(self) -> pl.DataFrame:
        return _frame(self.sentiment, SentimentPoint)


# -- technical analysis


class PricePoint(Resource, frozen=True):
    """One daily bar; `price` is the close."""

    timestamp: int
    date: str
    price: float
    volume: float


class PriceHistory(Resource, frozen=True):
    """Daily prices, oldest first."""

    price_history: list[PricePoint]

    def to_polars(self) -> pl.DataFrame:
        return _frame(self.price_history, PricePoint)


class BollingerBands(Resource, frozen=True):
    upper: float
    lower: float
    middle: float


class FibonacciRetracement(Resource, frozen=True):
    high: float
    low: float
    levels: dict[str, float]


class Macd(Resource, frozen=True):
    histogram: float | None
    macd_line: float | None
    signal_line: float | None


class StochasticOscillator(Resource, frozen=True):
    k: float
    d: float


class IndicatorValues(Resource, frozen=True):
    adx: float | None
    atr: float
    bollinger_bands: BollingerBands
    ema: float
    fibonacci_retracement: FibonacciRetracement
    macd: Macd
    obv: float
    roc: float | None
    rsi: float | None
    sma: float
    stochastic_oscillator: StochasticOscillator
    vwap: float


class Indicators(Resource, frozen=True):
    """Each indicator's latest value over `period` days (the server clamps it to 2..365)."""

    period: int
    symbol: str
    indicators: IndicatorValues


# -- trade simulator


class CurrentAction(Resource, frozen=True):
    message: str
    action: Action
    symbol: str


class Trade(Resource, frozen=True):
    strategy: str
    exit_reason: str | None
    action: str
    symbol: str
    start_date: str | None
    profit_percent: float | None
    days_in_trade: int | None
    entry_price: float | None
    exit_price: float | None
    highest_price: float | None
    last_price: float | None
    lowest_price: float | None
    profit: float | None
    sell_date: str | None
    start_price: float | None


class TradeList(Resource, frozen=True):
    trades: list[Trade]

    def to_polars(self) -> pl.DataFrame:
        return _frame(self.trades, Trade, dates=("start_date", "sell_date"))


class BacktestSummary(Resource, frozen=True):
    """Every number may be null except `initial_investment`."""

    start_date: str | None
    end_date: str | None
    annualized_return: float | None
    average_loss: float | None
    average_loss_percent: float | None
    average_profit: float | None
    average_profit_percent: float | None
    average_trade_duration: float | None
    backtest_duration: float | str | None
    buy_and_hold_profit_percent: float | None
    final_value: float | None
    initial_investment: float
    peak_loss: float | None
    peak_profit: float | None
    profit_percent: float | None
    profitable_trade_percent: float | None
    total_profit: float | None
    profitable_trades: int | None
    total_trades: int | None
    unprofitable_trades: int | None


class Recommendation(Resource, frozen=True):
    strategy: str
    symbol: str
    score: float | None


class RecommendationList(Resource, frozen=True):
    """Best score first."""

    recommendations: list[Recommendation]


# -- trends


class TrendPoint(Resource, frozen=True):
    timestamp: int | None
    date: str | None
    price: float | None
    strength: str
    trend: str


class TrendHistory(Resource, frozen=True):
    """Daily trend points, newest first."""

    trends: list[TrendPoint]

    def to_polars(self) -> pl.DataFrame:
        return _frame(self.trends, TrendPoint)


class TrendExtremeDay(Resource, frozen=True):
    close: float
    timestamp: int
    date: str
    trend: str


class TrendEntry(Resource, frozen=True):
    """A trend episode: the running one or a completed segment. `signal_strength` is raw: its scale
    differs between markets."""

    close: float | None
    started_at: int | None
    started_on: str | None
    peak_loss: float
    trend: str
    long_term_average: float
    mid_term_average: float
    short_term_average: float
    max_price: float
    min_price: float
    max_price_day: TrendExtremeDay
    min_price_day: TrendExtremeDay
    peak_gain: float
    signal_strength: float
    trend_duration_days: int


class CurrentTrend(Resource, frozen=True):
    current_trend: TrendEntry
    last_updated: int | str | None


class TrendSegments(Resource, frozen=True):
    """Trend episodes, newest (the running one) first."""

    trend_segments: list[TrendEntry]
    last_updated: int | str | None

    def to_polars(self) -> pl.DataFrame:
        """One row per segment; the two extreme days stay nested as structs."""
        return _frame(self.trend_segments, TrendEntry, dates=("started_on",))


# -- the two legacy-form routes


class LegacyTrend(Resource, frozen=True):
    date: float
    trend: str
    trend_started_on: str
    price_on_trend_start: float
    duration_in_days: int
    peak_gain: float
    peak_loss: float
    max_price: float
    min_price: float


class LegacyCoinTrends(Resource, frozen=True):
    coin: str
    trends: list[LegacyTrend]


class LegacyTrends(Resource, frozen=True):
    """`/api/v2/market/trends/<COIN>`: a top-level `Success` member."""

    Success: LegacyCoinTrends


class LegacySentimentPoint(Resource, frozen=True):
    timestamp: float
    topic: str
    positive: int
    negative: int


class LegacySentiment(Resource, frozen=True):
    """`/api/v2/sentiment/sentiment/<COIN>/<DAYS>`: a top-level `Success` array."""

    Success: list[LegacySentimentPoint]


# -- balance


class Balance(Resource, frozen=True):
    """The x-tokens-* headers of the last metered response (see the specification's Limits)."""

    cost: int
    limit: int
    limit_today: int
    remaining: int
    remaining_today: int
