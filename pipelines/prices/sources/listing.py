"""Source files as a reader tracks them: path, size and modification time, to read only what changed."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SourceFile:
    """One file of a file source when it was listed; a file rewritten since differs in size or mtime."""

    path: str
    """As the connector reports it in the `source` column of what it reads."""
    size: int
    mtime_ns: int
    name: str
    """The path under the source's root: what a reader remembers it by, so that a data directory
    moved or restored elsewhere is not read again whole."""


def stat_files(paths: Iterable[Path], root: Path) -> list[SourceFile]:
    """The files among `paths` (under `root`) that exist, with their size and modification time."""
    listed = []
    for path in paths:
        try:
            stat = os.stat(path)
        except FileNotFoundError:  # removed since it was listed: it is simply not there
            continue
        name = path.relative_to(root).as_posix()
        listed.append(SourceFile(str(path), stat.st_size, stat.st_mtime_ns, name))
    return listed


@dataclass(frozen=True)
class FileBounds:
    """How large one file of a file drop may be, checked before it is read (decisions.md, Inputs
    from sources): its size on disk, and (Parquet, from the file's metadata) its rows. A file over
    either bound is rejected whole with its reason; a compressed file cannot decode to millions of
    rows that nobody meant. Set per file-drop market in the sources file (`max_file_mb`,
    `max_rows`, docs/file-drop.md)."""

    max_bytes: int = 1 << 30
    max_rows: int = 10_000_000

    @classmethod
    def of(cls, max_file_mb: int | None = None, max_rows: int | None = None) -> FileBounds:
        default = cls()
        for name, value in (("max_file_mb", max_file_mb), ("max_rows", max_rows)):
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1, not {value}")
        return cls(
            default.max_bytes if max_file_mb is None else max_file_mb << 20,
            default.max_rows if max_rows is None else max_rows,
        )

    def size_refused(self, path: Path) -> str | None:
        """Why `path` is not read for its size (None: it may be; a missing file is the reader's
        to report)."""
        try:
            size = os.stat(path).st_size
        except OSError:
            return None
        if size <= self.max_bytes:
            return None
        return f"file has {size:,} bytes, more than the bound of {self.max_bytes:,} (max_file_mb); file not read"

    def rows_refused(self, rows: int) -> str | None:
        if rows <= self.max_rows:
            return None
        return f"file has {rows:,} rows, more than the bound of {self.max_rows:,} (max_rows); file not read"
