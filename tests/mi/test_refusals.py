"""Rule: every `mi` command answers bad input and bad configuration with one line on stderr and
exit status 2, and creates nothing; a run that fails exits 1 (tests/mi/test_materialize.py).

Real `mi` processes in an empty directory, as a new user meets them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.api.metering.conftest import MI
from tests.served import clean_env

CASES = {
    "day-before-the-first-partition": (
        ["materialize", "--day", "2023-06-01"],
        {},
        "Error: Invalid value for --day: 2023-06-01 is before 2024-01-01",
    ),
    "day-in-the-future": (["materialize", "--day", "2999-01-01"], {}, "is after today"),
    "since-before-the-first-partition": (
        ["materialize", "--since", "2020-01-01", "--day", "2024-02-01"],
        {},
        "Invalid value for --since: 2020-01-01 is before 2024-01-01",
    ),
    "sources-file-missing": (
        ["materialize"],
        {"MI_SOURCES": "/nonexistent.toml"},
        "Error: MI_SOURCES: '/nonexistent.toml' is not a file",
    ),
    "end-date-not-a-date": (
        ["materialize"],
        {"MI_END_DATE": "yesterday"},
        "Error: MI_END_DATE: 'yesterday' is not a day (YYYY-MM-DD)",
    ),
    "end-date-before-the-first-partition": (
        ["materialize"],
        {"MI_END_DATE": "2020-01-01"},
        "Invalid value for MI_END_DATE: 2020-01-01 is before 2024-01-01",
    ),
    "instruments-not-a-number": (
        ["materialize"],
        {"MI_INSTRUMENTS": "many"},
        "Error: MI_INSTRUMENTS: 'many' is not a positive whole number",
    ),
    "now-not-an-instant": (
        ["sql", "select 1"],
        {"MI_NOW": "soon"},
        "Error: MI_NOW: 'soon' is not an ISO 8601 instant",
    ),
    "unknown-executor": (["materialize"], {"MI_EXECUTOR": "spark"}, "Error: MI_EXECUTOR:"),
    "the-retired-threads-executor": (
        ["materialize"],
        {"MI_EXECUTOR": "threads"},
        "Error: MI_EXECUTOR: 'threads' is not one of",
    ),
    "unknown-market": (["materialize", "--market", "bonds"], {}, "unknown markets ['bonds']"),
    "unknown-command": (["materialise"], {}, "Error: No such command 'materialise'."),
    "sql-without-a-warehouse": (
        ["sql", "select count(*) from daily_prices"],
        {},
        "Error: no warehouse at ",
    ),
    "chart-without-a-warehouse": (["chart", "BTC"], {}, "run `mi materialize` first"),
}


@pytest.mark.parametrize(("args", "env", "says"), CASES.values(), ids=CASES.keys())
def test_bad_input_is_one_line_exit_2_and_nothing_created(
    tmp_path: Path, args: list[str], env: dict[str, str], says: str
) -> None:
    done = subprocess.run(
        [MI, *args],
        env=clean_env(tmp_path / "data", **env),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert says in done.stderr
    assert done.stdout == ""
    assert list(tmp_path.iterdir()) == []
