"""Bodies of the /api/v2 market-data routes, field for field as the spec types them."""

from __future__ import annotations

from api.schemas.base import Wire


class Instrument(Wire, frozen=True):
    """An instrument's display metadata."""

    name: str
    """Display name, e.g. Bitcoin."""
    symbol: str
    """Canonical upper-case symbol, e.g. BTC."""
    logo: str
    """URI of the instrument's logo."""


class InstrumentSearch(Wire, frozen=True):
    """At most 5 instruments matching a query, best match first."""

    instruments: list[Instrument]
    """At most 5 matches, best first."""


class SymbolList(Wire, frozen=True):
    """A page of a market's symbols."""

    symbols: list[str]
    """Upper-case symbols, alphabetical."""


class InstrumentAnalysis(Wire, frozen=True):
    """The newest AI-written analysis of one coin."""

    timestamp: int
    """Midnight UTC of the analysed day, epoch milliseconds."""
    date: str
    """The analysed day, YYYY-MM-DD."""
    analysis: str
    """The written analysis (plain text)."""


class MarketSummary(Wire, frozen=True):
    """Today's global crypto analysis."""

    timestamp: int
    """Midnight UTC of the summarised day, epoch milliseconds."""
    date: str
    """The summarised day, YYYY-MM-DD."""
    summary: str
    """The written summary (plain text)."""


class Brief(Wire, frozen=True):
    """A news brief; enrichment fields are null where not computed for that market or article."""

    timestamp: int | None
    """Publication instant, epoch milliseconds; null when the feed gave none."""
    date: str
    """Publication day (UTC), YYYY-MM-DD."""
    title: str | None
    """The article's headline."""
    symbols: list[str] | None
    """Instruments the article names, in order of first mention."""
    body: str
    """The article's text as the feed gave it, markup removed."""
    fud_fomo_bias: str | None
    """`fud`, `fomo` or `neutral`: whether the article plays on fear or on fear of missing out."""
    fud_fomo_score: str | None
    """Strength of the bias, "0" to "10"; "0" exactly when the bias is neutral."""
    sentiment: float | None
    """Sentiment from -5 (most bearish) to +5 (most bullish)."""
    tone: str | None
    """`bullish` (sentiment >= 1), `bearish` (<= -1) or `neutral`."""
    article_id: str
    """The article's id (get-article)."""
    clout: str | None
    """`high`, `medium` or `low`: how much the instruments named move their market."""
    impacted_coins: list[str] | str | None
    """Crypto only: the coins the article names; null elsewhere."""
    speculation_score: str | None
    """Share of rumour, hedging and prediction, "0" to "10"."""


class BriefList(Wire, frozen=True):
    """Briefs, newest first."""

    briefs: list[Brief]
    """Briefs, newest first."""


class SentimentPoint(Wire, frozen=True):
    """One day's brief counts for one symbol."""

    positive: int
    """Briefs with sentiment >= 1."""
    timestamp: int
    """Midnight UTC of the day, epoch milliseconds."""
    total: int
    """Briefs about the symbol that day."""
    date: str
    """The day, YYYY-MM-DD."""
    symbol: str
    """The symbol."""
    neutral: int
    """Briefs with sentiment between -1 and 1, unscored included."""
    negative: int
    """Briefs with sentiment <= -1."""


class SentimentHistory(Wire, frozen=True):
    """Daily sentiment counts, newest first."""

    sentiment: list[SentimentPoint]
    """One point per day with news, newest first."""


class PricePoint(Wire, frozen=True):
    """One daily bar: `price` is the close."""

    timestamp: int
    """Midnight UTC of the bar's day, epoch milliseconds."""
    date: str
    """The bar's day, YYYY-MM-DD."""
    price: float
    """The day's close, in the quote currency."""
    volume: float
    """The day's traded volume (units of the instrument; ticks for forex)."""


class PriceHistory(Wire, frozen=True):
    """Daily prices, oldest first."""

    price_history: list[PricePoint]
    """Daily bars, oldest first."""


class BollingerBands(Wire, frozen=True):
    """Bollinger Bands (period, 2 standard deviations)."""

    upper: float
    """Middle band plus 2 standard deviations."""
    lower: float
    """Middle band minus 2 standard deviations."""
    middle: float
    """SMA of close over the period."""


