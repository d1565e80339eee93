"""`mi webhooks`: list subscriptions, make a secret, send a test event, derive, deliver, dead letters."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import click

from pipelines.platform.settings import load_settings
from pipelines.webhooks.config import WebhookConfigError, WebhooksConfig
from pipelines.webhooks.delivery import Worker
from pipelines.webhooks.events import make_test_event
from pipelines.webhooks.outbox import Claimed, Outbox
from pipelines.webhooks.service import WebhookSettings, derive_events, webhook_settings
from pipelines.webhooks.signing import new_secret


def _settings() -> WebhookSettings:
    settings = load_settings()
    return webhook_settings(settings.data_dir, warehouse=settings.warehouse)


@contextmanager
def _opened() -> Iterator[tuple[WebhookSettings, WebhooksConfig, Outbox]]:
    settings = _settings()
    try:
        config = settings.load()
    except WebhookConfigError as error:
        raise click.ClickException(f"{settings.config_path}: {error}") from None
    outbox = settings.open_outbox()
    try:
        yield settings, config, outbox
    finally:
        outbox.close()


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


@click.group("webhooks")
def webhooks() -> None:
    """Webhook subscriptions (file named by MI_WEBHOOKS) and the delivery outbox."""


@webhooks.command("list")
def list_subscriptions() -> None:
    """List subscriptions with their queued and dead-lettered deliveries."""
    with _opened() as (settings, config, outbox):
        click.echo(f"config: {settings.config_path or '(MI_WEBHOOKS unset: none)'}")
        click.echo(f"outbox: {settings.outbox_path}")
        for sub in config.subscriptions:
            queued = [d for d in outbox.deliveries(sub.id) if d.status != "delivered"]
            dead = outbox.dead_letters(sub.id)
            state = "enabled" if sub.enabled else "disabled"
            click.echo(
                f"{sub.id}\t{sub.customer}\t{sub.url}\t{','.join(sub.events)}\t{state}"
                f"\tqueued={len(queued)}\tdead={len(dead)}"
            )


@webhooks.command("new-secret")
def print_new_secret() -> None:
    """Print a fresh Standard Webhooks secret (whsec_...) for a subscription's `secret`."""
    click.echo(new_secret())


@webhooks.command("test")
@click.argument("subscription")
def send_test(subscription: str) -> None:
    """Send a signed `webhook.test` event to SUBSCRIPTION now and report the outcome."""
    with _opened() as (_, config, outbox):
        try:
            sub = config.subscription(subscription)
        except WebhookConfigError as error:
            raise click.ClickException(str(error)) from None
        now = time.time()
        event = make_test_event(sub.id, sub.customer, now)
        outbox.enqueue(event, sub.id, now)
        worker = Worker(outbox=outbox, config=config)
        try:
            outcome = worker.attempt(Claimed(event.id, event.type, sub.id, 0, event.body))
        finally:
            worker.close()
        detail = f"HTTP {outcome.status}" if outcome.status else (outcome.error or "")
        click.echo(f"{event.id}: {outcome.result} ({detail})")
        if outcome.result != "delivered":
            if outcome.error:
                click.echo(outcome.error, err=True)
            raise SystemExit(1)


@webhooks.command("derive")
def derive() -> None:
    """Derive events from the warehouse into the outbox now (the Dagster sensor does it after runs)."""
    with _opened() as (settings, config, outbox):
        counts = derive_events(settings.warehouse, outbox, config, time.time())
        for family, count in sorted(counts.items()):
            click.echo(f"{family}\t{count} new")


@webhooks.command("deliver")
@click.option("--forever", is_flag=True, help="Keep running, waiting for new deliveries.")
def deliver(forever: bool) -> None:
    """Deliver queued events, retrying on schedule, until the queue is empty (or forever)."""
    with _opened() as (_, config, outbox):
        worker = Worker(outbox=outbox, config=config)
        try:
            outcomes = worker.run(until_idle=not forever)
        finally:
            worker.close()
        for outcome in outcomes:
            if outcome.result != "deferred":
                click.echo(f"{outcome.subscription_id}\t{outcome.event_id}\t{outcome.result}")


@webhooks.command("dead-letters")
@click.option("--subscription", default=None, help="Only this subscription's.")
def dead_letters(subscription: str | None) -> None:
    """List dead-lettered deliveries: when, subscription, event, attempts, last error."""
    with _opened() as (_, _config, outbox):
        for dead in outbox.dead_letters(subscription):
            click.echo(
                f"{_when(dead.dead_at)}\t{dead.subscription_id}\t{dead.event_id}\t{dead.event_type}"
                f"\tattempts={dead.attempts}\t{dead.last_error}"
            )


@webhooks.command("replay")
@click.option("--subscription", default=None, help="Replay this subscription's dead letters.")
@click.option("--event", "events", multiple=True, help="Replay this event id (repeatable).")
@click.option("--all", "everything", is_flag=True, help="Replay every dead letter.")
def replay(subscription: str | None, events: tuple[str, ...], everything: bool) -> None:
    """Re-queue dead letters for delivery (attempts start again from zero)."""
    if not (subscription or events or everything):
        raise click.UsageError("name --subscription, --event or --all")
    with _opened() as (_, _config, outbox):
        count = outbox.replay(time.time(), subscription, events)
    click.echo(f"re-queued {count} deliveries; `mi webhooks deliver` sends them")
