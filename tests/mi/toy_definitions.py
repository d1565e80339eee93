"""Small Definitions for `mi materialize` tests: one daily multi-asset with checks, stored by the real warehouse.

`TOY_FAIL_MARKET` makes the step raise when it reaches that market; `TOY_DUPLICATE` makes an ERROR
check fail; `TOY_FREEZE_COUNT` names a file the step writes `gc.get_freeze_count()` to; `TOY_SLEEP` seconds the
step waits after its first progress line. (No `from __future__ import annotations`: Dagster reads the `context` annotation.)
"""

import gc
import os
import time
from collections.abc import Iterator

import dagster as dg
import polars as pl

from pipelines.catalog import INSTRUMENT_REJECTS, INSTRUMENTS
from pipelines.definitions import build_definitions
from pipelines.platform.daily import in_daily_job
from pipelines.platform.runs import RunOptions, step_name
from pipelines.platform.settings import PipelineSettings, load_settings
from pipelines.warehouse.resource import WarehouseResource


def _build() -> dg.AssetsDefinition:
    @dg.multi_asset(
        specs=[dg.AssetSpec(INSTRUMENTS.name), dg.AssetSpec(INSTRUMENT_REJECTS.name)],
        check_specs=[
            dg.AssetCheckSpec("symbols_unique", asset=INSTRUMENTS.name),
            dg.AssetCheckSpec("no_rejects", asset=INSTRUMENT_REJECTS.name),
        ],
    )
    def toy_instruments(
        context: dg.AssetExecutionContext, warehouse: WarehouseResource, run_options: RunOptions
    ) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
        tx = warehouse.transaction(context.run.run_id, step_name(context))
        if freeze_count := os.environ.get("TOY_FREEZE_COUNT"):
            with open(freeze_count, "w") as out:
                out.write(f"{gc.get_freeze_count()} {gc.isenabled()}")
        symbols = ["AAA", "AAA"] if os.environ.get("TOY_DUPLICATE") else ["AAA", "BBB"]
        unique = True
        for market in run_options.markets:
            if os.environ.get("TOY_FAIL_MARKET") == market:
                raise RuntimeError(f"toy source for {market} is down")
            context.log.info(f"read {len(symbols)} symbols")
            time.sleep(float(os.environ.get("TOY_SLEEP") or 0))
            frames = {
                INSTRUMENTS: pl.DataFrame(
                    {"market": market, "symbol": symbols, "name": "n", "logo": "l", "source": "toy"}
                ),
                INSTRUMENT_REJECTS: pl.DataFrame(
                    {
                        "market": [market],
                        "source": ["toy"],
                        "location": ["1"],
                        "record": ["?"],
                        "reason": ["bad"],
                    }
                ),
            }
            for table, frame in frames.items():
                tx.stage(table.name, market, {market: tx.write_file(table, market, frame)})
            unique &= len(set(symbols)) == len(symbols)
        count = len(symbols) * len(run_options.markets)
        yield dg.MaterializeResult(
            asset_key=INSTRUMENTS.name, metadata={"dagster/row_count": count}
        )
        yield dg.MaterializeResult(
            asset_key=INSTRUMENT_REJECTS.name,
            metadata={"dagster/row_count": len(run_options.markets)},
        )
        yield dg.AssetCheckResult(
            asset_key=INSTRUMENTS.name,
            check_name="symbols_unique",
            passed=unique,
            severity=dg.AssetCheckSeverity.ERROR,
        )
        yield dg.AssetCheckResult(
            asset_key=INSTRUMENT_REJECTS.name,
            check_name="no_rejects",
            passed=False,
            severity=dg.AssetCheckSeverity.WARN,
        )

    return toy_instruments


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    return dg.Definitions(assets=[in_daily_job(_build())])


@dg.definitions
def defs() -> dg.Definitions:
    return build_definitions(load_settings(), domains=[build_defs])
