"""`mi materialize`: run every asset of every market, against the instance under data/ or on PostgreSQL."""

from __future__ import annotations

import fcntl
import importlib
import logging
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import click

from api.heap import collection_paused, frozen_heap
from mi.commands.space import NEARLY_FULL_BYTES, free_bytes, out_of_space, space_line
from pipelines.catalog import MARKETS
from pipelines.platform.settings import PipelineSettings, load_settings

if TYPE_CHECKING:
    import dagster as dg

REPO_ROOT = Path(__file__).resolve().parents[2]
"""Where `dagster.yaml` lives (the instance `make dagster` opens)."""

DEFAULT_MODULE = "pipelines.definitions"
IN_THIS_PROCESS = ("in_process",)
"""Executors whose steps run in the `mi materialize` process, printed as they go."""
HEARTBEAT_SECONDS = 10.0
"""A running step that has printed nothing for this long gets a line saying it still runs."""
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
    _domain_seconds: dict[str, float] = field(default_factory=dict)
    _rows: dict[str, list[str]] = field(default_factory=dict)
    _said: dict[str, tuple[float, str]] = field(default_factory=dict)
    """Step key -> when it last printed a line (the clock), and the last thing it said."""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, entry: dg.EventLogEntry) -> None:
        # The heartbeat thread (`beating`) prints too.
        with self._lock:
            self._take(entry)

    def beat(self, now: float | None = None) -> None:
        """A line for each running step that has printed nothing for `HEARTBEAT_SECONDS`: how
        long it has run and the last progress it reported (its own log lines say how far)."""
        now = time.time() if now is None else now
        with self._lock:
            for key, started in sorted(self._started.items()):
                last, said = self._said.get(key, (started, ""))
                if now - last < HEARTBEAT_SECONDS:
                    continue
                self._said[key] = (now, said)
                doing = f": {said}" if said else ""
                self._line(f"  {_step_name(key)} still running ({now - started:.0f}s){doing}")

    @contextmanager
    def beating(self) -> Iterator[None]:
        """`beat` every second in a thread while the block runs (the run's steps, in this
        process: a run through another executor replays its events only after it ends)."""
        done = threading.Event()

        def loop() -> None:
            while not done.wait(1.0):
                self.beat()

        thread = threading.Thread(target=loop, name="mi-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()

    def _take(self, entry: dg.EventLogEntry) -> None:
        event = entry.dagster_event
        if event is None:
            self._user_message(entry)
        elif event.is_step_start and event.step_key:
            self._started[event.step_key] = entry.timestamp
            self._said[event.step_key] = (time.time(), "")
            domain, role = _step_role(event.step_key)
            if role in ("", "plan"):
                self._line(f"{domain} started")
        elif event.is_step_materialization and event.step_key:
            self._rows.setdefault(event.step_key, []).append(_rows_of(event))
        elif event.event_type == event.event_type.ASSET_CHECK_EVALUATION:
            self._check(event.asset_check_evaluation_data)
        elif (event.is_step_success or event.is_step_failure) and event.step_key:
            self._finished(event, entry.timestamp)
        elif event.is_run_failure or event.event_type == event.event_type.ENGINE_EVENT:
            self._run_error(event)

    def _finished(self, event: dg.DagsterEvent, at: float) -> None:
        # Event timestamps, not the clock: a multiprocess run's events are replayed after it ends.
        key = event.step_key or ""
        elapsed = at - self._started.pop(key, at)
        self._said.pop(key, None)
        rows = ", ".join(self._rows.pop(key, [])) or "no tables"
        domain, role = _step_role(key)
        spent = self._domain_seconds.pop(domain, 0.0) + elapsed
        if role == "plan" or role.startswith("shard["):
            self._domain_seconds[domain] = spent
        if event.is_step_success:
            if role.startswith("shard["):
                market, _, shard = role[6:-1].rpartition("_")
                self._line(f"  {domain} {market}/{shard} done in {elapsed:.1f}s")
            elif role == "stage":
                # A domain's time is the sum of its steps' (its plan, every shard, its stage):
                # its work, whichever other steps ran between or beside them.
                self._line(f"{domain} done in {spent:.1f}s: {rows}")
            elif role == "":
                self._line(f"{key} done in {elapsed:.1f}s: {rows}")
            return
        self.failed_steps.append(f"{key} [{self.market}]")
        error = _root_cause(event)
        self._line(f"{key} FAILED after {elapsed:.1f}s: {error.message.strip() if error else ''}")
        if error:
            self.echo(error.to_string().rstrip())

    def _run_error(self, event: dg.DagsterEvent) -> None:
        """A failure of the run outside any step (an executor that cannot send a step, ...)."""
        data = event.job_failure_data if event.is_run_failure else event.engine_event_data
        if data is not None and data.error is not None:
            self._line(f"run: {(event.message or '').strip()} {data.error.message.strip()}")

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
            self._line(f"  {_step_role(entry.step_key or '')[0]}: {entry.user_message}")
            if entry.step_key in self._started:
                self._said[entry.step_key] = (time.time(), entry.user_message)

    def _line(self, text: str) -> None:
        self.echo(f"[{self.market}] {text}")


def _step_role(key: str) -> tuple[str, str]:
    """A step key as (domain, role): a carried-state domain's steps are `trends.trends_plan`,
    `trends.trends_shard[crypto_s0of2]` and `trends.trends_stage` (pipelines/incremental/assets.py);
    any other step is its own domain with role ''."""
    graph, dot, op = key.partition(".")
    if not dot or not op.startswith(f"{graph}_"):
        return key, ""
    return graph, op.removeprefix(f"{graph}_")


def _step_name(key: str) -> str:
    """A step as its lines name it: `trends crypto/s0of2` for a shard, else its key."""
    domain, role = _step_role(key)
    if not role.startswith("shard["):
        return key
    market, _, shard = role[6:-1].rpartition("_")
    return f"{domain} {market}/{shard}"


class ErrorInfo(Protocol):
    """What a step failure's error says (Dagster's serialized error, as its events carry it)."""

    @property
    def message(self) -> str: ...

    @property
    def cause(self) -> ErrorInfo | None: ...

    def to_string(self) -> str: ...


def _root_cause(event: dg.DagsterEvent) -> ErrorInfo | None:
    # The outermost error is Dagster's wrapper; the innermost names what went wrong in our code.
    error = event.step_failure_data.error if event.step_failure_data else None
    while error is not None and error.cause is not None:
        error = error.cause
    return error


def _rows_of(event: dg.DagsterEvent) -> str:
    materialization = event.step_materialization_data.materialization
    metadata = materialization.metadata
    count = metadata.get("dagster/row_count") or metadata.get("row_count")
    written = metadata.get("mi/rows_written")  # pipelines.warehouse.metadata.ROWS_WRITTEN
    if written is not None and count is not None:
        rows = f"{written.value:,} rows written, {count.value:,} in all"
    else:
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
    import yaml

    home = settings.data_dir / "dagster"
    home.mkdir(parents=True, exist_ok=True)
    config = yaml.safe_load((REPO_ROOT / "dagster.yaml").read_text())
    config.update(_storage(home, settings.dagster_postgres_url))
    written = yaml.safe_dump(config, sort_keys=False)
    # A new instance's SQLite storages create their tables and stamp their schema version as
    # they open. Two commands opening a new data dir at once (a deployment's first daily run and
    # its first news refresh) stamped it twice, and every later command failed on Alembic's
    # "more than one head". So instances open one at a time (the lock is held for milliseconds
    # once the files exist), and the instance's own dagster.yaml is written under the lock.
    with (home / "open.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        target = home / "dagster.yaml"
        if not target.exists() or target.read_text() != written:
            scratch = home / f".dagster.yaml.{os.getpid()}.tmp"
            scratch.write_text(written)
            os.replace(scratch, target)
        return dg.DagsterInstance.from_config(str(home))


def _storage(home: Path, postgres_url: str | None) -> dict[str, object]:
    """The repo dagster.yaml's entries whose paths are relative to the repo root, made absolute
    under `home`, and the storage on PostgreSQL when a URL is set."""

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


@dataclass(frozen=True)
class Selection:
    """Assets a run materializes and the checks it runs with them."""

    assets: frozenset[dg.AssetKey]
    checks: frozenset[dg.AssetCheckKey]


def select_assets(job: dg.JobDefinition, names: Sequence[str]) -> Selection | None:
    """Keys of the job named by full path (`a/b`) or last component, plus what their step produces
    with them (a multi-asset's outputs are computed together), plus the job's publish step (what
    a run writes becomes visible only when it commits) and expiry, with those assets' checks but for the
    freshness checks (their sensor evaluates them against the clock, never a run). None selects
    everything."""
    import dagster as dg

    from pipelines.jobs.schedules import CLOSING_STEPS, freshness_checks

    if not names:
        return None
    graph = job.asset_layer.asset_graph
    keys = job.asset_layer.executable_asset_keys
    named = {k for k in keys if k.to_user_string() in names or k.path[-1] in names}
    named |= {k for k in keys if k.path[-1] in CLOSING_STEPS}
    together = (graph.get_execution_set_asset_and_check_keys(k) for k in named)
    assets = frozenset(k for keys_ in together for k in keys_ if isinstance(k, dg.AssetKey))
    clocked = {key for check in freshness_checks() for key in check.check_keys}
    checks = frozenset(graph.get_check_keys_for_assets(assets) - clocked)
    return Selection(assets, checks)


def job_of(module_name: str, name: str) -> dg.JobDefinition:
    """A job of the module's Definitions (rebuilt this way in every step process, with
    collections paused as `materialize` builds them)."""
    with collection_paused():
        return load_definitions(module_name).resolve_job_def(name)


@dataclass(frozen=True)
class Run:
    """One Dagster run `mi materialize` starts: a job, its label in the output, how to run it."""

    job: str
    label: str
    run_config: dict[str, Any]
    tags: dict[str, str] = field(default_factory=dict)


def run_job(
    job: dg.JobDefinition,
    instance: dg.DagsterInstance,
    run: Run,
    selection: Selection | None,
    progress: Progress,
    module_name: str | None = None,
) -> bool:
    """One run of a job; True when it succeeded.

    With `module_name`, the run goes through the job's own executor (multiprocess, celery, k8s):
    the job is rebuilt from the module in each step's process, and the progress lines are printed
    from the run's event log once it ends. Without, the steps run one by one in this process,
    printed live.
    """
    config = _merge(QUIET_CONSOLE, run.run_config)
    tags = {"mi/command": "materialize", **run.tags}
    if module_name is not None:
        return _run_with_executor(instance, run, config, tags, selection, progress, module_name)
    run_id = str(uuid.uuid4())
    instance.add_event_listener(run_id, progress)
    progress.echo(f"[{run.label}] run {run_id}")
    if selection is not None:
        job = job.get_subset(
            asset_selection=selection.assets, asset_check_selection=selection.checks
        )
    with progress.beating():
        result = job.execute_in_process(
            run_config=config,
            instance=instance,
            run_id=run_id,
            raise_on_error=False,
            tags=tags,
        )
    return result.success


def _run_with_executor(
    instance: dg.DagsterInstance,
    run: Run,
    config: dict[str, Any],
    tags: dict[str, str],
    selection: Selection | None,
    progress: Progress,
    module_name: str,
) -> bool:
    import dagster as dg

    recon = dg.build_reconstructable_job(
        __name__,
        job_of.__name__,
        reconstructable_kwargs={"module_name": module_name, "name": run.job},
    )
    if selection is not None:
        recon = recon.get_subset(
            asset_selection=selection.assets, asset_check_selection=selection.checks
        )
    with dg.execute_job(
        recon,
        instance,
        run_config=config,
        tags=tags,
        raise_on_error=False,
    ) as result:
        progress.echo(f"[{run.label}] run {result.run_id}")
        for entry in instance.all_logs(result.run_id):
            progress(entry)
        return result.success


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """`a` and `b` merged key by key (nested dictionaries merged too)."""
    out = dict(a)
    for key, value in b.items():
        both = isinstance(out.get(key), dict) and isinstance(value, dict)
        out[key] = _merge(out[key], value) if both else value
    return out


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


def plan_runs(
    markets: list[str],
    day: date,
    since: date | None,
    full: bool,
    jobs: Sequence[str],
    first_load: bool = False,
    travelling: dict[str, object] | None = None,
) -> list[Run]:
    """The runs of one materialization: the news refresh first (the day's analyses cite its
    briefs), then the daily update for `day` (a backfill from `since`: one run over the range).

    A first load (no instruments stored yet) runs the daily update first, so that the news
    refresh tags articles with the instruments, then the daily update again: nothing is new for
    it but the analyses, now written with the news.
    """
    from pipelines.jobs.schedules import DAILY_JOB, NEWS_JOB

    own = travelling or {}  # the command's settings every step reads (`RunOptions.settings`)

    def config(full_: bool, **days: str) -> dict[str, Any]:
        options = {"full": full_, "markets": markets, **own, **days}
        return {"resources": {"run_options": {"config": options}}}

    news = [Run(NEWS_JOB, "news", config(full))] if NEWS_JOB in jobs else []
    if DAILY_JOB not in jobs:
        return news
    if since is None:
        daily = Run(DAILY_JOB, "daily", config(full, day=day.isoformat()))
    else:
        backfill = {"dagster/backfill": f"mi-{since.isoformat()}-{day.isoformat()}"}
        days = {"day": day.isoformat(), "since": since.isoformat()}
        daily = Run(DAILY_JOB, "daily", config(full, **days), tags=backfill)
    if first_load and news:
        again = Run(DAILY_JOB, "daily", config(False, day=day.isoformat()))
        return [daily, *news, again]
    return [*news, daily]


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
    "--job",
    "only",
    type=click.Choice(["daily", "news"]),
    help="Only the daily update or only the news refresh (default: both).",
)
@click.option(
    "--full", is_flag=True, help="Rebuild every table from the sources (no carried state)."
)
@click.option(
    "--day",
    type=click.DateTime(formats=["%Y-%m-%d"]),
    help="The day to bring the daily tables to (default MI_END_DATE, else today, UTC).",
)
@click.option(
    "--since",
    type=click.DateTime(formats=["%Y-%m-%d"]),
    help="Backfill: re-read the sources from this day on (revised bars are recomputed).",
)
@click.option(
    "-m",
    "--module",
    default=DEFAULT_MODULE,
    show_default=True,
    help="Module whose `defs` holds the Definitions to run.",
)
def materialize(
    markets: tuple[str, ...],
    select: tuple[str, ...],
    only: str | None,
    full: bool,
    day: datetime | None,
    since: datetime | None,
    module: str,
) -> None:
    """Bring the warehouse up to date: the news refresh, then the daily update of the day.

    Incremental by default: each domain carries its state and computes only new bars and new
    articles; `--full` rebuilds everything. Each run is recorded in the instance (under <data
    dir>/dagster, or on PostgreSQL with MI_DAGSTER_POSTGRES_URL) so it shows in the Dagster UI,
    and commits its tables together at its end. Steps run in this process unless MI_EXECUTOR
    names another executor. Exits 1 when a step fails or an ERROR-severity asset check fails.
    """
    chosen = _split(markets) or list(MARKETS)
    unknown = sorted(set(chosen) - set(MARKETS))
    if unknown:
        raise click.BadParameter(f"unknown markets {unknown}", param_hint="--market")
    settings = load_settings()
    if settings.executor == "celery" and settings.dagster_postgres_url is None:
        raise click.UsageError(
            "MI_EXECUTOR=celery needs MI_DAGSTER_POSTGRES_URL: the workers record the steps they "
            "run in the run's Dagster instance, which SQLite files cannot share across hosts"
        )
    target = day.date() if day else settings.resolved_end_date()
    _refuse_outside_runs(target, "--day" if day else "MI_END_DATE")
    if since is not None:
        _refuse_outside_runs(since.date(), "--since")
        if since.date() > target:
            raise click.BadParameter(
                f"{since.date()} is after the day {target}", param_hint="--since"
            )
    checks, failed = CheckTally(), list[str]()
    by_executor = module if settings.executor not in IN_THIS_PROCESS else None
    try:
        started = _run_all(
            settings, module, chosen, select, only, full, target, since, checks, failed, by_executor
        )
    except Exception as error:
        if not out_of_space(error, settings.data_dir):
            raise
        click.echo(space_line("mi materialize", settings.data_dir), err=True)
        sys.exit(1)
    for line in _summary(checks, failed, time.monotonic() - started):
        click.echo(line)
    if failed and free_bytes(settings.data_dir) < NEARLY_FULL_BYTES:
        click.echo(space_line("mi materialize", settings.data_dir), err=True)
    if failed or checks.failed:
        sys.exit(1)


def _refuse_outside_runs(day: date, source: str) -> None:
    """A day the daily job has no partition for (before its first, or after today UTC) is bad
    input, named with where it came from."""
    from pipelines.platform.daily import DAILY_START

    first, today = date.fromisoformat(DAILY_START), datetime.now(UTC).date()
    if day < first:
        raise click.BadParameter(
            f"{day} is before {first}, the first day a run can bring in", param_hint=source
        )
    if day > today:
        raise click.BadParameter(f"{day} is after today ({today}, UTC)", param_hint=source)


def _run_all(
    settings: PipelineSettings,
    module: str,
    chosen: list[str],
    select: tuple[str, ...],
    only: str | None,
    full: bool,
    target: date,
    since: datetime | None,
    checks: CheckTally,
    failed: list[str],
    by_executor: str | None,
) -> float:
    """Every run of the command, in order; when it started (the monotonic clock)."""
    with ExitStack() as kept:
        # What the command builds before its runs (Dagster, the definitions, the modules, the
        # instance) outlives every run. It is built with collections paused (each walked the
        # growing heap), then frozen as it is: a full collection holds the GIL, and walking that
        # heap again made steps beside each other wait.
        with collection_paused():
            definitions = load_definitions(module)
            names = _split(select)
            jobs = [
                j
                for j in _job_names(definitions)
                if (not names or _selects(definitions, j, names))
                and (only is None or j.startswith(only))
            ]
            if names and not jobs:
                _refuse_unknown(definitions, names)
            started = time.monotonic()
            instance = kept.enter_context(open_instance(settings))
            kept.enter_context(frozen_heap(collect=False))
        click.echo(f"materializing {', '.join(chosen)} into {settings.data_dir} (day {target})")
        first = _first_load(settings, chosen)
        from pipelines.platform.runs import (
            RunOptions,  # Dagster's modules: imported once it is needed
        )

        travelling = RunOptions.travelling(settings)
        for run in plan_runs(
            chosen, target, since.date() if since else None, full, jobs, first, travelling
        ):
            job = definitions.resolve_job_def(run.job)
            progress = Progress(run.label, click.echo, checks)
            selection = select_assets(job, names)
            succeeded = run_job(job, instance, run, selection, progress, by_executor)
            if not succeeded and not progress.failed_steps:
                progress.failed_steps.append(f"run [{run.label}]")
            failed += progress.failed_steps
    return started


def _first_load(settings: PipelineSettings, markets: list[str]) -> bool:
    """No instruments of these markets are stored yet (a new warehouse, or a new market)."""
    from pipelines.catalog import INSTRUMENTS

    manifest = settings.warehouse.read_manifest()
    stored = set(manifest.markets(INSTRUMENTS.name)) if manifest else set()
    return not set(markets) <= stored


def _job_names(definitions: dg.Definitions) -> list[str]:
    """The jobs with something to materialize besides their closing steps, news first."""
    from pipelines.jobs.schedules import CLOSING_STEPS, DAILY_JOB, NEWS_JOB

    available = {job.name for job in definitions.get_repository_def().get_all_jobs()}
    names = [name for name in (NEWS_JOB, DAILY_JOB) if name in available]
    return [
        name
        for name in names
        if {k.path[-1] for k in definitions.resolve_job_def(name).asset_layer.executable_asset_keys}
        - set(CLOSING_STEPS)
    ]


def _selects(definitions: dg.Definitions, job: str, names: list[str]) -> bool:
    keys = definitions.resolve_job_def(job).asset_layer.executable_asset_keys
    return any(k.to_user_string() in names or k.path[-1] in names for k in keys)


def _refuse_unknown(definitions: dg.Definitions, names: list[str]) -> None:
    keys = {
        k
        for job in _job_names(definitions)
        for k in definitions.resolve_job_def(job).asset_layer.executable_asset_keys
    }
    available = ", ".join(sorted(k.to_user_string() for k in keys))
    raise click.BadParameter(
        f"unknown assets {sorted(names)}; available: {available}", param_hint="--select"
    )
