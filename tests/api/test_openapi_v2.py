"""The OpenAPI document lists exactly the spec's paths, and each 200 schema has the spec's fields."""

from __future__ import annotations

import re
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from api import schemas

SPEC_PATHS = {
    "/api/v1/ping",
    "/api/v1/status",
    "/api/v2/crypto/newsroom/get-instrument-analysis/{symbol}",
    "/api/v2/crypto/newsroom/get-market-summary",
    "/api/v2/crypto/trades/get-backtest-history/{symbol}/{strategy}",
    "/api/v2/crypto/trades/get-backtest-summary/{symbol}/{strategy}",
    "/api/v2/crypto/trades/get-current-action/{symbol}/{strategy}",
    "/api/v2/crypto/trades/get-recent-buys",
    "/api/v2/crypto/trades/get-recent-sells",
    "/api/v2/crypto/trades/get-recommendations",
    "/api/v2/crypto/trades/get-trend-history/{symbol}/{limit}",
    "/api/v2/{market}/instruments/get-detail/{symbol}",
    "/api/v2/{market}/instruments/list-symbols",
    "/api/v2/{market}/instruments/scorecard/{symbol}",
    "/api/v2/{market}/instruments/search-instruments/{query}",
    "/api/v2/{market}/newsroom/get-article/{article_id}",
    "/api/v2/{market}/newsroom/get-recent-briefs/{symbol}",
    "/api/v2/{market}/newsroom/search-briefs/{symbol}",
    "/api/v2/{market}/sentiment/get-sentiment-history/{symbol}",
    "/api/v2/{market}/technical-analysis/get-indicators/{symbol}",
    "/api/v2/{market}/technical-analysis/get-price-history/{symbol}",
    "/api/v2/{market}/trades/get-current-trend/{symbol}",
    "/api/v2/{market}/trades/get-trend-segments/{symbol}",
    "/api/v2/market/trends/{coin}",
    "/api/v2/sentiment/sentiment/{coin}/{days}",
}
"""Every path of the spec (legacy <COIN>/<DAYS> written as parameters)."""
DECISION_PATHS = {
    "/api/v2/{market}/bulk/{dataset}",
    "/api/v1/versions",
    "/api/v2/{market}/data-status",
    "/api/v2/{market}/reference/get-corporate-actions/{symbol}",
}
"""Paths decisions.md adds beyond the spec (bulk export: files, not JSON; the version log; each
day's condition; an instrument's corporate actions)."""

SPEC_FIELDS = {
    "CorporateActionList": {"corporate_actions"},
    "CorporateAction": {"date", "kind", "ratio", "amount", "reason"},
    "Instrument": {"name", "symbol", "logo"},
    "InstrumentSearch": {"instruments"},
    "SymbolList": {"symbols"},
    "InstrumentAnalysis": {"timestamp", "date", "analysis"},
    "MarketSummary": {"timestamp", "date", "summary"},
    "BriefList": {"briefs"},
    "Brief": {
        "timestamp",
        "date",
        "title",
        "symbols",
        "body",
        "fud_fomo_bias",
        "fud_fomo_score",
        "sentiment",
        "tone",
        "article_id",
        "clout",
        "impacted_coins",
        "speculation_score",
    },
    "SentimentHistory": {"sentiment"},
    "PriceHistory": {"price_history"},
    "PricePoint": {"timestamp", "date", "price", "volume"},
    "Indicators": {"period", "symbol", "indicators"},
    "CurrentAction": {"message", "action", "symbol"},
    "Scorecard": {
        "name",
        "strategy",
        "action",
        "symbol",
        "icon",
        "total_trades",
        "score",
        "buy_and_hold_percentage",
        "in_trade",
        "percentage_profit",
        "trend",
        "trend_duration",
    },
    "TradeList": {"trades"},
    "Trade": {
        "strategy",
        "exit_reason",
        "action",
        "symbol",
        "start_date",
        "profit_percent",
        "days_in_trade",
        "entry_price",
        "exit_price",
        "highest_price",
        "last_price",
        "lowest_price",
        "profit",
        "sell_date",
        "start_price",
    },
    "BacktestSummary": {
        "start_date",
        "end_date",
        "annualized_return",
        "average_loss",
        "average_loss_percent",
        "average_profit",
        "average_profit_percent",
        "average_trade_duration",
        "backtest_duration",
        "buy_and_hold_profit_percent",
        "final_value",
        "initial_investment",
        "peak_loss",
        "peak_profit",
        "profit_percent",
        "profitable_trade_percent",
        "total_profit",
        "profitable_trades",
        "total_trades",
        "unprofitable_trades",
    },
    "RecommendationList": {"recommendations"},
    "Recommendation": {"strategy", "symbol", "score"},
    "TrendHistory": {"trends"},
    "TrendPoint": {"timestamp", "date", "price", "strength", "trend"},
    "CurrentTrend": {"current_trend", "last_updated"},
    "TrendSegments": {"trend_segments", "last_updated"},
    "TrendExtremeDay": {"close", "timestamp", "date", "trend"},
    "LegacyTrendsSuccess": {"Success"},
    "LegacySentimentSuccess": {"Success"},
}


