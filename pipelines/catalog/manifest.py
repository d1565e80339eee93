"""The warehouse manifest: which immutable Parquet file holds each table partition right now."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

# Writers never overwrite a Parquet file: each materialization writes a new file and then replaces
# `_manifest.json` atomically. A reader that loads the manifest once reads one consistent version of
# every table (no mix of old and new), and the manifest's `version` is the data version the API uses
# for ETags and caches.

MANIFEST_NAME = "_manifest.json"
PARTITION_SEPARATOR = "/"
"""Partition keys are `<market>`, `<market>/<shard>[/<segment>]` or `<market>/<segment>`: a table
partition of one market may be split into several files (shards of symbols, time segments of a
shard's rows or of a market's news)."""


def market_of(key: str) -> str:
    """The market a partition key belongs to (its first component)."""
    return key.split(PARTITION_SEPARATOR, 1)[0]


@dataclass(frozen=True)
class PartitionFile:
    """One table partition as of a manifest version."""

    path: str
    """Path of the Parquet file, relative to the warehouse root."""
    rows: int
    written_at: str
    """ISO 8601 UTC instant the file was written."""


@dataclass(frozen=True)
class LoggedVersion:
    """One retained version in the manifest's log: its id and when it was committed."""

    version: int
    published: str
    """ISO 8601 UTC instant of the commit (that version's `updated_at`)."""


@dataclass(frozen=True)
class Manifest:
    """The current files of every table partition, and a version that changes with each commit."""

    version: int
    updated_at: str
    """ISO 8601 UTC instant this version was committed (its publish time; expiry keeps it)."""
    tables: dict[str, dict[str, PartitionFile]]
    """table name -> partition key (`market`, `market/s{k}of{n}` or `market/s{k}of{n}/segment`)
    -> file."""
    log: tuple[LoggedVersion, ...] = ()
    """The retained versions, oldest first, this one last (`pipelines.catalog.versions`): each
    has a record `_versions/<version>.json.gz` naming its served tables' files."""

    def files(self, table: str) -> list[str]:
        return [f.path for _, f in sorted(self.tables.get(table, {}).items())]

    def partitions(self, table: str, market: str) -> dict[str, PartitionFile]:
        """Every file of one market's partition of `table`, by partition key."""
        return {
            key: entry
            for key, entry in self.tables.get(table, {}).items()
            if market_of(key) == market
        }

    def markets(self, table: str) -> list[str]:
        """The markets `table` holds partitions of, sorted."""
        return sorted({market_of(key) for key in self.tables.get(table, {})})


def read_manifest(warehouse_dir: Path) -> Manifest | None:
    """The warehouse's current manifest, or None before the first materialization."""
    path = warehouse_dir / MANIFEST_NAME
    try:
        return manifest_from_json(path.read_bytes())
    except FileNotFoundError:
        return None


def manifest_from_json(data: bytes) -> Manifest:
    """A manifest from its JSON body (members other than version, updated_at, tables ignored)."""
    raw = json.loads(data)
    tables = {
        table: {market: PartitionFile(**entry) for market, entry in partitions.items()}
        for table, partitions in raw["tables"].items()
    }
    log = tuple(LoggedVersion(int(v), str(at)) for v, at in raw.get("log", ()))
    return Manifest(int(raw["version"]), raw["updated_at"], tables, log)


def manifest_to_json(manifest: Manifest, *, compact: bool = False, **extra: object) -> bytes:
    """The manifest's JSON body, with `extra` members (a version record's run and changes)."""
    body = {
        "version": manifest.version,
        "updated_at": manifest.updated_at,
        "tables": {
            table: {market: asdict(f) for market, f in partitions.items()}
            for table, partitions in manifest.tables.items()
        },
        "log": [[v.version, v.published] for v in manifest.log],
        **extra,
    }
    if compact:
        return json.dumps(body, separators=(",", ":"), sort_keys=True).encode()
    return json.dumps(body, indent=1, sort_keys=True).encode()


def write_manifest(warehouse_dir: Path, manifest: Manifest) -> None:
    """Replace the manifest atomically (write a temporary file, then rename over the old one)."""
    target = warehouse_dir / MANIFEST_NAME
    temporary = target.with_name(f".{MANIFEST_NAME}.{os.getpid()}.tmp")
    temporary.write_bytes(manifest_to_json(manifest))
    os.replace(temporary, target)
