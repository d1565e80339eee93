"""Rendering the embedded market into file-drop text: instrument list, price CSVs, defect rows."""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import numpy as np
import polars as pl

from pipelines.embedded_market.model import Bars
from pipelines.embedded_market.universe import Universe

PRICE_HEADER = "date,open,high,low,close,volume"


@dataclass(frozen=True)
class Defect:
    """One deliberately malformed record: what it is and where a connector will meet it."""

    kind: str
    path: str
    """File path relative to the root."""
    location: str
    """`line N` (1-based, header is line 1) in a CSV; `item N` (0-based, file order) in a feed."""
    record: str
    """The raw line, or the item's guid / link / title, for identification."""


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to a temporary sibling and rename it over `path` (readers never see half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with temporary.open("w", encoding="utf-8", newline="") as handle:
        handle.write(text)
    os.replace(temporary, path)


def instruments_csv(universe: Universe) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["symbol", "name", "logo"])
    for i, symbol in enumerate(universe.symbols):
        writer.writerow([symbol, universe.names[i], universe.logo(i)])
    return buffer.getvalue()


def rounded(bars: Bars, universe: Universe) -> dict[str, np.ndarray]:
    """OHLC rounded to each instrument's decimals (monotone, so OHLC order survives rounding)."""
    scale = 10.0 ** universe.decimals.astype(float)
    tick = 1.0 / scale
    return {
        name: np.maximum(np.round(getattr(bars, name) * scale) / scale, tick)
        for name in ("open", "high", "low", "close")
    }


def price_lines(
    dates: list[str], ohlc: dict[str, np.ndarray], volume: np.ndarray, i: int, decimals: int
) -> list[str]:
    """The CSV lines (header first) of instrument column `i`."""
    frame = pl.DataFrame(
        {
            "date": dates,
            **{name: ohlc[name][:, i] for name in ("open", "high", "low", "close")},
            "volume": volume[:, i].astype(np.int64),
        }
    )
    return frame.write_csv(float_precision=decimals).splitlines()


def inject_price_defects(
    files: dict[str, list[str]], symbols: list[str], market: str, before: tuple[date, date]
) -> list[Defect]:
    """Add four extra rows to price files in place; the clean rows are left exactly as they were.

    `before` holds the two trading days preceding the window, for the rows prepended before the
    first bar (so rejecting them leaves no gap in the history).
    """
    rows: dict[str, list[tuple[int, int, str, str]]] = {}  # symbol -> (index, order, kind, line)
    for order, kind in enumerate(_PRICE_DEFECTS):
        symbol = symbols[(order + 1) % len(symbols)]
        index, line = _defect_row(kind, files[symbol], before)
        rows.setdefault(symbol, []).append((index, order, kind, line))
    defects: list[Defect] = []
    for symbol, inserts in rows.items():
        lines = files[symbol]
        for shift, (index, _, kind, line) in enumerate(sorted(inserts)):
            lines.insert(index + shift, line)
            where = f"line {index + shift + 1}"
            defects.append(Defect(kind, f"prices/{market}/{symbol}.csv", where, line))
    return sorted(defects, key=lambda d: _PRICE_DEFECTS.index(d.kind))


_PRICE_DEFECTS = (
    "price_high_below_low",
    "price_non_positive",
    "price_duplicate_date",
    "price_unparseable_date",
)


def _defect_row(kind: str, lines: list[str], before: tuple[date, date]) -> tuple[int, str]:
    """Where to insert the defect row of `kind` (0-based index into the clean lines) and its text."""
    first = lines[1].split(",")
    if kind == "price_duplicate_date":  # a repeated row, right after the original
        middle = max(1, len(lines) // 2)
        return middle + 1, lines[middle]
    if kind == "price_unparseable_date":  # a day-of-month 32 after a third of the history
        at = max(1, len(lines) // 3)
        return at + 1, ",".join([f"{lines[at][:7]}-32", *lines[at].split(",")[1:]])
    if kind == "price_non_positive":  # a zero print on the trading day before the first bar
        zero = "0." + "0" * len(first[1].split(".")[1])
        return 1, ",".join([before[1].isoformat(), zero, first[2], zero, first[4], first[5]])
    # high below low, two trading days before the first bar: the first bar's extremes swapped
    high, low = first[3], first[2]
    if float(high) >= float(low):  # a zero-range bar: push the low one percent above the high
        decimals = len(high.split(".")[1])
        low = f"{float(high) * 1.01:.{decimals}f}"
    return 1, ",".join([before[0].isoformat(), first[1], high, low, first[4], first[5]])
