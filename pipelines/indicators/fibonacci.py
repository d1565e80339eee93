"""The Fibonacci retracement levels: their names and ratios (TA-Lib has no equivalent)."""

from __future__ import annotations

FIBONACCI_RATIOS: dict[str, float] = {
    "0": 0.0,
    "23.6": 0.236,
    "38.2": 0.382,
    "50": 0.5,
    "61.8": 0.618,
    "78.6": 0.786,
    "100": 1.0,
}
"""Level name (percent retraced) -> ratio; the names are the keys of the `levels` struct."""
