"""Appending days from the stored state: the same bytes as one call, one day file per day."""

from __future__ import annotations

import random
import shutil
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from pipelines.embedded_market import (
    HISTORY_START,
    write_embedded_market,
    write_embedded_news,
    write_embedded_prices,
)
from pipelines.embedded_market.market import read_prices_manifest
from pipelines.embedded_market.state import load
from tests.pipelines.embedded_market.conftest import files_of, stamps_of

PARAMS = {"seed": 11, "instruments": 5, "start": date(2025, 12, 3)}
"""A Wednesday start: weekday markets and crypto start on the same day."""
END = date(2026, 2, 16)


@pytest.mark.parametrize(("market", "seed"), [("crypto", 1), ("stocks", 2), ("forex", 3)])
def test_appends_in_any_order_write_the_same_bytes_as_one_call(
    tmp_path: Path, market: str, seed: int
) -> None:
    """Random end days (weekends included, some earlier than the stored day) end where one call does."""
    rng = random.Random(seed)
    span = (END - PARAMS["start"]).days
    ends = [PARAMS["start"] + timedelta(days=rng.randrange(span)) for _ in range(6)]
    ends += [END - timedelta(days=1), END - timedelta(days=20), END]  # an earlier day, then END
    assert any(d.weekday() >= 5 for d in ends)
    for end in ends:
        write_embedded_prices(tmp_path / "steps", market, through=end, **PARAMS)
    write_embedded_prices(tmp_path / "once", market, through=END, **PARAMS)
    assert files_of(tmp_path / "steps") == files_of(tmp_path / "once")


def test_an_append_simulates_one_day_and_writes_one_day_file(tmp_path: Path) -> None:
    write_embedded_prices(tmp_path, "crypto", through=END, **PARAMS)
    stamps = stamps_of(tmp_path)
    manifest = write_embedded_prices(tmp_path, "crypto", through=END + timedelta(days=1), **PARAMS)
    new = f"prices/crypto/days/{END + timedelta(days=1)}.csv"
    assert manifest.written == (new,)
    assert {k: v for k, v in stamps_of(tmp_path).items() if k != new} == stamps
    stored = load(tmp_path, "crypto")
    assert stored is not None
    assert stored.state.day == END + timedelta(days=1)


def test_a_weekend_end_day_adds_nothing_for_a_weekday_market(tmp_path: Path) -> None:
    friday = date(2026, 2, 13)
    write_embedded_prices(tmp_path, "stocks", through=friday, **PARAMS)
    stamps = stamps_of(tmp_path)
    sunday = write_embedded_prices(tmp_path, "stocks", through=friday + timedelta(days=2), **PARAMS)
    assert sunday.written == ()
    assert sunday.last_date == friday.isoformat()
    assert stamps_of(tmp_path) == stamps


def test_the_first_bar_never_moves(tmp_path: Path) -> None:
    first = tmp_path / f"prices/stocks/days/{PARAMS['start']}.csv"
    write_embedded_prices(tmp_path, "stocks", through=PARAMS["start"], **PARAMS)
    content, stamp = first.read_bytes(), first.stat().st_mtime_ns
    for end in (date(2025, 12, 20), date(2026, 1, 9), END):
        manifest = write_embedded_prices(tmp_path, "stocks", through=end, **PARAMS)
        assert manifest.first_date == PARAMS["start"].isoformat()
        assert (first.read_bytes(), first.stat().st_mtime_ns) == (content, stamp)


def test_an_earlier_end_day_writes_nothing_and_keeps_the_newer_files(tmp_path: Path) -> None:
    write_embedded_prices(tmp_path, "forex", through=END, **PARAMS)
    stamps = stamps_of(tmp_path)
    earlier = write_embedded_prices(tmp_path, "forex", through=date(2026, 1, 7), **PARAMS)
    assert earlier.written == ()
    assert earlier.last_date == "2026-01-07"
    assert earlier.files[-1] == "prices/forex/days/2026-01-07.csv"
    assert stamps_of(tmp_path) == stamps
    stored = load(tmp_path, "forex")
    assert stored is not None
    assert stored.state.day == END  # the state stays on the newest day written
    later = write_embedded_prices(tmp_path, "forex", through=END + timedelta(days=1), **PARAMS)
    assert later.written == (f"prices/forex/days/{END + timedelta(days=1)}.csv",)


