"""The Dagster instance's SQLite storage: Dagster's own files and records, on pooled connections."""

from __future__ import annotations

import multiprocessing
import os
from multiprocessing.synchronize import Barrier
from pathlib import Path

import dagster as dg
import pytest
import sqlalchemy as db
from dagster._core.instance.ref import InstanceRef
from dagster._core.storage.event_log import SqliteEventLogStorage

from mi.commands.pipeline import REPO_ROOT, open_instance
from pipelines.instance import (
    OPEN_FILES,
    RUN_TEMPLATE,
    PooledSqliteEventLogStorage,
    SqliteStorage,
)
from pipelines.settings import load_settings


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


def test_mi_opens_the_instance_on_the_pooled_event_log(tmp_path: Path) -> None:
    with _instance(tmp_path) as instance:
        assert isinstance(instance.event_log_storage, PooledSqliteEventLogStorage)
        # Dagster's `storage: sqlite` layout: an instance can switch between the two.
        assert (tmp_path / "dagster" / "storage" / "history" / "runs" / "index.db").exists()


def test_the_repo_dagster_yaml_names_the_same_storage(tmp_path: Path) -> None:
    """`make dagster` (webserver and daemon) opens the repo's dagster.yaml with the same class."""
    ref = InstanceRef.from_dir(str(tmp_path), config_dir=str(REPO_ROOT))
    assert ref.storage_data is not None
    assert (ref.storage_data.module_name, ref.storage_data.class_name) == (
        "pipelines.instance",
        SqliteStorage.__name__,
    )


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


def test_connections_sync_at_checkpoints_in_wal_mode(tmp_path: Path) -> None:
    with _instance(tmp_path) as instance:
        _materialize(instance)
        storage = instance.event_log_storage
        assert isinstance(storage, PooledSqliteEventLogStorage)
        with storage.index_connection() as conn:
            assert conn.execute(db.text("PRAGMA journal_mode")).scalar() == "wal"
            assert conn.execute(db.text("PRAGMA synchronous")).scalar() == 1  # NORMAL


def test_open_database_files_are_bounded(tmp_path: Path) -> None:
    """Each run has its own file: engines of old runs are closed, the newest kept."""
    with _instance(tmp_path) as instance:
        for _ in range(OPEN_FILES):
            _materialize(instance)
        storage = instance.event_log_storage
        assert isinstance(storage, PooledSqliteEventLogStorage)
        assert len(storage._engines) == OPEN_FILES
        assert len(instance.get_run_records()) == 2 * OPEN_FILES


def test_a_forked_child_stores_on_its_own_connections(tmp_path: Path) -> None:
    with _instance(tmp_path) as instance:
        run_id = _materialize(instance)
        storage = instance.event_log_storage
        assert isinstance(storage, PooledSqliteEventLogStorage)
        before = dict(storage._engines)
        pid = os.fork()
        if pid == 0:  # the child: store an event, report by exit status
            try:
                instance.report_engine_event("from the child", instance.get_run_by_id(run_id))
                reused = any(storage._engines.get(k) is e for k, e in before.items())
                os._exit(1 if reused else 0)
            except BaseException:
                os._exit(2)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        messages = [e.dagster_event.message for e in instance.all_logs(run_id) if e.dagster_event]
        assert "from the child" in messages


def test_a_table_found_once_is_not_looked_up_again_until_a_wipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dagster asks whether the check table exists before storing each check evaluation."""
    with _instance(tmp_path) as instance:
        storage = instance.event_log_storage
        assert isinstance(storage, PooledSqliteEventLogStorage)
        asked: list[str] = []
        lookup = SqliteEventLogStorage.has_table

        def counted(self: SqliteEventLogStorage, table: str) -> bool:
            asked.append(table)
            return lookup(self, table)

        monkeypatch.setattr(SqliteEventLogStorage, "has_table", counted)
        _materialize(instance)
        _materialize(instance)
        assert "asset_check_executions" in asked
        assert sorted(asked) == sorted(set(asked))  # each table asked once over two runs
        assert storage.has_table("no_such_table") is False
        assert storage.has_table("no_such_table") is False
        assert asked.count("no_such_table") == 2  # a missing table is asked again
        storage.wipe()
        assert storage.has_table("asset_check_executions")
        assert asked.count("asset_check_executions") == 2
        assert instance.get_latest_materialization_event(dg.AssetKey("_answer")) is None


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


def _schema(path: Path) -> tuple[list[tuple[str, str, str]], list[str], str]:
    """A database file's tables and indexes with their SQL, Alembic revision and journal mode."""
    engine = db.create_engine(f"sqlite:///{path}")
    with engine.connect() as connection:
        objects = connection.execute(
            db.text("select type, name, sql from sqlite_master order by type, name")
        )
        revisions = connection.execute(db.text("select version_num from alembic_version"))
        mode = connection.execute(db.text("PRAGMA journal_mode")).scalar_one()
        found = ([tuple(row) for row in objects], list(revisions.scalars()), mode)
    engine.dispose()
    return found


def test_a_new_runs_file_is_the_one_dagster_makes(tmp_path: Path) -> None:
    """A run's file is copied from a template instead of created and stamped (0.12 s a run): the
    same tables, indexes, Alembic revision and WAL mode as Dagster's own storage gives it."""
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    with SqliteEventLogStorage(str(theirs)).run_connection("a-run"):
        pass
    storage = PooledSqliteEventLogStorage(str(ours))
    with storage.run_connection("a-run"):
        pass
    assert (ours / RUN_TEMPLATE).exists()
    assert [p.name for p in ours.glob("*.tmp*")] == []  # the template's and the copy's scratch
    assert _schema(ours / "a-run.db") == _schema(theirs / "a-run.db")
    assert _schema(ours / "a-run.db")[1]  # stamped
    storage.dispose()


def test_the_template_is_no_run(tmp_path: Path) -> None:
    with _instance(tmp_path) as instance:
        run_id = _materialize(instance)
        storage = instance.event_log_storage
        assert isinstance(storage, PooledSqliteEventLogStorage)
        runs = {record.dagster_run.run_id for record in instance.get_run_records()}
        assert set(storage.get_all_run_ids()) == runs
        assert run_id in runs


def test_a_runs_file_another_process_made_is_kept(tmp_path: Path) -> None:
    """Steps of a run in other processes open its file too: the first makes it, the others use it,
    never replace it with a fresh copy."""
    first, second = (PooledSqliteEventLogStorage(str(tmp_path)) for _ in range(2))
    with first.run_connection("a-run") as connection:
        connection.execute(db.text("create table marker (x integer)"))
    with second.run_connection("a-run") as connection:
        assert db.inspect(connection).has_table("marker")
    assert sorted(p.name for p in tmp_path.glob("*.tmp")) == []
    first.dispose()
    second.dispose()


def test_a_template_that_fails_to_initialize_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fault while Dagster initializes the template (a full disk, say) fails the run's first
    event with it, and leaves neither a template nor a scratch file that a later run would take."""
    storage = PooledSqliteEventLogStorage(str(tmp_path))

    def failing(
        self: SqliteEventLogStorage, engine: db.Engine, for_index_shard: bool = False
    ) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(SqliteEventLogStorage, "_initdb", failing)
    with pytest.raises(OSError, match="disk full"), storage.run_connection("a-run"):
        pass
    left = sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("index.db"))
    assert left == []
    monkeypatch.undo()
    with storage.run_connection("a-run"):  # the next attempt makes the template and the file
        pass
    assert (tmp_path / RUN_TEMPLATE).exists()
    assert (tmp_path / "a-run.db").exists()
    storage.dispose()
