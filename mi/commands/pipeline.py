"""`mi materialize`: run every asset of every market, against the instance under data/ or on PostgreSQL."""

from __future__ import annotations

import importlib
import logging
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pipelines.catalog import MARKETS
from pipelines.settings import PipelineSettings, load_settings

if TYPE_CHECKING:
    import dagster as dg
    from dagster._utils.error import SerializableErrorInfo

REPO_ROOT = Path(__file__).resolve().parents[2]
"""Where `dagster.yaml` lives (the instance `make dagster` opens)."""

DEFAULT_MODULE = "pipelines.definitions"
QUIET_CONSOLE = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
"""Dagster's own console logger is silenced: the progress lines below say what matters."""


@dataclass
class CheckTally:
    """Asset check outcomes across every run."""

    passed: int = 0
    warned: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


@dataclass
class Progress:
    """An event listener printing one line per step start and finish, and collecting checks."""

    market: str
    echo: Callable[[str], None]
    checks: CheckTally
    failed_steps: list[str] = field(default_factory=list)
    _started: dict[str, float] = field(default_factory=dict)
    _rows: dict[str, list[str]] = field(default_factory=dict)

    def __call__(self, entry: dg.EventLogEntry) -> None:
        event = entry.dagster_event
        if event is None:
            self._user_message(entry)
        elif event.is_step_start and event.step_key:
            self._started[event.step_key] = entry.timestamp
            self._line(f"{event.step_key} started")
        elif event.is_step_materialization and event.step_key:
            self._rows.setdefault(event.step_key, []).append(_rows_of(event))
        elif event.event_type == event.event_type.ASSET_CHECK_EVALUATION:
            self._check(event.asset_check_evaluation_data)
        elif (event.is_step_success or event.is_step_failure) and event.step_key:
            self._finished(event, entry.timestamp)

    def _finished(self, event: dg.DagsterEvent, at: float) -> None:
        # Event timestamps, not the clock: a multiprocess run's events are replayed after it ends.
        key = event.step_key or ""
        elapsed = at - self._started.pop(key, at)
        rows = ", ".join(self._rows.pop(key, [])) or "no tables"
        if event.is_step_success:
            self._line(f"{key} done in {elapsed:.1f}s: {rows}")
            return
        self.failed_steps.append(f"{key} [{self.market}]")
        error = _root_cause(event)
        self._line(f"{key} FAILED after {elapsed:.1f}s: {error.message.strip() if error else ''}")
        if error:
            self.echo(error.to_string().rstrip())

    def _check(self, evaluation: dg.AssetCheckEvaluation) -> None:
        name = f"{evaluation.asset_key.to_user_string()}:{evaluation.check_name} [{self.market}]"
        if evaluation.passed:
            self.checks.passed += 1
        elif evaluation.severity == _error_severity():
            self.checks.failed.append(name)
        else:
            self.checks.warned.append(name)

    def _user_message(self, entry: dg.EventLogEntry) -> None:
        level = entry.level if isinstance(entry.level, int) else logging.getLevelName(entry.level)
        if isinstance(level, int) and level >= logging.INFO and entry.user_message:
            self._line(f"  {entry.step_key or ''}: {entry.user_message}")

    def _line(self, text: str) -> None:
        self.echo(f"[{self.market}] {text}")


def _root_cause(event: dg.DagsterEvent) -> SerializableErrorInfo | None:
    # The outermost error is Dagster's wrapper; the innermost names what went wrong in our code.
    error = event.step_failure_data.error if event.step_failure_data else None
    while error is not None and error.cause is not None:
        error = error.cause
    return error


def _rows_of(event: dg.DagsterEvent) -> str:
    materialization = event.step_materialization_data.materialization
    count = materialization.metadata.get("row_count")
    rows = f"{count.value:,} rows" if count is not None else "written"
    return f"{materialization.asset_key.to_user_string()} {rows}"


def _error_severity() -> dg.AssetCheckSeverity:
    import dagster as dg

    return dg.AssetCheckSeverity.ERROR


