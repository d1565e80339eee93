"""Rule: `/llms.txt` (llmstxt.org), `/llms-full.txt` and a Markdown page per operation describe
every route of the OpenAPI document, from the document itself; public, never metered.

Read from a real `mi serve`, as an agent fetches them."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.served import ServedApi

pytestmark = pytest.mark.slow


def _get(served_api: ServedApi, path: str) -> httpx.Response:
    return httpx.get(f"{served_api.base}{path}", timeout=30)


def test_llms_txt_is_the_llmstxt_index_of_every_operation(served_api: ServedApi) -> None:
    document = _get(served_api, "/schema/openapi.json").json()
    index = _get(served_api, "/llms.txt")
    assert index.status_code == 200
    assert index.headers["content-type"].startswith("text/markdown")
    assert not any(h.startswith("x-tokens") for h in index.headers)  # never metered
    lines = index.text.splitlines()
    assert lines[0] == "# Market Intelligence API"
    assert lines[2].startswith("> Read-only market intelligence")
    links = dict(re.findall(r"^- \[(\w+)\]\((/docs/operations/\w+\.md)\): ", index.text, re.M))
    ids = {item["get"]["operationId"] for item in document["paths"].values()}
    assert set(links) == ids
    assert "## Optional" in lines
    for operation_id, page in links.items():
        answer = _get(served_api, page)
        assert answer.status_code == 200, page
        assert answer.text.startswith(f"## {operation_id}: "), page


def test_an_operations_page_says_its_parameters_fields_cost_and_example(
    served_api: ServedApi,
) -> None:
    document = _get(served_api, "/schema/openapi.json").json()
    page = _get(served_api, "/docs/operations/getPriceHistory.md").text
    path = "/api/v2/{market}/technical-analysis/get-price-history/{symbol}"
    operation = document["paths"][path]["get"]
    assert f"`GET {path}`" in page
    assert operation["description"].split("\n")[0] in page
    assert "Cost: 2 to 5 tokens" in page
    for parameter in operation["parameters"]:
        assert f"| `{parameter['name']}` |" in page
    for field, spec in document["components"]["schemas"]["PricePoint"]["properties"].items():
        assert f"| `{field}` | {spec['type']} | {spec['description']} |" in page
    assert '"price_history": [' in page  # the example


def test_llms_full_txt_and_schema_md_hold_every_page(served_api: ServedApi) -> None:
    full = _get(served_api, "/llms-full.txt").text
    assert _get(served_api, "/schema.md").text == full
    document = _get(served_api, "/schema/openapi.json").json()
    for item in document["paths"].values():
        assert f"## {item['get']['operationId']}: " in full
    missing = _get(served_api, "/docs/operations/nope.md")
    assert missing.status_code == 404
    assert missing.json() == {"error": "Not found"}
