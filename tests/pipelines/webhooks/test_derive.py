"""Events derived from warehouse tables: news, trades, actions, portfolio, sentiment shifts, custom."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import polars as pl

from pipelines.catalog import BACKTEST_TRADES, BRIEFS, CURRENT_ACTIONS, SENTIMENT_DAILY
from pipelines.warehouse.store import Warehouse
from pipelines.webhooks import derive
from pipelines.webhooks import events as ev
from pipelines.webhooks.config import CustomFeed, SentimentRule, WebhooksConfig
from pipelines.webhooks.outbox import Outbox
from pipelines.webhooks.service import derive_events
from tests.pipelines.webhooks.conftest import START, subscription

D0 = date(2026, 1, 1)


def briefs(*articles: tuple[str, list[str], str]) -> pl.DataFrame:
    n = len(articles)
    return BRIEFS.conform(
        pl.DataFrame(
            {
                "market": ["crypto"] * n,
                "article_id": [a for a, _, _ in articles],
                "timestamp": [1_767_225_600_000 + i for i in range(n)],
                "date": [D0] * n,
                "title": [t for _, _, t in articles],
                "symbols": [s for _, s, _ in articles],
                "body": ["body"] * n,
                "fud_fomo_bias": [None] * n,
                "fud_fomo_score": [None] * n,
                "sentiment": [1.0] * n,
                "tone": ["bullish"] * n,
                "clout": [None] * n,
                "impacted_coins": [None] * n,
                "speculation_score": [None] * n,
                "topic": ["price"] * n,
                "enricher": ["lexicon"] * n,
                "feed": ["f"] * n,
                "link": [None] * n,
            },
            schema_overrides={"impacted_coins": pl.List(pl.String())},
        )
    )


def sentiment(rows: list[tuple[int, int, int, int]]) -> pl.DataFrame:
    """(day offset, positive, neutral, negative) rows of BTC."""
    return SENTIMENT_DAILY.conform(
        pl.DataFrame(
            {
                "market": "crypto",
                "symbol": "BTC",
                "date": [D0 + timedelta(days=d) for d, *_ in rows],
                "timestamp": [0] * len(rows),
                "positive": [p for _, p, _, _ in rows],
                "neutral": [u for _, _, u, _ in rows],
                "negative": [n for *_, n in rows],
                "total": [p + u + n for _, p, u, n in rows],
            }
        )
    )


def actions(action: str, day: date = D0) -> pl.DataFrame:
    return CURRENT_ACTIONS.conform(
        pl.DataFrame(
            {
                "market": ["crypto"],
                "symbol": ["BTC"],
                "strategy": ["aggressive"],
                "action": [action],
                "message": [f"{action} now"],
                "date": [day],
            }
        )
    )


def trades(years: int, sell: date | None, fill: str = "close") -> pl.DataFrame:
    return BACKTEST_TRADES.conform(
        pl.DataFrame(
            {
                "market": ["crypto"],
                "symbol": ["BTC"],
                "strategy": ["aggressive"],
                "fill": [fill],
                "years": [years],
                "full_history": [years == 5],
                "action": ["Sell" if sell else "Buy"],
                "exit_reason": ["signal" if sell else None],
                "start_date": [D0],
                "sell_date": [sell],
                "days_in_trade": [3],
                "start_price": [100.0],
                "entry_price": [100.1],
                "exit_price": [110.0 if sell else None],
                "last_price": [110.0],
                "highest_price": [111.0],
                "lowest_price": [99.0],
                "units": [2.0],
                "fees": [0.4],
                "dividends": [0.0],
                "profit": [19.4],
                "profit_percent": [9.7],
            }
        )
    )


def test_news_events_carry_the_brief_and_a_stable_id() -> None:
    [event] = derive.news_events(briefs(("a1", ["BTC"], "Bitcoin ETF")))
    assert event.id == ev.event_id("news.published", "crypto", "a1")
    assert event.symbols == ("BTC",)
    assert "etf" in event.text
    envelope = ev.decode(event.body)
    assert isinstance(envelope.data, ev.NewsPublished)
    assert envelope.data.published_at == "2026-01-01T00:00:00.000+00:00"


def test_trades_come_from_the_longest_window_filled_at_the_close_with_a_buy_and_a_sell() -> None:
    sold = D0 + timedelta(days=3)
    frame = pl.concat([trades(5, sold), trades(1, sold), trades(5, sold, "next_open")])
    events = derive.trade_events(frame)
    sides = [ev.decode(e.body).data.side for e in events]
    assert sides == ["buy", "sell"]
    assert len({e.id for e in events}) == 2


def test_portfolio_updates_come_from_the_full_history_filled_at_the_close() -> None:
    def summary(fill: str, years: int, final: float) -> dict[str, object]:
        return {
            "market": "crypto",
            "symbol": "BTC",
            "strategy": "aggressive",
            "fill": fill,
            "years": years,
            "end_date": D0,
            "initial_investment": 10_000.0,
            "final_value": final,
            "total_profit": final - 10_000.0,
            "profit_percent": final / 100.0 - 100.0,
        }

    rows = [summary("close", 5, 12_000.0), summary("close", 1, 11_000.0)]
    rows.append(summary("next_open", 5, 11_500.0))
    [event] = derive.portfolio_events(pl.DataFrame(rows))
    data = ev.decode(event.body).data
    assert (data.years, data.final_value) == (5, 12_000.0)


def test_an_open_trade_gives_only_its_buy() -> None:
    assert len(derive.trade_events(trades(5, None))) == 1


def test_an_action_change_needs_a_previous_action() -> None:
    events, state = derive.action_change_events(actions("Buy"), {})
    assert events == []
    assert state == {("crypto", "BTC", "aggressive"): "Buy"}
    events, _ = derive.action_change_events(actions("Hold", D0 + timedelta(days=1)), state)
    [event] = events
    data = ev.decode(event.body).data
    assert (data.previous_action, data.action) == ("Buy", "Hold")


def test_a_sentiment_shift_is_net_sentiment_away_from_the_trailing_mean() -> None:
    rule = SentimentRule(window_days=3, threshold=0.5, min_briefs=3)
    # net: day0 0.0, day1 0.0, day2 (too few briefs, skipped), day3 +0.75 vs baseline(day1) 0.0.
    frame = sentiment([(0, 1, 2, 1), (1, 2, 0, 2), (2, 2, 0, 0), (3, 3, 1, 0)])
    shifts = derive.sentiment_shifts(frame, rule)
    assert shifts["date"].to_list() == [D0 + timedelta(days=3)]
    assert shifts["change"].to_list() == [0.75]
    [event] = derive.sentiment_events(frame, rule)
    assert ev.decode(event.body).data.direction == "up"


def test_a_day_without_a_baseline_is_no_shift() -> None:
    rule = SentimentRule(window_days=3, threshold=0.5, min_briefs=1)
    frame = sentiment([(0, 5, 0, 0), (10, 0, 0, 5)])  # ten days apart: no trailing day
    assert derive.sentiment_events(frame, rule) == []


def test_a_custom_feed_row_becomes_an_event_keyed_by_its_columns() -> None:
    feed = CustomFeed(name="moves", table="current_actions", key=("market", "symbol", "date"))
    [event] = derive.custom_events(feed, actions("Buy"))
    assert event.type == "custom.moves"
    assert event.id == ev.event_id("custom.moves", "crypto", "BTC", D0)
    assert ev.decode(event.body).data.row["action"] == "Buy"


def test_deriving_from_the_warehouse_baselines_then_queues_only_what_is_new(
    tmp_path: Path, outbox: Outbox
) -> None:
    warehouse = Warehouse(root=tmp_path / "warehouse")
    config = WebhooksConfig(subscriptions=(subscription("https://x.example/h"),))
    warehouse.write(BRIEFS, "crypto", briefs(("a1", ["BTC"], "old news")))
    warehouse.write(CURRENT_ACTIONS, "crypto", actions("Buy"))
    assert derive_events(warehouse.root, outbox, config, START) == {"news": 0, "actions": 0}
    assert outbox.deliveries() == []

    warehouse.write(
        BRIEFS, "crypto", briefs(("a1", ["BTC"], "old news"), ("a2", ["BTC"], "new news"))
    )
    warehouse.write(CURRENT_ACTIONS, "crypto", actions("Sell", D0 + timedelta(days=1)))
    assert derive_events(warehouse.root, outbox, config, START + 60) == {"news": 1, "actions": 1}
    # Re-running the same materialization emits nothing again.
    assert derive_events(warehouse.root, outbox, config, START + 120) == {"news": 0, "actions": 0}
    assert sorted(d.event_type for d in outbox.deliveries()) == [
        "news.published",
        "trade.action_changed",
    ]


def test_no_warehouse_yet_derives_nothing(tmp_path: Path, outbox: Outbox) -> None:
    assert derive_events(tmp_path / "none", outbox, WebhooksConfig(), START) == {}
