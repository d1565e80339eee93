"""`mi materialize` on a full disk says so in one line, naming the path and the space a run needs,
and a retry once there is space is exact (issue 53: a full disk under the Dagster instance raised
SQLite's `disk I/O error` as a 45-line traceback)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api.metering.conftest import MI
from tests.served import INSTRUMENTS, clean_env

pytestmark = pytest.mark.slow

NEXT_DAY = "2026-03-03"


@pytest.fixture
def small_disk(tmp_path: Path, embedded_market: Path) -> Iterator[Path]:
    """A copy of the materialized embedded market on a tmpfs with 300 KB left free."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small filesystem needs root")
    mount = tmp_path / "small"
    mount.mkdir()
    used = sum(f.stat().st_blocks * 512 for f in embedded_market.rglob("*") if f.is_file())
    size_kb = used // 1024 + 16 * 1024  # tmpfs holds whole pages: blocks, not sizes
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(mount)], check=True
    )
    try:
        shutil.copytree(embedded_market, mount / "data")
        fill(mount / "filler", leave=300 * 1024)
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(path: Path, leave: int) -> None:
    """Fill the filesystem of `path` to the last byte, then give back `leave` bytes."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT)
    written, chunk = 0, b"\0" * (64 * 1024)
    try:
        with contextlib.suppress(OSError):  # ENOSPC: full
            while True:
                written += os.write(descriptor, chunk)
        os.ftruncate(descriptor, max(0, written - leave))
    finally:
        os.close(descriptor)


def next_day(data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = clean_env(
        data_dir,
        MI_INSTRUMENTS=INSTRUMENTS,
        MI_END_DATE=NEXT_DAY,
        MI_NOW=f"{NEXT_DAY}T12:00:00+00:00",
    )
    return subprocess.run(
        [MI, "materialize", "--job", "daily"], env=env, capture_output=True, text=True, timeout=600
    )


def test_a_full_disk_is_one_clear_line_and_the_retry_is_exact(small_disk: Path) -> None:
    data = small_disk / "data"
    before = (data / "warehouse" / "_manifest.json").read_bytes()
    failed = next_day(data)
    assert failed.returncode == 1
    assert "Traceback" not in failed.stderr + failed.stdout
    lines = [line for line in failed.stderr.splitlines() if "out of disk space" in line]
    assert len(lines) == 1, failed.stderr[-2000:]
    assert lines[0].startswith(f"mi materialize: out of disk space under {data}: ")
    assert "a run needs about" in lines[0]
    assert (data / "warehouse" / "_manifest.json").read_bytes() == before  # the warehouse as it was
    (small_disk / "filler").unlink()
    retried = next_day(data)
    assert retried.returncode == 0, retried.stdout[-2000:] + retried.stderr[-2000:]