class FibonacciRetracement(Wire, frozen=True):
    """Fibonacci retracement levels between the period's high and low."""

    high: float
    """Highest high over the period."""
    low: float
    """Lowest low over the period."""
    levels: dict[str, float]
    """Retracement levels by ratio name (0.236, 0.382, 0.5, 0.618, 0.786), prices between high and low."""


class Macd(Wire, frozen=True):
    """MACD(12, 26, 9); null before enough bars."""

    histogram: float | None
    """MACD line minus signal line."""
    macd_line: float | None
    """EMA(12) minus EMA(26) of close."""
    signal_line: float | None
    """EMA(9) of the MACD line."""


class StochasticOscillator(Wire, frozen=True):
    """Stochastic oscillator over the period."""

    k: float
    """%K: where the close sits in the period's high-low range, 0 to 100."""
    d: float
    """%D: SMA(3) of %K."""


class IndicatorValues(Wire, frozen=True):
    """The `indicators` member of Indicators: each indicator's latest value over the period."""

    adx: float | None
    """Average directional index (trend strength, 0 to 100); null before enough bars."""
    atr: float
    """Average true range (Wilder), in price units."""
    bollinger_bands: BollingerBands
    """Bollinger Bands over the period."""
    ema: float
    """Exponential moving average of close."""
    fibonacci_retracement: FibonacciRetracement
    """Fibonacci retracement over the period's range."""
    macd: Macd
    """MACD(12, 26, 9) of close."""
    obv: float
    """On-balance volume, cumulative over the whole history."""
    roc: float | None
    """Rate of change of close over the period, percent; null before enough bars."""
    rsi: float | None
    """Relative strength index (Wilder), 0 to 100; null before enough bars."""
    sma: float
    """Simple moving average of close."""
    stochastic_oscillator: StochasticOscillator
    """Stochastic oscillator over the period."""
    vwap: float
    """Volume-weighted average price over the period."""


class Indicators(Wire, frozen=True):
    """Technical indicators of one symbol over `period` days (clamped to the periods served)."""

    period: int
    """The window in days the indicators use, after clamping to get-indicators' bounds."""
    symbol: str
    """The symbol."""
    indicators: IndicatorValues
    """Each indicator's value on the latest bar."""


class CurrentAction(Wire, frozen=True):
    """What a strategy does on the latest bar: Buy, Sell, Hold or Stay."""

    message: str
    """Why, in words: the entry rule met, the exit reason, or the position held."""
    action: str
    """`Buy` (entered on the latest bar), `Sell` (exited on it), `Hold` (in a position) or `Stay` (flat)."""
    symbol: str
    """The symbol."""


class Scorecard(Wire, frozen=True):
    """An instrument's technical scorecard (score 0 to 5, higher is better)."""

    name: str
    """The instrument's display name."""
    strategy: str
    """The strategy shown: the one with the higher score."""
    action: str
    """That strategy's action on the latest bar: `Buy`, `Sell`, `Hold` or `Stay`."""
    symbol: str
    """The symbol."""
    icon: str
    """An emoji for the action (Buy green, Sell red, Hold yellow, Stay white)."""
    total_trades: int | None
    """Trades in the strategy's longest backtest."""
    score: float
    """0 to 5, higher is better: profit against buy-and-hold, win rate and the action."""
    buy_and_hold_percentage: float
    """Buy-and-hold return over the longest backtest, percent."""
    in_trade: bool
    """Whether the strategy holds a position now."""
    percentage_profit: float
    """The strategy's return over the longest backtest, percent."""
    trend: str | None
    """The running trend's direction (`up`, `down`, `neutral`)."""
    trend_duration: int | None
    """Days the running trend has lasted."""


class Trade(Wire, frozen=True):
    """One simulated trade."""

    strategy: str
    """`aggressive` or `conservative`."""
    exit_reason: str | None
    """`signal`, `stop_loss`, `trailing_stop`, `take_profit` or `delisted` (closed at the last bar
    of a delisted instrument); null while open."""
    action: str
    """`Buy` while the trade is open, `Sell` once closed."""
    symbol: str
    """The symbol."""
    start_date: str | None
    """Day of the entry bar, YYYY-MM-DD."""
    profit_percent: float | None
    """Profit over the cost of entry, percent, fees included."""
    days_in_trade: int | None
    """Calendar days from entry to exit (to the latest bar while open)."""
    entry_price: float | None
    """Entry fill, slippage included."""
    exit_price: float | None
    """Exit fill, slippage included; null while open."""
    highest_price: float | None
    """Highest high from entry to exit (or the latest bar)."""
    last_price: float | None
    """Close of the exit bar, or the latest close while open."""
    lowest_price: float | None
    """Lowest low from entry to exit (or the latest bar)."""
    profit: float | None
    """Profit in the quote currency, fees included (open trades at the last price)."""
    sell_date: str | None
    """Day of the exit bar, YYYY-MM-DD; null while open."""
    start_price: float | None
    """Close of the entry bar, before slippage."""


