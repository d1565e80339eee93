"""Facts for written analyses gathered from the warehouse frames, and the two tables built from them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, timedelta
from typing import Any

import polars as pl

from pipelines.catalog.newsroom import INSTRUMENT_ANALYSES, MARKET_SUMMARIES
from pipelines.newsroom.sentiment import POSITIVE_FROM
from pipelines.newsroom.writing import numbers as fmt
from pipelines.newsroom.writing.facts import (
    MONTH_DAYS,
    RSI_PERIOD,
    SMA_PERIODS,
    WEEK_DAYS,
    Facts,
    MarketFacts,
    Mover,
)
from pipelines.trends.method import STRENGTH_BOUNDS, STRENGTHS

ANALYSED_MARKETS = frozenset({"crypto"})
"""Markets that get written analyses; the others' tables are empty (the routes are crypto only)."""
TOP_STORIES = 3
TOP_MOVERS = 3
CLOUT_BONUS = {"high": 2.0, "medium": 1.0}
"""Notability of a brief = |sentiment| + this bonus: a strong or a market-moving story stands out."""
_DAY_MS = 86_400_000


def day_ms(day: date) -> int:
    """00:00 UTC of the day in unix epoch milliseconds."""
    return (day - date(1970, 1, 1)).days * _DAY_MS


def _changes(prices: pl.DataFrame) -> pl.DataFrame:
    """Per symbol: latest day, its close and the % change over 1, 7 and 30 calendar days."""
    bars = prices.select("symbol", "date", "close")
    last = bars.sort("date").group_by("symbol").last().rename({"date": "day"})
    for days in (1, WEEK_DAYS, MONTH_DAYS):
        earlier = bars.rename({"close": f"close_{days}"}).with_columns(
            pl.col("date") + pl.duration(days=days)
        )
        last = last.join(
            earlier, left_on=["symbol", "day"], right_on=["symbol", "date"], how="left"
        )
        change = (pl.col("close") / pl.col(f"close_{days}") - 1) * 100
        last = last.with_columns(change.alias(f"change_{days}d")).drop(f"close_{days}")
    return last


def _indicators(snapshots: pl.DataFrame) -> pl.DataFrame:
    """Per symbol and day: RSI(14), the MACD histogram, SMA(50) and SMA(200)."""
    base = snapshots.filter(pl.col("period") == RSI_PERIOD).select(
        "symbol", pl.col("date").alias("day"), "rsi", "macd_histogram"
    )
    for period in SMA_PERIODS:
        sma = snapshots.filter(pl.col("period") == period).select(
            "symbol", pl.col("date").alias("day"), pl.col("sma").alias(f"sma_{period}")
        )
        base = base.join(sma, on=["symbol", "day"], how="full", coalesce=True)
    return base


def strength(signal: float | None) -> str | None:
    """weak, moderate or strong from |signal| (the trends domain's bounds)."""
    if signal is None:
        return None
    return STRENGTHS[sum(abs(signal) >= bound for bound in STRENGTH_BOUNDS)]


def _trends(segments: pl.DataFrame) -> pl.DataFrame:
    return segments.filter(pl.col("is_running")).select(
        "symbol",
        "trend",
        pl.col("signal_strength"),
        pl.col("trend_duration_days").alias("trend_days"),
    )


def _actions(actions: pl.DataFrame) -> pl.DataFrame:
    frames = [
        actions.filter(pl.col("strategy") == s).select(
            "symbol", pl.col("action").alias(f"{s}_action")
        )
        for s in ("aggressive", "conservative")
    ]
    return frames[0].join(frames[1], on="symbol", how="full", coalesce=True)


def notability() -> pl.Expr:
    bonus = pl.col("clout").replace_strict(CLOUT_BONUS, default=0.0, return_dtype=pl.Float64)
    return pl.col("sentiment").abs().fill_null(0.0).fill_nan(0.0) + bonus


def _top_titles(briefs: pl.DataFrame) -> list[str]:
    ranked = briefs.filter(
        pl.col("title").is_not_null() & (pl.col("title").str.strip_chars() != "")
    )
    ranked = ranked.with_columns(notability().alias("_n")).sort(
        ["_n", "timestamp", "article_id"], descending=[True, True, False]
    )
    return list(dict.fromkeys(t.strip() for t in ranked["title"].to_list()))[:TOP_STORIES]


