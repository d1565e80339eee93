"""decisions.md, Operations: a delivery connects only to the address it checked, refuses every
address that is not public (IPv6 forms that embed an IPv4 address included), reads at most 64 KiB
of the answer within one deadline per attempt, and one slow receiver never delays the others.
Against a real HTTPS receiver on loopback."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from pipelines.webhooks import events as ev
from pipelines.webhooks.config import WebhooksConfig
from pipelines.webhooks.delivery import Worker
from pipelines.webhooks.outbox import Outbox
from tests.pipelines.webhooks.conftest import (
    RECEIVER_NAME,
    FakeClock,
    Receiver,
    make_config,
    subscription,
)
from tests.pipelines.webhooks.test_delivery import queue

MakeWorker = Callable[..., Worker]


def port_of(receiver: Receiver) -> int:
    return int(receiver.url.rsplit(":", 1)[1].split("/", 1)[0])


def test_a_delivery_connects_to_the_address_its_one_resolution_checked(
    receiver: Receiver, ca_file: Path, outbox: Outbox, clock: FakeClock
) -> None:
    """The host is resolved once an attempt, and that address is the one connected to, the name
    kept for TLS and Host (today the check and the connection each resolved the name: a rebinding
    DNS answered a public address to the one and 127.0.0.1 to the other). The name resolves only
    through the worker's resolver, so the delivery arriving proves where it connected."""
    asked: list[str] = []

    def resolve(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["127.0.0.1"]

    url = f"https://{RECEIVER_NAME}:{port_of(receiver)}/hooks"
    config = make_config(ca_file, subscription(url), allowed_hosts=(RECEIVER_NAME,))
    queue(outbox, config, 1)
    outcomes = Worker(outbox, config, clock, resolve=resolve).deliver_due()
    assert [o.result for o in outcomes] == ["delivered"]
    assert asked == [RECEIVER_NAME]
    assert receiver.received[0].headers["host"] == f"{RECEIVER_NAME}:{port_of(receiver)}"


EMBEDDING_LOOPBACK_OR_METADATA = [
    "::ffff:127.0.0.1",  # IPv4-mapped
    "::ffff:0:127.0.0.1",  # IPv4-translated (RFC 2765)
    "::127.0.0.1",  # IPv4-compatible (deprecated)
    "2002:7f00:1::1",  # 6to4 of 127.0.0.1
    "64:ff9b::7f00:1",  # NAT64, well-known prefix
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254, a cloud metadata service
    "64:ff9b:1::7f00:1",  # local-use NAT64 (RFC 8215)
    "::ffff:169.254.169.254",
]


@pytest.mark.parametrize("address", EMBEDDING_LOOPBACK_OR_METADATA)
def test_an_ipv6_form_that_embeds_an_inside_ipv4_address_is_refused(
    receiver: Receiver, ca_file: Path, outbox: Outbox, clock: FakeClock, address: str
) -> None:
    """The embedded address is judged, not `ipaddress.is_global` of the IPv6 one (which passes
    NAT64 and others on some CPython patch levels)."""
    url = f"https://hooks.customer.test:{port_of(receiver)}/hooks"
    config = make_config(ca_file, subscription(url), allowed_hosts=())
    queue(outbox, config, 1)
    outcomes = Worker(outbox, config, clock, resolve=lambda host, port: [address]).deliver_due()
    assert [o.result for o in outcomes] == ["dead"]
    assert outcomes[0].error is not None
    assert "an address inside a network" in outcomes[0].error
    assert receiver.received == []


def test_a_receivers_answer_is_read_to_64_kib_at_most(
    receiver: Receiver, ca_file: Path, outbox: Outbox, make_worker: MakeWorker
) -> None:
    """A receiver answering 300 MB costs the worker 64 KiB of it (today it was read whole: the
    worker grew to 951 MB)."""
    receiver.script = ["huge"]
    config = make_config(ca_file, subscription(receiver.url, timeout_seconds=10.0))
    queue(outbox, config, 1)
    tracemalloc.start()
    started = time.monotonic()
    outcomes = make_worker(config).deliver_due()
    took = time.monotonic() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert [o.result for o in outcomes] == ["delivered"]
    assert peak < 8 * 1024 * 1024, peak
    assert took < 5, took


def test_a_drip_feeding_receiver_holds_an_attempt_no_longer_than_its_timeout(
    receiver: Receiver, ca_file: Path, outbox: Outbox, make_worker: MakeWorker
) -> None:
    """The timeout is the whole attempt's deadline, not each read's (a receiver sending a byte every
    50 ms held a 1 s delivery for 23.7 s, and it was counted as delivered)."""
    receiver.script = ["drip"]
    config = make_config(ca_file, subscription(receiver.url, timeout_seconds=1.0))
    queue(outbox, config, 1)
    started = time.monotonic()
    outcomes = make_worker(config).deliver_due()
    took = time.monotonic() - started
    assert [o.result for o in outcomes] == ["retry"]
    assert outcomes[0].error == "timeout: no whole answer within 1.0s"
    assert took < 2.5, took


def test_one_slow_receiver_never_delays_the_others(
    receiver: Receiver, ca_file: Path, outbox: Outbox, make_worker: MakeWorker
) -> None:
    """Receivers are delivered to side by side: the fast one has its event while the slow one is
    still dripping its answer (today deliveries went one after another)."""
    slow = subscription(receiver.url.replace("/hooks", "/slow"), id="slow", timeout_seconds=2.0)
    fast = subscription(receiver.url, id="fast")
    config: WebhooksConfig = make_config(ca_file, slow, fast)
    news = ev.make_event(
        "news.published",
        ("crypto", "a"),
        "2026-01-01T00:00:00+00:00",
        ev.NewsPublished(
            market="crypto",
            article_id="a",
            published_at="2026-01-01T00:00:00+00:00",
            title="t",
            symbols=["BTC"],
            sentiment=1.0,
            tone="bullish",
            topic="price",
            link=None,
            summary="s",
        ),
        "crypto",
        ("BTC",),
    )
    outbox.record([news], config.subscriptions, now=0.0)
    started = time.monotonic()
    outcomes = make_worker(config).deliver_due()
    results = {o.subscription_id: o.result for o in outcomes}
    assert results == {"fast": "delivered", "slow": "retry"}
    [fast_request] = [r for r in receiver.received if r.path == "/hooks"]
    assert fast_request.at - started < 1.0
    assert [o.subscription_id for o in outcomes] == ["fast", "slow"]
