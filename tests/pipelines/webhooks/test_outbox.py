"""The outbox: stable ids, no duplicates on re-recording, queueing by subscription criteria."""

from __future__ import annotations

from pipelines.webhooks import events as ev
from pipelines.webhooks.outbox import Outbox, matches
from tests.pipelines.webhooks.conftest import START, subscription


def news(article: str, symbols: tuple[str, ...], text: str, market: str = "crypto") -> ev.Event:
    data = ev.NewsPublished(
        market=market,
        article_id=article,
        published_at="2026-01-01T00:00:00+00:00",
        title=text,
        symbols=list(symbols),
        sentiment=None,
        tone=None,
        topic="price",
        link=None,
        summary=text,
    )
    return ev.make_event(
        "news.published", (market, article), data.published_at, data, market, symbols, text=text
    )


def test_the_same_facts_give_the_same_id_and_body() -> None:
    assert news("a1", ("BTC",), "x") == news("a1", ("BTC",), "x")
    assert news("a1", ("BTC",), "x").id != news("a2", ("BTC",), "x").id
    assert ev.event_id("t", "a", "b") != ev.event_id("t", "ab")


def test_recording_again_queues_nothing_twice(outbox: Outbox) -> None:
    subs = [subscription("https://x.example/h")]
    batch = [news("a1", ("BTC",), "x"), news("a2", ("ETH",), "y")]
    assert outbox.record(batch, subs, now=START) == 2
    assert outbox.record(batch, subs, now=START + 60) == 0
    assert len(outbox.deliveries()) == 2
    assert outbox.event_count() == 2


def test_a_subscription_added_later_is_not_sent_the_history(outbox: Outbox) -> None:
    batch = [news("a1", ("BTC",), "x")]
    outbox.record(batch, [subscription("https://x.example/h", id="old")], now=START)
    late = subscription("https://x.example/h", id="late")
    outbox.record(batch, [late], now=START + 60)
    assert [d.subscription_id for d in outbox.deliveries()] == ["old"]


def test_a_baseline_records_without_queueing(outbox: Outbox) -> None:
    batch = [news("a1", ("BTC",), "x")]
    assert outbox.record(batch, [subscription("https://x.example/h")], START, deliver=False) == 1
    assert outbox.deliveries() == []


def test_criteria_symbols_or_keywords_market_and_type() -> None:
    url = "https://x.example/h"
    btc = news("a1", ("BTC",), "Bitcoin ETF approved")
    eth = news("a2", ("ETH",), "Ether upgrade")
    fx = news("a3", ("EURUSD",), "ECB holds", market="forex")
    by_symbol = subscription(url, symbols=("BTC",))
    by_keyword = subscription(url, keywords=("upgrade",))
    either = subscription(url, symbols=("BTC",), keywords=("upgrade",))
    crypto_only = subscription(url, markets=("crypto",))
    trades_only = subscription(url, events=("trade.*",))
    assert [matches(by_symbol, e) for e in (btc, eth, fx)] == [True, False, False]
    assert [matches(by_keyword, e) for e in (btc, eth, fx)] == [False, True, False]
    assert [matches(either, e) for e in (btc, eth, fx)] == [True, True, False]
    assert [matches(crypto_only, e) for e in (btc, eth, fx)] == [True, True, False]
    assert not matches(trades_only, btc)
    assert not matches(subscription(url, enabled=False), btc)