def news_by_symbol(briefs: pl.DataFrame, days: pl.DataFrame) -> dict[str, dict[str, Any]]:
    """Per symbol of `days` (symbol, day): brief counts, mean sentiment and top titles, the day
    and the 7 days to it; computed for every symbol at once."""
    week = (
        briefs.select("symbols", "date", "sentiment", "title", "clout", "timestamp", "article_id")
        .explode("symbols")
        .rename({"symbols": "symbol"})
        .join(days, on="symbol")
        .filter(
            pl.col("date").is_between(pl.col("day") - timedelta(days=WEEK_DAYS - 1), pl.col("day"))
        )
        .unique(["symbol", "article_id"], keep="first", maintain_order=True)
        .with_columns(
            _today=pl.col("date") == pl.col("day"),
            _score=pl.col("sentiment").fill_nan(None),
            _title=pl.col("title").str.strip_chars(),
            _n=notability(),
        )
    )
    titled = week.filter(pl.col("_title").is_not_null() & (pl.col("_title") != "")).sort(
        ["symbol", "_n", "timestamp", "article_id"], descending=[False, True, True, False]
    )
    titles = titled.group_by("symbol", maintain_order=True).agg(
        pl.col("_title").unique(maintain_order=True).head(TOP_STORIES).alias("stories")
    )
    # summed in order of value: the same briefs in another row order give the same float mean
    counts = (
        week.sort("symbol", "_score", nulls_last=True)
        .group_by("symbol")
        .agg(
            briefs_today=pl.col("_today").sum(),
            briefs_7d=pl.len(),
            sentiment_today=pl.col("_score").filter("_today").mean(),
            sentiment_7d=pl.col("_score").mean(),
        )
    )
    joined = counts.join(titles, on="symbol", how="left")
    return {
        row["symbol"]: {
            "briefs_today": int(row["briefs_today"]),
            "briefs_7d": int(row["briefs_7d"]),
            "sentiment_today": row["sentiment_today"],
            "sentiment_7d": row["sentiment_7d"],
            "stories": tuple(row["stories"] or ()),
        }
        for row in joined.iter_rows(named=True)
    }


def mean_sentiment(briefs: pl.DataFrame) -> float | None:
    """The briefs' mean sentiment (unscored ones left out), summed in order of value: the same
    briefs in another row order (daily runs against one full run) give the same float."""
    scored = briefs["sentiment"].drop_nulls().drop_nans().sort()
    return None if scored.is_empty() else float(scored.mean())  # type: ignore[arg-type]


def gather_facts(
    market: str,
    daily_prices: pl.DataFrame,
    instruments: pl.DataFrame,
    indicator_snapshots: pl.DataFrame,
    trend_segments: pl.DataFrame,
    current_actions: pl.DataFrame,
    briefs: pl.DataFrame,
) -> list[Facts]:
    """Facts of every instrument of the market with a price bar, on its latest bar; by symbol."""
    if market not in ANALYSED_MARKETS:
        return []
    mine = [
        frame.filter(pl.col("market") == market)
        for frame in (
            daily_prices,
            instruments,
            indicator_snapshots,
            trend_segments,
            current_actions,
            briefs,
        )
    ]
    prices, names, snapshots, segments, actions, news = mine
    table = (
        _changes(prices)
        .join(names.select("symbol", "name"), on="symbol", how="inner")
        .join(_indicators(snapshots), on=["symbol", "day"], how="left")
        .join(_trends(segments), on="symbol", how="left")
        .join(_actions(actions), on="symbol", how="left")
        .sort("symbol")
    )
    news_of = news_by_symbol(news, table.select("symbol", "day"))
    return [_facts(row, news_of.get(row["symbol"], {})) for row in table.iter_rows(named=True)]


def _facts(row: dict[str, Any], news: dict[str, Any]) -> Facts:
    day: date = row["day"]
    return Facts(
        symbol=row["symbol"],
        name=row["name"],
        date=day.isoformat(),
        close=row["close"],
        change_1d=_finite(row["change_1d"]),
        change_7d=_finite(row["change_7d"]),
        change_30d=_finite(row["change_30d"]),
        rsi=_finite(row["rsi"]),
        macd_histogram=_finite(row["macd_histogram"]),
        sma_50=_finite(row["sma_50"]),
        sma_200=_finite(row["sma_200"]),
        trend=row["trend"],
        trend_strength=None if row["trend"] == "neutral" else strength(row["signal_strength"]),
        trend_days=row["trend_days"],
        aggressive_action=row["aggressive_action"],
        conservative_action=row["conservative_action"],
        **news,
    )


def _finite(value: float | None) -> float | None:
    return (
        None if value is None or value != value or value in (float("inf"), float("-inf")) else value
    )