def test_a_lost_state_starts_over_and_leaves_identical_files_untouched(tmp_path: Path) -> None:
    write_embedded_prices(tmp_path, "crypto", through=END, **PARAMS)
    stamps = stamps_of(tmp_path)
    shutil.rmtree(tmp_path / ".state")
    again = write_embedded_prices(tmp_path, "crypto", through=END, **PARAMS)
    assert again.written == ()
    assert stamps_of(tmp_path) == stamps
    assert load(tmp_path, "crypto") is not None


def test_a_deleted_day_file_is_written_again(tmp_path: Path) -> None:
    write_embedded_prices(tmp_path, "crypto", through=END, **PARAMS)
    files = files_of(tmp_path)
    missing = "prices/crypto/days/2026-01-05.csv"
    (tmp_path / missing).unlink()
    again = write_embedded_prices(tmp_path, "crypto", through=END - timedelta(days=3), **PARAMS)
    assert again.written == (missing,)
    assert files_of(tmp_path) == files


def test_bars_do_not_depend_on_where_the_history_starts(tmp_path: Path) -> None:
    """The simulation runs from ANCHOR whatever the start: a later start keeps the same bars."""
    clean = {"seed": 11, "instruments": 5, "defects": False}
    write_embedded_prices(tmp_path / "early", "crypto", through=END, start=HISTORY_START, **clean)
    late = write_embedded_prices(tmp_path / "late", "crypto", through=END, start=END, **clean)
    (path,) = late.files[1:]
    assert (tmp_path / "late" / path).read_bytes() == (tmp_path / "early" / path).read_bytes()


def test_the_manifest_lists_the_defects_of_the_days_written(tmp_path: Path) -> None:
    early = write_embedded_prices(tmp_path, "crypto", through=date(2025, 12, 5), **PARAMS)
    assert [d.kind for d in early.defects] == ["price_high_below_low", "price_non_positive"]
    later = write_embedded_prices(tmp_path, "crypto", through=END, **PARAMS)
    assert len(later.defects) == 4
    assert later.defects[:2] == early.defects
    assert read_prices_manifest(tmp_path, "crypto") == later


@pytest.mark.parametrize(("market", "seed"), [("crypto", 4), ("commodities", 5)])
def test_prices_and_news_in_any_order_write_the_same_bytes_as_one_call(
    tmp_path: Path, market: str, seed: int
) -> None:
    """Prices and feeds advanced by random steps (news every few hours, prices lagging or not,
    instants earlier than the last) end where one call does, archives included."""
    rng = random.Random(seed)
    final = datetime(2026, 2, 16, 9, 30, tzinfo=UTC)
    span = int((final - datetime(2025, 12, 4, tzinfo=UTC)).total_seconds())
    instants = sorted(final - timedelta(seconds=rng.randrange(span)) for _ in range(8))
    instants.insert(5, instants[2])  # an earlier instant after later ones
    for now in [*instants, final]:
        if rng.random() < 0.5:
            write_embedded_prices(tmp_path / "steps", market, through=now.date(), **PARAMS)
        write_embedded_news(tmp_path / "steps", market, now=now, **PARAMS)
    write_embedded_market(tmp_path / "once", market, as_of=final, **PARAMS)
    steps, once = files_of(tmp_path / "steps"), files_of(tmp_path / "once")
    news = {p for p in once if p.startswith("news/")}
    assert {p: steps[p] for p in news} == {p: once[p] for p in news}
    assert "news/" + market + "/wire/2026-01.xml" in news
