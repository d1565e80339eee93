"""Delivery to a real HTTPS receiver: signatures, retries, backoff, dead letters, replay, restarts."""

from __future__ import annotations

import itertools
import multiprocessing
from collections.abc import Callable
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest

from pipelines.webhooks import events as ev
from pipelines.webhooks.config import WebhooksConfig, load_config
from pipelines.webhooks.delivery import Worker
from pipelines.webhooks.outbox import Outbox
from tests.pipelines.webhooks.conftest import (
    OTHER_SECRET,
    SECRET,
    FakeClock,
    Receiver,
    make_config,
    subscription,
)

MakeWorker = Callable[..., Worker]


def news(n: int) -> ev.Event:
    data = ev.NewsPublished(
        market="crypto",
        article_id=f"a{n}",
        published_at="2026-01-01T00:00:00+00:00",
        title=f"Headline {n}",
        symbols=["BTC"],
        sentiment=1.0,
        tone="bullish",
        topic="price",
        link=None,
        summary="text",
    )
    return ev.make_event(
        "news.published", ("crypto", f"a{n}"), data.published_at, data, "crypto", ("BTC",)
    )


def queue(outbox: Outbox, config: WebhooksConfig, count: int) -> list[str]:
    batch = [news(n) for n in range(count)]
    outbox.record(batch, config.subscriptions, now=0.0)  # due at once, whatever the clock says
    return [e.id for e in batch]


def test_a_delivery_is_signed_as_standard_webhooks_and_the_standardwebhooks_package_verifies_it(
    receiver: Receiver, ca_file: Path, outbox: Outbox, make_worker: MakeWorker, clock: FakeClock
) -> None:
    config = make_config(ca_file, subscription(receiver.url))
    ids = queue(outbox, config, 1)
    outcomes = make_worker(config).deliver_due()
    assert [o.result for o in outcomes] == ["delivered"]
    [got] = receiver.received
    assert got.signature_ok
    assert got.event_id == ids[0]
    assert got.headers["webhook-timestamp"] == str(int(clock.now()))
    assert got.headers["webhook-signature"].startswith("v1,")
    envelope = ev.decode(got.body)
    assert envelope.type == "news.published"
    assert isinstance(envelope.data, ev.NewsPublished)
    assert envelope.data.article_id == "a0"


def test_a_wrong_secret_fails_verification_and_is_not_retried(
    receiver: Receiver, ca_file: Path, outbox: Outbox, make_worker: MakeWorker
) -> None:
    config = make_config(ca_file, subscription(receiver.url, secret=OTHER_SECRET))
    queue(outbox, config, 1)
    outcomes = make_worker(config).deliver_due()
    assert [(o.result, o.status) for o in outcomes] == [("dead", 401)]
    assert receiver.received == []


def test_500_is_retried_with_backoff_then_succeeds(
    receiver: Receiver,
    ca_file: Path,
    outbox: Outbox,
    make_worker: MakeWorker,
    clock: FakeClock,
) -> None:
    receiver.script = [500, 503]
    config = make_config(ca_file, subscription(receiver.url))
    queue(outbox, config, 1)
    worker = make_worker(config)
    outcomes = worker.run()
    assert [(o.result, o.status) for o in outcomes] == [
        ("retry", 500),
        ("retry", 503),
        ("delivered", 200),
    ]
    assert len(receiver.received) == 1
    assert receiver.received[0].signature_ok
    # The retry policy's schedule: retry n waits base x 2^(n-1) plus up to 2 s of jitter.
    first, second = clock.sleeps
    assert 2.0 <= first < 4.0
    assert 4.0 <= second < 6.0


def test_retry_after_is_honoured_on_429(
    receiver: Receiver,
    ca_file: Path,
    outbox: Outbox,
    make_worker: MakeWorker,
    clock: FakeClock,
) -> None:
    receiver.script = [(429, {"Retry-After": "37"})]
    config = make_config(ca_file, subscription(receiver.url))
    queue(outbox, config, 1)
    outcomes = make_worker(config).run()
    assert [o.result for o in outcomes] == ["retry", "delivered"]
    assert clock.sleeps == [37.0]


