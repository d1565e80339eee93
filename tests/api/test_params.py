"""Market segments resolve case-insensitively to live markets; an integer is ASCII digits with an
optional '-', anything else a 422 naming the parameter (decisions.md, Parameters)."""

from __future__ import annotations

import pytest

from api.errors import InvalidParameter, MarketNotLive, NotFound
from api.params import SKIP, parse_integer, parse_number, resolve_market

LIVE = ("crypto", "forex")


@pytest.mark.parametrize(("segment", "market"), [("crypto", "crypto"), ("FOREX", "forex")])
def test_a_live_market_resolves_case_insensitively(segment: str, market: str) -> None:
    assert resolve_market(segment, LIVE) == market


def test_a_real_market_not_launched_is_not_available_yet_naming_the_live_ones() -> None:
    with pytest.raises(MarketNotLive, match="is not available yet; live markets: crypto, forex"):
        resolve_market("Stocks", LIVE)


def test_an_unknown_market_is_not_found() -> None:
    with pytest.raises(NotFound) as raised:
        resolve_market("bonds", LIVE)
    assert not isinstance(raised.value, MarketNotLive)


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("7", 7),
        ("-3", -3),
        ("0", 0),
        ("007", 7),
        (str(2**63 - 1), 2**63 - 1),
        (str(-(2**63)), -(2**63)),
    ],
)
def test_an_integer_is_ascii_digits_with_an_optional_minus(raw: str, value: int) -> None:
    assert parse_integer("limit", raw) == value


NOT_INTEGERS = ["abc", "1.5", "5e2", "500.0", "+5", "5_000", " 5", "5 ", "\t5", "", "-", "--5",
                "𝟓", "٥", "５", "0x10", "1,000", "Infinity"]  # fmt: skip


@pytest.mark.parametrize("raw", NOT_INTEGERS)
def test_anything_else_is_not_an_integer_and_answers_422_naming_it(raw: str) -> None:
    with pytest.raises(InvalidParameter) as raised:
        parse_integer("limit", raw)
    assert raised.value.status_code == 422
    assert raised.value.message.startswith("Invalid parameter 'limit': expected an integer")


@pytest.mark.parametrize("raw", [str(2**63), str(-(2**63) - 1), "9" * 5000])
def test_an_integer_outside_64_bits_is_a_422_naming_it(raw: str) -> None:
    with pytest.raises(InvalidParameter, match="'limit': outside the signed 64-bit"):
        parse_integer("limit", raw)


def test_a_long_value_is_shown_cut_short_in_the_message() -> None:
    with pytest.raises(InvalidParameter) as raised:
        parse_integer("limit", "x" * 10_000)
    assert len(raised.value.message) < 150


@pytest.mark.parametrize(("raw", "value"), [("3.5", 3.5), ("-1", -1.0), (".5", 0.5), ("2.", 2.0)])
def test_a_number_is_a_plain_decimal(raw: str, value: float) -> None:
    assert parse_number("min_score", raw) == value


@pytest.mark.parametrize("raw", ["nan", "inf", "1e400", "3.5e0", "", "+3", "3,5", "𝟑"])
def test_a_number_with_an_exponent_or_no_digits_is_a_422(raw: str) -> None:
    with pytest.raises(InvalidParameter, match="'min_score'"):
        parse_number("min_score", raw)


@pytest.mark.parametrize("value", [2**63 - 1, -(2**63)])
def test_the_64_bit_extremes_are_served_clamped(value: int) -> None:
    assert SKIP.served(value) == max(0, value)


def test_a_value_outside_64_bits_is_a_422_however_it_would_clamp() -> None:
    with pytest.raises(InvalidParameter, match="'skip'"):
        SKIP.served(2**75)
    assert SKIP.clamp(2**75) == 2**75  # the cost rule's clamp stays total: metering never raises


def test_get_indicators_clamps_to_exactly_the_periods_the_pipeline_computes() -> None:
    """One fact in one place: the served bounds of `period` are the catalog's periods, which the
    indicators domain computes for every symbol."""
    from api.params import INDICATOR_PERIOD
    from pipelines.indicators.recursive import ALL_PERIODS

    served = list(range(INDICATOR_PERIOD.low, (INDICATOR_PERIOD.high or 0) + 1))
    assert served == ALL_PERIODS.tolist()
