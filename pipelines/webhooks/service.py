"""Where the parts meet: settings, deriving events from the warehouse into the outbox, delivering."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import polars as pl

from pipelines.catalog import (
    BACKTEST_SUMMARIES,
    BACKTEST_TRADES,
    BRIEFS,
    CURRENT_ACTIONS,
    SENTIMENT_DAILY,
    TABLES,
    LocalStorage,
    Table,
    WarehouseStorage,
    read_partitions,
)
from pipelines.webhooks import derive
from pipelines.webhooks.config import WebhooksConfig, load_config
from pipelines.webhooks.events import Event
from pipelines.webhooks.outbox import Outbox


@dataclass(frozen=True)
class WebhookSettings:
    """Where the webhooks file and the outbox are."""

    config_path: Path | None
    outbox_path: Path
    warehouse_dir: Path | WarehouseStorage
    """The warehouse events are derived from (a local directory, or the configured storage)."""

    @property
    def warehouse(self) -> WarehouseStorage:
        return storage_of(self.warehouse_dir)

    def load(self) -> WebhooksConfig:
        """The webhooks file as it is now (operators edit it; read it on every use)."""
        return load_config(self.config_path)

    def open_outbox(self) -> Outbox:
        return Outbox(self.outbox_path)


def storage_of(warehouse: Path | WarehouseStorage) -> WarehouseStorage:
    return LocalStorage(warehouse) if isinstance(warehouse, Path) else warehouse


def webhook_settings(
    data_dir: Path,
    env: Mapping[str, str] | None = None,
    warehouse: WarehouseStorage | None = None,
) -> WebhookSettings:
    """`MI_WEBHOOKS` (the webhooks TOML; unset: no subscriptions) and `MI_WEBHOOKS_OUTBOX`; the
    warehouse is `warehouse` (the pipeline's configured storage), else `<data_dir>/warehouse`."""
    env = os.environ if env is None else env
    config = env.get("MI_WEBHOOKS")
    outbox = env.get("MI_WEBHOOKS_OUTBOX")
    return WebhookSettings(
        config_path=Path(config).resolve() if config else None,
        outbox_path=Path(outbox).resolve() if outbox else data_dir / "webhooks" / "outbox.sqlite",
        warehouse_dir=warehouse if warehouse is not None else data_dir / "warehouse",
    )


Family = Callable[[pl.DataFrame], list[Event]]


def _families(config: WebhooksConfig) -> list[tuple[str, Table, Family]]:
    families: list[tuple[str, Table, Family]] = [
        ("news", BRIEFS, derive.news_events),
        ("trades", BACKTEST_TRADES, derive.trade_events),
        ("portfolio", BACKTEST_SUMMARIES, derive.portfolio_events),
        ("sentiment", SENTIMENT_DAILY, partial(_sentiment, config)),
    ]
    for feed in config.custom:
        if feed.table not in TABLES:
            raise ValueError(f"custom feed {feed.name!r}: no warehouse table {feed.table!r}")
        families.append(
            (f"custom.{feed.name}", TABLES[feed.table], partial(derive.custom_events, feed))
        )
    return families


def _sentiment(config: WebhooksConfig, frame: pl.DataFrame) -> list[Event]:
    return derive.sentiment_events(frame, config.sentiment)


def derive_events(
    warehouse: Path | WarehouseStorage, outbox: Outbox, config: WebhooksConfig, now: float
) -> dict[str, int]:
    """Derive every family's events from the current warehouse into the outbox; new events per family.

    The first time a family's table is seen, its events are recorded as a baseline and not
    delivered: subscribers get what happens from then on, not the warehouse's history.
    """
    storage = storage_of(warehouse)
    manifest = storage.read_manifest()
    if manifest is None:
        return {}
    counts: dict[str, int] = {}
    for family, table, build in _families(config):
        if not manifest.tables.get(table.name):
            continue
        events = build(read_partitions(storage, table, manifest=manifest))
        counts[family] = _record(outbox, config, family, events, now)
    if manifest.tables.get(CURRENT_ACTIONS.name):
        actions = read_partitions(storage, CURRENT_ACTIONS, manifest=manifest)
        counts["actions"] = _record_action_changes(outbox, config, actions, now)
    return counts


def _record(
    outbox: Outbox, config: WebhooksConfig, family: str, events: list[Event], now: float
) -> int:
    seen = f"baseline:{family}"
    first = outbox.get_state(seen) is None
    new = outbox.record(events, config.subscriptions, now, deliver=not first)
    if first:
        outbox.set_states({seen: str(now)})
    return 0 if first else new


def _record_action_changes(
    outbox: Outbox, config: WebhooksConfig, actions: pl.DataFrame, now: float
) -> int:
    stored = json.loads(outbox.get_state("actions") or "[]")
    previous = {(m, s, st): a for m, s, st, a in stored}
    events, state = derive.action_change_events(actions, previous)
    new = outbox.record(events, config.subscriptions, now)
    outbox.set_states({"actions": json.dumps([[*k, a] for k, a in sorted(state.items())])})
    return new
