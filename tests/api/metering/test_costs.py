"""Token costs: every threshold of the spec's table and decisions.md, from config/metering.toml."""

from __future__ import annotations

from pathlib import Path

import pytest

from api.metering.config import (
    MeteringConfigError,
    RowsCost,
    cost_text,
    load_config,
    points_cost,
    request_cost,
)
from api.params import SCALED_BY

CONFIG = load_config()


def served_cost(operation: str, value: int | None) -> int:
    """The cost of a request whose scaled parameter was sent as `value` (None: absent): the cost
    rule reads the value the route serves, after its default and clamp."""
    return request_cost(CONFIG, operation, SCALED_BY[operation].value_of(value))


FIXED = {
    "ping": 1,
    "list-symbols": 1,
    "search-instruments": 2,
    "get-detail": 5,
    "get-corporate-actions": 2,
    "scorecard": 10,
    "get-market-summary": 3,
    "get-article": 3,
    "get-instrument-analysis": 10,
    "get-recent-buys": 3,
    "get-recent-sells": 3,
    "get-recommendations": 5,
    "get-current-action": 5,
    "get-indicators": 8,
    "get-current-trend": 5,
    "get-trend-segments": 8,
    "legacy-trends": 5,
}

BRIEFS = [(1, 3), (10, 3), (11, 4), (25, 4), (26, 5), (50, 5), (51, 6), (100, 6), (101, 7),
          (250, 7), (251, 8), (500, 8), (10_000, 8), (0, 3), (-5, 3)]  # fmt: skip
SENTIMENT = [(1, 3), (30, 3), (31, 5), (90, 5), (91, 7), (180, 7), (181, 9), (365, 9), (366, 11),
             (730, 11), (731, 12), (3650, 12), (99_999, 12)]  # fmt: skip
TREND_HISTORY = [(1, 5), (30, 5), (31, 7), (90, 7), (91, 9), (365, 9), (366, 11), (730, 11),
                 (731, 13), (1500, 13), (1501, 15), (5000, 15), (0, 5)]  # fmt: skip
YEARS = [(1, 8), (2, 10), (3, 12), (4, 14), (5, 16), (6, 18), (9, 18), (10, 20), (20, 20),
         (50, 20), (0, 8)]  # fmt: skip
PRICE_LIMIT = [(1, 2), (30, 2), (31, 3), (90, 3), (91, 4), (365, 4), (366, 5), (10_000, 5)]


@pytest.mark.parametrize(("operation", "tokens"), FIXED.items())
def test_fixed_cost_matches_the_table(operation: str, tokens: int) -> None:
    assert request_cost(CONFIG, operation) == tokens


@pytest.mark.parametrize("operation", ["get-recent-briefs", "search-briefs"])
@pytest.mark.parametrize(("limit", "tokens"), BRIEFS)
def test_briefs_cost_scales_with_clamped_limit(operation: str, limit: int, tokens: int) -> None:
    assert served_cost(operation, limit) == tokens


@pytest.mark.parametrize(("operation", "tokens"), [("get-recent-briefs", 3), ("search-briefs", 4)])
def test_briefs_cost_uses_the_route_default_limit(operation: str, tokens: int) -> None:
    assert served_cost(operation, None) == tokens


@pytest.mark.parametrize(("limit", "tokens"), SENTIMENT)
def test_sentiment_history_cost_scales_with_limit(limit: int, tokens: int) -> None:
    assert served_cost("get-sentiment-history", limit) == tokens


@pytest.mark.parametrize(("days", "tokens"), SENTIMENT)
def test_legacy_sentiment_costs_as_sentiment_history_with_days_path_segment(
    days: int, tokens: int
) -> None:
    assert served_cost("legacy-sentiment", days) == tokens


def test_sentiment_history_default_limit_costs_3() -> None:
    assert served_cost("get-sentiment-history", None) == 3


@pytest.mark.parametrize(("limit", "tokens"), TREND_HISTORY)
def test_trend_history_cost_scales_with_path_limit(limit: int, tokens: int) -> None:
    assert served_cost("get-trend-history", limit) == tokens


@pytest.mark.parametrize("operation", ["get-backtest-history", "get-backtest-summary"])
@pytest.mark.parametrize(("years", "tokens"), YEARS)
def test_backtest_cost_scales_with_years(operation: str, years: int, tokens: int) -> None:
    assert served_cost(operation, years) == tokens


@pytest.mark.parametrize("operation", ["get-backtest-history", "get-backtest-summary"])
def test_backtest_default_years_is_2_and_costs_10(operation: str) -> None:
    assert served_cost(operation, None) == 10


def test_price_history_full_series_costs_5() -> None:
    assert served_cost("get-price-history", None) == 5


@pytest.mark.parametrize(("limit", "tokens"), PRICE_LIMIT)
def test_price_history_up_front_cost_is_bounded_by_limit(limit: int, tokens: int) -> None:
    assert served_cost("get-price-history", limit) == tokens