def open_instance(settings: PipelineSettings) -> dg.DagsterInstance:
    """The instance configured by the repo's dagster.yaml, its files under `<data_dir>/dagster`.

    Runs, events and schedules go to PostgreSQL when `MI_DAGSTER_POSTGRES_URL` is set, else to
    SQLite files under `<data_dir>/dagster/storage` (dagster.yaml's default).
    """
    import dagster as dg
    from dagster._core.instance.ref import InstanceRef

    home = settings.data_dir / "dagster"
    home.mkdir(parents=True, exist_ok=True)
    overrides = _storage(home, settings.dagster_postgres_url)
    ref = InstanceRef.from_dir(str(home), config_dir=str(REPO_ROOT), overrides=overrides)
    return dg.DagsterInstance.from_ref(ref)


def _storage(home: Path, postgres_url: str | None) -> dict[str, object]:
    # dagster.yaml's paths are relative to the repo root; these make them absolute under home.
    def configured(module: str, cls: str, base_dir: Path) -> dict[str, object]:
        return {"module": module, "class": cls, "config": {"base_dir": str(base_dir)}}

    storage = (
        {"postgres": {"postgres_url": psycopg2_url(postgres_url)}}
        if postgres_url
        else {"sqlite": {"base_dir": str(home / "storage")}}
    )
    return {
        "storage": storage,
        "local_artifact_storage": configured(
            "dagster.core.storage.root", "LocalArtifactStorage", home
        ),
        "compute_logs": configured(
            "dagster.core.storage.local_compute_log_manager",
            "LocalComputeLogManager",
            home / "logs",
        ),
    }


def psycopg2_url(url: str) -> str:
    """The URL with the driver dagster-postgres is locked with: SQLAlchemy 2.1 reads a bare
    `postgresql://` as psycopg 3, which the project does not install."""
    scheme, sep, rest = url.partition("://")
    return f"postgresql+psycopg2://{rest}" if sep and scheme in ("postgresql", "postgres") else url


def load_definitions(module_name: str) -> dg.Definitions:
    """The module's `defs`: a Definitions, or the function `@dg.definitions` made of one."""
    import dagster as dg

    defs = importlib.import_module(module_name).defs
    return defs if isinstance(defs, dg.Definitions) else defs()


def select_assets(job: dg.JobDefinition, names: Sequence[str]) -> list[dg.AssetKey] | None:
    """Keys named by full path (`a/b`) or last component, plus what their step produces with them.

    A multi-asset's outputs are computed together, so naming one selects all of them.
    None selects everything.
    """
    import dagster as dg

    if not names:
        return None
    graph = job.asset_layer.asset_graph
    keys = job.asset_layer.executable_asset_keys
    named = {k for k in keys if k.to_user_string() in names or k.path[-1] in names}
    known = {k.to_user_string() for k in named} | {k.path[-1] for k in named}
    unknown = sorted(set(names) - known)
    if unknown:
        available = ", ".join(sorted(k.to_user_string() for k in keys))
        raise click.BadParameter(
            f"unknown assets {unknown}; available: {available}", param_hint="--select"
        )
    together = (graph.get_execution_set_asset_and_check_keys(k) for k in named)
    return sorted({k for keys_ in together for k in keys_ if isinstance(k, dg.AssetKey)})


def daily_job(module_name: str) -> dg.JobDefinition:
    """The daily job of the module's Definitions (rebuilt this way in every step process)."""
    from pipelines.schedules import DAILY_JOB

    return load_definitions(module_name).resolve_job_def(DAILY_JOB)


