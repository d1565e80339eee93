"""The OpenAPI 3.1 document and its interactive docs page are served under /schema."""

from __future__ import annotations

from litestar import Litestar
from litestar.testing import TestClient


def test_the_openapi_document_lists_the_v1_routes(client: TestClient[Litestar]) -> None:
    response = client.get("/schema/openapi.json")
    assert response.status_code == 200
    document = response.json()
    assert document["openapi"].startswith("3.1")
    assert document["info"]["version"] == "1.0.0"
    assert {"/api/v1/ping", "/api/v1/status"} <= set(document["paths"])
    assert all(p.startswith("/api/") for p in document["paths"])


def test_schema_serves_an_interactive_docs_page(client: TestClient[Litestar]) -> None:
    response = client.get("/schema")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
