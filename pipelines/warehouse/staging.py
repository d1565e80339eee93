"""A run's transaction: steps stage their files, later steps read them, the last step commits them all at once."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict
from typing import Any, Protocol

import polars as pl

from pipelines.catalog import Manifest, PartitionFile, Table, WarehouseStorage
from pipelines.warehouse.commits import TableWrite, fingerprint

# Steps of one run may run in different processes (or hosts, with a distributed executor), so a
# step's writes are recorded where every step can read them: one JSON record per step under the
# warehouse root. Nothing a run stages is visible to readers of the manifest until `commit`.


class Publication(Protocol):
    @property
    def version(self) -> int: ...

    @property
    def published(self) -> bool:
        """False when the commit changed nothing (the version stands)."""
        ...


class TableStore(Protocol):
    """What a transaction needs of a warehouse store (local directory or object storage)."""

    @property
    def storage(self) -> WarehouseStorage: ...

    def manifest(self) -> Manifest | None: ...

    def write_file(self, table: Table, partition: str, frame: pl.DataFrame) -> PartitionFile: ...

    def commit(self, writes: Sequence[TableWrite], run_id: str | None = None) -> Publication: ...

    def put_staging(self, run_id: str, name: str, body: bytes) -> None: ...

    def staging_records(
        self, run_id: str, where: Callable[[str], bool] = lambda _: True
    ) -> list[bytes]: ...

    def drop_staging(self, run_id: str) -> None: ...


def encode_record(
    run_id: str,
    step: str,
    writes: Sequence[TableWrite],
    pending: Iterable[str] = (),
    result: Any = None,
) -> bytes:
    body = {
        "run_id": run_id,
        "step": step,
        "pending": sorted(pending),
        "result": result,
        "writes": [
            {
                "table": w.table,
                "market": w.market,
                "base": w.base,
                "partitions": {key: asdict(entry) for key, entry in sorted(w.partitions.items())},
            }
            for w in writes
        ],
    }
    return json.dumps(body, indent=1).encode()


def decode_record(body: bytes) -> list[TableWrite]:
    raw = json.loads(body)
    return [
        TableWrite(
            table=w["table"],
            market=w["market"],
            partitions={key: PartitionFile(**entry) for key, entry in w["partitions"].items()},
            base=w["base"],
        )
        for w in raw["writes"]
    ]


ATTEMPT = "@"
"""Between a step's name and its attempt's in a staging record's name (`<step>@<attempt>`)."""


def record_name(step: str) -> str:
    """The staging record of one attempt of `step`: its own, never another attempt's.

    An attempt that runs again while an earlier one of the same step is still running (a step
    redelivered after a broker restart) or after it failed would otherwise replace the earlier
    attempt's record with its own, partial until it has staged every table: a step reading the
    run's staged tables in between saw some of them missing. Attempts sort by their start (a
    nanosecond clock first), so the latest attempt's write of a table is the one read.
    """
    return f"{step}{ATTEMPT}{time.time_ns():020d}-{secrets.token_hex(4)}"


def step_of_record(name: str) -> str:
    """The step a staging record's name belongs to (a name without an attempt: the step's)."""
    return name.rsplit(ATTEMPT, 1)[0]


def is_mapped(step: str) -> bool:
    """A step fanned out by a mapping key (`trends_shard[crypto_s0of2]`): its record holds the
    files it wrote and its result, never a staged table, so that a step reading the run's staged
    tables skips the records of a run's many shard steps (on object storage, a GET each)."""
    return step.endswith("]") and "[" in step


def staged_paths(body: bytes) -> set[str]:
    """Every file a staging record names, staged or written and not staged yet (the garbage
    collector keeps them while the run lives)."""
    staged = {entry.path for write in decode_record(body) for entry in write.partitions.values()}
    return staged | set(json.loads(body).get("pending", []))


