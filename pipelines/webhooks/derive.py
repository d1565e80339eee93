"""Events derived from warehouse tables: pure functions from frames to events with stable ids."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any

import polars as pl

from pipelines.webhooks.config import CustomFeed, SentimentRule
from pipelines.webhooks.events import (
    ActionChanged,
    CustomRow,
    Event,
    NewsPublished,
    PortfolioUpdated,
    SentimentShift,
    TradeExecuted,
    make_event,
)

ActionKey = tuple[str, str, str]
"""(market, symbol, strategy)."""


def _day(value: date) -> str:
    return f"{value.isoformat()}T00:00:00+00:00"


def _instant(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


def news_events(briefs: pl.DataFrame) -> list[Event]:
    """One `news.published` per brief, identified by (market, article_id)."""
    events = []
    for row in briefs.iter_rows(named=True):
        body = row["body"] or ""
        data = NewsPublished(
            market=row["market"],
            article_id=row["article_id"],
            published_at=_instant(row["timestamp"]),
            title=row["title"],
            symbols=list(row["symbols"] or []),
            sentiment=row["sentiment"],
            tone=row["tone"],
            topic=row["topic"],
            link=row["link"],
            summary=body[:280],
        )
        facts = (row["market"], row["article_id"])
        text = f"{row['title'] or ''}\n{body}"
        events.append(
            make_event(
                "news.published",
                facts,
                data.published_at,
                data,
                row["market"],
                tuple(data.symbols),
                text=text,
            )
        )
    return events


def _longest_window(frame: pl.DataFrame) -> pl.DataFrame:
    """Rows of each (market, symbol, strategy)'s largest `years` filled at the close: the
    full-history backtest whose trades the current actions follow."""
    at_close = frame.filter(pl.col("fill") == "close")
    longest = pl.col("years") == pl.col("years").max().over("market", "symbol", "strategy")
    return at_close.filter(longest)


def trade_events(trades: pl.DataFrame) -> list[Event]:
    """`trade.executed` for every entry (buy) and exit (sell) of the full-history backtests."""
    events = []
    for row in _longest_window(trades).iter_rows(named=True):
        key = (row["market"], row["symbol"], row["strategy"])
        legs: list[tuple[str, date, float, Any, Any, Any]] = [
            ("buy", row["start_date"], row["entry_price"], None, None, None)
        ]
        if row["sell_date"] is not None:
            legs.append(
                (
                    "sell",
                    row["sell_date"],
                    row["exit_price"],
                    row["exit_reason"],
                    row["profit"],
                    row["profit_percent"],
                )
            )
        for side, day, price, reason, profit, percent in legs:
            data = TradeExecuted(
                market=key[0],
                symbol=key[1],
                strategy=key[2],
                side=side,
                date=day.isoformat(),
                price=price,
                units=row["units"],
                exit_reason=reason,
                profit=profit,
                profit_percent=percent,
            )
            facts = (*key, side, row["start_date"], day)
            events.append(
                make_event("trade.executed", facts, _day(day), data, key[0], (key[1],), key[2])
            )
    return events


def portfolio_events(summaries: pl.DataFrame) -> list[Event]:
    """`portfolio.updated` per full-history backtest and latest bar (one per new bar)."""
    events = []
    for row in _longest_window(summaries).iter_rows(named=True):
        key = (row["market"], row["symbol"], row["strategy"])
        data = PortfolioUpdated(
            market=key[0],
            symbol=key[1],
            strategy=key[2],
            date=row["end_date"].isoformat(),
            years=row["years"],
            initial_investment=row["initial_investment"],
            final_value=row["final_value"],
            total_profit=row["total_profit"],
            profit_percent=row["profit_percent"],
        )
        facts = (*key, row["end_date"])
        events.append(
            make_event(
                "portfolio.updated", facts, _day(row["end_date"]), data, key[0], (key[1],), key[2]
            )
        )
    return events


def action_change_events(
    actions: pl.DataFrame, previous: Mapping[ActionKey, str]
) -> tuple[list[Event], dict[ActionKey, str]]:
    """`trade.action_changed` where the action differs from `previous`; and the new state.

    A key seen for the first time is only remembered: there is no change to report yet.
    """
    events = []
    state = dict(previous)
    for row in actions.iter_rows(named=True):
        key: ActionKey = (row["market"], row["symbol"], row["strategy"])
        before = previous.get(key)
        state[key] = row["action"]
        if before is None or before == row["action"]:
            continue
        data = ActionChanged(
            market=key[0],
            symbol=key[1],
            strategy=key[2],
            date=row["date"].isoformat(),
            action=row["action"],
            previous_action=before,
            message=row["message"],
        )
        facts = (*key, row["date"], before, row["action"])
        events.append(
            make_event(
                "trade.action_changed", facts, _day(row["date"]), data, key[0], (key[1],), key[2]
            )
        )
    return events, state


def sentiment_shifts(daily: pl.DataFrame, rule: SentimentRule) -> pl.DataFrame:
    """Days whose net sentiment moved at least `rule.threshold` from the trailing mean.

    net = (positive - negative) / total, counted only on days with total >= min_briefs; the
    baseline is the mean net of the symbol's counted days in the `window_days` calendar days
    before (the day itself excluded). A day with no counted day before it has no baseline.
    """
    counted = daily.filter(pl.col("total") >= rule.min_briefs).sort("market", "symbol", "date")
    net = (pl.col("positive") - pl.col("negative")) / pl.col("total")
    baseline = (
        pl.col("net")
        .rolling_mean_by("date", window_size=f"{rule.window_days}d", closed="left")
        .over("market", "symbol")
    )
    return (
        counted.with_columns(net=net)
        .with_columns(baseline=baseline)
        .with_columns(change=pl.col("net") - pl.col("baseline"))
        .filter(pl.col("change").abs() >= rule.threshold)
    )


def sentiment_events(daily: pl.DataFrame, rule: SentimentRule) -> list[Event]:
    """`sentiment.shift` per shifted (market, symbol, day)."""
    events = []
    for row in sentiment_shifts(daily, rule).iter_rows(named=True):
        data = SentimentShift(
            market=row["market"],
            symbol=row["symbol"],
            date=row["date"].isoformat(),
            net_sentiment=round(row["net"], 6),
            baseline=round(row["baseline"], 6),
            change=round(row["change"], 6),
            direction="up" if row["change"] > 0 else "down",
            positive=row["positive"],
            neutral=row["neutral"],
            negative=row["negative"],
            total=row["total"],
        )
        facts = (row["market"], row["symbol"], row["date"])
        events.append(
            make_event(
                "sentiment.shift", facts, _day(row["date"]), data, row["market"], (row["symbol"],)
            )
        )
    return events


def custom_events(feed: CustomFeed, frame: pl.DataFrame) -> list[Event]:
    """`custom.<name>` per row of the feed's table, identified by its key columns."""
    missing = [c for c in feed.key if c not in frame.columns]
    if missing:
        raise ValueError(f"custom feed {feed.name!r}: table {feed.table} has no columns {missing}")
    events = []
    event_type = f"custom.{feed.name}"
    for row in frame.iter_rows(named=True):
        facts = tuple(row[c] for c in feed.key)
        symbol = row.get(feed.symbol_column) if feed.symbol_column else None
        market = str(row.get("market") or "")
        data = CustomRow(feed=feed.name, table=feed.table, row=row)
        occurred = _occurred(row)
        events.append(
            make_event(
                event_type,
                facts,
                occurred,
                data,
                market,
                (str(symbol),) if symbol else (),
                row.get("strategy"),
            )
        )
    return events


def _occurred(row: Mapping[str, Any]) -> str:
    for column in ("timestamp", "date", "end_date", "start_date"):
        value = row.get(column)
        if isinstance(value, int):
            return _instant(value)
        if isinstance(value, date):
            return _day(value)
    return ""
