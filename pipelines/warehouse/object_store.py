"""The warehouse on S3-compatible object storage: immutable Parquet objects, a manifest committed by compare-and-swap."""

from __future__ import annotations

import json
import random
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import polars as pl

from pipelines.catalog import MANIFEST_NAME, Manifest, PartitionFile, Table
from pipelines.catalog.manifest import manifest_from_json, manifest_to_json
from pipelines.catalog.storage import S3Location, read_partitions
from pipelines.warehouse.store import DEFAULT_GC_GRACE, check_partition, replace_partition

# S3 has no rename and no lock, but a PUT is atomic and (AWS since 2024, MinIO, moto) conditional:
# `If-None-Match: *` creates only when absent, `If-Match: <etag>` replaces only the version read.
# A writer reads the manifest and its ETag, applies its change and PUTs with that condition; if
# another writer committed in between the PUT fails with 412 and the writer starts over from the
# new manifest. That is the fcntl lock's "no lost updates" without a lock.


class CommitConflictError(RuntimeError):
    """The manifest kept changing under this writer for every one of its attempts."""


@dataclass(frozen=True)
class ObjectCommit:
    """What one write landed (as `store.Commit`; the path is the object's s3:// URL)."""

    table: str
    market: str
    path: str
    rows: int
    version: int
    views_refreshed: bool
    removed: tuple[str, ...]
    attempts: int
    """Manifest PUTs this commit took (more than 1: another writer committed meanwhile)."""


@dataclass(frozen=True)
class Snapshot:
    """The manifest as read, with the ETag a conditional PUT must match and the retired files."""

    manifest: Manifest | None
    etag: str | None
    retired: dict[str, float]
    """path -> when it stopped being current (epoch seconds): the GC grace counts from then."""


@dataclass(frozen=True)
class ObjectWarehouse:
    """The warehouse under an s3:// root; the same layout and manifest as a local one."""

    location: S3Location
    gc_grace: timedelta = DEFAULT_GC_GRACE
    max_attempts: int = 100

    def write(self, table: Table, market: str, frame: pl.DataFrame) -> ObjectCommit:
        """Write `frame` as this partition's new object, then commit it to the manifest."""
        check_partition(table, market, frame)
        conformed = table.conform(frame)
        relative = self._write_object(table.name, market, conformed)
        client = self.location.client()
        for attempt in range(1, self.max_attempts + 1):
            snapshot = self.snapshot(client)
            manifest, retired, expired = self._next(snapshot, table.name, market, relative, conformed.height)  # fmt: skip
            if self._put_manifest(client, snapshot.etag, manifest, retired):
                removed = self._delete(client, expired)
                return ObjectCommit(
                    table=table.name,
                    market=market,
                    path=f"s3://{self.location.arrow_path(relative)}",
                    rows=conformed.height,
                    version=manifest.version,
                    views_refreshed=True,
                    removed=removed,
                    attempts=attempt,
                )
            time.sleep(random.uniform(0, min(0.5, 0.01 * 2**attempt)))
        raise CommitConflictError(
            f"{table.name}/{market}: the manifest changed under every one of "
            f"{self.max_attempts} attempts; {relative} was written but not committed"
        )

    def read(self, table: Table, markets: Sequence[str] | None = None) -> pl.DataFrame:
        """The current rows of `markets` (every partition when None), in catalog schema."""
        return read_partitions(self.location, table, markets, self.snapshot().manifest)

    def manifest(self) -> Manifest | None:
        return self.snapshot().manifest

    def snapshot(self, client: Any = None) -> Snapshot:
        client = client or self.location.client()
        try:
            reply = client.get_object(Bucket=self.location.bucket, Key=self.location.key(MANIFEST_NAME))  # fmt: skip
        except client.exceptions.NoSuchKey:
            return Snapshot(None, None, {})
        body = reply["Body"].read()
        retired = {str(k): float(v) for k, v in json.loads(body).get("retired", {}).items()}
        return Snapshot(manifest_from_json(body), reply["ETag"], retired)

    def collect_orphans(self, now: float | None = None) -> list[str]:
        """Delete objects no manifest ever named (crashed writers), once older than the grace."""
        client = self.location.client()
        snapshot = self.snapshot(client)
        known = set(snapshot.retired) | {
            f.path
            for parts in (snapshot.manifest.tables if snapshot.manifest else {}).values()
            for f in parts.values()
        }
        cutoff = (time.time() if now is None else now) - self.gc_grace.total_seconds()
        orphans = []
        pages = client.get_paginator("list_objects_v2").paginate(
            Bucket=self.location.bucket, Prefix=self.location.key("")
        )
        for page in pages:
            for item in page.get("Contents", []):
                relative = item["Key"][len(self.location.key("")) :]
                if relative.endswith(".parquet") and relative not in known and item["LastModified"].timestamp() < cutoff:  # fmt: skip
                    orphans.append(relative)
        return list(self._delete(client, orphans))

    def _next(
        self, snapshot: Snapshot, table: str, market: str, relative: str, rows: int
    ) -> tuple[Manifest, dict[str, float], list[str]]:
        # Retired files stay listed (with when they were retired) until the grace has passed;
        # those past it leave the list in this commit and are deleted once it has landed.
        old = snapshot.manifest or Manifest(version=0, updated_at="", tables={})
        partitions = replace_partition(table, old.tables.get(table, {}), market)
        now = time.time()
        retired = dict(snapshot.retired)
        for gone in set(old.tables.get(table, {})) - set(partitions) | ({market} & set(partitions)):  # fmt: skip
            retired[old.tables[table][gone].path] = now
        cutoff = now - self.gc_grace.total_seconds()
        expired = [path for path, at in retired.items() if at <= cutoff]
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds")
        partitions[market] = PartitionFile(path=relative, rows=rows, written_at=stamp)
        manifest = Manifest(
            version=max(old.version + 1, time.time_ns()),
            updated_at=stamp,
            tables={**old.tables, table: dict(sorted(partitions.items()))},
        )
        return manifest, {p: at for p, at in retired.items() if at > cutoff}, expired

    def _put_manifest(
        self, client: Any, etag: str | None, manifest: Manifest, retired: dict[str, float]
    ) -> bool:
        condition = {"IfMatch": etag} if etag else {"IfNoneMatch": "*"}
        try:
            client.put_object(
                Bucket=self.location.bucket,
                Key=self.location.key(MANIFEST_NAME),
                Body=manifest_to_json(manifest, retired=retired),
                ContentType="application/json",
                **condition,
            )
        except client.exceptions.ClientError as error:
            # 412: another writer committed first; 409: a concurrent conditional PUT is in flight.
            if error.response["ResponseMetadata"]["HTTPStatusCode"] in (409, 412):
                return False
            raise
        return True

    def _write_object(self, table: str, market: str, frame: pl.DataFrame) -> str:
        # A PUT is atomic: the object appears complete under its final, never reused name.
        relative = f"{table}/market={market}/{time.time_ns()}-{secrets.token_hex(4)}.parquet"
        fs = self.location.filesystem()
        with fs.open_output_stream(self.location.arrow_path(relative)) as stream:
            frame.write_parquet(stream)
        return relative

    def _delete(self, client: Any, relatives: Sequence[str]) -> tuple[str, ...]:
        for relative in relatives:
            client.delete_object(Bucket=self.location.bucket, Key=self.location.key(relative))
        return tuple(relatives)
