"""What a run is asked to do: its days, its markets, full or incremental, and its step names."""

# No `from __future__ import annotations`: Dagster reads the asset functions' annotations at definition time.

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from typing import TypeVar

import dagster as dg

from pipelines.catalog import MARKETS
from pipelines.platform.settings import DEFAULT_SHARD_SYMBOLS, PipelineSettings, news_instant

F = TypeVar("F", bound=Callable[..., object])


class RunOptions(dg.ConfigurableResource):
    """Run configuration shared by every step (`resources.run_options.config` of a run).

    The run's own settings travel here too (`end_date`, `now`, `instruments`, which `mi
    materialize` fills from its environment), so that a step reads the settings of the command
    that launched its run, not those of the worker process that runs it: a `mi workers` process
    started once serves every later run (docs/deployment.md). None leaves the code location's
    own setting (a run launched from the Dagster UI)."""

    full: bool = False
    """Forget every carried state and rebuild the tables from the sources."""
    markets: list[str] = list(MARKETS)  # noqa: RUF012 (pydantic copies a config default)
    """Only these markets; the others' tables are left as they are."""
    shard_symbols: int = DEFAULT_SHARD_SYMBOLS
    """Most symbols a shard holds (`MI_SHARD_SYMBOLS`)."""
    end_date: str | None = None
    """The embedded market's last day (`MI_END_DATE`, YYYY-MM-DD; "" for none: the run's day)."""
    now: str | None = None
    """The news clock (`MI_NOW`, ISO 8601; "" for the real clock)."""
    instruments: int | None = None
    """The embedded market's total instruments (`MI_INSTRUMENTS`; 0 for the default universe)."""
    day: str | None = None
    """The daily job: bring the tables through this day (YYYY-MM-DD); None: today, UTC."""
    since: str | None = None
    """The daily job's backfill: re-read the sources from this day on (YYYY-MM-DD)."""

    def settings(self, base: PipelineSettings) -> PipelineSettings:
        """`base` with the run's own end date, clock and universe where the run names them."""
        changes: dict[str, object] = {}
        if self.end_date is not None:
            changes["end_date"] = date.fromisoformat(self.end_date) if self.end_date else None
        if self.now is not None:
            changes["now"] = datetime.fromisoformat(self.now) if self.now else None
        if self.instruments is not None:
            changes["instruments"] = self.instruments or None
        return replace(base, **changes) if changes else base  # type: ignore[arg-type]

    def news_now(self, fallback: Callable[[], datetime]) -> datetime:
        """The run's news clock: its `now` (else the real clock), never after its end date's last
        second; the code location's (`fallback`) when the run names neither."""
        if self.now is None and self.end_date is None:
            return fallback()
        now = datetime.fromisoformat(self.now) if self.now else datetime.now(UTC)
        return news_instant(now, date.fromisoformat(self.end_date) if self.end_date else None)

    @classmethod
    def travelling(cls, settings: PipelineSettings) -> dict[str, object]:
        """The run config of `settings` that every step of a run must read (`settings`): the
        clock always, the embedded market's end date and universe when it is the source."""
        config: dict[str, object] = {"now": settings.now.isoformat() if settings.now else ""}
        if settings.sources_config is None:
            config["end_date"] = settings.end_date.isoformat() if settings.end_date else ""
            config["instruments"] = settings.instruments or 0
        return config


@dataclass(frozen=True)
class RunDays:
    """The days a daily run covers."""

    through: date
    """Bars dated up to this day (the run's `day`)."""
    since: date | None
    """A backfill re-reads the sources from its first day (None: only what is new)."""


def run_days(run_options: RunOptions) -> RunDays:
    """The run's days, from its config (`day`, default today UTC; `since` for a backfill)."""
    through = date.fromisoformat(run_options.day) if run_options.day else datetime.now(UTC).date()
    since = date.fromisoformat(run_options.since) if run_options.since else None
    return RunDays(through=through, since=since)


def step_name(context: dg.AssetExecutionContext | dg.OpExecutionContext) -> str:
    """The step's name, one staging record per step of a run: its op's name, with the mapping key
    of a step fanned out per shard (`trends_shard[crypto_s0of2]`)."""
    op = context.op_execution_context if isinstance(context, dg.AssetExecutionContext) else context
    key = op.get_mapping_key()
    return f"{op.op.name}[{key}]" if key else op.op.name
