"""Where the warehouse's bytes live: a local directory or an s3:// prefix, behind one small interface.

The pipeline's stores (`pipelines.warehouse`), the webhooks, the incremental price fetch and the
API's snapshot reader all read the manifest and its Parquet files through `WarehouseStorage`, so
one setting (`MI_WAREHOUSE_URL`, else `<MI_DATA_DIR>/warehouse`) picks the same storage for all of
them. Writing stays with the stores: a rename under a lock locally, a compare-and-swap on S3.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable
from urllib.parse import urlparse

import polars as pl

from pipelines.catalog.manifest import MANIFEST_NAME, Manifest, manifest_from_json, read_manifest
from pipelines.catalog.schema import Table

if TYPE_CHECKING:
    # Imported where used: a local run reads its files with Polars, and pyarrow's import would
    # slow every command.
    import pyarrow as pa
    import pyarrow.fs as pafs


@runtime_checkable
class WarehouseStorage(Protocol):
    """Read access to one warehouse root: its manifest (and a cheap change tag) and its files."""

    @property
    def url(self) -> str:
        """The root as configured (a local path or `s3://bucket/prefix`), for messages and views."""
        ...

    def manifest_tag(self) -> str | None:
        """Changes whenever the manifest is replaced (a stat locally, a HEAD's ETag on S3); None
        while there is no manifest. Cheap enough to call every poll interval."""
        ...

    def read_manifest(self) -> Manifest | None:
        """The current manifest, or None before the first materialization."""
        ...

    def read_object(self, relative: str) -> bytes | None:
        """A small file's bytes (a version record), or None when it does not exist."""
        ...

    def filesystem(self) -> pafs.FileSystem:
        """The pyarrow filesystem the files are read through."""
        ...

    def arrow_path(self, relative: str) -> str:
        """A manifest path (relative to the root) as `filesystem()` names it."""
        ...


@dataclass(frozen=True)
class LocalStorage:
    """A warehouse directory on a local (or mounted) filesystem."""

    root: Path

    @property
    def url(self) -> str:
        return str(self.root.resolve())

    def manifest_tag(self) -> str | None:
        # os.replace gives the new manifest a new inode, so this changes even within one mtime tick.
        try:
            stat = os.stat(self.root / MANIFEST_NAME)
        except FileNotFoundError:
            return None
        return f"{stat.st_ino}:{stat.st_mtime_ns}:{stat.st_size}"

    def read_manifest(self) -> Manifest | None:
        return read_manifest(self.root)

    def read_object(self, relative: str) -> bytes | None:
        try:
            return (self.root / relative).read_bytes()
        except FileNotFoundError:
            return None

    def filesystem(self) -> pafs.FileSystem:
        import pyarrow.fs as pafs

        return pafs.LocalFileSystem()

    def arrow_path(self, relative: str) -> str:
        return str(self.root.resolve() / relative)


@dataclass(frozen=True)
class S3Location:
    """`s3://bucket/prefix` on an S3-compatible endpoint (None: AWS); credentials from AWS_* env."""

    bucket: str
    prefix: str
    endpoint_url: str | None = None
    region: str | None = None
    _cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False, hash=False)
    """The reader's long-lived boto3 client (one per location; clients are thread-safe)."""

    @classmethod
    def parse(cls, url: str, endpoint_url: str | None = None, region: str | None = None) -> S3Location:  # fmt: skip
        parsed = urlparse(url)
        if parsed.scheme != "s3" or not parsed.netloc:
            raise ValueError(f"{url!r} is not an s3://bucket[/prefix] URL")
        return cls(parsed.netloc, parsed.path.strip("/"), endpoint_url, region)

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}".rstrip("/")

    def key(self, relative: str) -> str:
        return f"{self.prefix}/{relative}" if self.prefix else relative

    def arrow_path(self, relative: str) -> str:
        """`bucket/key`: how pyarrow's S3FileSystem names an object."""
        return f"{self.bucket}/{self.key(relative)}"

    def client(self) -> Any:
        """A new boto3 S3 client (writers make their own: one per commit, safe across forks)."""
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint_url, region_name=self.region)

    def filesystem(self) -> pafs.S3FileSystem:
        import pyarrow.fs as pafs

        if self.endpoint_url is None:
            return pafs.S3FileSystem(region=self.region)
        endpoint = urlparse(self.endpoint_url)
        return pafs.S3FileSystem(
            endpoint_override=endpoint.netloc,
            scheme=endpoint.scheme or "https",
            region=self.region or "us-east-1",
        )

    def manifest_tag(self) -> str | None:
        """The manifest object's ETag, from a HEAD (no body is transferred)."""
        client = self._reader_client()
        try:
            reply = client.head_object(Bucket=self.bucket, Key=self.key(MANIFEST_NAME))
        except client.exceptions.ClientError as error:
            if error.response["ResponseMetadata"]["HTTPStatusCode"] == 404:
                return None
            raise
        return str(reply["ETag"])

    def read_manifest(self) -> Manifest | None:
        client = self._reader_client()
        try:
            reply = client.get_object(Bucket=self.bucket, Key=self.key(MANIFEST_NAME))
        except client.exceptions.NoSuchKey:
            return None
        return manifest_from_json(reply["Body"].read())

    def read_object(self, relative: str) -> bytes | None:
        client = self._reader_client()
        try:
            reply = client.get_object(Bucket=self.bucket, Key=self.key(relative))
        except client.exceptions.NoSuchKey:
            return None
        return bytes(reply["Body"].read())

    def _reader_client(self) -> Any:
        client = self._cache.get("client")
        if client is None:
            client = self._cache.setdefault("client", self.client())
        return client


