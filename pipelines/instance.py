"""The Dagster instance's SQLite storage, with its event log on pooled connections.

Dagster's `SqliteEventLogStorage` opens a new SQLAlchemy engine and connection, and syncs the file
to disk, for every event it stores; a daily run stores about two hundred events (step starts and
ends, a materialization per table, an evaluation per check), and a materialization or a check
evaluation is written twice (the run's file and the cross-run index). That was 1.4 s of a daily
run at 5,000 instruments, a third of a run that has nothing to compute (docs/benchmarks.md,
"Pipeline: where the time goes"). Here each database file keeps one engine whose connections
are reused, and the files, in SQLite's WAL mode as Dagster makes them, sync at checkpoints
(`synchronous=NORMAL`): a crash of the process loses nothing committed; a power cut may lose the
last events, never corrupt a file. Everything else is Dagster's own storage, on the same files
and layout as `storage: sqlite`, so an instance switches between the two freely. PostgreSQL
(`MI_DAGSTER_POSTGRES_URL`) is the instance of a deployment that needs more.

A run's file is a copy of a template: Dagster creates each run's file by creating its tables and
stamping Alembic's revision on it, after reading every migration script to find that revision,
0.12 s of every run. The template is one such file, made once per Dagster version by Dagster's own
code, so a run's file is what Dagster would have made.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import Any

import sqlalchemy as db
import yaml
from dagster._config import StringSource
from dagster._core.storage.event_log import SqliteEventLogStorage
from dagster._core.storage.event_log.sqlite.sqlite_event_log import INDEX_SHARD_NAME
from dagster._core.storage.runs import SqliteRunStorage
from dagster._core.storage.schedules import SqliteScheduleStorage
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from dagster._core.storage.sqlite_storage import DagsterSqliteStorage
from dagster._serdes import ConfigurableClassData
from dagster._utils import mkdir_p
from dagster.version import __version__ as dagster_version
from sqlalchemy.engine import Connection, Engine

MODULE = __name__
OPEN_FILES = 8
"""Database files whose engines stay open: the cross-run index and the runs being written."""
RUN_TEMPLATE = f".run-template-{dagster_version}.sqlite"
"""A new run's database file, initialized and stamped by Dagster's version (hidden, and not `*.db`:
Dagster lists a run for every `*.db` file of the directory)."""


class PooledSqliteEventLogStorage(SqliteEventLogStorage):
    """Dagster's SQLite event log, each database file on one engine with pooled connections."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        self._pid = os.getpid()
        self._tables: set[str] = set()
        super().__init__(base_dir, inst_data=inst_data)

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]
    ) -> PooledSqliteEventLogStorage:
        return cls(inst_data=inst_data, **config_value)

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        with self._db_lock:
            if shard not in self._initialized_dbs and self._copied_template(shard):
                self._initialized_dbs.add(shard)
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn, conn.begin():
                yield conn

    def _copied_template(self, shard: str) -> bool:
        """Whether this created the new run's file `shard` as a copy of the template; False for
        the index or a file that exists (another process made it: Dagster's check runs)."""
        target = self.path_for_shard(shard)
        if shard == INDEX_SHARD_NAME or os.path.exists(target):
            return False
        template = self._template()
        copy = _scratch(target)
        try:
            shutil.copyfile(template, copy)
            # A link, unlike a rename, never replaces a file another process made meanwhile.
            os.link(copy, target)
        except FileExistsError:
            return False
        finally:
            _remove(copy)
        return True

    def _template(self) -> str:
        """The template's path, made first if it is not there (by Dagster's `_initdb`, on a file of
        its own that replaces the template's path whole)."""
        path = os.path.join(self._base_dir, RUN_TEMPLATE)
        if os.path.exists(path):
            return path
        scratch = _scratch(path)
        engine = _engine(f"sqlite:///{scratch}")
        try:
            self._initdb(engine)
            # The last connection closed folds the write-ahead log into the file.
            engine.dispose()
            os.replace(scratch, path)
        finally:
            engine.dispose()  # again only when the initialization failed
            _remove(scratch, f"{scratch}-wal", f"{scratch}-shm")
        return path

    def has_table(self, table_name: str) -> bool:
        # Dagster asks before it stores every check evaluation, on a new engine and connection
        # each time (10 ms, 0.3 s of a daily run); a table, once there, stays (`wipe` forgets).
        if table_name not in self._tables:
            if not super().has_table(table_name):
                return False
            self._tables.add(table_name)
        return True

    def wipe(self) -> None:
        self._tables.clear()
        super().wipe()

    def _engine(self, shard: str) -> Engine:
        if os.getpid() != self._pid:
            # A forked child must not use its parent's connections: it opens its own.
            for engine in self._engines.values():
                engine.dispose(close=False)
            self._engines.clear()
            self._pid = os.getpid()
        if shard not in self._engines:
            self._engines[shard] = _engine(self.conn_string_for_shard(shard))
            while len(self._engines) > OPEN_FILES:
                _, oldest = self._engines.popitem(last=False)
                oldest.dispose()
        self._engines.move_to_end(shard)
        return self._engines[shard]

    def dispose(self) -> None:
        super().dispose()
        for engine in self._engines.values():
            engine.dispose()
        self._engines.clear()


def _scratch(path: str) -> str:
    """A file name beside `path` that no other process or thread of the instance uses."""
    return f"{path}.{os.getpid()}-{threading.get_ident()}.tmp"


def _remove(*paths: str) -> None:
    for path in paths:
        with suppress(FileNotFoundError):
            os.unlink(path)


def _engine(url: str) -> Engine:
    engine = db.create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS})

    @db.event.listens_for(engine, "connect")
    def _synchronous(connection: Any, _record: Any) -> None:
        connection.execute("PRAGMA synchronous=NORMAL")

    return engine


class SqliteStorage(DagsterSqliteStorage):
    """`storage: sqlite` with the pooled event log (dagster.yaml: `storage: custom:`)."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self.base_dir = base_dir
        self._run_storage = SqliteRunStorage.from_local(os.path.join(base_dir, "history", ""))
        self._event_log_storage = PooledSqliteEventLogStorage(
            os.path.join(base_dir, "history", "runs", "")
        )
        self._schedule_storage = SqliteScheduleStorage.from_local(
            os.path.join(base_dir, "schedules")
        )
        self._inst_data = inst_data
        super(DagsterSqliteStorage, self).__init__()

    @classmethod
    def config_type(cls) -> dict[str, Any]:
        return {"base_dir": StringSource}

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]
    ) -> SqliteStorage:
        mkdir_p(config_value["base_dir"])
        return cls(inst_data=inst_data, **config_value)

    @property
    def event_storage_data(self) -> ConfigurableClassData:
        config = {"base_dir": os.path.join(self.base_dir, "history", "runs", "")}
        return ConfigurableClassData(
            MODULE, PooledSqliteEventLogStorage.__name__, yaml.dump(config)
        )


def storage_config(base_dir: str) -> dict[str, Any]:
    """The `storage` entry of an instance on these SQLite files (dagster.yaml's shape)."""
    return {
        "custom": {
            "module": MODULE,
            "class": SqliteStorage.__name__,
            "config": {"base_dir": base_dir},
        }
    }
