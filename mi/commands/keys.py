"""`mi keys`: create, list, revoke, top up and inspect API keys in the metering store."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import click

from api.metering.backends import open_store
from api.metering.config import MeteringConfig, MeteringConfigError, config_from_env
from api.metering.model import key_id_from_reference
from api.metering.store import MeteringStore, store_url_from_env

T = TypeVar("T")


def metering_config() -> MeteringConfig:
    """The metering configuration the API runs with (a clear error when it cannot be read)."""
    try:
        return config_from_env(os.environ)
    except (OSError, MeteringConfigError) as exc:
        raise click.ClickException(f"metering configuration: {exc}") from None


def _with_store(
    action: Callable[[MeteringStore], Awaitable[T]], config: MeteringConfig | None = None
) -> T:
    """Run one action against the store named by MI_METERING_URL (default: the data dir's SQLite)."""
    config = config or metering_config()
    url = store_url_from_env(os.environ, Path(os.environ.get("MI_DATA_DIR", "data")))

    async def run() -> T:
        store = open_store(url, config)
        try:
            return await action(store)
        finally:
            await store.close()

    return asyncio.run(run())


def _when(ts: float | None) -> str:
    return "-" if ts is None else datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


@click.group("keys")
def keys() -> None:
    """Manage API keys (only a SHA-256 hash of each key is stored)."""


@keys.command("create")
@click.option(
    "--plan",
    required=True,
    help="A plan of the metering configuration (by default sandbox, quant, pro or internal).",
)
@click.option("--name", default="", help="A label for the key's owner.")
def create(plan: str, name: str) -> None:
    """Create a key; the key is printed once, as the last line."""
    config = metering_config()
    if plan not in config.plans:
        choices = ", ".join(repr(known) for known in sorted(config.plans))
        raise click.BadParameter(f"{plan!r} is not one of {choices}.", param_hint="'--plan'")
    key = _with_store(lambda store: store.create_key(plan, name), config)
    click.echo(
        f"Created a {plan} key{f' for {name}' if name else ''}. Store it now: it is not kept."
    )
    click.echo(key)


@keys.command("list")
def list_keys() -> None:
    """List keys: id, plan, name, created, revoked, pack balance."""
    records = _with_store(lambda store: store.list_keys())
    click.echo(f"{'id':<12} {'plan':<9} {'packs':>9}  {'created':<20} {'revoked':<20} name")
    for record in records:
        click.echo(
            f"{record.key_id:<12} {record.plan:<9} {record.pack_balance:>9}  "
            f"{_when(record.created_at):<20} {_when(record.revoked_at):<20} {record.name}"
        )


@keys.command("revoke")
@click.argument("key_or_prefix")
def revoke(key_or_prefix: str) -> None:
    """Revoke a key (by the key, `mi_live_<id>` or the id); refused from the next request on."""
    key_id = key_id_from_reference(key_or_prefix)
    if not _with_store(lambda store: store.revoke(key_id)):
        raise click.ClickException(f"no active key {key_id!r}")
    click.echo(f"Revoked {key_id}.")


@keys.command("topup")
@click.argument("key_or_prefix")
@click.option("--tokens", required=True, type=click.IntRange(min=1))
def topup(key_or_prefix: str, tokens: int) -> None:
    """Add a one-time token pack (never expires, rolls forward; drawn after the monthly base)."""
    key_id = key_id_from_reference(key_or_prefix)
    try:
        packs = _with_store(lambda store: store.topup(key_id, tokens))
    except KeyError:
        raise click.ClickException(f"no key {key_id!r}") from None
    click.echo(f"Added {tokens} tokens to {key_id}; pack balance {packs}.")


@keys.command("usage")
@click.argument("key_or_prefix")
def usage(key_or_prefix: str) -> None:
    """Plan, balance, and today's and this month's net spending by route (UTC)."""
    key_id = key_id_from_reference(key_or_prefix)
    try:
        report = _with_store(lambda store: store.usage(key_id))
    except KeyError:
        raise click.ClickException(f"no key {key_id!r}") from None
    balance = report.balance
    click.echo(f"key {report.key_id}  plan {report.plan}  pack balance {report.pack_balance}")
    click.echo(f"remaining this month {balance.remaining} of {balance.limit} (+ packs)")
    click.echo(f"remaining today {balance.remaining_today} of {balance.limit_today}")
    for title, spending in (("today", report.today), ("this month", report.month)):
        click.echo(f"spent {title}: {sum(spending.values())}")
        for route, spent in sorted(spending.items()):
            click.echo(f"  {route:<28} {spent:>9}")
