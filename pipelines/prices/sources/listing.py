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
