"""`mi chart`: a PNG or SVG of a symbol from the warehouse of MI_DATA_DIR, errors as exit codes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.api.metering.conftest import MI
from tests.served import clean_env

pytestmark = pytest.mark.slow


def mi_chart(data_dir: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = clean_env(data_dir)
    return subprocess.run(
        [MI, "chart", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_the_chart_is_written_where_out_says_in_its_format(
    embedded_market: Path, tmp_path: Path
) -> None:
    done = mi_chart(
        embedded_market,
        tmp_path,
        "nvda",
        "--market",
        "stocks",
        "--period",
        "200",
        "--out",
        "nvda.svg",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "nvda.svg"
    assert "<svg" in (tmp_path / "nvda.svg").read_text()[:500]


def test_without_out_the_file_is_named_for_symbol_and_market(
    embedded_market: Path, tmp_path: Path
) -> None:
    done = mi_chart(embedded_market, tmp_path, "btc")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "BTC-crypto.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (("NOPE",), 2, "NOPE is not an instrument of the crypto market"),
        (("BTC", "--out", "btc.pdf"), 2, "--out must end in .png or .svg"),
        (("BTC", "--market", "bonds"), 2, "'bonds' is not one of"),
        (("BTC", "--period", "1"), 2, "--period"),
    ],
)
def test_errors_exit_with_their_message(
    embedded_market: Path, tmp_path: Path, args: tuple[str, ...], code: int, says: str
) -> None:
    done = mi_chart(embedded_market, tmp_path, *args)
    assert done.returncode == code
    assert says in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_before_the_first_materialization_it_says_to_materialize(tmp_path: Path) -> None:
    done = mi_chart(tmp_path / "data", tmp_path, "BTC")
    assert done.returncode == 2
    assert "mi materialize" in done.stderr
