"""The warehouse reader interface: the API reads tables only through one immutable snapshot."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol, runtime_checkable

import polars as pl
import pyarrow as pa

from api.errors import DependencyUnavailable
from pipelines.catalog import Manifest

QueryParams = Sequence[object] | Mapping[str, object] | None


class WarehouseUnavailable(DependencyUnavailable):
    """The warehouse cannot serve: nothing materialized yet, or a manifest's files cannot be read."""


# runtime_checkable: Litestar checks an injected dependency against the handler's annotation.
@runtime_checkable
class WarehouseSnapshot(Protocol):
    """One manifest version of every table; a request reads through exactly one snapshot."""

    @property
    def manifest(self) -> Manifest: ...

    @property
    def version(self) -> int:
        """The data version: changes whenever any table changes; the basis of ETags and caches."""
        ...

    @property
    def published(self) -> str:
        """When this version was committed, RFC 3339 in UTC (`x-data-published`)."""
        ...

    def query(self, sql: str, params: QueryParams = None) -> pl.DataFrame:
        """Run SQL over the snapshot's table views (blocking: call it off the event loop)."""
        ...

    async def fetch(self, sql: str, params: QueryParams = None) -> pl.DataFrame:
        """`query` in a worker thread, for async handlers."""
        ...

    def record_batches(
        self,
        sql: str,
        params: QueryParams = None,
        *,
        batch_rows: int = 100_000,
        buffer_bytes: int = 1 << 20,
    ) -> pa.RecordBatchReader:
        """Run SQL on a cursor of its own and read the result batch by batch, never whole (a bulk
        export), the engine queuing at most about `buffer_bytes` ahead of the reader. Blocking:
        open it and read each batch off the event loop; the reader stays valid whatever else the
        thread queries meanwhile."""
        ...


@runtime_checkable
class WarehouseReader(Protocol):
    """Holds the current snapshot and swaps in a new one when the pipeline publishes a manifest."""

    def current(self) -> WarehouseSnapshot | None:
        """The newest readable snapshot, or None before the first materialization (no I/O)."""
        ...

    @property
    def data_version(self) -> int | None: ...

    def past(self, version: int) -> WarehouseSnapshot | None:
        """A retained past version already open (no I/O: safe on the event loop), else None."""
        ...

    def open_past(self, version: int) -> WarehouseSnapshot:
        """Open a retained past version (blocking; the reader keeps a bounded set open)."""
        ...

    def changes(self, version: int) -> Mapping[str, list[str]]:
        """What a retained version changed: market -> the tables whose files it replaced."""
        ...

    def refresh(self) -> bool:
        """Load the manifest if it changed since the last look; True when a new snapshot was swapped in."""
        ...

    def probe(self) -> None:
        """Read the current manifest's files; raise `WarehouseUnavailable` if they cannot be read."""
        ...

    def running(self) -> AbstractAsyncContextManager[None]:
        """The reader's lifetime in an app: first load, a watcher for new versions, then close."""
        ...
