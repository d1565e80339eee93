"""The warehouse on S3-compatible object storage: immutable Parquet objects, a manifest committed by compare-and-swap."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import polars as pl

from pipelines.catalog import MANIFEST_NAME, Manifest, PartitionFile, Table
from pipelines.catalog.manifest import PARTITION_SEPARATOR, manifest_from_json, manifest_to_json
from pipelines.catalog.storage import S3Location, read_partitions
from pipelines.catalog.versions import (
    RECORD_SUFFIX,
    Retention,
    record_files,
    record_of,
    record_path,
    retained_files,
)
from pipelines.platform.retries import RetryableError, RetryPolicy, retrying
from pipelines.warehouse.commits import (
    CommitConflictError,
    TableWrite,
    apply_writes,
    changes_nothing,
    conflicts,
    utc_now,
)
from pipelines.warehouse.staging import staged_paths
from pipelines.warehouse.store import (
    DEFAULT_GC_GRACE,
    STAGING_DIR,
    STAGING_TTL,
    Expiry,
    check_partition,
    write_parquet,
)

# S3 has no rename and no lock, but a PUT is atomic and (AWS since 2024, MinIO, moto) conditional:
# `If-None-Match: *` creates only when absent, `If-Match: <etag>` replaces only the version read.
# A writer reads the manifest and its ETag, applies its change and PUTs with that condition; if
# another writer committed in between the PUT fails with 412 and the writer starts over from the
# new manifest. That is the fcntl lock's "no lost updates" without a lock.

__all__ = ["CommitConflictError", "ObjectCommit", "ObjectWarehouse", "S3Location", "Snapshot"]


@dataclass(frozen=True)
class ObjectCommit:
    """What one write landed (as `store.Commit`; the path is the object's s3:// URL)."""

    table: str
    market: str
    path: str
    rows: int
    version: int
    views_refreshed: bool
    attempts: int
    """Manifest PUTs this commit took (more than 1: another writer committed meanwhile)."""


@dataclass(frozen=True)
class ObjectPublished:
    """What a commit of several writes landed (as `store.Published`)."""

    manifest: Manifest
    views_refreshed: bool
    attempts: int
    published: bool = True
    """False when the writes changed nothing: `manifest` is the current one, its version stands."""

    @property
    def version(self) -> int:
        return self.manifest.version


@dataclass(frozen=True)
class Snapshot:
    """The manifest as read, with the ETag a conditional PUT must match and the expiring files."""

    manifest: Manifest | None
    etag: str | None
    expiring: dict[str, float]
    """path -> when the last retained version naming it expired (epoch seconds): the GC grace
    counts from then (objects have no mtime to touch)."""


@dataclass(frozen=True)
class ObjectWarehouse:
    """The warehouse under an s3:// root; the same layout and manifest as a local one."""

    location: S3Location
    gc_grace: timedelta = DEFAULT_GC_GRACE
    max_attempts: int = 100
    clock: Callable[[], datetime] = utc_now
    """When a commit publishes and what "now" an expiry keeps versions by (tests move it)."""

    @property
    def storage(self) -> S3Location:
        return self.location

    def write(self, table: Table, market: str, frame: pl.DataFrame) -> ObjectCommit:
        """Write `frame` as this market's only object of `table`, then commit it at once."""
        entry = self.write_file(table, market, frame)
        published = self.commit([TableWrite(table.name, market, {market: entry})])
        return ObjectCommit(
            table=table.name,
            market=market,
            path=f"s3://{self.location.arrow_path(entry.path)}",
            rows=entry.rows,
            version=published.version,
            views_refreshed=True,
            attempts=published.attempts,
        )

    def write_file(self, table: Table, partition: str, frame: pl.DataFrame) -> PartitionFile:
        """Write `frame` as a new immutable object of `partition`, not yet named by the manifest."""
        check_partition(table, partition, frame)
        conformed = table.conform(frame)
        relative = self._write_object(table, partition, conformed)
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
        return PartitionFile(path=relative, rows=conformed.height, written_at=now)

    def commit(self, writes: Sequence[TableWrite], run_id: str | None = None) -> ObjectPublished:
        """Apply every write in one manifest PUT, or none; retried while only the ETag is stale.
        The new version's record is PUT first (every version a reader can see has one).

        CommitConflictError when a write's base no longer matches (another run changed those
        partitions), or when the manifest changed under every attempt.
        """
        client = self.location.client()
        tries = 0
        try:
            for attempt in retrying(self.commit_retry):
                with attempt:
                    tries = attempt.num
                    return self._commit_once(client, writes, run_id, tries)
        except _StaleManifestError:
            pass
        named = ", ".join(f"{w.table}/{w.market}" for w in writes)
        raise CommitConflictError(
            f"{named}: the manifest changed under every one of {tries} attempts; "
            "the objects were written but not committed"
        )

    @property
    def commit_retry(self) -> RetryPolicy:
        """Short waits with jitter wide enough that committers who collided do not collide again."""
        return RetryPolicy(
            attempts=self.max_attempts, wait_initial=0.01, wait_max=0.5, wait_jitter=0.05
        )

    def _commit_once(
        self, client: Any, writes: Sequence[TableWrite], run_id: str | None, attempt: int
    ) -> ObjectPublished:
        snapshot = self.snapshot(client)
        stale = conflicts(snapshot.manifest, writes)
        if stale:
            raise CommitConflictError(
                f"changed by another run since this one read them: {', '.join(stale)}"
            )
        if snapshot.manifest is not None and changes_nothing(snapshot.manifest, writes):
            # A run that found nothing new: the version, and every ETag made from it, stays.
            return ObjectPublished(snapshot.manifest, True, attempt, published=False)
        manifest = apply_writes(snapshot.manifest, writes, self.clock())
        # A record whose manifest PUT then loses the race is named by no log: expiry removes it.
        record = record_of(snapshot.manifest, manifest, run_id)
        self._put(client, record_path(manifest.version), record.to_bytes(), "application/gzip")
        if not self._put_manifest(client, snapshot.etag, manifest, snapshot.expiring):
            raise _StaleManifestError("another commit replaced the manifest first")
        return ObjectPublished(manifest, True, attempt)

    def expire(self, retention: Retention, now: float | None = None) -> Expiry:
        """Drop the versions `retention` no longer keeps from the log (one conditional PUT, the
        data version standing), then delete what no retained version, live run or grace needs."""
        client = self.location.client()
        now = self.clock().timestamp() if now is None else now
        for attempt in retrying(self.commit_retry):
            with attempt:
                return self._expire_once(client, retention, now)
        raise AssertionError("unreachable: retrying raises when attempts run out")

    def _expire_once(self, client: Any, retention: Retention, now: float) -> Expiry:
        snapshot = self.snapshot(client)
        if snapshot.manifest is None:
            return Expiry(kept=(), expired=(), removed=(), freed_bytes=0)
        manifest = snapshot.manifest
        kept = retention.kept(manifest.log, datetime.fromtimestamp(now, UTC))
        expired = tuple(v for v in manifest.log if v not in kept)
        manifest = replace(manifest, log=kept)
        referenced = retained_files(self.location, manifest)
        expiring = {p: at for p, at in snapshot.expiring.items() if p not in referenced}
        for entry in expired:
            for path in {record_path(entry.version), *record_files(self.location, entry.version)}:
                if path not in referenced:
                    expiring.setdefault(path, now)
        cutoff = now - self.gc_grace.total_seconds()
        due = sorted(p for p, at in expiring.items() if at <= cutoff)
        remaining = {p: at for p, at in expiring.items() if at > cutoff}
        if (expired or remaining != snapshot.expiring) and not self._put_manifest(
            client, snapshot.etag, manifest, remaining
        ):
            raise _StaleManifestError("another commit replaced the manifest first")
        # Once the manifest has landed: what it let go, and objects nothing ever named (failed
        # runs', records of commits that lost the race) once older than the grace.
        objects = {
            relative: (modified, size) for relative, modified, size in self._objects(client, "")
        }
        keep = referenced | set(remaining) | set(due) | self._live_staged(client, now)
        orphans = [
            relative
            for relative, (modified, _) in objects.items()
            if relative.endswith((".parquet", RECORD_SUFFIX))
            and relative not in keep
            and modified < cutoff
        ]
        gone = [*due, *orphans]
        self._delete(client, gone)
        freed = sum(objects[r][1] for r in gone if r in objects)
        return Expiry(kept, expired, tuple(sorted(gone)), freed)

    def read(self, table: Table, markets: Sequence[str] | None = None) -> pl.DataFrame:
        """The current rows of `markets` (every partition when None), in catalog schema."""
        return read_partitions(self.location, table, markets, self.snapshot().manifest)

    def manifest(self) -> Manifest | None:
        return self.snapshot().manifest

    def snapshot(self, client: Any = None) -> Snapshot:
        client = client or self.location.client()
        try:
            reply = client.get_object(
                Bucket=self.location.bucket, Key=self.location.key(MANIFEST_NAME)
            )
        except client.exceptions.NoSuchKey:
            return Snapshot(None, None, {})
        body = reply["Body"].read()
        expiring = {str(k): float(v) for k, v in json.loads(body).get("expiring", {}).items()}
        return Snapshot(manifest_from_json(body), reply["ETag"], expiring)

    # Staging records: `_staging/<run id>/<step>@<attempt>.json` objects
    # (pipelines.warehouse.staging).

    def put_staging(self, run_id: str, name: str, body: bytes) -> None:
        self._put(
            self.location.client(), f"{STAGING_DIR}/{run_id}/{name}.json", body, "application/json"
        )

    def _put(self, client: Any, relative: str, body: bytes, content_type: str) -> None:
        client.put_object(
            Bucket=self.location.bucket,
            Key=self.location.key(relative),
            Body=body,
            ContentType=content_type,
        )

    def staging_records(
        self, run_id: str, where: Callable[[str], bool] = lambda _: True
    ) -> list[bytes]:
        """The staging records of a run whose step names pass `where` (a GET each), in name order."""
        client = self.location.client()
        listed = (r for r, _, _ in self._objects(client, f"{STAGING_DIR}/{run_id}/"))
        keys = sorted(r for r in listed if where(r.rsplit("/", 1)[-1].removesuffix(".json")))
        return [
            client.get_object(Bucket=self.location.bucket, Key=self.location.key(key))[
                "Body"
            ].read()
            for key in keys
        ]

    def drop_staging(self, run_id: str) -> None:
        client = self.location.client()
        keys = [r for r, _, _ in self._objects(client, f"{STAGING_DIR}/{run_id}/")]
        self._delete(client, keys)

    def _live_staged(self, client: Any, now: float) -> set[str]:
        by_run: dict[str, list[tuple[str, float]]] = {}
        for relative, modified, _ in self._objects(client, f"{STAGING_DIR}/"):
            by_run.setdefault(relative.split("/")[1], []).append((relative, modified))
        live: set[str] = set()
        for records in by_run.values():
            if now - max(m for _, m in records) > STAGING_TTL.total_seconds():
                self._delete(client, [r for r, _ in records])
                continue
            for relative, _ in records:
                key = self.location.key(relative)
                live |= staged_paths(
                    client.get_object(Bucket=self.location.bucket, Key=key)["Body"].read()
                )
        return live

    def _objects(self, client: Any, prefix: str) -> list[tuple[str, float, int]]:
        """(path relative to the root, last-modified epoch seconds, bytes) of every object under
        `prefix`."""
        root = self.location.key("")
        pages = client.get_paginator("list_objects_v2").paginate(
            Bucket=self.location.bucket, Prefix=self.location.key(prefix)
        )
        return [
            (item["Key"][len(root) :], item["LastModified"].timestamp(), int(item["Size"]))
            for page in pages
            for item in page.get("Contents", [])
        ]

    def _put_manifest(
        self, client: Any, etag: str | None, manifest: Manifest, expiring: dict[str, float]
    ) -> bool:
        condition = {"IfMatch": etag} if etag else {"IfNoneMatch": "*"}
        try:
            client.put_object(
                Bucket=self.location.bucket,
                Key=self.location.key(MANIFEST_NAME),
                Body=manifest_to_json(manifest, expiring=expiring),
                ContentType="application/json",
                **condition,
            )
        except client.exceptions.ClientError as error:
            # 412: another writer committed first; 409: a concurrent conditional PUT is in flight.
            if error.response["ResponseMetadata"]["HTTPStatusCode"] in (409, 412):
                return False
            raise
        return True

    def _write_object(self, table: Table, partition: str, frame: pl.DataFrame) -> str:
        # A PUT is atomic: the object appears complete under its final, never reused name.
        market, _, rest = partition.partition(PARTITION_SEPARATOR)
        prefix = rest.replace(PARTITION_SEPARATOR, ".") + "." if rest else ""
        name = f"{prefix}{time.time_ns()}-{secrets.token_hex(4)}.parquet"
        relative = f"{table.name}/market={market}/{name}"
        fs = self.location.filesystem()
        with fs.open_output_stream(self.location.arrow_path(relative)) as stream:
            write_parquet(frame, stream, table.compressed)
        return relative

    def _delete(self, client: Any, relatives: Sequence[str]) -> tuple[str, ...]:
        for relative in relatives:
            client.delete_object(Bucket=self.location.bucket, Key=self.location.key(relative))
        return tuple(relatives)


class _StaleManifestError(RetryableError):
    """The manifest's ETag changed between this commit's read and its PUT: read it again."""
