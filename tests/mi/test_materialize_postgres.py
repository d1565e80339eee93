"""The Dagster instance on PostgreSQL (127.0.0.1:5432) and runs through the multiprocess executor.

Each test creates its own database `mi_test_<random>` and drops it afterwards.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
import yaml
from click.testing import CliRunner
from dagster._core.instance.ref import InstanceRef

from benchmarks.services import fresh_database
from mi.cli import main
from mi.commands.pipeline import REPO_ROOT, open_instance
from pipelines.catalog import read_manifest
from pipelines.jobs.schedules import RUN_TAG
from pipelines.platform.settings import load_settings

TOY = "tests.mi.toy_definitions"


@pytest.fixture
def postgres_url() -> Iterator[str]:
    with fresh_database() as url:
        yield url


@pytest.mark.slow
def test_materialize_records_multiprocess_runs_on_postgres(tmp_path: Path, postgres_url: str) -> None:  # fmt: skip
    """`mi materialize` with MI_DAGSTER_POSTGRES_URL and MI_EXECUTOR=multiprocess: the daily run
    succeeds, is recorded in PostgreSQL (no SQLite storage is created), each step ran in a worker
    process of the multiprocess executor, and the warehouse holds both markets."""
    env = {
        "MI_DATA_DIR": str(tmp_path),
        "MI_DAGSTER_POSTGRES_URL": postgres_url,
        "MI_EXECUTOR": "multiprocess",
    }
    result = CliRunner().invoke(
        main, ["materialize", "-m", TOY, "--market", "crypto,forex"], env=env
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any(line.startswith("[daily] toy_instruments done in") for line in lines), lines
    assert "checks: 1 passed, 1 warned, 0 failed" in lines
    assert not (tmp_path / "dagster" / "storage").exists()

    manifest = read_manifest(tmp_path / "warehouse")
    assert manifest is not None
    assert sorted(manifest.tables["instruments"]) == ["crypto", "forex"]

    with open_instance(load_settings(env)) as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        (run,) = instance.get_runs()
        day = run.run_config["resources"]["run_options"]["config"]["day"]  # type: ignore[index]
        assert day == load_settings(env).resolved_end_date().isoformat()
        assert run.status == dg.DagsterRunStatus.SUCCESS
        workers = instance.get_records_for_run(
            run.run_id, of_type=dg.DagsterEventType.STEP_WORKER_STARTED
        ).records
        # The toy step, the publish step and expiry, each in its own process.
        assert len(workers) == 3


@pytest.mark.parametrize("name", ["dagster.yaml", "dagster-celery.yaml"])
def test_the_shipped_postgres_instance_config_loads(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """deploy/dagster/dagster.yaml and dagster-celery.yaml (daemon, webserver and run workers)
    open on PostgreSQL from the environment (a `postgresql+psycopg2://` URL, as the file is read
    without `mi`), with the queued run coordinator."""
    driver_url = postgres_url.replace("postgresql://", "postgresql+psycopg2://")
    monkeypatch.setenv("MI_DAGSTER_POSTGRES_URL", driver_url)
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    shutil.copy(REPO_ROOT / "deploy" / "dagster" / name, config_dir / "dagster.yaml")
    ref = InstanceRef.from_dir(str(tmp_path), config_dir=str(config_dir))
    with dg.DagsterInstance.from_ref(ref) as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
        assert type(instance.schedule_storage).__name__ == "PostgresScheduleStorage"
        assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"
        assert instance.get_runs() == []
        assert one_run_per_job(instance)


@pytest.mark.parametrize("name", ["dagster-k8s.yaml", "dagster-celery.yaml"])
def test_the_shipped_executor_configs_are_valid_yaml(name: str) -> None:
    """The Kubernetes instance file is shipped, not run here (no cluster); the Celery one is
    opened above and its executor run by tests/e2e/test_celery_executor.py."""
    config = yaml.safe_load((REPO_ROOT / "deploy" / "dagster" / name).read_text())
    assert "postgres" in config["storage"]
    assert config["run_launcher"]["module"] in ("dagster_k8s", "dagster.core.launcher")


def one_run_per_job(instance: dg.DagsterInstance) -> bool:
    """The instance's queue admits one run per value of the jobs' tag at a time."""
    limits = instance.get_concurrency_config().run_queue_config.tag_concurrency_limits  # type: ignore[union-attr]
    return {"key": RUN_TAG, "value": {"applyLimitPerUniqueValue": True}, "limit": 1} in limits


def test_the_development_instance_queues_one_run_per_job(tmp_path: Path) -> None:
    ref = InstanceRef.from_dir(str(tmp_path), config_dir=str(REPO_ROOT))
    with dg.DagsterInstance.from_ref(ref) as instance:
        assert one_run_per_job(instance)


@pytest.mark.parametrize("name", ["dagster-k8s.yaml", "dagster-celery.yaml"])
def test_the_shipped_executor_configs_queue_one_run_per_job(name: str) -> None:
    config = yaml.safe_load((REPO_ROOT / "deploy" / "dagster" / name).read_text())
    limits = config["concurrency"]["runs"]["tag_concurrency_limits"]
    assert {"key": RUN_TAG, "value": {"applyLimitPerUniqueValue": True}, "limit": 1} in limits
