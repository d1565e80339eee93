"""A check's offending rows render as one Markdown table cell per value, without touching the
process environment that other steps' threads read."""

from __future__ import annotations

import os
from typing import Any
from unittest.mock import patch

import polars as pl

from pipelines.platform.check_rows import CELL_CHARS, SHOWN_ROWS, markdown


class _ReadOnlyEnviron(dict[str, str]):
    def __setitem__(self, key: str, value: str) -> None:
        raise AssertionError(f"the environment was written: {key}")

    def __delitem__(self, key: str) -> None:
        raise AssertionError(f"the environment was written: {key}")

    def pop(self, key: str, *default: Any) -> Any:
        raise AssertionError(f"the environment was written: {key}")


def test_rendering_rows_writes_no_environment_variable() -> None:
    # Only around the call: pytest itself writes the environment between tests.
    with patch.object(os, "environ", _ReadOnlyEnviron(os.environ)):
        shown = markdown(pl.DataFrame({"symbol": ["BTC"], "close": [1.5]}))
    assert shown.startswith("| symbol | close |")


def test_each_value_is_one_cell_whatever_it_holds() -> None:
    long = "x" * (CELL_CHARS + 50)
    frame = pl.DataFrame(
        {"record": ["a|b", "line\nbreak", None], "text": [long, "ok", "c"], "n": [1, None, 3]}
    )
    lines = markdown(frame).splitlines()
    assert lines[:2] == ["| record | text | n |", "|---|---|---|"]
    assert lines[2] == f"| a\\|b | {'x' * (CELL_CHARS - 1)}… | 1 |"
    assert lines[3] == "| line break | ok | null |"
    assert lines[4] == "| null | c | 3 |"


def test_only_the_first_rows_are_shown_and_no_rows_say_so() -> None:
    frame = pl.DataFrame({"n": list(range(SHOWN_ROWS + 5))})
    assert len(markdown(frame).splitlines()) == 2 + SHOWN_ROWS
    assert markdown(frame.clear()) == "(none)"
