"""What each operation does, in the API's words: its summary and description in the OpenAPI
document (and wherever else the routes are described for readers), keyed by operation name (the
handler's `opt["operation"]`; `status`, never metered, by its handler's name).

Costs, parameters, bounds and error answers are not repeated here: `api.openapi.finish` adds them
from the declarations the routes and the metering layer read.
"""

from __future__ import annotations

OPERATIONS: dict[str, tuple[str, str]] = {
    "ping": ("Liveness check", "Answers a short word when the service is up. With a key, it is metered and carries the key's balance headers: the cheapest way to read a balance."),
    "status": ("Service status", "One check per backing datastore (warehouse, metering) with its latency; `status` is `ok`, `degraded` or `error`. Public: no key, no rate limit, no tokens."),
    "list-symbols": ("List a market's symbols", "The market's symbols in alphabetical order, a page at a time (`limit`, `skip`). A page shorter than `limit` is the last."),
    "get-corporate-actions": ("An instrument's corporate actions", "Its splits (ratio: new shares per old), cash dividends (amount per share on the ex-date), listing and delisting, oldest first; `from` and `to` (YYYY-MM-DD) narrow the days. An instrument without any answers an empty list."),
    "get-detail": ("An instrument's name and logo", "Display metadata of one crypto instrument. Other markets answer 404; their names come with the scorecard."),
    "search-instruments": ("Search crypto instruments", "At most 5 crypto instruments whose symbol or name matches the term, best match first."),
    "scorecard": ("An instrument's technical scorecard", "The action of the better of the two strategies on the latest bar, its score from 0 to 5, its backtest profit against buy-and-hold, and the running trend."),
    "get-article": ("One news brief", "A news brief by its article id, with the enrichment computed for it (sentiment, tone, instruments)."),
    "get-recent-briefs": ("Recent news briefs about a symbol", "The symbol's newest briefs first, `limit` of them."),
    "search-briefs": ("Search recent briefs by keywords", "Briefs about the symbol from the past 24 hours whose title holds every keyword, newest first."),
    "get-instrument-analysis": ("A coin's written analysis", "The newest written analysis of a crypto instrument: price move, indicators, trend, the strategies' actions and the news."),
    "get-market-summary": ("Today's crypto market summary", "A written summary of the crypto market on the latest day: breadth, leaders and laggards, the news tone and notable stories."),
    "get-sentiment-history": ("Daily news sentiment of a symbol", "Per day, how many briefs about the symbol were positive, neutral and negative, newest day first."),
    "get-indicators": ("Technical indicators on the latest bar", "SMA, EMA, RSI, MACD, Bollinger Bands, stochastic oscillator, ATR, VWAP, OBV, Fibonacci retracement, ADX and ROC over `period` days, on the symbol's latest bar, as TA-Lib computes them."),
    "get-price-history": ("Daily closes and volumes", "The symbol's daily bars, oldest first: the whole stored series, the newest `limit` points, or the points from `from` to `to` (epoch milliseconds, inclusive; the range first, then `limit` within it). A narrower request costs fewer tokens."),
    "get-backtest-history": ("A strategy's backtest trades", "Every trade of the strategy's backtest of a coin over the last `years` years, newest first."),
    "get-backtest-summary": ("A strategy's backtest summary", "Returns, trade counts, win rate and drawdown of the strategy's backtest of a coin, against buy-and-hold."),
    "get-current-action": ("What a strategy does today", "The strategy's action on a coin's latest bar: `Buy` (entered), `Sell` (exited), `Hold` (in a position) or `Stay` (flat), and why."),
    "get-recent-buys": ("Recent entries of the strategies", "The newest trade entries across crypto coins, newest first, a page at a time."),
    "get-recent-sells": ("Recent exits of the strategies", "The newest closed trades across crypto coins, newest exit first, a page at a time."),
    "get-recommendations": ("Coins a strategy is long on", "Coins whose current action is `Buy` or `Hold` for the strategy, with a score of at least `min_score`, best first."),
    "get-trend-history": ("A coin's daily trend", "The coin's trend direction and strength day by day, newest first, `limit` days."),
    "get-current-trend": ("The running trend episode", "The symbol's current trend episode (forex, commodities, stocks): direction, duration, gains, losses and averages."),
    "get-trend-segments": ("Past trend episodes", "The symbol's trend episodes, newest first; each begins where the previous ended, and the newest is the running one (forex, commodities, stocks)."),
    "bulk-export": ("A whole dataset as a file", "One market's dataset (prices, indicators, trends, backtests, briefs, sentiment, ...) as Parquet, Arrow or CSV, streamed; `from`, `to` and `symbols` narrow it. Costs 1 token per 1,000 rows (at least 10)."),
    "legacy-trends": ("Trend episodes, legacy form", "A coin's trend episodes under a top-level `Success` member, as the earlier interface answered."),
    "legacy-sentiment": ("Sentiment by topic, legacy form", "A coin's daily dominant news topic with positive and negative counts over `days` days, under `Success`."),
    "list-versions": ("The retained data versions", "Every retained data version newest first (`from`, `to` as RFC 3339 instants or YYYY-MM-DD days, `limit`): its id, when it was published and which tables of which markets it changed. Any data route's `as_of` takes an id or an instant and answers as that version did. Free with a valid key; counts toward the rate and connection limits."),
    "data-status": ("Each day's condition", "Per day of the market's calendar from `from` through `to` (YYYY-MM-DD, default the last 30 days; a longer range than 366 days is cut to the 366 through `to`), newest first: `available`; `degraded` (a WARN check failed); `pending` (absent, not due yet: a day is due at 02:30 UTC the next day); `missing` (an ERROR check failed, or absent although due), with the names of the failed checks. Free with a valid key; counts toward the rate and connection limits."),
}  # fmt: skip
"""Operation name -> (summary, description)."""

TAGS: dict[str, str] = {
    "system": "Liveness and status of the service.",
    "versions": "The retained data versions that `as_of` answers from, and each day's condition.",
    "instruments": "What a market holds: symbols, names, search, and each instrument's scorecard.",
    "technical-analysis": "Daily prices and technical indicators.",
    "newsroom": "News briefs with sentiment, and written analyses of coins and the crypto market.",
    "sentiment": "Daily counts of positive, neutral and negative news about a symbol.",
    "trades": "The trading strategies: backtests, current actions, signals, recommendations, and trends.",
    "reference": "What happened to an instrument: its splits, dividends, listing and delisting.",
    "bulk": "Whole datasets as files, for analysts and pipelines.",
    "legacy": "Routes kept in the earlier interface's response form.",
}
"""Tag -> what its routes are about."""


def operation_id(name: str) -> str:
    """The operation name as an identifier code generators make methods of (`getPriceHistory`)."""
    first, *rest = name.split("-")
    return first + "".join(part.capitalize() for part in rest)