class TradeList(Wire, frozen=True):
    """Simulated trades."""

    trades: list[Trade]
    """Trades, newest first."""


class BacktestSummary(Wire, frozen=True):
    """A strategy's backtest over `years`; every number may be null except initial_investment."""

    start_date: str | None
    """First bar of the window, YYYY-MM-DD."""
    end_date: str | None
    """Last bar of the symbol, YYYY-MM-DD."""
    annualized_return: float | None
    """Compound yearly return over the window, percent."""
    average_loss: float | None
    """Mean loss of the losing trades, quote currency."""
    average_loss_percent: float | None
    """Mean loss of the losing trades, percent."""
    average_profit: float | None
    """Mean profit of the winning trades, quote currency."""
    average_profit_percent: float | None
    """Mean profit of the winning trades, percent."""
    average_trade_duration: float | None
    """Mean days in trade."""
    backtest_duration: float | str | None
    """Calendar days from start_date to end_date."""
    buy_and_hold_profit_percent: float | None
    """Return of buying at the window's first close and holding, percent, no costs."""
    final_value: float | None
    """Cash plus the open position at the last close."""
    initial_investment: float
    """Cash at the start: 10,000 in the quote currency."""
    peak_loss: float | None
    """Largest drawdown of the equity curve from a running peak, percent (<= 0)."""
    peak_profit: float | None
    """Largest run-up of the equity curve from a running trough, percent (>= 0)."""
    profit_percent: float | None
    """total_profit over initial_investment, percent."""
    profitable_trade_percent: float | None
    """Share of closed trades with a profit, percent."""
    total_profit: float | None
    """final_value minus initial_investment."""
    profitable_trades: int | None
    """Closed trades with a profit."""
    total_trades: int | None
    """Trades in the window, the open one included."""
    unprofitable_trades: int | None
    """Closed trades without a profit."""


class Recommendation(Wire, frozen=True):
    """A symbol a strategy is long on now, with its score."""

    strategy: str
    """The strategy that is long on the symbol."""
    symbol: str
    """The symbol."""
    score: float | None
    """The scorecard's score, 0 to 5."""


class RecommendationList(Wire, frozen=True):
    """Recommendations, best score first."""

    recommendations: list[Recommendation]
    """Recommendations, best score first."""


class TrendPoint(Wire, frozen=True):
    """One day of a symbol's trend."""

    timestamp: int | None
    """Midnight UTC of the day, epoch milliseconds."""
    date: str | None
    """The day, YYYY-MM-DD."""
    price: float | None
    """The day's close."""
    strength: str
    """`weak`, `moderate` or `strong`, from the size of the trend signal."""
    trend: str
    """`up`, `down` or `neutral`."""


class TrendHistory(Wire, frozen=True):
    """Daily trend points, newest first."""

    trends: list[TrendPoint]
    """One point per day, newest first."""


class TrendExtremeDay(Wire, frozen=True):
    """The highest- or lowest-closing day within a trend."""

    close: float
    """That day's close."""
    timestamp: int
    """Midnight UTC of that day, epoch milliseconds."""
    date: str
    """That day, YYYY-MM-DD."""
    trend: str
    """The trend of the episode."""