@pytest.mark.parametrize(("points", "tokens"), [(0, 2), *PRICE_LIMIT])
def test_price_history_final_cost_follows_points_returned(points: int, tokens: int) -> None:
    assert points_cost(CONFIG, "get-price-history", points) == tokens


def test_points_cost_is_none_for_routes_not_priced_by_points() -> None:
    assert points_cost(CONFIG, "get-recent-briefs", 10) is None
    assert points_cost(CONFIG, "ping", 10) is None


def test_unknown_operation_is_a_config_error() -> None:
    with pytest.raises(MeteringConfigError):
        request_cost(CONFIG, "get-everything")


def test_plans_budgets_and_daily_caps() -> None:
    expected = {"sandbox": (3_000, 1_000), "quant": (250_000, 25_000), "pro": (1_000_000, 100_000)}
    for name, (monthly, daily) in expected.items():
        plan = CONFIG.plan(name)
        assert (plan.monthly_budget, plan.daily_cap, plan.limited) == (monthly, daily, True)


def test_internal_plan_has_no_budget_or_rate_limit() -> None:
    internal = CONFIG.plan("internal")
    assert internal.unlimited_budget
    assert not internal.limited


def test_rate_and_connection_limits() -> None:
    limits = CONFIG.limits
    assert (limits.requests_per_window, limits.window_seconds) == (300, 60)
    assert (limits.concurrent, limits.request_timeout_seconds) == (10, 120)


def test_every_plan_includes_every_launched_market_by_default() -> None:
    for plan in CONFIG.plans.values():
        assert set(plan.markets) == {"crypto", "forex", "commodities", "stocks"}


def test_config_rejects_unknown_fields(tmp_path: Path) -> None:
    path = tmp_path / "metering.toml"
    path.write_text('upgrade_url = "u"\nbogus = 1\n[plans]\n[costs]\n')
    with pytest.raises(MeteringConfigError):
        load_config(path)


def test_a_scaled_cost_of_an_operation_without_a_bounded_parameter_is_a_config_error(
    tmp_path: Path,
) -> None:
    """Which parameter a scaled cost follows is the API's (api/params.py SCALED_BY), not the file's."""
    path = tmp_path / "metering.toml"
    path.write_text(
        'upgrade_url = "u"\n[plans]\n[costs]\nping = 1\n'
        "[costs.list-symbols]\nsteps = [[10, 1]]\notherwise = 2\n"
    )
    with pytest.raises(MeteringConfigError, match="list-symbols"):
        load_config(path)


def test_a_scaled_cost_refuses_the_keys_the_api_now_defines(tmp_path: Path) -> None:
    path = tmp_path / "metering.toml"
    path.write_text(
        'upgrade_url = "u"\n[plans]\n[costs.get-recent-briefs]\n'
        'param = "limit"\nsteps = [[10, 3]]\notherwise = 8\n'
    )
    with pytest.raises(MeteringConfigError, match="param"):
        load_config(path)


ROWS = [(0, 10), (1, 10), (9_999, 10), (10_000, 10), (10_001, 11), (25_500, 26), (1_000_000, 1000)]


@pytest.mark.parametrize(("rows", "tokens"), ROWS)
def test_bulk_export_costs_a_token_per_thousand_rows_rounded_up_at_least_ten(
    rows: int, tokens: int
) -> None:
    rule = CONFIG.cost_rule("bulk-export")
    assert isinstance(rule, RowsCost)
    assert rule.for_rows(rows) == tokens


def test_a_row_priced_operation_is_charged_its_minimum_up_front() -> None:
    assert request_cost(CONFIG, "bulk-export") == 10
    assert points_cost(CONFIG, "bulk-export", 50_000) is None


def test_the_cost_in_words_comes_from_the_configuration() -> None:
    assert cost_text(CONFIG, "bulk-export") == (
        "1 token per 1,000 rows returned, rounded up, at least 10 tokens"
    )
    assert cost_text(CONFIG, "ping") == "1 token"
    assert cost_text(CONFIG, "get-indicators") == "8 tokens"
    assert cost_text(CONFIG, "get-recent-briefs").startswith("3 to 8 tokens by `limit`")


def test_bulk_export_is_for_quant_pro_and_internal_not_sandbox() -> None:
    """decisions.md, Bulk export: the sandbox plan answers 402."""
    excluding = {
        name for name, plan in CONFIG.plans.items() if "bulk-export" in plan.excluded_operations
    }
    assert excluding == {"sandbox"}


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("ping = 1\n[row_costs.ping]\nrows_per_token = 10\nminimum = 1\n", "ping"),
        ("ping = 1\n[plans.p]\nexcluded_operations = ['bulk']\n", "bulk"),
        ("ping = 1\n[row_costs.bulk]\nrows_per_token = 0\nminimum = 1\n", "rows_per_token"),
    ],
)
def test_row_costs_and_excluded_operations_are_checked_at_load(
    tmp_path: Path, text: str, named: str
) -> None:
    path = tmp_path / "metering.toml"
    path.write_text(f'upgrade_url = "u"\n[plans]\n[costs]\n{text}')
    with pytest.raises(MeteringConfigError, match=named):
        load_config(path)
