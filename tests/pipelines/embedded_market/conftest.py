"""One default embedded market (all four markets, defects on), generated once for the package."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import UTC, date, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipelines.catalog import MARKETS
from pipelines.embedded_market import MarketManifest, write_embedded_market

AS_OF = datetime(2026, 3, 1, 14, 0, tzinfo=UTC)
"""A Sunday afternoon: weekday markets end on Friday 2026-02-27."""
SEED = 20_260_101
ATOM = "{http://www.w3.org/2005/Atom}"


@dataclass(frozen=True)
class Panel:
    """One market's clean bars as (days, instruments) arrays, read back from the day files."""

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


def files_of(root: Path) -> dict[str, bytes]:
    """Every source file under `root` (not the generator's private state and manifests)."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.relative_to(root).parts[0].startswith(".")
    }


def stamps_of(root: Path) -> dict[str, tuple[int, int]]:
    """(size, mtime in ns) of every source file under `root`."""
    return {
        p.relative_to(root).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.relative_to(root).parts[0].startswith(".")
    }


def defect_lines(manifest: MarketManifest) -> dict[str, set[int]]:
    """Price file path -> 1-based line numbers of its injected defect rows."""
    out: dict[str, set[int]] = {}
    for d in manifest.defects:
        if d.location.startswith("line "):
            out.setdefault(d.path, set()).add(int(d.location.removeprefix("line ")))
    return out


def day_files(root: Path, market: str) -> list[Path]:
    return sorted((root / "prices" / market / "days").glob("*.csv"))


def read_clean_lines(root: Path, manifest: MarketManifest, path: Path) -> list[str]:
    """A day file's lines without the header and without the documented defect rows."""
    skip = defect_lines(manifest).get(path.relative_to(root).as_posix(), set())
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line for number, line in enumerate(lines, start=1) if number > 1 and number not in skip]


@pytest.fixture(scope="session")
def panels(default_root: Path, manifests: dict[str, MarketManifest]) -> dict[str, Panel]:
    return {m: _panel(default_root, manifests[m]) for m in MARKETS}


def _panel(root: Path, manifest: MarketManifest) -> Panel:
    symbols = pl.read_csv(root / f"instruments/{manifest.market}.csv")["symbol"].to_list()
    rows = [
        line.split(",")
        for path in day_files(root, manifest.market)
        for line in read_clean_lines(root, manifest, path)
    ]
    frame = pl.DataFrame(
        rows, schema=["symbol", "date", "open", "high", "low", "close", "volume"], orient="row"
    )
    columns = {}
    for name in ("open", "high", "low", "close", "volume"):
        wide = frame.pivot(on="symbol", index="date", values=name).sort("date")
        columns[name] = wide.select(symbols).cast(pl.Float64).to_numpy()
    dates = sorted({date.fromisoformat(d) for d in frame["date"]})
    return Panel(symbols=symbols, dates=dates, **columns)


# --- feeds ------------------------------------------------------------------------------------


def rss_items(path: Path) -> list[dict[str, str | None]]:
    channel = ET.parse(path).getroot().find("channel")
    assert channel is not None
    return [
        {k: item.findtext(k) for k in ("title", "link", "guid", "pubDate", "description")}
        for item in channel.iter("item")
    ]


def atom_items(path: Path) -> list[dict[str, str | None]]:
    out = []
    for entry in ET.parse(path).getroot().iter(f"{ATOM}entry"):
        link = entry.find(f"{ATOM}link")
        out.append(
            {
                "title": entry.findtext(f"{ATOM}title"),
                "link": None if link is None else link.get("href"),
                "guid": entry.findtext(f"{ATOM}id"),
                "published": entry.findtext(f"{ATOM}published"),
                "description": entry.findtext(f"{ATOM}summary"),
            }
        )
    return out


def feed_items(path: Path) -> list[dict[str, str | None]]:
    """The items of a wire (RSS) or digest (Atom) document, current or archive, in file order."""
    feed = path.stem if path.parent.name not in ("wire", "digest") else path.parent.name
    return rss_items(path) if feed == "wire" else atom_items(path)


def published(item: dict[str, str | None]) -> datetime | None:
    try:
        if item.get("pubDate"):
            return parsedate_to_datetime(str(item["pubDate"]))
        return datetime.fromisoformat(str(item["published"]))
    except (TypeError, ValueError):
        return None