def gather_market_facts(
    market: str, facts: Sequence[Facts], briefs: pl.DataFrame
) -> MarketFacts | None:
    """The market on its latest day: breadth and movers over the instruments' facts, the day's news."""
    if market not in ANALYSED_MARKETS or not facts:
        return None
    latest = max(f.date for f in facts)
    moved = [
        Mover(f.symbol, f.change_1d) for f in facts if f.date == latest and f.change_1d is not None
    ]
    signs = [fmt.sign(m.change_1d) for m in moved]
    ranked = sorted(moved, key=lambda m: (-m.change_1d, m.symbol))
    day = date.fromisoformat(latest)
    todays = briefs.filter((pl.col("market") == market) & (pl.col("date") == day))
    scores = todays["sentiment"].fill_nan(None)
    return MarketFacts(
        market=market,
        date=latest,
        instruments=len(moved),
        advancers=signs.count(1),
        decliners=signs.count(-1),
        unchanged=signs.count(0),
        leaders=tuple(m for m in ranked if fmt.sign(m.change_1d) > 0)[:TOP_MOVERS],
        laggards=tuple(m for m in reversed(ranked) if fmt.sign(m.change_1d) < 0)[:TOP_MOVERS],
        briefs=todays.height,
        sentiment=mean_sentiment(todays),
        bullish=int((scores >= POSITIVE_FROM).sum()),
        bearish=int((scores <= -POSITIVE_FROM).sum()),
        stories=tuple(_top_titles(todays)),
    )


def analyses_table(
    market: str, facts: Sequence[Facts], texts: Sequence[tuple[str, str]]
) -> pl.DataFrame:
    """`instrument_analyses` rows: one per facts, with its (text, writer)."""
    rows = [
        {
            "market": market,
            "symbol": f.symbol,
            "date": date.fromisoformat(f.date),
            "timestamp": day_ms(date.fromisoformat(f.date)),
            "analysis": text,
            "writer": writer,
        }
        for f, (text, writer) in zip(facts, texts, strict=True)
    ]
    return INSTRUMENT_ANALYSES.conform(pl.DataFrame(rows, schema=INSTRUMENT_ANALYSES.schema))


def summaries_table(
    market: str, facts: MarketFacts | None, text: tuple[str, str] | None
) -> pl.DataFrame:
    """`market_summaries`: one row for the latest day, none without facts."""
    if facts is None or text is None:
        return MARKET_SUMMARIES.empty()
    day = date.fromisoformat(facts.date)
    row = {
        "market": market,
        "date": day,
        "timestamp": day_ms(day),
        "summary": text[0],
        "writer": text[1],
    }
    return MARKET_SUMMARIES.conform(pl.DataFrame([row], schema=MARKET_SUMMARIES.schema))


def missing_analyses(
    market: str, daily_prices: pl.DataFrame, instruments: pl.DataFrame, analyses: pl.DataFrame
) -> pl.DataFrame:
    """Instruments of an analysed market with a price bar but no non-empty analysis."""
    if market not in ANALYSED_MARKETS:
        return pl.DataFrame(schema={"symbol": pl.String})
    priced = daily_prices.filter(pl.col("market") == market).select("symbol").unique()
    listed = instruments.filter(pl.col("market") == market).select("symbol")
    written = analyses.filter(pl.col("analysis").str.strip_chars() != "").select("symbol")
    return listed.join(priced, on="symbol").join(written, on="symbol", how="anti").sort("symbol")


def unsupported_numbers(analyses: pl.DataFrame, facts: Sequence[Facts]) -> pl.DataFrame:
    """(symbol, date, numbers) of every analysis citing a number that is not among its facts."""
    by_key = {(f.symbol, f.date): f for f in facts}
    rows = []
    for row in analyses.iter_rows(named=True):
        key = (row["symbol"], row["date"].isoformat())
        bad = ["no facts"] if key not in by_key else fmt.unsupported(row["analysis"], by_key[key])
        if bad:
            rows.append({"symbol": key[0], "date": key[1], "numbers": ", ".join(bad)})
    return pl.DataFrame(rows, schema={"symbol": pl.String, "date": pl.String, "numbers": pl.String})


def unsupported_summary_numbers(summaries: pl.DataFrame, facts: MarketFacts | None) -> pl.DataFrame:
    """(date, numbers) of a summary citing a number that is not among the market's facts."""
    rows = []
    for row in summaries.iter_rows(named=True):
        day = row["date"].isoformat()
        ok = facts is not None and facts.date == day
        bad = fmt.unsupported_market(row["summary"], facts) if ok and facts else ["no facts"]
        if bad:
            rows.append({"date": day, "numbers": ", ".join(bad)})
    return pl.DataFrame(rows, schema={"date": pl.String, "numbers": pl.String})


def missing_summary(
    market: str, facts: MarketFacts | None, summaries: pl.DataFrame
) -> pl.DataFrame:
    """The latest day of an analysed market when it has no non-empty summary."""
    if market not in ANALYSED_MARKETS or facts is None:
        return pl.DataFrame(schema={"date": pl.String})
    written = summaries.filter(
        (pl.col("date") == date.fromisoformat(facts.date))
        & (pl.col("summary").str.strip_chars() != "")
    )
    return pl.DataFrame(
        {"date": [] if written.height else [facts.date]}, schema={"date": pl.String}
    )
