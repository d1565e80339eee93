"""decisions.md, Inputs from sources, through a real `mi materialize` over a file drop: a row with a
non-finite number, an instrument whose logo is not a web address or whose name is a novel, an
item no character can be read from, and a file larger than its bounds are each rejected with their
reason, and everything else of their file or feed is kept."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipelines.catalog import MARKETS

pytestmark = pytest.mark.slow

MI = str(Path(sys.executable).with_name("mi"))
END = date(2026, 3, 2)  # a Monday
DAYS = [END - timedelta(days=n) for n in range(40, -1, -1)]
WEEKDAYS = [d for d in DAYS if d.weekday() < 5]
SYMBOLS = {"crypto": "BTC", "forex": "EURUSD", "commodities": "GOLD", "stocks": "AAPL"}
LOGO = "https://assets.example.com/logo.png"
LONG_NAME = "N" * 100_000
RSS_ITEM = "<item><guid>{guid}</guid><title>{title}</title><link>https://news.example.com/{guid}</link><description>{guid} story about Bitcoin (BTC)</description><pubDate>Mon, 02 Mar 2026 09:00:00 GMT</pubDate></item>"


def write_drop(root: Path) -> None:
    """Every market's instruments and 40 days of bars, a feed for crypto, and the bad inputs."""
    for market, symbol in SYMBOLS.items():
        instruments = [
            "symbol,name,logo",
            f"{symbol},{symbol} Inc,{LOGO}",
            f"XSS{market[:2].upper()},Scripted,javascript:alert(1)",
            f"LONG{market[:2].upper()},{LONG_NAME},{LOGO}",
        ]
        (root / "instruments").mkdir(parents=True, exist_ok=True)
        (root / "instruments" / f"{market}.csv").write_text("\n".join(instruments) + "\n")
        days = DAYS if market == "crypto" else WEEKDAYS
        folder = root / "prices" / market / "days"
        folder.mkdir(parents=True)
        for n, day in enumerate(days):
            price = 100 + n
            volume = "1e400" if (market, day) == ("crypto", END) else "1000"
            lines = [
                "symbol,date,open,high,low,close,volume",
                f"{symbol},{day},{price},{price + 2},{price - 1},{price + 1},{volume}",
            ]
            (folder / f"{day}.csv").write_text("\n".join(lines) + "\n")
    big = pl.DataFrame({"symbol": ["BTC"] * 5000, "date": ["2020-01-01"] * 5000})
    big = big.with_columns(
        open=pl.lit(1.0), high=pl.lit(1.0), low=pl.lit(1.0), close=pl.lit(1.0), volume=pl.lit(1.0)
    )
    big.write_parquet(root / "prices" / "crypto" / "history.parquet")
    items = [
        RSS_ITEM.format(guid="one", title="Bitcoin rallies"),
        RSS_ITEM.format(guid="two", title="Bitcoin &#xD800; falls"),
        RSS_ITEM.format(guid="three", title="Bitcoin steadies"),
    ]
    feed = f'<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>wire</title>{"".join(items)}</channel></rss>'
    (root / "news" / "crypto").mkdir(parents=True)
    (root / "news" / "crypto" / "wire.xml").write_text(feed)


SOURCES = (
    "\n".join(
        f'[markets.{m}]\nkind = "file_drop"\nroot = "drop"\n'
        + ("max_rows = 1000\n" if m == "crypto" else "")
        for m in MARKETS
    )
    + '[news.crypto]\nfile_drop = "drop"\n'
)


@pytest.fixture(scope="module")
def materialized(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    root = tmp_path_factory.mktemp("file-drop")
    write_drop(root / "drop")
    (root / "sources.toml").write_text(SOURCES)
    env = {name: value for name, value in os.environ.items() if not name.startswith("MI_")}
    env |= {
        "MI_DATA_DIR": str(root / "data"),
        "MI_SOURCES": str(root / "sources.toml"),
        "MI_END_DATE": END.isoformat(),
        "MI_NOW": f"{END.isoformat()}T12:00:00+00:00",
    }
    done = subprocess.run([MI, "materialize"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with duckdb.connect(str(root / "data" / "warehouse.duckdb"), read_only=True) as warehouse:
        yield warehouse


def rows(warehouse: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[object, ...]]:
    return warehouse.sql(sql).fetchall()


def test_a_non_finite_volume_is_rejected_with_its_reason(
    materialized: duckdb.DuckDBPyConnection,
) -> None:
    """A volume of 1e400 reads as inf: rejected (today stored, then served as volume null)."""
    rejected = rows(materialized, "SELECT reason FROM price_rejects WHERE record LIKE '%1e400%'")
    assert rejected == [("volume is not a finite number (1e400)",)]
    stored = rows(
        materialized,
        f"SELECT count(*) FROM daily_prices WHERE symbol = 'BTC' AND date = DATE '{END}'",
    )
    assert stored == [(0,)]
    finite = rows(materialized, "SELECT count(*) FROM daily_prices WHERE NOT isfinite(volume)")
    assert finite == [(0,)]


def test_an_instrument_needs_a_web_logo_and_a_name_of_200_characters_at_most(
    materialized: duckdb.DuckDBPyConnection,
) -> None:
    reasons = dict(
        rows(
            materialized,
            "SELECT market || ':' || split_part(record, ',', 1), reason FROM instrument_rejects",
        )
    )
    for market in MARKETS:
        tag = market[:2].upper()
        assert (
            reasons[f"{market}:XSS{tag}"]
            == "logo javascript:alert(1) is not an absolute http or https URL"
        )
        assert reasons[f"{market}:LONG{tag}"] == "name has 100000 characters, at most 200"
    kept = rows(materialized, "SELECT market, symbol FROM instruments ORDER BY market")
    assert kept == sorted(SYMBOLS.items())


def test_an_item_with_a_lone_surrogate_is_rejected_alone(
    materialized: duckdb.DuckDBPyConnection,
) -> None:
    """Today one `&#xD800;` dropped every item of its feed."""
    rejected = rows(
        materialized, "SELECT location, reason FROM news_rejects WHERE reason LIKE '%surrogate%'"
    )
    assert [location for location, _ in rejected] == ["item 2"]
    titles = rows(materialized, "SELECT title FROM raw_news ORDER BY title")
    assert titles == [("Bitcoin rallies",), ("Bitcoin steadies",)]


def test_a_file_over_its_row_bound_is_rejected_whole_unread(
    materialized: duckdb.DuckDBPyConnection,
) -> None:
    """The Parquet file's row count is read from its metadata before anything is decoded (today a
    1.4 MiB file decoded to 50 million rows)."""
    rejected = rows(
        materialized,
        "SELECT location, reason FROM price_rejects WHERE source LIKE '%history.parquet'",
    )
    assert rejected == [
        ("file", "file has 5,000 rows, more than the bound of 1,000 (max_rows); file not read")
    ]
    assert rows(
        materialized, "SELECT count(*) FROM daily_prices WHERE date < DATE '2021-01-01'"
    ) == [(0,)]
