"""Market segments resolve case-insensitively to live markets; integer segments fail as 422."""

from __future__ import annotations

import pytest

from api.errors import InvalidParameter, MarketNotLive, NotFound
from api.params import SKIP, int_segment, resolve_market

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


@pytest.mark.parametrize(("raw", "value"), [("7", 7), ("-3", -3), ("0", 0)])
def test_an_integer_segment_parses(raw: str, value: int) -> None:
    assert int_segment("limit", raw) == value


@pytest.mark.parametrize(
    ("raw", "minimum"),
    [("abc", None), ("1.5", None), ("0", 1), (str(2**63), None), (str(-(2**63) - 1), None)],
)
def test_a_bad_integer_segment_is_a_422_naming_it(raw: str, minimum: int | None) -> None:
    with pytest.raises(InvalidParameter) as raised:
        int_segment("limit", raw, minimum=minimum)
    assert raised.value.status_code == 422
    assert "'limit'" in raised.value.message


@pytest.mark.parametrize("value", [2**63 - 1, -(2**63)])
def test_the_64_bit_extremes_are_served_clamped(value: int) -> None:
    assert SKIP.served(value) == max(0, value)


def test_a_value_outside_64_bits_is_a_422_however_it_would_clamp() -> None:
    with pytest.raises(InvalidParameter, match="'skip'"):
        SKIP.served(2**75)
    assert SKIP.clamp(2**75) == 2**75  # the cost rule's clamp stays total: metering never raises