def test_other_4xx_is_dead_lettered_at_once(
    receiver: Receiver, ca_file: Path, outbox: Outbox, make_worker: MakeWorker
) -> None:
    receiver.script = [404]
    config = make_config(ca_file, subscription(receiver.url))
    [event_id] = queue(outbox, config, 1)
    outcomes = make_worker(config).run()
    assert [(o.result, o.status) for o in outcomes] == [("dead", 404)]
    [dead] = outbox.dead_letters()
    assert (dead.event_id, dead.attempts, dead.last_status) == (event_id, 1, 404)
    assert "not retried" in dead.last_error


def test_max_attempts_then_dead_letter_then_replay_delivers(
    receiver: Receiver,
    ca_file: Path,
    outbox: Outbox,
    make_worker: MakeWorker,
    clock: FakeClock,
) -> None:
    receiver.script = [500, 500, 500, 500]
    config = make_config(ca_file, subscription(receiver.url), max_attempts=4)
    [event_id] = queue(outbox, config, 1)
    worker = make_worker(config)
    outcomes = worker.run()
    assert [o.result for o in outcomes] == ["retry", "retry", "retry", "dead"]
    [dead] = outbox.dead_letters("acme")
    assert (dead.event_id, dead.attempts, dead.last_status) == (event_id, 4, 500)
    assert outbox.deliveries() == []

    clock.advance(60.0)  # the operator fixes the receiver, then replays
    assert outbox.replay(clock.now(), subscription_id="acme") == 1
    assert outbox.dead_letters() == []
    assert [o.result for o in worker.run()] == ["delivered"]
    assert receiver.accepted_ids() == [event_id]


def test_a_timeout_is_retried(
    receiver: Receiver, ca_file: Path, outbox: Outbox, make_worker: MakeWorker
) -> None:
    receiver.script = ["hang"]
    config = make_config(ca_file, subscription(receiver.url, timeout_seconds=0.3))
    queue(outbox, config, 1)
    outcomes = make_worker(config).run()
    assert [o.result for o in outcomes] == ["retry", "delivered"]
    assert outcomes[0].error is not None
    assert outcomes[0].error.startswith("timeout")


def test_a_receiver_that_always_hangs_ends_in_dead_letters(
    receiver: Receiver, ca_file: Path, outbox: Outbox, make_worker: MakeWorker
) -> None:
    receiver.script = ["hang"] * 3
    config = make_config(ca_file, subscription(receiver.url, timeout_seconds=0.2), max_attempts=3)
    queue(outbox, config, 1)
    outcomes = make_worker(config).run()
    assert [o.result for o in outcomes] == ["retry", "retry", "dead"]
    [dead] = outbox.dead_letters()
    assert "timeout" in dead.last_error


def test_a_connection_error_is_retried(
    ca_file: Path, outbox: Outbox, make_worker: MakeWorker
) -> None:
    # Nothing listens on this port (the receiver fixture is not used).
    config = make_config(ca_file, subscription("https://127.0.0.1:9/hooks"), max_attempts=2)
    queue(outbox, config, 1)
    outcomes = make_worker(config).run()
    assert [o.result for o in outcomes] == ["retry", "dead"]
    assert outcomes[0].error is not None
    assert outcomes[0].error.startswith("connection error")


def test_a_refused_url_is_dead_lettered_without_a_request(
    receiver: Receiver, ca_file: Path, outbox: Outbox, make_worker: MakeWorker
) -> None:
    plain = receiver.url.replace("https://", "http://")
    config = make_config(ca_file, subscription(plain))
    queue(outbox, config, 1)
    outcomes = make_worker(config).deliver_due()
    assert [o.result for o in outcomes] == ["dead"]
    assert outcomes[0].error is not None
    assert "HTTPS only" in outcomes[0].error
    assert receiver.received == []


def test_restart_mid_queue_loses_nothing_and_sends_nothing_twice(
    receiver: Receiver,
    ca_file: Path,
    tmp_path: Path,
    outbox: Outbox,
    make_worker: MakeWorker,
) -> None:
    config = make_config(ca_file, subscription(receiver.url))
    ids = queue(outbox, config, 6)
    first = make_worker(config)
    assert len(first.deliver_due(limit=2)) == 2
    first.close()  # the worker stops; a new process opens the same outbox file
    reopened = Outbox(tmp_path / "outbox.sqlite")
    try:
        make_worker(config, reopened).run()
    finally:
        reopened.close()
    assert sorted(receiver.accepted_ids()) == sorted(ids)