def open_storage(
    location: str | Path, endpoint_url: str | None = None
) -> LocalStorage | S3Location:
    """The storage a configured root names: `s3://bucket/prefix` (on `endpoint_url`), else a path."""
    if isinstance(location, str) and location.startswith("s3://"):
        return S3Location.parse(location, endpoint_url)
    return LocalStorage(Path(location))


def read_files(
    storage: WarehouseStorage,
    relatives: Sequence[str],
    filesystem: pafs.FileSystem | None = None,
) -> list[pa.Table]:
    """The Parquet files (manifest paths) as arrow tables, one per file, in order."""
    import pyarrow.parquet as pq

    filesystem = filesystem or storage.filesystem()
    return [pq.read_table(storage.arrow_path(r), filesystem=filesystem) for r in relatives]


def read_partitions(
    storage: WarehouseStorage,
    table: Table,
    markets: Sequence[str] | None = None,
    manifest: Manifest | None = None,
) -> pl.DataFrame:
    """The current rows of `markets` (every stored partition when None) as one frame in catalog
    schema; `manifest` pins the version read (default: the current one). LookupError when a
    requested partition is not stored."""
    manifest = manifest if manifest is not None else storage.read_manifest()
    stored = manifest.markets(table.name) if manifest else []
    wanted = stored if markets is None else list(markets)
    missing = [m for m in wanted if m not in stored]
    if missing:
        raise LookupError(
            f"{table.name}: no partition {missing} in the warehouse at {storage.url}; "
            "materialize it first"
        )
    paths = [path for market in wanted for path in market_files(manifest, table.name, market)]
    frames = [table.conform(_frame(t)) for t in read_files(storage, paths)]
    return pl.concat(frames) if frames else table.empty()


def market_files(manifest: Manifest | None, table: str, market: str) -> list[str]:
    """The files of one market's partition of `table`, in partition-key order."""
    if manifest is None:
        return []
    return [entry.path for _, entry in sorted(manifest.partitions(table, market).items())]


def _frame(table: pa.Table) -> pl.DataFrame:
    frame = pl.from_arrow(table)
    if not isinstance(frame, pl.DataFrame):  # pragma: no cover - a table always gives a frame
        raise TypeError("expected a table")
    return frame
