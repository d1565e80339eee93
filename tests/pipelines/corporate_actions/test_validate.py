"""Corporate action rows: each rule rejects its rows with the reason, the rest are stored typed."""

from __future__ import annotations

from datetime import date

import polars as pl
import pytest

from pipelines.corporate_actions.validate import validate_actions
from pipelines.prices.sources.base import ACTION_FIELDS, RAW_ACTIONS_SCHEMA, RawActions

INSTRUMENTS = ["AAPL", "GONE", "TSLA"]


def raw(*rows: tuple[str, ...]) -> RawActions:
    records = [
        dict(zip(ACTION_FIELDS, row, strict=True))
        | {"source": "actions/stocks.csv", "location": f"line {n}", "record": ",".join(row)}
        for n, row in enumerate(rows, start=2)
    ]
    return RawActions(pl.DataFrame(records, schema=RAW_ACTIONS_SCHEMA))


def test_valid_actions_of_every_kind_are_stored_typed_and_sorted() -> None:
    clean, rejects = validate_actions(
        raw(
            ("tsla", "2022-08-25", "Split", "3", "", ""),
            ("AAPL", "2020-08-31", "split", "4", "", ""),
            ("AAPL", "2024-02-09", "dividend", "", "0.24", "quarterly"),
            ("GONE", "2023-05-01", "delisting", "", "", "acquired"),
            ("GONE", "2001-01-02", "listing", "", "", ""),
            ("AAPL", "2019-01-02", "split", "0.1", "", "1-for-10 reverse"),
        ),
        "stocks",
        INSTRUMENTS,
        "file_drop",
    )
    assert rejects.is_empty()
    assert clean.select("symbol", "date", "kind", "ratio", "amount", "reason").rows() == [
        ("AAPL", date(2019, 1, 2), "split", 0.1, None, "1-for-10 reverse"),
        ("AAPL", date(2020, 8, 31), "split", 4.0, None, None),
        ("AAPL", date(2024, 2, 9), "dividend", None, 0.24, "quarterly"),
        ("GONE", date(2001, 1, 2), "listing", None, None, None),
        ("GONE", date(2023, 5, 1), "delisting", None, None, "acquired"),
        ("TSLA", date(2022, 8, 25), "split", 3.0, None, None),
    ]
    assert set(clean["market"]) == {"stocks"}


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        (("", "2020-08-31", "split", "4", "", ""), "symbol is empty"),
        (("NOPE", "2020-08-31", "split", "4", "", ""), "unknown symbol NOPE"),
        (("AAPL", "31/08/2020", "split", "4", "", ""), "unparseable date 31/08/2020"),
        (("AAPL", "2020-08-31", "merger", "", "", ""), "kind merger is not one of"),
        (("AAPL", "2020-08-31", "split", "", "", ""), "a split needs its ratio"),
        (("AAPL", "2020-08-31", "split", "4:1", "", ""), "ratio 4:1 is not a plain decimal"),
        (("AAPL", "2020-08-31", "split", "-4", "", ""), "ratio -4 is not a plain decimal"),
        (("AAPL", "2020-08-31", "split", "0", "", ""), "ratio must be above 0"),
        (("AAPL", "2020-08-31", "split", "1", "", ""), "a split's ratio of 1 changes nothing"),
        (("AAPL", "2020-08-31", "split", "4", "0.2", ""), "a split has no amount"),
        (("AAPL", "2024-02-09", "dividend", "", "", ""), "a dividend needs its amount"),
        (("AAPL", "2024-02-09", "dividend", "", "nan", ""), "amount nan is not a plain decimal"),
        (("AAPL", "2024-02-09", "dividend", "2", "0.2", ""), "a dividend has no ratio"),
        (("GONE", "2023-05-01", "delisting", "", "1", ""), "a delisting has no amount"),
        (("AAPL", "2024-02-09", "dividend", "", "0.2", "x" * 201), "reason has 201 characters"),
    ],
)
def test_a_row_breaking_a_rule_is_rejected_with_its_reason(
    row: tuple[str, ...], reason: str
) -> None:
    clean, rejects = validate_actions(raw(row), "stocks", INSTRUMENTS, "file_drop")
    assert clean.is_empty()
    assert reason in rejects["reason"][0]
    assert rejects["record"][0] == ",".join(row)


def test_a_repeated_action_keeps_the_first_row_and_names_it() -> None:
    clean, rejects = validate_actions(
        raw(
            ("AAPL", "2020-08-31", "split", "4", "", ""),
            ("aapl", "2020-08-31", "SPLIT", "4", "", "again"),
        ),
        "stocks",
        INSTRUMENTS,
        "file_drop",
    )
    assert clean["reason"].to_list() == [None]
    assert rejects["reason"].to_list() == ["duplicate (symbol, date, kind): kept the row at line 2"]
