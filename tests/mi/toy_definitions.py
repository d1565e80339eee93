"""Small Definitions for `mi materialize` tests: one multi-asset with checks, stored by the real warehouse.

`TOY_FAIL_MARKET` makes that market's step raise; `TOY_DUPLICATE` makes an ERROR check fail.
(No `from __future__ import annotations`: Dagster reads the `context` annotation at definition.)
"""

import os
from collections.abc import Iterator

import dagster as dg
import polars as pl

from pipelines.catalog import INSTRUMENT_REJECTS, INSTRUMENTS
from pipelines.definitions import build_definitions
from pipelines.partitions import MARKET_PARTITIONS
from pipelines.settings import PipelineSettings, load_settings


@dg.multi_asset(
    outs={INSTRUMENTS.name: dg.AssetOut(), INSTRUMENT_REJECTS.name: dg.AssetOut()},
    partitions_def=MARKET_PARTITIONS,
    check_specs=[
        dg.AssetCheckSpec("symbols_unique", asset=INSTRUMENTS.name),
        dg.AssetCheckSpec("no_rejects", asset=INSTRUMENT_REJECTS.name),
    ],
)
def toy_instruments(
    context: dg.AssetExecutionContext,
) -> Iterator[dg.Output[pl.DataFrame] | dg.AssetCheckResult]:
    market = context.partition_key
    if os.environ.get("TOY_FAIL_MARKET") == market:
        raise RuntimeError(f"toy source for {market} is down")
    symbols = ["AAA", "AAA"] if os.environ.get("TOY_DUPLICATE") else ["AAA", "BBB"]
    context.log.info(f"read {len(symbols)} symbols")
    instruments = pl.DataFrame(
        {"market": market, "symbol": symbols, "name": "n", "logo": "l", "source": "toy"}
    )
    rejects = pl.DataFrame(
        {
            "market": [market],
            "source": ["toy"],
            "location": ["1"],
            "record": ["?"],
            "reason": ["bad"],
        }
    )
    yield dg.Output(instruments, INSTRUMENTS.name)
    yield dg.Output(rejects, INSTRUMENT_REJECTS.name)
    yield dg.AssetCheckResult(
        asset_key=INSTRUMENTS.name,
        check_name="symbols_unique",
        passed=instruments["symbol"].is_unique().all(),
        severity=dg.AssetCheckSeverity.ERROR,
    )
    yield dg.AssetCheckResult(
        asset_key=INSTRUMENT_REJECTS.name,
        check_name="no_rejects",
        passed=rejects.is_empty(),
        severity=dg.AssetCheckSeverity.WARN,
    )


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    return dg.Definitions(assets=[toy_instruments])


@dg.definitions
def defs() -> dg.Definitions:
    return build_definitions(load_settings(), domains=[build_defs])
