"""The version log: every committed version's record, which of them are retained, and what changed.

Each commit writes a record of its version, `_versions/<version>.json.gz` (gzip of the compact
manifest JSON restricted to the served tables, plus the run that made it and what changed), before
the manifest that makes it current, and appends it to the manifest's `log`. Records are immutable;
the log is the truth of which versions are retained (a record the log does not name, such as that of
a commit whose manifest write lost a race, was never served). The pipeline's expiry step drops
versions from the log by `Retention` and garbage-collects what no retained version names; the API
opens a past version from its record (`as_of`). The rules: decisions.md, "Point in time".
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from pipelines.catalog import TABLES, WarehouseStorage
from pipelines.catalog.manifest import LoggedVersion, Manifest, manifest_from_json, manifest_to_json

VERSIONS_DIR = "_versions"
RECORD_SUFFIX = ".json.gz"


def record_path(version: int) -> str:
    """Where a version's record lives, relative to the warehouse root."""
    return f"{VERSIONS_DIR}/{version}{RECORD_SUFFIX}"


def version_of_record(relative: str) -> int | None:
    """The version a record path names, or None for any other path."""
    name = relative.rsplit("/", 1)[-1]
    if not relative.startswith(f"{VERSIONS_DIR}/") or not name.endswith(RECORD_SUFFIX):
        return None
    stem = name.removesuffix(RECORD_SUFFIX)
    return int(stem) if stem.isdigit() else None


@dataclass(frozen=True)
class VersionRecord:
    """What one version served: its manifest of the served tables, the run and the changes."""

    manifest: Manifest
    """The version's files of the catalog's tables (internal state is never served, never kept)."""
    run_id: str | None
    changed: dict[str, list[str]]
    """market -> the served tables whose files this version changed, sorted."""

    @property
    def version(self) -> int:
        return self.manifest.version

    @property
    def published(self) -> str:
        return self.manifest.updated_at

    def to_bytes(self) -> bytes:
        body = manifest_to_json(
            self.manifest, compact=True, run_id=self.run_id, changed=self.changed
        )
        # mtime=0: the same record is the same bytes, whenever it is written.
        return gzip.compress(body, compresslevel=6, mtime=0)

    @classmethod
    def from_bytes(cls, data: bytes) -> VersionRecord:
        body = gzip.decompress(data)
        raw = json.loads(body)
        changed = {str(m): [str(t) for t in ts] for m, ts in raw.get("changed", {}).items()}
        return cls(manifest_from_json(body), raw.get("run_id"), changed)

    def files(self) -> set[str]:
        return {f.path for parts in self.manifest.tables.values() for f in parts.values()}


def record_of(before: Manifest | None, after: Manifest, run_id: str | None) -> VersionRecord:
    """The record of `after`, committed over `before`."""
    served = {name: parts for name, parts in after.tables.items() if name in TABLES}
    return VersionRecord(replace(after, tables=served, log=()), run_id, changed(before, after))


def changed(before: Manifest | None, after: Manifest) -> dict[str, list[str]]:
    """market -> the served tables whose files differ between the two manifests."""
    found: dict[str, set[str]] = {}
    for name in TABLES:
        markets = set(after.markets(name)) | set(before.markets(name) if before else ())
        for market in markets:
            old = before.partitions(name, market) if before else {}
            if old != after.partitions(name, market):
                found.setdefault(market, set()).add(name)
    return {market: sorted(names) for market, names in sorted(found.items())}


def read_record(storage: WarehouseStorage, version: int) -> VersionRecord | None:
    """A version's record, or None when it has none (committed before the log, or expired)."""
    data = storage.read_object(record_path(version))
    return None if data is None else VersionRecord.from_bytes(data)


def record_files(storage: WarehouseStorage, version: int) -> set[str]:
    """The served files a version's record names (none when it has no record)."""
    record = read_record(storage, version)
    return set() if record is None else record.files()


def retained_files(storage: WarehouseStorage, manifest: Manifest) -> set[str]:
    """Every file a retained version needs: the current manifest's (the pipeline's state too),
    and each logged version's record and served files. Expiry deletes nothing else."""
    named = {f.path for parts in manifest.tables.values() for f in parts.values()}
    for entry in manifest.log:
        named.add(record_path(entry.version))
        named |= record_files(storage, entry.version)
    return named


@dataclass(frozen=True)
class Retention:
    """Which versions stay: every one of the last `keep_all_days`, then the last of each UTC day
    back `retain_days`; the current version always."""

    keep_all_days: float = 7.0
    retain_days: float = 90.0

    def kept(self, log: Sequence[LoggedVersion], now: datetime) -> tuple[LoggedVersion, ...]:
        """The entries of `log` (oldest first) retained at `now`, in order.

        Monotone: an entry not kept at `now` is not kept at any later instant (a UTC day's last
        version stays its last, and both windows only move forward), so expiry never has to
        bring a version back.
        """
        if not log:
            return ()
        keep_all = now - timedelta(days=self.keep_all_days)
        retain = now - timedelta(days=self.retain_days)
        kept = []
        for index, entry in enumerate(log):
            at = published_at(entry.published)
            last_of_day = index + 1 == len(log) or (
                published_at(log[index + 1].published).date() != at.date()
            )
            if index + 1 == len(log) or at >= keep_all or (last_of_day and at >= retain):
                kept.append(entry)
        return tuple(kept)


def published_at(published: str) -> datetime:
    """A log entry's or manifest's publish instant, as an aware UTC datetime."""
    return datetime.fromisoformat(published).astimezone(UTC)


def rfc3339(published: str) -> str:
    """`2026-03-03T00:31:02.456Z`: how responses state a publish instant (`x-data-published`)."""
    at = published_at(published)
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


def current_at(log: Sequence[LoggedVersion], instant: datetime) -> LoggedVersion | None:
    """The entry current at `instant`: the newest published at or before it (None: before all)."""
    found = None
    for entry in log:
        if published_at(entry.published) > instant:
            break
        found = entry
    return found


def retained_log(manifest: Manifest) -> tuple[LoggedVersion, ...]:
    """The retained versions, oldest first (a warehouse committed before the log: its current)."""
    return manifest.log or (LoggedVersion(manifest.version, manifest.updated_at),)


def version_for(manifest: Manifest, target: int | datetime) -> LoggedVersion | None:
    """The retained version that answers `target` (a version id, or the version current at an
    instant); None when none does (not retained, or before the oldest)."""
    log = retained_log(manifest)
    if isinstance(target, int):
        return next((entry for entry in log if entry.version == target), None)
    return current_at(log, target)


def parse_as_of(raw: str) -> int | datetime:
    """A data version id (digits), else an RFC 3339 instant with `Z` or an offset, as UTC;
    ValueError for anything else."""
    if raw.isascii() and raw.isdigit() and len(raw) <= 19:
        return int(raw)
    if not _INSTANT.fullmatch(raw):
        raise ValueError(raw)
    return datetime.fromisoformat(raw.upper().replace("Z", "+00:00")).astimezone(UTC)


_INSTANT = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})"
)
