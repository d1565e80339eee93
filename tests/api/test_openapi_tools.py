"""The OpenAPI document tools can use (issue 19): examples, enums, bounds, security, costs, errors;
and a schemathesis run against the real server finds nothing and warns about nothing."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar import Litestar
from litestar.handlers import HTTPRouteHandler
from litestar.testing import TestClient

from api import params
from api.app import create_app
from api.metering.config import cost_text, load_config
from api.openapi import ENUMS, EXAMPLES_OF, cost_extension, documented_handlers
from api.operation_docs import OPERATIONS
from api.settings import ApiSettings
from tests.served import ServedApi

METERING = load_config()
ST = str(Path(sys.executable).with_name("st"))


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Litestar:
    """The app as a server with the default metering configuration builds it (no data needed)."""
    return create_app(ApiSettings(data_dir=tmp_path_factory.mktemp("openapi")), metering=METERING)


@pytest.fixture(scope="module")
def document(app: Litestar) -> dict[str, Any]:
    with TestClient(app) as client:
        return client.get("/schema/openapi.json").json()  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def handlers(app: Litestar) -> list[tuple[str, HTTPRouteHandler]]:
    """Each documented path with its handler: what the document is finished from."""
    return list(documented_handlers(app))


def operations(document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for path, item in document["paths"].items():
        yield path, item["get"]


def operation_of(document: dict[str, Any], path: str) -> dict[str, Any]:
    return document["paths"][path]["get"]  # type: ignore[no-any-return]


def test_every_path_parameter_has_an_example_and_closed_sets_are_enums(
    document: dict[str, Any],
) -> None:
    for path, operation in operations(document):
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "path":
                assert "example" in parameter, (path, parameter["name"])
            if parameter["name"] in ENUMS:
                assert parameter["schema"]["enum"] == list(ENUMS[parameter["name"]]), path
                assert (
                    parameter.get("example", ENUMS[parameter["name"]][0])
                    in ENUMS[parameter["name"]]
                )


BOUNDED = [
    ("/api/v2/{market}/instruments/list-symbols", params.SYMBOLS_LIMIT),
    ("/api/v2/{market}/instruments/list-symbols", params.SKIP),
    ("/api/v2/{market}/newsroom/get-recent-briefs/{symbol}", params.BRIEFS_LIMIT),
    ("/api/v2/{market}/newsroom/search-briefs/{symbol}", params.SEARCH_LIMIT),
    ("/api/v2/{market}/sentiment/get-sentiment-history/{symbol}", params.SENTIMENT_LIMIT),
    ("/api/v2/{market}/technical-analysis/get-indicators/{symbol}", params.INDICATOR_PERIOD),
    ("/api/v2/{market}/technical-analysis/get-price-history/{symbol}", params.PRICE_POINTS_LIMIT),
    ("/api/v2/{market}/trades/get-trend-segments/{symbol}", params.TREND_SEGMENTS_LIMIT),
    ("/api/v2/crypto/trades/get-trend-history/{symbol}/{limit}", params.TREND_HISTORY_LIMIT),
    ("/api/v2/crypto/trades/get-backtest-history/{symbol}/{strategy}", params.BACKTEST_YEARS),
    ("/api/v2/crypto/trades/get-backtest-history/{symbol}/{strategy}", params.BACKTEST_TRADES_LIMIT),
    ("/api/v2/crypto/trades/get-backtest-summary/{symbol}/{strategy}", params.BACKTEST_YEARS),
    ("/api/v2/crypto/trades/get-recent-buys", params.RECENT_TRADES_LIMIT),
    ("/api/v2/crypto/trades/get-recent-sells", params.SKIP),
    ("/api/v2/crypto/trades/get-recommendations", params.RECOMMENDATIONS_LIMIT),
    ("/api/v2/sentiment/sentiment/{coin}/{days}", params.LEGACY_SENTIMENT_DAYS),
]  # fmt: skip


@pytest.mark.parametrize(("path", "bounds"), BOUNDED)
def test_bounded_parameters_show_the_bounds_of_api_params(
    document: dict[str, Any], path: str, bounds: params.Bounds[Any]
) -> None:
    """`api.params.Bounds` is the one definition: the route clamps to it, the cost follows it, the
    document shows it (a 64-bit integer, its minimum and maximum)."""
    [parameter] = [
        p
        for p in operation_of(document, path)["parameters"]
        if p["name"] == bounds.name and p["in"] == bounds.source
    ]
    schema = parameter["schema"]
    assert (schema["type"], schema["format"], schema["minimum"]) == ("integer", "int64", bounds.low)
    assert schema.get("maximum") == bounds.high
    assert parameter["description"] == bounds.description


def test_every_metered_operation_states_its_cost_from_the_metering_configuration(
    document: dict[str, Any], handlers: list[tuple[str, HTTPRouteHandler]]
) -> None:
    named = {
        handler.opt["operation"]: path for path, handler in handlers if handler.opt.get("operation")
    }
    assert set(named) == {*METERING.costs, *METERING.row_costs}
    for name, path in named.items():
        operation = operation_of(document, path)
        assert operation["x-token-cost"] == cost_extension(METERING, name)
        assert f"Cost: {cost_text(METERING, name)}." in operation["description"]


def test_the_bearer_scheme_secures_every_route_but_the_public_ones(
    document: dict[str, Any],
) -> None:
    assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert document["security"] == [{"bearer": []}]
    assert operation_of(document, "/api/v1/status")["security"] == []
    assert operation_of(document, "/api/v1/ping")["security"] == [{}, {"bearer": []}]


def test_every_error_status_has_its_envelope_schema(document: dict[str, Any]) -> None:
    """Each documented failure names its body: `error`, or `success`/`message` (401, 402, 429)."""
    components = document["components"]["schemas"]
    for path, operation in operations(document):
        for status, response in operation["responses"].items():
            if int(status) < 400:
                continue
            schema = response["content"]["application/json"]["schema"]
            refs = [s["$ref"] for s in schema.get("oneOf", [schema])]
            names = {ref.rsplit("/", 1)[-1] for ref in refs}
            assert names <= {"ErrorBody", "PipelineErrorBody", "TokenLimitErrorBody"}, (
                path,
                status,
            )
            assert names <= set(components)
        if path.startswith("/api/v2"):
            assert {"401", "402", "404", "429", "503"} <= set(operation["responses"]), path


def test_bulk_export_documents_its_files_and_their_name(document: dict[str, Any]) -> None:
    ok = operation_of(document, "/api/v2/{market}/bulk/{dataset}")["responses"]["200"]
    assert set(ok["content"]) == {
        "application/vnd.apache.parquet",
        "application/vnd.apache.arrow.stream",
        "text/csv",
    }
    assert "Content-Disposition" in ok["headers"]


# -- through the real server -----------------------------------------------------------------------


def filled(path: str, operation: dict[str, Any]) -> str:
    for parameter in operation.get("parameters", []):
        if parameter["in"] == "path":
            path = path.replace("{" + parameter["name"] + "}", str(parameter["example"]))
    return path


@pytest.mark.slow
def test_every_operation_answers_200_with_its_examples_on_the_embedded_market(
    served_api: ServedApi,
) -> None:
    """The examples exist: a tool that follows them reaches every operation's data, not a 404."""
    key = served_api.new_key("internal")
    served = httpx.get(f"{served_api.base}/schema/openapi.json").json()
    for path, operation in operations(served):
        response = httpx.get(
            served_api.base + filled(path, operation), headers={"Authorization": f"Bearer {key}"}
        )
        assert response.status_code == 200, (path, response.text)


