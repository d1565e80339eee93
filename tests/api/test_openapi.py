"""The OpenAPI 3.1 document and its interactive docs page are served under /schema."""

from __future__ import annotations

from collections.abc import Callable

from litestar import Litestar, get
from litestar.testing import TestClient

from api.errors import error_responses

ClientFor = Callable[..., TestClient[Litestar]]


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


@get("/test/documented", sync_to_thread=False, responses=error_responses(401, 404, 422))
def documented_route() -> None:
    return None


def test_documented_failures_carry_their_envelope_schema(client_for: ClientFor) -> None:
    document = client_for(documented_route).get("/schema/openapi.json").json()
    responses = document["paths"]["/test/documented"]["get"]["responses"]
    schemas = document["components"]["schemas"]

    def properties(status: str) -> set[str]:
        name = responses[status]["content"]["application/json"]["schema"]["$ref"].split("/")[-1]
        return set(schemas[name]["properties"])

    assert properties("404") == properties("422") == {"error"}
    assert properties("401") == {"success", "message"}
