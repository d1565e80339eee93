"""Fixture frames of the analytics tables, with the catalog's columns, small enough to check by hand."""

from __future__ import annotations

from datetime import date, timedelta

import polars as pl

from pipelines.catalog import FILLS
from tests.api.routes.conftest import START, ms

FIB = {
    "fib_0": 110.0,
    "fib_23_6": 107.6,
    "fib_38_2": 106.2,
    "fib_50": 105.0,
    "fib_61_8": 103.8,
    "fib_78_6": 102.1,
    "fib_100": 100.0,
}


def indicator_snapshots() -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "market": "crypto",
                "symbol": "BTC",
                "period": p,
                "date": START,
                "timestamp": ms(START),
                "sma": 1.0 * p,
                "ema": 2.0,
                "rsi": None,
                "atr": 3.0,
                "adx": 4.0,
                "roc": 5.0,
                "obv": 6.0,
                "vwap": 7.0,
                "bb_upper": 8.0,
                "bb_middle": 9.0,
                "bb_lower": 10.0,
                "macd_line": 11.0,
                "macd_signal": 12.0,
                "macd_histogram": -1.0,
                "stoch_k": 13.0,
                "stoch_d": 14.0,
                "fib_high": 110.0,
                "fib_low": 100.0,
                **FIB,
            }
            for p in (2, 30, 365)
        ]
    )


def trend_history(days: int = 5) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "market": "crypto",
                "symbol": "BTC",
                "date": START + timedelta(days=i),
                "timestamp": ms(START + timedelta(days=i)),
                "price": 100.0 + i,
                "trend": "up",
                "strength": "weak",
                "signal": 0.1,
                "short_term_average": 1.0,
                "mid_term_average": 1.0,
                "long_term_average": 1.0,
                "segment": 0,
            }
            for i in range(days)
        ]
    )


def segment(market: str, symbol: str, n: int, running: bool) -> dict[str, object]:
    start, end = START + timedelta(days=10 * n), START + timedelta(days=10 * n + 10)
    return {
        "market": market,
        "symbol": symbol,
        "segment": n,
        "is_running": running,
        "trend": "up" if n % 2 == 0 else "down",
        "started_at": ms(start),
        "started_on": start,
        "ended_at": ms(end),
        "ended_on": end,
        "close": 110.0,
        "start_close": 100.0,
        "peak_gain": 12.5,
        "peak_loss": -1.5,
        "long_term_average": 1.0,
        "mid_term_average": 2.0,
        "short_term_average": 3.0,
        "max_price": 112.5,
        "min_price": 98.5,
        "max_price_close": 112.5,
        "max_price_timestamp": ms(start + timedelta(days=3)),
        "max_price_date": start + timedelta(days=3),
        "max_price_trend": "up",
        "min_price_close": 98.5,
        "min_price_timestamp": ms(start + timedelta(days=1)),
        "min_price_date": start + timedelta(days=1),
        "min_price_trend": "neutral",
        "signal_strength": 0.42,
        "trend_duration_days": 10,
        "bars": 11,
        "last_updated": 1_700_000_000_000,
    }


def trend_segments() -> pl.DataFrame:
    rows = [segment("forex", "EURUSD", n, n == 2) for n in range(3)]
    rows += [segment("crypto", "BTC", n, n == 1) for n in range(2)]
    return pl.DataFrame(rows)


def trade(
    strategy: str, years: int, start: date, sell: date | None, fill: str = "close"
) -> dict[str, object]:
    """A trade; filled at the next open, it starts a day later at 101 (tells the fills apart)."""
    if fill == "next_open":
        start += timedelta(days=1)
        sell = sell and sell + timedelta(days=1)
    return {
        "market": "crypto",
        "symbol": "BTC",
        "strategy": strategy,
        "fill": fill,
        "years": years,
        "full_history": years == 3,
        "action": "Sell" if sell else "Buy",
        "exit_reason": "signal" if sell else None,
        "start_date": start,
        "sell_date": sell,
        "days_in_trade": 3,
        "start_price": 101.0 if fill == "next_open" else 100.0,
        "entry_price": 100.1,
        "exit_price": 105.0 if sell else None,
        "last_price": 105.0,
        "highest_price": 106.0,
        "lowest_price": 99.0,
        "units": 1.0,
        "fees": 0.2,
        "dividends": 0.0,
        "profit": 4.7,
        "profit_percent": 4.7,
    }


def backtest_trades() -> pl.DataFrame:
    d = START
    rows = [
        trade(s, y, d + timedelta(days=i * 5), d + timedelta(days=i * 5 + 3), fill)
        for fill in FILLS
        for s in ("aggressive", "conservative")
        for y in (1, 2, 3)
        for i in range(y)
    ]
    rows += [trade("aggressive", 3, d + timedelta(days=40), None, fill) for fill in FILLS]
    return pl.DataFrame(rows)


