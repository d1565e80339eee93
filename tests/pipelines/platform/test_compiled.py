"""The numba kernels' inputs: one array type per argument, so a kernel compiles once whatever the
data (pipelines/platform/compiled.py)."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import numba.core.registry
import numpy as np
import pytest

import pipelines
from pipelines.platform.compiled import kernel_input

ROOT = Path(__file__).resolve().parents[3]


def test_kernel_input_lends_a_read_only_view_of_a_contiguous_array_without_copying() -> None:
    values = np.arange(6, dtype=np.float64)
    lent = kernel_input(values, np.float64)
    assert np.shares_memory(lent, values)
    assert not lent.flags.writeable
    assert values.flags.writeable  # the caller's array is untouched
    with pytest.raises(ValueError, match="read-only"):
        lent[0] = 1.0


def test_kernel_input_copies_a_strided_column_into_a_contiguous_read_only_array() -> None:
    grid = np.arange(12, dtype=np.float64).reshape(4, 3)
    column = kernel_input(grid[:, 1], np.float64)
    assert column.flags.c_contiguous
    assert not column.flags.writeable
    assert column.tolist() == [1.0, 4.0, 7.0, 10.0]


def test_kernel_input_converts_the_dtype() -> None:
    assert kernel_input([1, 2, 3], np.float64).dtype == np.float64


@pytest.mark.slow
def test_no_kernel_compiles_a_second_specialization_for_bars_of_another_shape(
    tmp_path: Path,
) -> None:
    """Shards of one symbol, a market of one symbol, a missing volume, a listing and a revision
    load no specialization of any kernel beyond those the common shape loaded."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.pipelines.kernel_shapes", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    common, every = found["common"], found["all"]
    added = {
        kernel: sorted(set(signatures) - set(common.get(kernel, [])))
        for kernel, signatures in every.items()
    }
    assert {kernel: extra for kernel, extra in added.items() if extra} == {}
    assert common["pipelines.simulator.engine._tasks"]  # the common shape ran every domain


def test_every_kernel_of_the_pipeline_releases_the_gil() -> None:
    """Steps run side by side in threads: no kernel may hold the GIL while it runs."""
    kernels = {}
    for module in pkgutil.walk_packages(pipelines.__path__, "pipelines."):
        loaded = importlib.import_module(module.name)
        for name, value in vars(loaded).items():
            if isinstance(value, numba.core.registry.CPUDispatcher):
                kernels[f"{value.py_func.__module__}.{name}"] = value
    assert len(kernels) >= 20  # every module with kernels was found
    holding = sorted(
        name for name, kernel in kernels.items() if kernel.targetoptions.get("nogil") is not True
    )
    assert holding == []
