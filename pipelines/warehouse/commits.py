"""What a commit does to the manifest: replace market partitions, refusing writes based on stale ones."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from pipelines.catalog import Manifest, PartitionFile
from pipelines.catalog.manifest import LoggedVersion, market_of

WHOLE_TABLE = "all"
"""Partition name of a table written by an unpartitioned asset: the file holds every market."""


class CommitConflictError(RuntimeError):
    """Another run changed partitions this run's writes were based on; nothing of this run landed."""


@dataclass(frozen=True)
class TableWrite:
    """One market's complete new set of files of one table, and the set it was computed from.

    `partitions` replaces every partition key of `market` in the table (keys of other markets are
    untouched); an empty mapping removes the market from the table. `base` is the fingerprint of
    the market's partitions the writer read before computing; None writes unconditionally (the
    last writer wins, as a plain `Warehouse.write` does).
    """

    table: str
    market: str
    partitions: Mapping[str, PartitionFile]
    base: str | None = None

    def __post_init__(self) -> None:
        strays = [key for key in self.partitions if market_of(key) != self.market]
        if strays:
            raise ValueError(f"{self.table}: keys {strays} are not partitions of {self.market!r}")


def fingerprint(partitions: Mapping[str, PartitionFile]) -> str:
    """Changes whenever any file of the partitions changes (files are never reused)."""
    digest = hashlib.sha256()
    for key, entry in sorted(partitions.items()):
        digest.update(f"{key}\0{entry.path}\n".encode())
    return digest.hexdigest()[:32]


def conflicts(manifest: Manifest | None, writes: Sequence[TableWrite]) -> list[str]:
    """The writes whose base no longer matches the manifest, as `table/market` names."""
    stale = []
    for write in writes:
        if write.base is None:
            continue
        current = manifest.partitions(write.table, write.market) if manifest else {}
        if fingerprint(current) != write.base:
            stale.append(f"{write.table}/{write.market}")
    return stale


def utc_now() -> datetime:
    return datetime.now(UTC)


def apply_writes(
    manifest: Manifest | None, writes: Sequence[TableWrite], now: datetime | None = None
) -> Manifest:
    """The manifest with every write applied and a new, strictly greater version, appended to the
    version log."""
    old = manifest or Manifest(version=0, updated_at="", tables={})
    tables = {name: dict(partitions) for name, partitions in old.tables.items()}
    for write in writes:
        tables[write.table] = _replaced(write, tables.get(write.table, {}))
    version = max(old.version + 1, time.time_ns())
    # Never before the previous version's: the log stays in publish order even if the clock steps
    # back, so the version current at an instant is well defined.
    at = (now or utc_now()).astimezone(UTC)
    published = max(at.isoformat(timespec="milliseconds"), old.updated_at)
    return Manifest(
        version=version,
        updated_at=published,
        tables={
            name: dict(sorted(parts.items())) for name, parts in sorted(tables.items()) if parts
        },
        log=(*old.log, LoggedVersion(version, published)),
    )


def changes_nothing(manifest: Manifest | None, writes: Sequence[TableWrite]) -> bool:
    """Whether applying `writes` leaves every table as `manifest` has it: each write names the
    files already current (a run that found nothing new). Such a commit publishes no version, so
    that the API's data version, and every ETag made from it, stays."""
    if manifest is None:
        return False
    return all(
        _replaced(w, dict(manifest.tables.get(w.table, {}))) == manifest.tables.get(w.table, {})
        for w in writes
    )


def retired_paths(before: Manifest | None, after: Manifest) -> set[str]:
    """Files `before` named that `after` no longer does: they start their garbage-collection grace."""
    if before is None:
        return set()
    kept = {entry.path for parts in after.tables.values() for entry in parts.values()}
    named = {entry.path for parts in before.tables.values() for entry in parts.values()}
    return named - kept


def _replaced(write: TableWrite, partitions: dict[str, PartitionFile]) -> dict[str, PartitionFile]:
    # A whole-table write replaces every partition; a market write into a whole table would
    # silently shadow the other markets' rows, so it is refused.
    if write.market == WHOLE_TABLE:
        return dict(write.partitions)
    if WHOLE_TABLE in partitions:
        raise ValueError(
            f"{write.table}: stored whole (partition {WHOLE_TABLE!r}); a market partition cannot join it"
        )
    kept = {key: entry for key, entry in partitions.items() if market_of(key) != write.market}
    return kept | dict(write.partitions)