def run_market(
    job: dg.JobDefinition,
    instance: dg.DagsterInstance,
    market: str,
    selection: list[dg.AssetKey] | None,
    progress: Progress,
    module_name: str | None = None,
) -> bool:
    """One run of the job for one market partition; True when it succeeded.

    With `module_name`, the run goes through the job's own executor (multiprocess, celery, k8s):
    the job is rebuilt from the module in each step's process, and the progress lines are printed
    from the run's event log once it ends. Without, every step runs in this process, printed live.
    """
    if module_name is not None:
        return _run_with_executor(instance, market, selection, progress, module_name)
    run_id = str(uuid.uuid4())
    instance.add_event_listener(run_id, progress)
    progress.echo(f"[{market}] run {run_id}")
    result = job.execute_in_process(
        run_config=QUIET_CONSOLE,
        instance=instance,
        partition_key=market,
        asset_selection=selection,
        run_id=run_id,
        raise_on_error=False,
        tags={"mi/command": "materialize"},
    )
    return result.success


def _run_with_executor(
    instance: dg.DagsterInstance,
    market: str,
    selection: list[dg.AssetKey] | None,
    progress: Progress,
    module_name: str,
) -> bool:
    import dagster as dg

    recon = dg.build_reconstructable_job(__name__, daily_job.__name__, (module_name,))
    with dg.execute_job(
        recon,
        instance,
        run_config=QUIET_CONSOLE,
        tags={"mi/command": "materialize", "dagster/partition": market},
        asset_selection=selection,
        raise_on_error=False,
    ) as result:
        progress.echo(f"[{market}] run {result.run_id}")
        for entry in instance.all_logs(result.run_id):
            progress(entry)
        return result.success


def _split(values: Sequence[str]) -> list[str]:
    return [part for value in values for part in value.split(",") if part]


def _summary(checks: CheckTally, failed_steps: list[str], elapsed: float) -> list[str]:
    lines = [
        f"checks: {checks.passed} passed, {len(checks.warned)} warned, {len(checks.failed)} failed"
    ]
    lines += [f"  WARN  {name}" for name in checks.warned]
    lines += [f"  ERROR {name}" for name in checks.failed]
    lines += [f"failed step: {name}" for name in failed_steps]
    ok = not failed_steps and not checks.failed
    lines.append(f"{'done' if ok else 'FAILED'} in {elapsed:.1f}s")
    return lines


@click.command()
@click.option(
    "--market",
    "markets",
    multiple=True,
    metavar="MARKET[,MARKET]",
    help=f"Only these markets (repeatable or comma-separated; default all: {', '.join(MARKETS)}).",
)
@click.option(
    "--select",
    "select",
    multiple=True,
    metavar="ASSET[,ASSET]",
    help="Only these assets, by name (repeatable or comma-separated; default every asset).",
)
@click.option(
    "-m",
    "--module",
    default=DEFAULT_MODULE,
    show_default=True,
    help="Module whose `defs` holds the Definitions to run.",
)
def materialize(markets: tuple[str, ...], select: tuple[str, ...], module: str) -> None:
    """Materialize every asset for every market, printing each step and a summary of checks.

    One Dagster run per market, recorded in the instance (under <data dir>/dagster, or on
    PostgreSQL with MI_DAGSTER_POSTGRES_URL) so they show in the Dagster UI. Steps run in this
    process unless MI_EXECUTOR names another executor (multiprocess). Exits 1 when a step fails or an
    ERROR-severity asset check fails.
    """
    chosen = _split(markets) or list(MARKETS)
    unknown = sorted(set(chosen) - set(MARKETS))
    if unknown:
        raise click.BadParameter(f"unknown markets {unknown}", param_hint="--market")
    settings = load_settings()
    job = daily_job(module)
    selection = select_assets(job, _split(select))
    started = time.monotonic()
    checks, failed = CheckTally(), []
    with open_instance(settings) as instance:
        click.echo(f"materializing {len(chosen)} market(s) into {settings.data_dir}")
        for market in chosen:
            progress = Progress(market, click.echo, checks)
            by_executor = module if settings.executor != "in_process" else None
            if (
                not run_market(job, instance, market, selection, progress, by_executor)
                and not progress.failed_steps
            ):
                progress.failed_steps.append(f"run [{market}]")
            failed += progress.failed_steps
    for line in _summary(checks, failed, time.monotonic() - started):
        click.echo(line)
    if failed or checks.failed:
        sys.exit(1)