class RunTransaction:
    """One step's view of the warehouse within a run.

    Reads see the run's staged writes (this step's and earlier steps') over the manifest as it was
    when the transaction opened; writes are staged in this step's record, each remembering the
    committed partitions it replaces, so that `commit` can refuse to overwrite another run's work.
    """

    def __init__(self, store: TableStore, run_id: str, step: str) -> None:
        self.store = store
        self.run_id = run_id
        self.step = step
        self.manifest = store.manifest()
        self._record_name = record_name(step)
        # A step that runs again (a retry) starts over: its own earlier records are not inputs.
        # Another step's attempts come in the order they started: its latest write of a table
        # is the one read (`_by_key` keeps the last).
        records = store.staging_records(run_id, lambda name: not is_mapped(step_of_record(name)))
        others = [body for body in records if _step_of(body) != step]
        self._staged = _by_key(w for body in others for w in decode_record(body))
        self._own: dict[tuple[str, str], TableWrite] = {}
        self._pending: set[str] = set()
        self._result: Any = None

    def partitions(self, table: str, market: str) -> dict[str, PartitionFile]:
        """The files of one market's partition of `table` as this run sees it."""
        staged = self._own.get((table, market)) or self._staged.get((table, market))
        if staged is not None:
            return dict(staged.partitions)
        return self.manifest.partitions(table, market) if self.manifest else {}

    def write_file(self, table: Table, partition: str, frame: pl.DataFrame) -> PartitionFile:
        """A new immutable file, named by no table until staged (stage it to keep it).

        It is recorded in the step's staging record at once, so that however long the step runs
        before staging it, another run's garbage collection keeps it while this run lives.
        """
        entry = self.store.write_file(table, partition, frame)
        self._pending.add(entry.path)
        self._record()
        return entry

    def stage(self, table: str, market: str, partitions: Mapping[str, PartitionFile]) -> None:
        """Make `partitions` this run's complete set of files of `table` for `market`."""
        if is_mapped(self.step):
            raise ValueError(f"{self.step} is a mapped step: it records results, never stages")
        committed = self.manifest.partitions(table, market) if self.manifest else {}
        if (table, market) in self._staged:
            raise ValueError(
                f"{table}/{market} is already staged by another step of run {self.run_id}"
            )
        self._own[(table, market)] = TableWrite(
            table, market, dict(partitions), fingerprint(committed)
        )
        self._pending -= {entry.path for entry in partitions.values()}
        self._record()

    def set_result(self, result: Any) -> None:
        """Record what this step found (JSON), for a later step of the run (`results`): how a
        shard's step tells the step that stages its market what it wrote."""
        self._result = result
        self._record()

    def results(self, prefix: str) -> dict[str, Any]:
        """The recorded results of the run's other mapped steps whose names start with `prefix`
        (`trends_shard[`), by step name."""
        records = self.store.staging_records(
            self.run_id,
            lambda name: is_mapped(step_of_record(name)) and name.startswith(prefix),
        )
        found: dict[str, Any] = {}
        for body in records:  # attempts in the order they started: the latest result counts
            result = json.loads(body).get("result")
            if result is not None:
                found[_step_of(body)] = result
        return {
            step: result
            for step, result in found.items()
            if step != self.step and step.startswith(prefix)
        }

    def _record(self) -> None:
        body = encode_record(
            self.run_id, self.step, list(self._own.values()), self._pending, self._result
        )
        self.store.put_staging(self.run_id, self._record_name, body)

    def commit(self) -> Publication:
        """Make every table staged by every step of the run current in one manifest commit."""
        # Each step's tables as its latest attempt staged them (attempts in the order they
        # started; an earlier attempt's table that no later one staged again stays).
        by_step: dict[str, dict[tuple[str, str], TableWrite]] = {}
        for body in self.store.staging_records(self.run_id):
            by_step.setdefault(_step_of(body), {}).update(_by_key(decode_record(body)))
        writes = [w for staged in by_step.values() for w in staged.values()]
        keys = [(w.table, w.market) for w in writes]
        doubled = sorted({f"{t}/{m}" for t, m in keys if keys.count((t, m)) > 1})
        if doubled:
            raise ValueError(f"run {self.run_id}: staged by more than one step: {doubled}")
        published = self.store.commit(writes, self.run_id)
        self.store.drop_staging(self.run_id)
        return published


def _step_of(body: bytes) -> str:
    return str(json.loads(body)["step"])


def _by_key(writes: Any) -> dict[tuple[str, str], TableWrite]:
    return {(w.table, w.market): w for w in writes}