def normalized(path: str) -> str:
    """Path parameters compared by position: Litestar reserves `query` as a parameter name, so
    search-instruments' segment is `{term}` in the document (same URL for clients)."""
    return re.sub(r"\{[^}]+\}", "{}", path)


@pytest.fixture
def document(client: TestClient[Litestar]) -> dict[str, Any]:
    return client.get("/schema/openapi.json").json()  # type: ignore[no-any-return]


def test_the_document_paths_are_the_spec_paths(document: dict[str, Any]) -> None:
    served = {normalized(p) for p in document["paths"]}
    assert served == {normalized(p) for p in SPEC_PATHS | DECISION_PATHS}


def test_each_response_schema_has_the_spec_field_names(document: dict[str, Any]) -> None:
    components = document["components"]["schemas"]
    for name, fields in SPEC_FIELDS.items():
        assert set(components[name]["properties"]) == fields, name
        assert set(components[name].get("required", [])) == fields, name


def test_every_v2_route_answers_200_with_a_spec_schema(document: dict[str, Any]) -> None:
    for path, item in document["paths"].items():
        if path.startswith("/api/v2") and path not in DECISION_PATHS:
            ref = item["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
            assert ref.split("/")[-1] in SPEC_FIELDS, path


def test_wire_structs_exist_for_every_resource() -> None:
    for name in SPEC_FIELDS:
        assert hasattr(schemas, name)


def test_every_operation_has_the_spec_name_as_id_a_summary_and_a_description(
    document: dict[str, Any],
) -> None:
    """Rule: code generators get methods named as the spec names the routes (getPriceHistory)."""
    operations = [item["get"] for item in document["paths"].values()]
    ids = [operation["operationId"] for operation in operations]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"[a-z]+(?:[A-Z][a-z]+)*", i) for i in ids), ids
    assert {"getPriceHistory", "listSymbols", "getCurrentAction", "bulkExport", "status"} <= set(
        ids
    )
    for operation in operations:
        assert operation["summary"], operation["operationId"]
        assert len(operation["description"]) > len(operation["summary"]), operation["operationId"]
    tags = {tag["name"]: tag["description"] for tag in document["tags"]}
    assert {t for o in operations for t in o["tags"]} <= set(tags)
    assert all(tags.values())


def test_every_field_of_every_resource_says_what_it_means(document: dict[str, Any]) -> None:
    """Rule: 0 of the fields was described; every field is now, from the Struct's own docs."""
    undescribed = [
        f"{name}.{field}"
        for name, schema in document["components"]["schemas"].items()
        for field, meaning in schema.get("properties", {}).items()
        if not meaning.get("description")
    ]
    assert undescribed == []
    described = document["components"]["schemas"]["PricePoint"]["properties"]
    assert (
        described["timestamp"]["description"]
        == "Midnight UTC of the bar's day, epoch milliseconds."
    )


def test_from_and_to_of_price_history_say_epoch_milliseconds(document: dict[str, Any]) -> None:
    path = "/api/v2/{market}/technical-analysis/get-price-history/{symbol}"
    parameters = {p["name"]: p for p in document["paths"][path]["get"]["parameters"]}
    for name in ("from", "to"):
        assert "epoch milliseconds" in parameters[name]["description"], parameters[name]


@pytest.mark.parametrize("route", ["get-backtest-history", "get-backtest-summary"])
def test_the_backtests_document_fill_and_answer_x_fill(
    document: dict[str, Any], route: str
) -> None:
    path = f"/api/v2/crypto/trades/{route}/{{symbol}}/{{strategy}}"
    operation = document["paths"][path]["get"]
    parameters = {p["name"]: p for p in operation["parameters"]}
    assert parameters["fill"]["schema"]["enum"] == ["close", "next_open"]
    assert parameters["fill"]["schema"]["default"] == "close"
    for status in ("200", "304"):
        assert operation["responses"][status]["headers"]["x-fill"]["required"], status
    assert "x-fill" in operation["responses"]["404"]["headers"]
