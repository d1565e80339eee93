"""Bodies of the /api/v2 market-data routes, field for field as the spec types them."""

from __future__ import annotations

from api.schemas.base import Wire


class Instrument(Wire, frozen=True):
    """An instrument's display metadata."""

    name: str
    symbol: str
    logo: str


class InstrumentSearch(Wire, frozen=True):
    """At most 5 instruments matching a query, best match first."""

    instruments: list[Instrument]


class SymbolList(Wire, frozen=True):
    """A page of a market's symbols."""

    symbols: list[str]


class InstrumentAnalysis(Wire, frozen=True):
    """The newest AI-written analysis of one coin."""

    timestamp: int
    date: str
    analysis: str


class MarketSummary(Wire, frozen=True):
    """Today's global crypto analysis."""

    timestamp: int
    date: str
    summary: str


class Brief(Wire, frozen=True):
    """A news brief; enrichment fields are null where not computed for that market or article."""

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


class BriefList(Wire, frozen=True):
    """Briefs, newest first."""

    briefs: list[Brief]


class SentimentPoint(Wire, frozen=True):
    """One day's brief counts for one symbol."""

    positive: int
    timestamp: int
    total: int
    date: str
    symbol: str
    neutral: int
    negative: int


class SentimentHistory(Wire, frozen=True):
    """Daily sentiment counts, newest first."""

    sentiment: list[SentimentPoint]


class PricePoint(Wire, frozen=True):
    """One daily bar: `price` is the close."""

    timestamp: int
    date: str
    price: float
    volume: float


class PriceHistory(Wire, frozen=True):
    """Daily prices, oldest first."""

    price_history: list[PricePoint]


class BollingerBands(Wire, frozen=True):
    upper: float
    lower: float
    middle: float


class FibonacciRetracement(Wire, frozen=True):
    high: float
    low: float
    levels: dict[str, float]


class Macd(Wire, frozen=True):
    histogram: float | None
    macd_line: float | None
    signal_line: float | None


class StochasticOscillator(Wire, frozen=True):
    k: float
    d: float


class IndicatorValues(Wire, frozen=True):
    """The `indicators` member of Indicators: each indicator's latest value over the period."""

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


class Indicators(Wire, frozen=True):
    """Technical indicators of one symbol over `period` days (clamped to 2..365)."""

    period: int
    symbol: str
    indicators: IndicatorValues


class CurrentAction(Wire, frozen=True):
    """What a strategy does on the latest bar: Buy, Sell, Hold or Stay."""

    message: str
    action: str
    symbol: str


class Scorecard(Wire, frozen=True):
    """An instrument's technical scorecard (score 0 to 5, higher is better)."""

    name: str
    strategy: str
    action: str
    symbol: str
    icon: str
    total_trades: int | None
    score: float
    buy_and_hold_percentage: float
    in_trade: bool
    percentage_profit: float
    trend: str | None
    trend_duration: int | None


class Trade(Wire, frozen=True):
    """One simulated trade."""

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


class TradeList(Wire, frozen=True):
    trades: list[Trade]


class BacktestSummary(Wire, frozen=True):
    """A strategy's backtest over `years`; every number may be null except initial_investment."""

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


class Recommendation(Wire, frozen=True):
    strategy: str
    symbol: str
    score: float | None


class RecommendationList(Wire, frozen=True):
    """Recommendations, best score first."""

    recommendations: list[Recommendation]


class TrendPoint(Wire, frozen=True):
    """One day of a symbol's trend."""

    timestamp: int | None
    date: str | None
    price: float | None
    strength: str
    trend: str


class TrendHistory(Wire, frozen=True):
    """Daily trend points, newest first."""

    trends: list[TrendPoint]


class TrendExtremeDay(Wire, frozen=True):
    """The highest- or lowest-closing day within a trend."""

    close: float
    timestamp: int
    date: str
    trend: str


class TrendEntry(Wire, frozen=True):
    """One trend episode: the running one (current trend) or a completed segment."""

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


class CurrentTrend(Wire, frozen=True):
    """The running trend; `last_updated` is when the market's trends were last recomputed."""

    current_trend: TrendEntry
    last_updated: int | str | None


class TrendSegments(Wire, frozen=True):
    """Trend episodes, newest (the running one) first."""

    trend_segments: list[TrendEntry]
    last_updated: int | str | None


class LegacyTrend(Wire, frozen=True):
    """One trend episode in the legacy trends route."""

    date: float
    trend: str
    trend_started_on: str
    price_on_trend_start: float
    duration_in_days: int
    peak_gain: float
    peak_loss: float
    max_price: float
    min_price: float


class LegacyCoinTrends(Wire, frozen=True):
    coin: str
    trends: list[LegacyTrend]


class LegacyTrendsSuccess(Wire, frozen=True):
    """The legacy trends envelope: a top-level `Success` member."""

    Success: LegacyCoinTrends


class LegacySentimentPoint(Wire, frozen=True):
    timestamp: float
    topic: str
    positive: int
    negative: int


class LegacySentimentSuccess(Wire, frozen=True):
    """The legacy sentiment envelope: a top-level `Success` array."""

    Success: list[LegacySentimentPoint]
