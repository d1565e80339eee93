"""Out of disk space, said in one line: which filesystem, what is free, what a run needs."""

from __future__ import annotations

import errno
import shutil
from collections.abc import Iterator
from pathlib import Path

NEARLY_FULL_BYTES = 64 << 20
"""Free space below which an I/O error is read as the disk being full (SQLite says only `disk
I/O error` when a write it needed failed)."""
RUN_WINDOW_SECONDS = 600.0
"""Files written this close to the newest warehouse file count as the last run's writes."""
INSTANCE_MARGIN_BYTES = 16 << 20
"""Room for a run's records in the Dagster instance and its logs, besides the warehouse files."""
FULL_MESSAGES = ("no space left on device", "database or disk is full", "disk quota exceeded")


def causes(error: BaseException) -> Iterator[BaseException]:
    """The error and every error it was raised from or during, once each."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [error]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        pending += [current.__cause__, current.__context__]


def out_of_space(error: BaseException, data_dir: Path) -> bool:
    """Whether `error` comes from a full disk under `data_dir`."""
    for cause in causes(error):
        if isinstance(cause, OSError) and cause.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        text = str(cause).lower()
        if any(message in text for message in FULL_MESSAGES):
            return True
        if "disk i/o error" in text and free_bytes(data_dir) < NEARLY_FULL_BYTES:
            return True
    return False


def free_bytes(path: Path) -> int:
    """Free bytes on the filesystem holding `path` (or its nearest existing parent)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return shutil.disk_usage(path).free


def last_run_bytes(warehouse: Path) -> int:
    """Bytes of the warehouse files the last run wrote (those written within `RUN_WINDOW_SECONDS`
    of the newest): about what the next run of the same size writes again."""
    files = [(f.stat().st_mtime, f.stat().st_size) for f in warehouse.glob("*/market=*/*.parquet")]
    if not files:
        return 0
    newest = max(mtime for mtime, _ in files)
    return sum(size for mtime, size in files if newest - mtime <= RUN_WINDOW_SECONDS)


def space_line(command: str, data_dir: Path) -> str:
    """The one line a command says when the disk under `data_dir` is full."""
    free = free_bytes(data_dir)
    written = last_run_bytes(data_dir / "warehouse")
    if written:
        needed, what = written + INSTANCE_MARGIN_BYTES, f"what the last run wrote, {_mb(written)}"
    else:
        sources = sum(f.stat().st_size for f in (data_dir / "sources").rglob("*") if f.is_file())
        needed, what = (
            sources + INSTANCE_MARGIN_BYTES,
            "a first load writes about its sources' size",
        )
    return (
        f"{command}: out of disk space under {data_dir}: {_mb(free)} free there, and a run needs "
        f"about {_mb(needed)} ({what}, and room for the Dagster instance's records); free some "
        f"space or point MI_DATA_DIR elsewhere, then run it again (the warehouse keeps the "
        f"version it had before this run)"
    )


def _mb(size: int) -> str:
    return f"{size / (1 << 20):,.1f} MB"
