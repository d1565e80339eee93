"""MI_EXECUTOR=celery end to end: `mi materialize` sends every step to RabbitMQ, `mi workers`
processes run them against the Dagster instance on PostgreSQL and the warehouse on S3 (moto), and
every table equals what one process writes.

Each test has its own RabbitMQ virtual host, PostgreSQL database and bucket. One test restarts the
machine's RabbitMQ node, so no other test may use it meanwhile: they are all in this module, and
`make test` gives each module's tests to one xdist worker (`--dist loadfile`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest

from benchmarks.services import await_worker, fresh_database, rabbitmqctl, virtual_host
from mi.commands.pipeline import open_instance
from pipelines.catalog import TABLES as CATALOG
from pipelines.catalog import S3Location, WarehouseStorage, open_storage, read_partitions
from pipelines.platform.settings import load_settings
from tests.netns import Host, hosts, relays
from tests.s3 import moto_endpoint, new_bucket
from tests.warehouses import assert_same_warehouse

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

MI = str(Path(sys.executable).with_name("mi"))
COMMON = {"MI_INSTRUMENTS": "12", "MI_END_DATE": "2026-03-02"}
MARKETS = "crypto,forex"
LONG_STEP = "news_ingestion"
"""A step that runs for seconds on this universe (it parses every article of the history)."""
PORTS = {"postgres": 5432, "rabbitmq": 5672, "redis": 6379}


def _env(settings: dict[str, str]) -> dict[str, str]:
    """This process's environment (the S3 credentials included) without a developer's MI_*
    settings, plus `settings`."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("MI_")}
    return {**base, **settings}


def materialize(settings: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [MI, "materialize", "--market", MARKETS],
        env=_env(settings),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # no signal sent to the test's process group reaches the run
    )