def backtest_summaries() -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "market": "crypto",
                "symbol": "BTC",
                "strategy": s,
                "fill": fill,
                "years": y,
                "full_history": y == 3,
                "start_date": START,
                "end_date": START + timedelta(days=365 * y),
                "backtest_duration": 365 * y,
                "initial_investment": 10_000.0,
                "final_value": 11_000.0,
                "total_profit": 1000.0,
                "profit_percent": 10.0 * y - (fill == "next_open"),
                "annualized_return": None,
                "buy_and_hold_profit_percent": 5.0,
                "peak_profit": 12.0,
                "peak_loss": -3.0,
                "total_trades": y,
                "profitable_trades": y,
                "unprofitable_trades": 0,
                "profitable_trade_percent": 100.0,
                "average_profit": 1.0,
                "average_profit_percent": 1.0,
                "average_loss": None,
                "average_loss_percent": None,
                "average_trade_duration": 3.0,
            }
            for fill in FILLS
            for s in ("aggressive", "conservative")
            for y in (1, 2, 3)
        ]
    )


def current_actions() -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "market": "crypto",
                "symbol": "BTC",
                "strategy": s,
                "action": a,
                "message": f"{s}: {a}",
                "date": START,
            }
            for s, a in (("aggressive", "Buy"), ("conservative", "Stay"))
        ]
    )


def scorecards() -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "market": m,
                "symbol": sym,
                "strategy": s,
                "name": sym,
                "action": "Hold",
                "icon": "🟡",
                "total_trades": 4,
                "score": sc,
                "buy_and_hold_percentage": 5.0,
                "in_trade": True,
                "percentage_profit": 7.5,
                "trend": None,
                "trend_duration": None,
                "preferred": pref,
                "date": START,
            }
            for m, sym in (("crypto", "BTC"), ("forex", "EURUSD"))
            for s, sc, pref in (("aggressive", 4.5, True), ("conservative", 2.0, False))
        ]
    )


def recommendations() -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "market": "crypto",
                "symbol": sym,
                "strategy": s,
                "score": sc,
                "action": "Buy",
                "date": START,
            }
            for sym, sc in (("BTC", 4.5), ("ETH", 3.5), ("SOL", 3.0), ("ADA", 5.0))
            for s in ("aggressive", "conservative")
        ]
    )


def briefs(now_ms: int) -> pl.DataFrame:
    def row(
        i: int, title: str, symbols: list[str], age_hours: float, sentiment: float | None
    ) -> dict[str, object]:
        ts = int(now_ms - age_hours * 3_600_000)
        return {
            "market": "crypto",
            "article_id": f"a{i}",
            "timestamp": ts,
            "date": date(2024, 1, 1),
            "title": title,
            "symbols": symbols,
            "body": f"body {i}",
            "fud_fomo_bias": None,
            "fud_fomo_score": None,
            "sentiment": sentiment,
            "tone": None,
            "clout": None,
            "impacted_coins": None,
            "speculation_score": None,
            "topic": "price",
            "enricher": "lexicon",
            "feed": "f",
            "link": None,
        }

    return pl.DataFrame(
        [
            row(1, "Bitcoin ETF approved", ["BTC"], 2, 3.0),
            row(2, "Bitcoin hack rumours", ["BTC", "ETH"], 5, -2.0),
            row(3, "Old bitcoin news", ["BTC"], 30, None),
            row(4, "Ether upgrade", ["ETH"], 1, 1.0),
        ],
        schema_overrides={"symbols": pl.List(pl.String()), "impacted_coins": pl.List(pl.String())},
    )


def sentiment_daily() -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "market": "crypto",
                "symbol": "BTC",
                "date": START + timedelta(days=i),
                "timestamp": ms(START + timedelta(days=i)),
                "positive": i,
                "neutral": 1,
                "negative": 0,
                "total": i + 1,
            }
            for i in range(5)
        ]
    )


def sentiment_topics() -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "market": "crypto",
                "symbol": "BTC",
                "date": START + timedelta(days=i),
                "timestamp": ms(START + timedelta(days=i)),
                "topic": "price",
                "positive": i,
                "negative": 1,
            }
            for i in range(5)
        ]
    )


def instrument_analyses() -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "market": "crypto",
                "symbol": "BTC",
                "date": START + timedelta(days=i),
                "timestamp": ms(START + timedelta(days=i)),
                "analysis": f"Bitcoin analysis of day {i}.",
                "writer": "template",
            }
            for i in range(3)
        ]
    )


def market_summaries() -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "market": "crypto",
                "date": START + timedelta(days=i),
                "timestamp": ms(START + timedelta(days=i)),
                "summary": f"Crypto market summary of day {i}.",
                "writer": "template",
            }
            for i in range(3)
        ]
    )


def corporate_actions() -> pl.DataFrame:
    """BTC's made-up actions (one of every kind) and ETH's split; other symbols have none."""
    rows = [
        ("BTC", date(2020, 1, 2), "listing", None, None, None),
        ("BTC", date(2022, 6, 1), "split", 4.0, None, None),
        ("BTC", date(2023, 3, 1), "dividend", None, 0.5, "special"),
        ("BTC", date(2023, 3, 1), "split", 0.1, None, "1-for-10"),
        ("BTC", date(2024, 5, 1), "delisting", None, None, "acquired"),
        ("ETH", date(2021, 1, 4), "split", 2.0, None, None),
    ]
    return pl.DataFrame(
        [
            {
                "market": "crypto",
                "symbol": symbol,
                "date": day,
                "kind": kind,
                "ratio": ratio,
                "amount": amount,
                "reason": reason,
                "source": "file_drop",
            }
            for symbol, day, kind, ratio, amount, reason in rows
        ]
    )
