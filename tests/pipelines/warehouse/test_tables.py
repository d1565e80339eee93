"""Series tables and logs rewrite only the segments a run changes; snapshot tables replace the symbols it recomputed."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from itertools import pairwise
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.catalog import DAILY_PRICES, INSTRUMENTS, RAW_NEWS, PartitionFile
from pipelines.warehouse.shards import Shard
from pipelines.warehouse.staging import RunTransaction
from pipelines.warehouse.store import Warehouse
from pipelines.warehouse.tables import (
    EVERYTHING,
    _merged_by_symbol,
    _segment_codes,
    _segment_name,
    append_segments,
    read_symbols,
    rewrite_snapshot,
    scan,
    segment_end,
    segment_key,
    sorted_by,
    upsert_series,
)

SHARD = Shard("crypto", 0, 1)


def bars(symbol: str, first: date, days: int, close: float = 1.0) -> pl.DataFrame:
    dates = [first + timedelta(days=i) for i in range(days)]
    return pl.DataFrame(
        {
            "market": "crypto",
            "symbol": symbol,
            "date": dates,
            "timestamp": [(d - date(1970, 1, 1)).days * 86_400_000 for d in dates],
            "open": close,
            "high": close,
            "low": close,
            "close": close,
            "volume": 1.0,
            "source": "test",
        }
    )


@pytest.fixture
def tx(tmp_path: Path) -> RunTransaction:
    return RunTransaction(Warehouse(tmp_path / "warehouse"), "run", "step")


def contents(tx: RunTransaction, files: dict) -> pl.DataFrame:  # type: ignore[type-arg]
    return scan(tx.store.storage, files.values(), DAILY_PRICES).collect().sort("symbol", "date")


def test_closed_years_are_one_segment_and_the_newest_year_is_split_by_month(
    tx: RunTransaction,
) -> None:
    files = upsert_series(tx, DAILY_PRICES, SHARD, {}, bars("BTC", date(2025, 12, 30), 40), {})
    assert sorted(files) == ["crypto/s0of1/2025", "crypto/s0of1/2026-01", "crypto/s0of1/2026-02"]


def test_a_new_day_rewrites_only_its_month(tx: RunTransaction) -> None:
    first = upsert_series(tx, DAILY_PRICES, SHARD, {}, bars("BTC", date(2025, 6, 1), 300), {})
    second = upsert_series(tx, DAILY_PRICES, SHARD, first, bars("BTC", date(2026, 3, 28), 1), {})
    changed = [key for key in second if second[key] != first.get(key)]
    assert changed == ["crypto/s0of1/2026-03"]
    assert contents(tx, second).height == 301


def test_a_cutoff_replaces_a_symbols_rows_from_that_day_and_leaves_others(
    tx: RunTransaction,
) -> None:
    stored = upsert_series(
        tx,
        DAILY_PRICES,
        SHARD,
        {},
        pl.concat([bars("BTC", date(2026, 1, 1), 60), bars("ETH", date(2026, 1, 1), 60)]),
        {},
    )
    revised = bars("BTC", date(2026, 2, 1), 29, close=2.0)
    files = upsert_series(tx, DAILY_PRICES, SHARD, stored, revised, {"BTC": date(2026, 2, 1)})
    frame = contents(tx, files)
    btc = frame.filter(pl.col("symbol") == "BTC")
    assert btc.height == 60
    assert btc.filter(pl.col("date") >= date(2026, 2, 1))["close"].unique().to_list() == [2.0]
    assert frame.filter(pl.col("symbol") == "ETH")["close"].unique().to_list() == [1.0]
    assert files["crypto/s0of1/2026-01"] == stored["crypto/s0of1/2026-01"]


def test_a_symbol_cut_from_the_beginning_is_removed_everywhere(tx: RunTransaction) -> None:
    stored = upsert_series(
        tx,
        DAILY_PRICES,
        SHARD,
        {},
        pl.concat([bars("BTC", date(2024, 1, 1), 800), bars("ETH", date(2026, 1, 1), 5)]),
        {},
    )
    files = upsert_series(
        tx, DAILY_PRICES, SHARD, stored, DAILY_PRICES.empty(), {"BTC": EVERYTHING}
    )
    assert contents(tx, files)["symbol"].unique().to_list() == ["ETH"]
    assert sorted(files) == ["crypto/s0of1/2026-01"]


def test_the_months_of_a_year_merge_into_its_file_once_the_next_year_begins(
    tx: RunTransaction,
) -> None:
    stored = upsert_series(tx, DAILY_PRICES, SHARD, {}, bars("BTC", date(2025, 10, 1), 92), {})
    assert sorted(stored) == [
        "crypto/s0of1/2025-10",
        "crypto/s0of1/2025-11",
        "crypto/s0of1/2025-12",
    ]
    files = upsert_series(tx, DAILY_PRICES, SHARD, stored, bars("BTC", date(2026, 1, 1), 1), {})
    assert sorted(files) == ["crypto/s0of1/2025", "crypto/s0of1/2026-01"]
    assert contents(tx, files).equals(bars("BTC", date(2025, 10, 1), 93).pipe(DAILY_PRICES.conform))


def test_any_sequence_of_upserts_equals_writing_the_final_rows_at_once(tx: RunTransaction) -> None:
    final = pl.concat([bars("BTC", date(2025, 11, 1), 120), bars("ETH", date(2025, 12, 15), 80)])
    files: dict = {}  # type: ignore[type-arg]
    for day in range(0, 120, 17):
        cut = date(2025, 11, 1) + timedelta(days=day)
        chunk = final.filter(pl.col("date") >= cut, pl.col("date") < cut + timedelta(days=17))
        files = upsert_series(tx, DAILY_PRICES, SHARD, files, chunk, {})
    assert contents(tx, files).equals(DAILY_PRICES.conform(final).sort("symbol", "date"))


@settings(max_examples=50, deadline=None)
@given(days=st.lists(st.dates(date(1990, 1, 1), date(2100, 12, 31)), min_size=1, max_size=40))
def test_a_days_segment_number_names_the_segment_its_key_does(days: list[date]) -> None:
    newest = max(days).year
    codes = pl.select(_segment_codes(pl.lit(pl.Series(days)), newest)).to_series().to_list()
    assert [_segment_name(code) for code in codes] == [segment_key(d, newest) for d in days]


def test_segment_end_is_the_last_day_of_the_year_or_month() -> None:
    assert segment_end("2025") == date(2025, 12, 31)
    assert segment_end("2024-02") == date(2024, 2, 29)
    assert segment_end("2025-12") == date(2025, 12, 31)


def test_a_snapshot_rewrite_replaces_the_recomputed_symbols_only(tx: RunTransaction) -> None:
    def rows(*symbols: str, name: str = "old") -> pl.DataFrame:
        return pl.DataFrame(
            {"market": "crypto", "symbol": list(symbols), "name": name, "logo": "x", "source": "t"}
        )

    stored = rewrite_snapshot(tx, INSTRUMENTS, SHARD, {}, rows("BTC", "ETH", "SOL"), [])
    files = rewrite_snapshot(
        tx, INSTRUMENTS, SHARD, stored, rows("ETH", name="new"), ["ETH", "SOL"]
    )
    frame = scan(tx.store.storage, files.values(), INSTRUMENTS).collect()
    assert frame.select("symbol", "name").rows() == [("BTC", "old"), ("ETH", "new")]


def test_symbols_read_across_segments_come_in_symbol_and_date_order(tx: RunTransaction) -> None:
    rows = pl.concat([bars(s, date(2024, 11, 1), 500, i + 1.0) for i, s in enumerate("CAB")])
    files = upsert_series(tx, DAILY_PRICES, SHARD, {}, rows, {})
    read = read_symbols(tx.store.storage, DAILY_PRICES, dict(reversed(files.items())), ["A", "C"])
    expected = rows.filter(pl.col("symbol") != "B").sort("symbol", "date")
    assert read.equals(DAILY_PRICES.conform(expected))


def test_a_read_of_some_columns_holds_them_after_the_order_columns_same_rows(
    tx: RunTransaction,
) -> None:
    rows = pl.concat([bars(s, date(2024, 11, 1), 500, i + 1.0) for i, s in enumerate("CAB")])
    files = upsert_series(tx, DAILY_PRICES, SHARD, {}, rows, {})
    since = {"A": date(2025, 6, 1)}
    whole = read_symbols(tx.store.storage, DAILY_PRICES, files, ["A", "B"], since)
    read = read_symbols(
        tx.store.storage, DAILY_PRICES, files, ["A", "B"], since, columns=["close", "date"]
    )
    assert read.columns == ["symbol", "date", "close"]
    assert read.equals(whole.select("symbol", "date", "close"))


def test_reading_symbols_since_a_day_skips_the_segments_that_end_before_it(
    tx: RunTransaction,
) -> None:
    rows = pl.concat([bars(s, date(2024, 11, 1), 500) for s in ("A", "B")])
    files = upsert_series(tx, DAILY_PRICES, SHARD, {}, rows, {})
    # The closed year 2024 is never opened: its entry points nowhere.
    files["crypto/s0of1/2024"] = PartitionFile(
        "daily_prices/missing.parquet", 0, "2026-01-01T00:00:00Z"
    )
    since = {"A": date(2025, 6, 1), "B": date(2026, 1, 20)}
    read = read_symbols(tx.store.storage, DAILY_PRICES, files, ["A", "B"], since)
    expected = rows.filter(
        pl.when(pl.col("symbol") == "A")
        .then(pl.col("date") >= date(2025, 6, 1))
        .otherwise(pl.col("date") >= date(2026, 1, 20))
    )
    assert read.equals(DAILY_PRICES.conform(expected).sort("symbol", "date"))


@pytest.mark.parametrize("others", [date(2025, 6, 1), date(2025, 9, 9), None])
def test_a_read_since_one_day_for_every_symbol_equals_each_symbol_filtered_alone(
    tx: RunTransaction, others: date | None
) -> None:
    """One day for all (a market's calendar) takes a plain date filter, several days a join, a
    symbol without a day all of its rows: each gives what filtering every symbol alone gives."""
    rows = pl.concat([bars(s, date(2024, 11, 1), 500, i + 1.0) for i, s in enumerate("CAB")])
    files = upsert_series(tx, DAILY_PRICES, SHARD, {}, rows, {})
    since = {"A": date(2025, 6, 1), "C": date(2025, 6, 1)}
    if others is not None:
        since["B"] = others
    read = read_symbols(tx.store.storage, DAILY_PRICES, files, ["A", "B", "C"], since)
    expected = pl.concat(
        [
            rows.filter((pl.col("symbol") == s) & (pl.col("date") >= since.get(s, date.min)))
            for s in "ABC"
        ]
    )
    assert read.equals(DAILY_PRICES.conform(expected))


def test_sorted_by_keeps_rows_already_in_order_and_sorts_the_others() -> None:
    ordered = pl.DataFrame({"symbol": ["A", "A", "B", "B"], "period": [2, 3, 2, 9]})
    assert sorted_by(ordered, ["symbol", "period"]) is ordered
    shuffled = ordered.sample(fraction=1.0, shuffle=True, seed=3)
    assert sorted_by(shuffled, ["symbol", "period"]).equals(ordered)
    # Lexicographic: a later first column wins over an earlier second one.
    crossed = pl.DataFrame({"symbol": ["A", "B", "A"], "period": [9, 2, 3]})
    assert sorted_by(crossed, ["symbol", "period"]).rows() == [("A", 3), ("A", 9), ("B", 2)]
    assert sorted_by(ordered.head(1), ["symbol"]).height == 1


def articles(first: date, days: int, prefix: str = "a") -> pl.DataFrame:
    """One raw_news article a day from `first`, ids `<prefix><n>`."""
    instants = [datetime.combine(first + timedelta(days=i), time(9), UTC) for i in range(days)]
    return RAW_NEWS.conform(
        pl.DataFrame(
            {
                "market": "crypto",
                "article_id": [f"{prefix}{i}" for i in range(days)],
                "feed": "wire",
                "guid": None,
                "link": None,
                "title": "t",
                "body": "b",
                "published_at": instants,
                "timestamp": [int(t.timestamp() * 1000) for t in instants],
            },
            schema=RAW_NEWS.schema,
        )
    )


PUBLISHED = pl.col("published_at").dt.date()


def logged(tx: RunTransaction, files: dict) -> pl.DataFrame:  # type: ignore[type-arg]
    return scan(tx.store.storage, [files[k] for k in sorted(files)], RAW_NEWS).collect()


def test_a_log_is_segmented_like_a_series_closed_years_whole_the_newest_by_month(
    tx: RunTransaction,
) -> None:
    files = append_segments(tx, RAW_NEWS, "crypto", {}, articles(date(2025, 12, 30), 40), PUBLISHED)
    assert sorted(files) == ["crypto/2025", "crypto/2026-01", "crypto/2026-02"]
    assert logged(tx, files)["article_id"].to_list() == [f"a{i}" for i in range(40)]


def test_appended_rows_rewrite_only_the_segments_they_fall_in_after_the_stored_rows(
    tx: RunTransaction,
) -> None:
    first = append_segments(tx, RAW_NEWS, "crypto", {}, articles(date(2025, 6, 1), 300), PUBLISHED)
    late = articles(date(2026, 3, 20), 2, prefix="n")
    second = append_segments(tx, RAW_NEWS, "crypto", first, late, PUBLISHED)
    changed = [key for key in second if second[key] != first.get(key)]
    assert changed == ["crypto/2026-03"]
    march = scan(tx.store.storage, [second["crypto/2026-03"]], RAW_NEWS).collect()
    stored = scan(tx.store.storage, [first["crypto/2026-03"]], RAW_NEWS).collect()
    assert march["article_id"].to_list() == [*stored["article_id"], "n0", "n1"]


def test_nothing_appended_keeps_every_file(tx: RunTransaction) -> None:
    first = append_segments(tx, RAW_NEWS, "crypto", {}, articles(date(2026, 1, 1), 60), PUBLISHED)
    assert append_segments(tx, RAW_NEWS, "crypto", first, RAW_NEWS.empty(), PUBLISHED) == first


def test_a_new_year_merges_the_months_of_the_closed_one_into_its_file(tx: RunTransaction) -> None:
    first = append_segments(tx, RAW_NEWS, "crypto", {}, articles(date(2025, 11, 20), 30), PUBLISHED)
    assert sorted(first) == ["crypto/2025-11", "crypto/2025-12"]
    new_year = articles(date(2026, 1, 2), 1, prefix="n")
    second = append_segments(tx, RAW_NEWS, "crypto", first, new_year, PUBLISHED)
    assert sorted(second) == ["crypto/2025", "crypto/2026-01"]
    assert logged(tx, second)["article_id"].to_list() == [*(f"a{i}" for i in range(30)), "n0"]


def test_a_single_unsegmented_file_is_split_into_segments_once(tx: RunTransaction) -> None:
    """The layout before segments: one file per market, keyed by the market alone."""
    legacy = {"crypto": tx.write_file(RAW_NEWS, "crypto", articles(date(2025, 12, 1), 45))}
    new = articles(date(2026, 1, 20), 1, prefix="n")
    files = append_segments(tx, RAW_NEWS, "crypto", legacy, new, PUBLISHED)
    assert sorted(files) == ["crypto/2025", "crypto/2026-01"]
    assert logged(tx, files)["article_id"].to_list() == [*(f"a{i}" for i in range(45)), "n0"]


def test_everything_replaces_the_stored_segments(tx: RunTransaction) -> None:
    first = append_segments(tx, RAW_NEWS, "crypto", {}, articles(date(2025, 6, 1), 300), PUBLISHED)
    again = articles(date(2026, 2, 1), 3, prefix="n")
    files = append_segments(tx, RAW_NEWS, "crypto", first, again, PUBLISHED, everything=True)
    assert sorted(files) == ["crypto/2026-02"]
    assert logged(tx, files)["article_id"].to_list() == ["n0", "n1", "n2"]


def test_a_log_row_without_its_day_is_refused_and_nothing_is_written(tx: RunTransaction) -> None:
    first = append_segments(tx, RAW_NEWS, "crypto", {}, articles(date(2026, 1, 1), 3), PUBLISHED)
    undated = articles(date(2026, 1, 5), 1, prefix="n").with_columns(
        published_at=pl.lit(None, RAW_NEWS.schema["published_at"])
    )
    with pytest.raises(ValueError, match="published_at"):
        append_segments(tx, RAW_NEWS, "crypto", first, undated, PUBLISHED)
    written = sorted(p.name for p in (tx.store.root / "raw_news").rglob("*.parquet"))
    assert len(written) == len(first)


@settings(max_examples=60, deadline=None)
@given(
    spans=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), min_size=0, max_size=6),
    cuts=st.lists(st.integers(1, 80), max_size=5),
)
def test_segment_files_read_one_after_another_merge_into_symbol_and_date_order(
    spans: list[tuple[int, int]], cuts: list[int]
) -> None:
    """Files each sorted by (symbol, date), split at dates and read in date order, come out as a
    full sort by symbol then date would order them (listings, delistings and gaps included)."""
    first = date(2024, 1, 1)
    rows = pl.concat(
        [
            DAILY_PRICES.conform(bars(f"S{i}", first + timedelta(days=start), length))
            for i, (start, length) in enumerate(spans)
        ]
        or [DAILY_PRICES.empty()]
    ).with_columns(close=pl.int_range(pl.len()).cast(pl.Float64))
    edges = [first + timedelta(days=c) for c in sorted(set(cuts))]
    bounds = [date.min, *edges, date.max]
    files = [
        rows.filter((pl.col("date") >= lo) & (pl.col("date") < hi)).sort("symbol", "date")
        for lo, hi in pairwise(bounds)
    ]
    read = _merged_by_symbol(pl.concat(files))
    assert read.equals(rows.sort("symbol", "date"))