def test_the_examples_of_operations_name_operations_that_exist(
    handlers: list[tuple[str, HTTPRouteHandler]],
) -> None:
    assert set(EXAMPLES_OF) <= {handler.opt.get("operation") for _, handler in handlers}


@pytest.mark.slow
def test_schemathesis_finds_no_server_error_no_mismatch_and_no_unreachable_operation(
    served_api: ServedApi, tmp_path: Path
) -> None:
    """The examples, coverage and fuzzing phases against `mi serve` on the embedded market: no 500,
    every status, content type, header and body as documented, and no warning (no operation
    answering only 404s for want of data, none rejecting most of what its schema allows)."""
    key = served_api.new_key("internal")  # no rate limit: a run sends about 1,500 requests
    run = subprocess.run(
        [
            ST,
            "run",
            f"{served_api.base}/schema/openapi.json",
            "--header",
            f"Authorization: Bearer {key}",
            "--phases",
            "examples,coverage,fuzzing",
            "--max-examples",
            "30",
            "--seed",
            "19",
            "--checks",
            "not_a_server_error,status_code_conformance,content_type_conformance,"
            "response_headers_conformance,response_schema_conformance",
            "--generation-database",
            "none",
            "--workers",
            "2",
            "--no-color",
            "--request-timeout",
            "30",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = run.stdout + run.stderr
    assert run.returncode == 0, report[-6000:]
    assert "No issues found" in report, report[-6000:]
    assert "WARNINGS" not in report, report[-6000:]
    every = len(OPERATIONS)  # every route of the document, none skipped
    assert f"{every} selected / {every} total" in report
