"""One default embedded market (all four markets, defects on), generated once for the package."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipelines.catalog import MARKETS
from pipelines.embedded_market import MarketManifest, write_embedded_market

AS_OF = datetime(2026, 3, 1, 14, 0, tzinfo=UTC)
"""A Sunday afternoon: weekday markets end on Friday 2026-02-27."""
SEED = 20_260_101


@dataclass(frozen=True)
class Panel:
    """One market's clean bars as (days, instruments) arrays, read back from the files."""

    symbols: list[str]
    dates: list[date]
    open: np.ndarray
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray
    volume: np.ndarray

    @property
    def returns(self) -> np.ndarray:
        return np.diff(np.log(self.close), axis=0)


@pytest.fixture(scope="session")
def default_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("embedded")


@pytest.fixture(scope="session")
def manifests(default_root: Path) -> dict[str, MarketManifest]:
    return {m: write_embedded_market(default_root, m, seed=SEED, as_of=AS_OF) for m in MARKETS}


def defect_lines(manifest: MarketManifest) -> dict[str, set[int]]:
    """Price file path -> 1-based line numbers of its injected defect rows."""
    out: dict[str, set[int]] = {}
    for d in manifest.defects:
        if d.location.startswith("line "):
            out.setdefault(d.path, set()).add(int(d.location.removeprefix("line ")))
    return out


def read_clean_lines(root: Path, manifest: MarketManifest, symbol: str) -> list[str]:
    """A price file's lines without the header and without the documented defect rows."""
    path = f"prices/{manifest.market}/{symbol}.csv"
    skip = defect_lines(manifest).get(path, set())
    lines = (root / path).read_text(encoding="utf-8").splitlines()
    return [line for number, line in enumerate(lines, start=1) if number > 1 and number not in skip]


@pytest.fixture(scope="session")
def panels(default_root: Path, manifests: dict[str, MarketManifest]) -> dict[str, Panel]:
    return {m: _panel(default_root, manifests[m]) for m in MARKETS}


def _panel(root: Path, manifest: MarketManifest) -> Panel:
    symbols = pl.read_csv(root / f"instruments/{manifest.market}.csv")["symbol"].to_list()
    columns: dict[str, list[np.ndarray]] = {
        k: [] for k in ("open", "high", "low", "close", "volume")
    }
    dates: list[date] = []
    for symbol in symbols:
        rows = [line.split(",") for line in read_clean_lines(root, manifest, symbol)]
        dates = [date.fromisoformat(r[0]) for r in rows]
        for k, name in enumerate(("open", "high", "low", "close", "volume"), start=1):
            columns[name].append(np.array([float(r[k]) for r in rows]))
    stacked = {name: np.stack(arrays, axis=1) for name, arrays in columns.items()}
    return Panel(symbols=symbols, dates=dates, **stacked)