class TrendEntry(Wire, frozen=True):
    """One trend episode: the running one (current trend) or a completed segment."""

    close: float | None
    """Close at the episode's end (the latest bar for the running one)."""
    started_at: int | None
    """Start of the episode, epoch milliseconds."""
    started_on: str | None
    """Start of the episode, ISO 8601 date."""
    peak_loss: float
    """Largest fall from a high within the episode, percent."""
    trend: str
    """`up`, `down` or `neutral`."""
    long_term_average: float
    """SMA(200) of close at the episode's end."""
    mid_term_average: float
    """SMA(50) of close at the episode's end."""
    short_term_average: float
    """SMA(20) of close at the episode's end."""
    max_price: float
    """Highest close within the episode."""
    min_price: float
    """Lowest close within the episode."""
    max_price_day: TrendExtremeDay
    """The highest-closing day."""
    min_price_day: TrendExtremeDay
    """The lowest-closing day."""
    peak_gain: float
    """Largest rise from a low within the episode, percent."""
    signal_strength: float
    """Mean trend signal over the episode, signed, in ATR units; compare within a market only."""
    trend_duration_days: int
    """Days the episode lasted (so far, for the running one)."""


class CurrentTrend(Wire, frozen=True):
    """The running trend; `last_updated` is when the market's trends were last recomputed."""

    current_trend: TrendEntry
    """The running episode."""
    last_updated: int | str | None
    """When the market's trends were last recomputed, epoch milliseconds."""


class TrendSegments(Wire, frozen=True):
    """Trend episodes, newest (the running one) first."""

    trend_segments: list[TrendEntry]
    """Episodes, newest first; the first is the running one."""
    last_updated: int | str | None
    """When the market's trends were last recomputed, epoch milliseconds."""


class LegacyTrend(Wire, frozen=True):
    """One trend episode in the legacy trends route."""

    date: float
    """End of the episode, epoch milliseconds."""
    trend: str
    """`up`, `down` or `neutral`."""
    trend_started_on: str
    """Start of the episode, ISO 8601."""
    price_on_trend_start: float
    """Close on the episode's first day."""
    duration_in_days: int
    """Days the episode lasted."""
    peak_gain: float
    """Largest percentage gain within the episode."""
    peak_loss: float
    """Largest percentage loss within the episode."""
    max_price: float
    """Highest close within the episode."""
    min_price: float
    """Lowest close within the episode."""


class LegacyCoinTrends(Wire, frozen=True):
    """A coin's trend episodes (legacy form)."""

    coin: str
    """The coin's symbol."""
    trends: list[LegacyTrend]
    """Its trend episodes."""


class LegacyTrendsSuccess(Wire, frozen=True):
    """The legacy trends envelope: a top-level `Success` member."""

    Success: LegacyCoinTrends
    """The coin and its trend episodes."""


class LegacySentimentPoint(Wire, frozen=True):
    """One day's dominant topic and counts (legacy form)."""

    timestamp: float
    """Midnight UTC of the day, epoch milliseconds."""
    topic: str
    """The day's dominant news topic."""
    positive: int
    """Positive briefs that day."""
    negative: int
    """Negative briefs that day."""


class LegacySentimentSuccess(Wire, frozen=True):
    """The legacy sentiment envelope: a top-level `Success` array."""

    Success: list[LegacySentimentPoint]
    """One point per day with news."""


class DayStatus(Wire, frozen=True):
    """One day of a market's calendar and its condition (decisions.md, Freshness)."""

    date: str
    """The day, YYYY-MM-DD (UTC)."""
    status: str
    """available, degraded (a WARN check failed), pending (not due yet) or missing (an ERROR
    check failed, or the day is absent although due)."""
    checks: list[str]
    """`asset.check` names of the checks that failed on the day (WARN and ERROR), sorted."""


class DataStatus(Wire, frozen=True):
    """A market's days, newest first."""

    market: str
    """The market the days are of."""
    days: list[DayStatus]
    """Newest first."""


class CorporateAction(Wire, frozen=True):
    """A split, a cash dividend, a listing or a delisting (decisions.md, Corporate actions)."""

    date: str
    """The day it takes effect, YYYY-MM-DD: a split's first bar at the new share count, a
    dividend's ex-date, a listing's first bar, the day after a delisting's last bar."""
    kind: str
    """split, dividend, listing or delisting."""
    ratio: float | None
    """A split's new shares per old share (4 for 4-for-1, 0.1 for 1-for-10); null otherwise."""
    amount: float | None
    """A dividend's cash per share, in the quote currency; null otherwise."""
    reason: str | None
    """Why, in the source's words (a delisting's acquired, bankrupt, moved); may be null."""


class CorporateActionList(Wire, frozen=True):
    """An instrument's corporate actions, oldest first."""

    corporate_actions: list[CorporateAction]
    """Oldest first; empty for an instrument without any in the range."""