def finished(run: subprocess.Popen[str], timeout: float = 600) -> str:
    """The run's output once it has exited with success."""
    output, _ = run.communicate(timeout=timeout)
    assert run.returncode == 0, output
    return output


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The data dir of one in-process run (SQLite instance, local warehouse): the tables every
    distributed run must write."""
    data_dir = tmp_path_factory.mktemp("in-process")
    finished(materialize({"MI_DATA_DIR": str(data_dir), **COMMON}))
    return data_dir


@dataclass(frozen=True)
class Cluster:
    """The settings the orchestrator and every worker share."""

    env: dict[str, str]

    @property
    def data_dir(self) -> Path:
        return Path(self.env["MI_DATA_DIR"])

    @property
    def warehouse(self) -> S3Location:
        location = load_settings(self.env).warehouse
        assert isinstance(location, S3Location)
        return location


@contextmanager
def cluster(data_dir: Path, address: str = "127.0.0.1") -> Iterator[Cluster]:
    """A fresh virtual host, database and bucket, reached at `address`."""
    with virtual_host() as vhost, fresh_database() as postgres, moto_endpoint(address) as s3:
        env = {
            **COMMON,
            "MI_DATA_DIR": str(data_dir),
            "MI_EXECUTOR": "celery",
            "MI_DAGSTER_POSTGRES_URL": postgres.replace("127.0.0.1", address),
            "MI_WAREHOUSE_URL": f"s3://{new_bucket(s3)}/warehouse",
            "MI_S3_ENDPOINT_URL": s3,
            "MI_CELERY_BROKER_URL": f"pyamqp://guest:guest@{address}:5672/{vhost}",
            "MI_CELERY_BACKEND_URL": f"redis://{address}:6379/14",
        }
        yield Cluster(env)


@dataclass(frozen=True)
class Worker:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def kill(self) -> None:
        """SIGKILL to the worker (its process group): nothing is finished or acknowledged."""
        os.killpg(self.process.pid, signal.SIGKILL)


@contextmanager
def workers(
    cluster: Cluster, names: Sequence[str], logs: Path, on: Sequence[Host] = ()
) -> Iterator[list[Worker]]:
    """`mi workers` processes (worker i inside host i's namespace when `on` is given), ready to
    take steps; stopped at the end."""
    started: list[Worker] = []
    try:
        for i, name in enumerate(names):
            argv = [MI, "workers", "-n", name]
            log = logs / f"{name.split('@')[0]}.log"
            with log.open("wb") as out:
                process = subprocess.Popen(
                    on[i].command(argv) if on else argv,
                    env=_env(cluster.env),
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            started.append(Worker(name, process, log))
        for worker in started:
            await_worker(worker.process, worker.log, timeout=90)
        yield started
    finally:
        for worker in started:
            with suppress(ProcessLookupError):
                os.killpg(worker.process.pid, signal.SIGTERM)
        for worker in started:
            try:
                worker.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.process.wait()


def steps_by_worker(cluster: Cluster) -> list[tuple[str, str]]:
    """(step, worker) of every step a worker started, in the order the instance recorded them."""
    with open_instance(load_settings(cluster.env)) as instance:
        return _started(instance)


def _started(instance: dg.DagsterInstance) -> list[tuple[str, str]]:
    out = []
    for run in reversed(instance.get_runs()):
        for entry in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
            event = entry.dagster_event
            assert event is not None
            worker = event.engine_event_data.metadata.get("Celery worker")
            if worker is not None and entry.step_key is not None:
                out.append((entry.step_key, str(worker.value)))
    return out


def events(cluster: Cluster, kind: dg.DagsterEventType) -> list[dg.EventLogEntry]:
    with open_instance(load_settings(cluster.env)) as instance:
        return [
            entry
            for run in instance.get_runs()
            for entry in instance.all_logs(run.run_id, of_type=kind)
        ]


def worker_of(cluster: Cluster, step: str, timeout: float = 300) -> str:
    """The worker that starts `step`, as soon as the instance records it."""
    deadline = time.monotonic() + timeout
    with open_instance(load_settings(cluster.env)) as instance:
        while time.monotonic() < deadline:
            found = [worker for key, worker in _started(instance) if key == step]
            if found:
                return found[0]
            time.sleep(0.05)
    raise AssertionError(f"no worker started {step} in {timeout} s")


def assert_same_as(reference: Path, cluster: Cluster) -> None:
    local = open_storage(reference / "warehouse")
    assert_same_warehouse(cluster.warehouse, cluster.data_dir, local, reference)


def test_two_worker_processes_write_the_tables_one_process_writes(
    reference: Path, tmp_path: Path
) -> None:
    """Every step of the runs is run by one of two `mi workers` processes, both take steps (the
    shard steps of the carried-state domains among them), and every warehouse table equals the
    in-process run's."""
    with cluster(tmp_path / "data") as c, workers(c, ["w1@here", "w2@here"], tmp_path):
        finished(materialize(c.env))
        ran = steps_by_worker(c)
        assert_same_as(reference, c)
    assert {worker for _, worker in ran} == {"w1@here", "w2@here"}
    assert {"raw_daily_prices", LONG_STEP, "daily_publish", "news_publish"} <= {s for s, _ in ran}
    assert {worker for step, worker in ran if "_shard[" in step} == {"w1@here", "w2@here"}


def test_workers_on_two_other_hosts_write_the_tables_one_process_writes(
    reference: Path, tmp_path: Path
) -> None:
    """Each worker in its own network namespace reaches the broker, PostgreSQL, Redis and the
    object store only over its veth pair (the machine's side of the first pair, through relays
    to the services on 127.0.0.1); both take steps and the tables equal the in-process run's."""
    with ExitStack() as stack:
        first, second = stack.enter_context(hosts(2))
        stack.enter_context(relays(first.gateway, {p: p for p in PORTS.values()}))
        c = stack.enter_context(cluster(tmp_path / "data", first.gateway))
        assert not _reaches(second, "127.0.0.1", PORTS["postgres"])  # its own network stack
        assert _reaches(second, first.gateway, PORTS["postgres"])
        stack.enter_context(workers(c, ["w1@host1", "w2@host2"], tmp_path, [first, second]))
        finished(materialize(c.env))
        ran = steps_by_worker(c)
        assert_same_as(reference, c)
    assert {worker for _, worker in ran} == {"w1@host1", "w2@host2"}


def _reaches(host: Host, address: str, port: int) -> bool:
    probe = f"import socket; socket.create_connection(({address!r}, {port}), timeout=3)"
    done = subprocess.run(host.command([sys.executable, "-c", probe]), capture_output=True)
    return done.returncode == 0


def test_a_step_whose_worker_is_killed_runs_again_on_the_other_worker(
    reference: Path, tmp_path: Path
) -> None:
    """SIGKILL to the worker running a step, in the middle of it: the step is left on the queue
    (acknowledged only when done), the other worker runs it, the run succeeds, each run
    publishes one version, and the tables equal the in-process run's."""
    with cluster(tmp_path / "data") as c, workers(c, ["w1@here", "w2@here"], tmp_path) as both:
        run = materialize(c.env)
        victim = worker_of(c, LONG_STEP)
        time.sleep(0.3)
        next(w for w in both if w.name == victim).kill()
        finished(run)
        ran = [worker for step, worker in steps_by_worker(c) if step == LONG_STEP]
        succeeded = [
            e.step_key
            for e in events(c, dg.DagsterEventType.STEP_SUCCESS)
            if e.step_key == LONG_STEP
        ]
        runs = len(events(c, dg.DagsterEventType.RUN_SUCCESS))
        published = [
            e
            for e in events(c, dg.DagsterEventType.ASSET_MATERIALIZATION)
            if e.asset_materialization is not None
            and e.asset_materialization.asset_key.path[-1] in ("daily_publish", "news_publish")
        ]
        assert_same_as(reference, c)
    survivor = ({"w1@here", "w2@here"} - {victim}).pop()
    assert ran == [victim, survivor]
    assert succeeded == [LONG_STEP]
    assert len(published) == runs


def test_a_broker_restart_mid_run_ends_the_run_whole_or_leaves_the_last_version(
    reference: Path, tmp_path: Path
) -> None:
    """RabbitMQ stopped and started again while a step runs: the run completes (the tables equal
    the in-process run's) or fails cleanly, and then the current version is the last one a
    publish step committed, every table of it readable."""
    with cluster(tmp_path / "data") as c, workers(c, ["w1@here", "w2@here"], tmp_path):
        run = materialize(c.env)
        worker_of(c, LONG_STEP)
        try:
            rabbitmqctl("stop_app")
            time.sleep(2)
        finally:
            rabbitmqctl("start_app")
        output, _ = run.communicate(timeout=600)
        print(
            f"after the broker restart the run {'completed' if run.returncode == 0 else 'failed'}"
        )
        if run.returncode == 0:
            assert_same_as(reference, c)
            return
        assert "FAILED" in output, output
        _assert_last_published(c)


def _assert_last_published(cluster: Cluster) -> None:
    manifest = cluster.warehouse.read_manifest()
    versions = [
        entry.asset_materialization.metadata["version"].value
        for entry in events(cluster, dg.DagsterEventType.ASSET_MATERIALIZATION)
        if entry.asset_materialization is not None
        and "version" in entry.asset_materialization.metadata
    ]
    if manifest is None:
        assert versions == []
        return
    assert manifest.version == max(versions)
    storage: WarehouseStorage = cluster.warehouse
    for table in CATALOG.values():
        read_partitions(storage, table, manifest=manifest)


def test_a_celery_run_without_a_shared_instance_is_refused(tmp_path: Path) -> None:
    """SQLite files cannot be shared by workers on other hosts: MI_EXECUTOR=celery needs
    MI_DAGSTER_POSTGRES_URL, and says so before any step is sent."""
    run = materialize({"MI_DATA_DIR": str(tmp_path), "MI_EXECUTOR": "celery", **COMMON})
    output, _ = run.communicate(timeout=120)
    assert run.returncode == 2
    assert "MI_EXECUTOR=celery needs MI_DAGSTER_POSTGRES_URL" in output


def test_the_worker_command_names_its_settings() -> None:
    done = subprocess.run([MI, "workers", "--help"], capture_output=True, text=True, check=True)
    for setting in ("MI_CELERY_BROKER_URL", "MI_DAGSTER_POSTGRES_URL", "MI_WAREHOUSE_URL"):
        assert setting in done.stdout


def test_a_worker_asked_for_no_concurrency_is_refused() -> None:
    done = subprocess.run([MI, "workers", "--concurrency", "0"], capture_output=True, text=True)
    assert done.returncode == 2
    assert "--concurrency" in done.stderr
    assert "0 is not in the range x>=1" in done.stderr


def materialized(settings: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MI, "materialize", "--market", MARKETS, *args],
        env=_env(settings),
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_a_worker_started_before_the_settings_change_runs_each_run_with_its_own(
    tmp_path: Path,
) -> None:
    """Issue 53: a run's settings travel with the run (`RunOptions`: the end date, the clock,
    the universe of the command that launched it), so a `mi workers` process started once serves
    every later run. The worker starts with MI_END_DATE=2026-03-02; the second run's command says
    2026-03-03, and the tables equal an in-process run of the same two commands."""
    later = {"MI_END_DATE": "2026-03-03", "MI_NOW": "2026-03-03T12:00:00+00:00"}
    local = tmp_path / "local"
    for day in ({}, later):
        done = materialized(
            {"MI_DATA_DIR": str(local), **COMMON, **day}, *(["--job", "daily"] if day else [])
        )
        assert done.returncode == 0, done.stdout[-3000:]
    with cluster(tmp_path / "data") as c, workers(c, ["w1@here"], tmp_path):
        first = materialized(c.env)
        assert first.returncode == 0, first.stdout[-3000:]
        second = materialized({**c.env, **later}, "--job", "daily")  # the worker's env is unchanged
        assert second.returncode == 0, second.stdout[-3000:]
        assert_same_warehouse(c.warehouse, c.data_dir, open_storage(local / "warehouse"), local)
        newest = read_partitions(c.warehouse, CATALOG["daily_prices"])["date"].max()
    assert str(newest) == "2026-03-03"


def test_a_step_on_a_host_that_cannot_see_the_sources_fails_the_run(tmp_path: Path) -> None:
    """Issue 53: a worker with a data directory of its own (another machine's disk) read none of
    the embedded market's news and the refresh published an empty raw_news with only a WARN. A
    step that cannot see its sources now fails the run, and the warehouse keeps its version."""
    with cluster(tmp_path / "data") as c:
        with workers(c, ["w1@here"], tmp_path):
            first = materialized(c.env)
            assert first.returncode == 0, first.stdout[-3000:]
        before = c.warehouse.read_manifest()
        elsewhere = {**c.env, "MI_DATA_DIR": str(tmp_path / "other-disk")}
        with workers(Cluster(elsewhere), ["w2@there"], tmp_path):
            refresh = materialized(c.env, "--job", "news", "--select", "raw_news")
        after = c.warehouse.read_manifest()
    assert refresh.returncode == 1
    assert "news folder" in refresh.stdout
    assert "does not exist" in refresh.stdout
    assert before is not None
    assert after is not None
    assert after.version == before.version