def test_a_crash_during_a_send_redelivers_that_event_after_the_lease(
    receiver: Receiver,
    ca_file: Path,
    outbox: Outbox,
    make_worker: MakeWorker,
    clock: FakeClock,
) -> None:
    config = make_config(ca_file, subscription(receiver.url), lease_seconds=120.0)
    ids = queue(outbox, config, 2)
    crashed = outbox.claim(clock.now(), lease_seconds=120.0)  # claimed, then the process died
    assert crashed is not None
    worker = make_worker(config)
    assert [o.event_id for o in worker.deliver_due()] == [ids[1]]  # still leased: not taken
    clock.advance(121.0)
    assert [o.event_id for o in worker.deliver_due()] == [ids[0]]
    assert sorted(receiver.accepted_ids()) == sorted(ids)


def test_the_rate_limit_spaces_deliveries_of_one_subscription(
    receiver: Receiver,
    ca_file: Path,
    outbox: Outbox,
    make_worker: MakeWorker,
    clock: FakeClock,
) -> None:
    config = make_config(ca_file, subscription(receiver.url, rate_limit_per_second=2.0))
    queue(outbox, config, 3)
    worker = make_worker(config)
    outcomes = worker.run()
    assert [o.result for o in outcomes if o.result != "deferred"] == ["delivered"] * 3
    assert sum(clock.sleeps) == pytest.approx(1.0)  # two gaps of 0.5 s
    assert all(d.attempts == 1 for d in outbox.deliveries())


def test_a_receiver_whose_host_now_resolves_inside_the_network_is_refused_at_delivery(
    ca_file: Path, outbox: Outbox, clock: FakeClock
) -> None:
    # The file was loaded when the host resolved to a public address; DNS changed since.
    config = make_config(ca_file, subscription("https://hooks.customer.example/mi"))
    queue(outbox, config, 1)
    worker = Worker(outbox, config, clock, resolve=lambda host, port: ["169.254.169.254"])
    outcomes = worker.deliver_due()
    assert [o.result for o in outcomes] == ["dead"]
    assert outcomes[0].error is not None
    assert "resolves to 169.254.169.254" in outcomes[0].error


def test_the_local_receiver_is_refused_unless_its_host_is_allowed(
    receiver: Receiver, ca_file: Path, outbox: Outbox, make_worker: MakeWorker
) -> None:
    config = make_config(ca_file, subscription(receiver.url), allowed_hosts=())
    queue(outbox, config, 1)
    outcomes = make_worker(config).deliver_due()
    assert [o.result for o in outcomes] == ["dead"]
    assert outcomes[0].error is not None
    assert "resolves to 127.0.0.1" in outcomes[0].error
    assert receiver.received == []


def _deliver_after(start: Barrier, config: Path, outbox: Path) -> None:
    """A worker process: every due delivery, on the wall clock, once every worker is ready."""
    box = Outbox(outbox)
    worker = Worker(box, load_config(config))
    start.wait()
    try:
        worker.run(max_wait=0.1)
    finally:
        worker.close()
        box.close()


def test_the_rate_limit_holds_across_two_worker_processes(
    receiver: Receiver, ca_file: Path, tmp_path: Path, outbox: Outbox
) -> None:
    config = tmp_path / "webhooks.toml"
    config.write_text(
        f'[delivery]\nca_file = "{ca_file}"\nallowed_hosts = ["127.0.0.1"]\n\n'
        f'[[subscriptions]]\nid = "acme"\nurl = "{receiver.url}"\nsecret = "{SECRET}"\n'
        'events = ["*"]\nrate_limit_per_second = 2.0\n',
        encoding="utf-8",
    )
    ids = queue(outbox, load_config(config), 6)
    spawn = multiprocessing.get_context("spawn")
    start = spawn.Barrier(3)
    workers = [
        spawn.Process(target=_deliver_after, args=(start, config, outbox.path)) for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    start.wait(timeout=60)
    for worker in workers:
        worker.join(timeout=60)
    assert [w.exitcode for w in workers] == [0, 0]
    assert sorted(receiver.accepted_ids()) == sorted(ids)
    arrivals = sorted(r.at for r in receiver.received)
    gaps = [later - earlier for earlier, later in itertools.pairwise(arrivals)]
    # 2 a second between them: 0.5 s apart (a limit per process would let pairs arrive together).
    assert min(gaps) > 0.3, gaps
    assert arrivals[-1] - arrivals[0] > 2.3
