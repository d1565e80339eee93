"""Run the carried-state domains on bars of many shapes, in a fresh process, and print which
specializations of each numba kernel it holds: after the common shape, then after all of them.

`python -m tests.pipelines.kernel_shapes DIR` prints one JSON object,
`{"common": {kernel: [signature, ...]}, "all": {...}}`. A fresh process, because numba keeps
what a process compiled or loaded: in a test worker that already ran other shapes, a new
specialization would go unseen. Used by `tests/pipelines/platform/test_compiled.py`.
"""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from pathlib import Path

import numba
import polars as pl

from pipelines.indicators.update import INDICATORS
from pipelines.simulator.update import SimulatorConfig, simulator_domain
from pipelines.trends.update import TRENDS
from pipelines.warehouse.store import Warehouse
from tests.pipelines.synthetic import FIRST_DAY, Vendor, run_day, walks

DOMAINS = (INDICATORS, TRENDS, simulator_domain(SimulatorConfig()))


def signatures() -> dict[str, list[str]]:
    """Every kernel of the pipeline's modules loaded so far, with the signatures it holds."""
    found: dict[str, list[str]] = {}
    for module in list(sys.modules.values()):
        if not getattr(module, "__name__", "").startswith("pipelines."):
            continue
        for value in vars(module).values():
            if isinstance(value, numba.core.registry.CPUDispatcher):
                name = f"{value.py_func.__module__}.{value.py_func.__name__}"
                found[name] = sorted(str(s) for s in value.signatures)
    return found


def run(
    root: Path,
    symbols: list[str],
    days: list[int],
    shard_symbols: int = 1_000,
    market: str = "crypto",
    bars: pl.DataFrame | None = None,
) -> None:
    """Daily runs of the three domains through each of `days` (days after FIRST_DAY)."""
    source = Vendor(walks(symbols, 1_000, seed=3) if bars is None else bars, market)
    warehouse = Warehouse(root)
    for n, day in enumerate(days):
        through = FIRST_DAY + timedelta(days=day)
        run_day(
            warehouse,
            source,
            symbols,
            through,
            f"r{n}",
            DOMAINS,
            market,
            shard_symbols=shard_symbols,
        )


def main(base: Path) -> None:
    many = ["AAA", "BBB", "CCC", "DDD", "EEE"]
    run(base / "common", many, [500, 501, 502])
    common = signatures()
    # One symbol per shard: every per-symbol column of a 2-D array is contiguous.
    run(base / "one_per_shard", many[:3], [500, 501, 502], shard_symbols=1)
    # One symbol in the market, on weekdays only.
    run(base / "alone", ["AAA"], [300, 301, 304], market="forex")
    # A volume missing on one day: Polars copies the column instead of lending it.
    gappy = walks(many[:2], 1_000, seed=5).with_columns(
        volume=pl.when(pl.col("date") == FIRST_DAY + timedelta(days=3))
        .then(None)
        .otherwise("volume")
    )
    run(base / "gappy", many[:2], [300, 301], bars=gappy)
    # A listing late in the history and a revised past bar: full and appended symbols in one run.
    late = walks(many, 1_000, seed=3).filter(
        (pl.col("symbol") != "EEE") | (pl.col("date") >= FIRST_DAY + timedelta(days=450))
    )
    run(base / "listing", many, [460, 461], bars=late)
    revised = late.with_columns(
        close=pl.when(
            (pl.col("symbol") == "AAA") & (pl.col("date") == FIRST_DAY + timedelta(days=10))
        )
        .then(pl.col("close") * 1.01)
        .otherwise("close")
    )
    run(base / "listing", many, [462], bars=revised)
    print(json.dumps({"common": common, "all": signatures()}))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
