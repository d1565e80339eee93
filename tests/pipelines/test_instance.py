"""The Dagster instance `mi` opens: Dagster's own SQLite storage (public configuration only) under
the data dir, the repo's dagster.yaml settings, and safe to open from several commands at once."""

from __future__ import annotations

import multiprocessing
from multiprocessing.synchronize import Barrier
from pathlib import Path

import dagster as dg
import sqlalchemy as db
import yaml

from mi.commands.pipeline import REPO_ROOT, open_instance
from pipelines.platform.settings import load_settings


@dg.asset
def _answer() -> int:
    return 42


@dg.asset_check(asset=_answer)
def _positive() -> dg.AssetCheckResult:
    return dg.AssetCheckResult(passed=True)


def _instance(home: Path) -> dg.DagsterInstance:
    return open_instance(load_settings({"MI_DATA_DIR": str(home)}))


def _materialize(instance: dg.DagsterInstance) -> str:
    result = dg.materialize([_answer], instance=instance, selection=[_answer])
    dg.materialize([_answer, _positive], instance=instance)
    return result.run_id


def test_mi_opens_dagsters_sqlite_storage_under_the_data_dir(tmp_path: Path) -> None:
    with _instance(tmp_path) as instance:
        assert type(instance.run_storage).__module__.startswith("dagster.")
        assert type(instance.event_log_storage).__module__.startswith("dagster.")
        _materialize(instance)
    assert (tmp_path / "dagster" / "storage" / "history" / "runs" / "index.db").exists()


def test_the_instance_keeps_the_repo_settings_with_its_paths_under_the_data_dir(
    tmp_path: Path,
) -> None:
    """`make dagster` opens the repo's dagster.yaml; `mi` the same settings, its paths absolute."""
    repo = yaml.safe_load((REPO_ROOT / "dagster.yaml").read_text())
    with _instance(tmp_path):
        pass
    written = yaml.safe_load((tmp_path / "dagster" / "dagster.yaml").read_text())
    assert written["storage"] == {"sqlite": {"base_dir": str(tmp_path / "dagster" / "storage")}}
    assert repo["storage"] == {"sqlite": {"base_dir": "data/dagster/storage"}}
    for key in ("run_coordinator", "concurrency", "telemetry"):
        assert written[key] == repo[key], key


def test_runs_events_materializations_and_checks_read_back_from_another_instance(
    tmp_path: Path,
) -> None:
    with _instance(tmp_path) as writer:
        run_id = _materialize(writer)
    with _instance(tmp_path) as reader:
        run = reader.get_run_by_id(run_id)
        assert run is not None
        assert run.is_success
        kinds = {e.dagster_event_type for e in reader.all_logs(run_id) if e.is_dagster_event}
        assert dg.DagsterEventType.ASSET_MATERIALIZATION in kinds
        assert dg.DagsterEventType.RUN_SUCCESS in kinds
        # Cross-run index: the latest materialization and the check's evaluation.
        latest = reader.get_latest_materialization_event(dg.AssetKey("_answer"))
        assert latest is not None
        evaluations = reader.event_log_storage.get_asset_check_execution_history(
            dg.AssetCheckKey(dg.AssetKey("_answer"), "_positive"), limit=5
        )
        assert len(evaluations) == 1


def _open_at_once(home: str, start: Barrier) -> None:  # pragma: no cover - in a child process
    start.wait()
    with _instance(Path(home)):
        pass


def test_commands_opening_a_new_data_dir_at_once_leave_one_schema_version(tmp_path: Path) -> None:
    """Four processes open the instance of a data dir that has none yet, released together: each
    SQLite storage ends with one Alembic version (stamped twice, every later command failed on
    "more than one head"), and the instance opens and runs afterwards."""
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(4)
    openers = [context.Process(target=_open_at_once, args=(str(tmp_path), start)) for _ in range(4)]
    for opener in openers:
        opener.start()
    for opener in openers:
        opener.join(timeout=120)
        assert opener.exitcode == 0
    storage = tmp_path / "dagster" / "storage"
    databases = sorted(storage.rglob("*.db"))
    assert {db_file.name for db_file in databases} >= {"runs.db", "index.db", "schedules.db"}
    for path in databases:
        engine = db.create_engine(f"sqlite:///{path}")
        with engine.connect() as connection:
            versions = connection.execute(db.text("select count(*) from alembic_version"))
            assert versions.scalar_one() == 1, path
        engine.dispose()
    with _instance(tmp_path) as instance:
        _materialize(instance)
