"""Rendering the embedded market into file-drop bytes: instrument list, day files, defect rows."""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import numba
import numpy as np

from pipelines.embedded_market.model import CLOSE, HIGH, LOW, OPEN, VOLUME
from pipelines.embedded_market.universe import Universe

DAY_HEADER = "symbol,date,open,high,low,close,volume"


@dataclass(frozen=True)
class Defect:
    """One deliberately malformed record: what it is and where a connector will meet it."""

    kind: str
    path: str
    """File path relative to the root."""
    location: str
    """`line N` (1-based, header is line 1) in a CSV; `item N` (1-based, file order) in a feed."""
    record: str
    """The raw line, or the item's guid / link / title, for identification."""


def write_atomic(path: Path, data: bytes | str) -> None:
    """Write `data` to a temporary sibling and rename it over `path` (readers never see half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_bytes(data.encode() if isinstance(data, str) else data)
    os.replace(temporary, path)


def write_if_changed(path: Path, data: bytes | str) -> bool:
    """Write `path` atomically unless it already holds exactly `data`; whether it was written.

    A file left as it was keeps its size and modification time, so a reader tracking files by
    (size, mtime) sees nothing new.
    """
    raw = data.encode() if isinstance(data, str) else data
    try:
        if path.stat().st_size == len(raw) and path.read_bytes() == raw:
            return False
    except FileNotFoundError:
        pass
    write_atomic(path, raw)
    return True


def instruments_csv(universe: Universe) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["symbol", "name", "logo"])
    for i, symbol in enumerate(universe.symbols):
        writer.writerow([symbol, universe.names[i], universe.logo(i)])
    return buffer.getvalue()


class DayFiles:
    """Renders one market's day files: every instrument's bar of one day, one line each.

    Lines are in symbol order; prices carry the instrument's fixed decimals (rounding to them is
    monotone, so `low <= open, close <= high` survives it) and volume is an integer.
    """

    def __init__(self, universe: Universe) -> None:
        self.order = np.array(sorted(range(len(universe)), key=lambda i: universe.symbols[i]))
        encoded = [universe.symbols[i].encode() for i in self.order]
        self.symbols = np.frombuffer(b"".join(encoded), dtype=np.uint8).copy()
        self.offsets = np.concatenate([[0], np.cumsum([len(s) for s in encoded])]).astype(np.int64)
        self.decimals = universe.decimals.astype(np.int64)
        width = max(len(s) for s in encoded) + 12 + 4 * (22 + int(self.decimals.max())) + 22
        header = (DAY_HEADER + "\n").encode()
        self._buffer = np.zeros(len(header) + width * len(universe), dtype=np.uint8)
        self._buffer[: len(header)] = np.frombuffer(header, dtype=np.uint8)
        self._start = len(header)

    def render(self, day: date, bars: np.ndarray) -> bytes:
        """The day file's bytes (header included) from the kernel's day buffer."""
        stamp = np.frombuffer(day.isoformat().encode(), dtype=np.uint8)
        end = _format_day(
            self.symbols,
            self.offsets,
            self.order,
            stamp,
            bars,
            self.decimals,
            self._buffer,
            self._start,
        )
        return self._buffer[:end].tobytes()


_POWERS = np.array([10**k for k in range(19)], dtype=np.int64)


@numba.njit(cache=True, nogil=True)
def _put_integer(out: np.ndarray, position: int, value: int) -> int:
    digits = 1
    rest = value // 10
    while rest > 0:
        digits += 1
        rest //= 10
    end = position + digits
    for k in range(end - 1, position - 1, -1):
        out[k] = 48 + value % 10
        value //= 10
    return end


@numba.njit(cache=True, nogil=True)
def _put_fixed(out: np.ndarray, position: int, price: float, decimals: int) -> int:
    """`price` rounded to `decimals` (at least one tick), written with exactly that many decimals."""
    scale = _POWERS[decimals]
    ticks = max(np.int64(np.rint(price * scale)), np.int64(1))
    position = _put_integer(out, position, ticks // scale)
    if decimals == 0:
        return position
    out[position] = 46  # "."
    rest = ticks % scale
    for k in range(position + decimals, position, -1):
        out[k] = 48 + rest % 10
        rest //= 10
    return position + decimals + 1


@numba.njit(nogil=True, cache=True)
def _format_day(
    symbols: np.ndarray,
    offsets: np.ndarray,
    order: np.ndarray,
    stamp: np.ndarray,
    bars: np.ndarray,
    decimals: np.ndarray,
    out: np.ndarray,
    position: int,
) -> int:
    """Write `symbol,date,open,high,low,close,volume` lines into `out` from `position`; the end."""
    for row in range(order.shape[0]):
        i = order[row]
        for k in range(offsets[row], offsets[row + 1]):
            out[position] = symbols[k]
            position += 1
        out[position] = 44
        position += 1
        for k in range(10):
            out[position + k] = stamp[k]
        position += 10
        for field in (OPEN, HIGH, LOW, CLOSE):
            out[position] = 44
            position = _put_fixed(out, position + 1, bars[field, i], decimals[i])
        out[position] = 44
        position = _put_integer(out, position + 1, int(bars[VOLUME, i]))
        out[position] = 10
        position += 1
    return position


PRICE_DEFECTS = (
    "price_high_below_low",
    "price_non_positive",
    "price_duplicate_date",
    "price_unparseable_date",
)
"""One per day file, on the 2nd to 5th trading days of the history, in this order."""


def price_defect(kind: str, content: bytes, symbol: str, path: str) -> tuple[bytes, Defect]:
    """`content` with one extra line for `symbol`'s bar of the day, right after the clean line.

    The clean lines are left exactly as they were, so dropping the defect gives the clean file.
    """
    lines = content.decode().split("\n")
    index = next(k for k, line in enumerate(lines) if line.startswith(f"{symbol},"))
    fields = lines[index].split(",")
    if kind == "price_duplicate_date":  # an exact repeat of the row
        extra = fields
    elif kind == "price_unparseable_date":  # day of month 32
        extra = [fields[0], f"{fields[1][:7]}-32", *fields[2:]]
    elif kind == "price_non_positive":  # a zero print: open and low
        zero = "0." + "0" * len(fields[2].split(".")[1]) if "." in fields[2] else "0"
        extra = [fields[0], fields[1], zero, fields[3], zero, *fields[5:]]
    else:  # high below low: the bar's extremes swapped (a zero range: the low pushed above)
        high, low = fields[4], fields[3]
        if float(high) >= float(low):
            decimals = len(high.split(".")[1]) if "." in high else 0
            low = f"{float(high) * 1.01:.{decimals}f}"
        extra = [fields[0], fields[1], fields[2], high, low, *fields[5:]]
    record = ",".join(extra)
    lines.insert(index + 1, record)
    return "\n".join(lines).encode(), Defect(kind, path, f"line {index + 2}", record)
