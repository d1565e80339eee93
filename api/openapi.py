"""The OpenAPI document tools can use: security, examples, enums, token costs, every error's body.

Litestar generates the document from the routes (path parameters, response schemas, each route's
declared failures). `finish` completes it with what only the product knows, once per app: the query
parameters each route declares in `opt["query"]` (their bounds, defaults and meanings, from the
same declarations the route and metering read), the bearer scheme, an example of every path parameter that exists in the
embedded market, the enums of markets, strategies, datasets and formats, each operation's token cost
from the metering configuration the server runs with (its description and `x-token-cost`), and the
answers of the metering layer (401, 402, 429, 503, the balance headers) on every metered operation.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import textwrap
from collections.abc import Iterator
from copy import deepcopy
from pathlib import Path
from typing import Any

import msgspec
from litestar import Litestar, Request
from litestar.handlers import HTTPRouteHandler
from litestar.openapi.plugins import JsonRenderPlugin
from litestar.routes import HTTPRoute

from api.export import DATASETS, FORMATS
from api.metering.config import MeteringConfig, RowsCost, ScaledCost, cost_text
from api.operation_docs import OPERATIONS, TAGS, operation_id
from api.params import AS_OF, FILL, POINT_IN_TIME, SCALED_BY, QueryParameterDeclaration
from api.request_limits import MAX_HEADER_BYTES, MAX_TARGET_BYTES
from api.schemas import WIRE_TYPES, ErrorBody, PipelineErrorBody, TokenLimitErrorBody
from pipelines.catalog import FILLS, MARKETS, STRATEGIES

Document = dict[str, Any]

EXAMPLES_FILE = Path(__file__).with_name("openapi_examples.json")
"""A real answer of every operation (on the tests' embedded market), by operationId, its lists cut
to `EXAMPLE_ITEMS` items; kept true by tests/api/test_openapi_examples.py."""
EXAMPLE_ITEMS = 2
EXAMPLES_OMITTED = frozenset({"bulkExport"})
"""Operations whose answer is a file, not JSON."""

FIRST_CRYPTO_ARTICLE = "0f4667330aefc4fe3d07"
"""The first crypto story of 2022-01-01, where every embedded market's history starts: its id is
the hash of a guid made of the market, the day and the story's rank, whatever the seed or size."""
EXAMPLES: dict[str, object] = {
    "market": "crypto",
    "symbol": "BTC",
    "coin": "BTC",
    "term": "bit",
    "article_id": FIRST_CRYPTO_ARTICLE,
    "strategy": "aggressive",
    "limit": 30,
    "days": 30,
    "dataset": "daily-prices",
    "keywords": "bitcoin",
}
"""An example of each path parameter (and of search-briefs' keywords) that the embedded market
answers with data, so generators and fuzzers reach every operation's data, not its 404."""
EXAMPLES_OF: dict[str, dict[str, object]] = {
    "get-current-trend": {"market": "forex", "symbol": "EURUSD"},
    "get-trend-segments": {"market": "stocks", "symbol": "AAPL"},
    "scorecard": {"market": "commodities", "symbol": "GOLD"},
}
"""Operations whose examples differ: the routes of forex, commodities and stocks only."""
PATH_MEANINGS: dict[str, str] = {
    "market": "The market: crypto, forex, commodities or stocks (a route serving fewer says which).",
    "symbol": "The instrument's symbol, in any case (list-symbols gives a market's symbols).",
    "coin": "A crypto symbol, in any case.",
    "strategy": "The trading strategy: aggressive or conservative.",
    "term": "Part of a symbol or a name to search for.",
    "article_id": "A brief's article id (the `article_id` of a Brief).",
    "limit": "How many days, newest first.",
    "days": "How many days back from the latest.",
    "dataset": "The dataset to export.",
}
"""What each path parameter means, by name (the same on every route that has it)."""
ENUMS: dict[str, tuple[str, ...]] = {
    "market": MARKETS,
    "strategy": STRATEGIES,
    "dataset": tuple(DATASETS),
}
"""Path parameters with a closed set of values, by name (the same on every route that has them)."""
FILE_OPERATIONS = {"bulk-export"}
"""Operations answering files in FORMATS rather than JSON."""

BEARER = {
    "type": "http",
    "scheme": "bearer",
    "description": "An API key, `Authorization: Bearer mi_live_...` (docs/clients.md, Get a key).",
}
BALANCE_HEADERS = {
    "x-tokens-cost": "tokens this request cost, net of same-request credit",
    "x-tokens-limit": "the plan's monthly budget (-1: none)",
    "x-tokens-limit-today": "the plan's daily cap (-1: none)",
    "x-tokens-remaining": "tokens left this month: unused monthly base plus packs (-1: no budget)",
    "x-tokens-remaining-today": "tokens left today (-1: no budget)",
}
RETRY_AFTER = {
    "Retry-After": {"description": "seconds to wait before retrying", "schema": {"type": "integer"}}
}


class ToolsOpenAPIPlugin(JsonRenderPlugin):
    """Serves the finished document at /schema/openapi.json (what the interactive page reads),
    built once per app from the one Litestar generates."""

    def __init__(self, metering: MeteringConfig | None) -> None:
        super().__init__()
        self.metering = metering
        self._document: Document | None = None
        self._finished: bytes | None = None

    def document(self, app: Litestar) -> Document:
        """The finished document of `app` (also what /llms.txt and the Markdown pages render)."""
        if self._document is None:
            self._document = finish(app.openapi_schema.to_schema(), app, self.metering)
        return self._document

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        if self._finished is None:
            self._finished = self.render_json(request, self.document(request.app))
        return self._finished


def finished_document(app: Litestar) -> Document:
    """The app's finished document, from its ToolsOpenAPIPlugin."""
    config = app.openapi_config
    plugins = config.render_plugins if config is not None else []
    tools = next(p for p in plugins if isinstance(p, ToolsOpenAPIPlugin))
    return tools.document(app)


def finish(generated: Document, app: Litestar, metering: MeteringConfig | None) -> Document:
    """`generated` completed for tools (a copy: Litestar keeps its own)."""
    document = deepcopy(generated)
    components = document.setdefault("components", {})
    _add_error_schemas(components.setdefault("schemas", {}))
    if metering is not None:
        components["securitySchemes"] = {"bearer": BEARER}
        document["security"] = [{"bearer": []}]
    document["tags"] = [{"name": tag, "description": text} for tag, text in TAGS.items()]
    examples = json.loads(EXAMPLES_FILE.read_bytes())
    _describe_fields(components["schemas"])
    for path, handler in documented_handlers(app):
        operation = document["paths"][path]["get"]
        name: str | None = handler.opt.get("operation")
        _name_operation(operation, name or handler.handler_name)
        _add_example(operation, examples)
        declared = handler.opt.get("query", ())
        if handler.opt.get(POINT_IN_TIME):
            declared = (*declared, AS_OF)
            _add_as_of_failures(operation)
        _add_query_parameters(operation, declared)
        _describe_parameters(operation, name)
        _drop_framework_400(operation)
        operation["responses"].update(_head_limits())
        if name is None:
            operation["security"] = []  # status: public, never metered
            continue
        _add_answers(operation, path, name)
        if FILL in declared:
            _add_fill_header(operation)
        if metering is not None:
            _add_metering(operation, name, handler, metering)
    return document


def _name_operation(operation: Document, name: str) -> None:
    """The spec's route name as operationId (`getPriceHistory`), its summary and description."""
    operation["operationId"] = operation_id(name)
    if name in OPERATIONS:  # every route of the app is (tests/api/test_openapi_v2.py)
        operation["summary"], operation["description"] = OPERATIONS[name]


def _add_example(operation: Document, examples: Document) -> None:
    example = examples.get(operation["operationId"])
    content = operation["responses"].get("200", {}).get("content", {}).get("application/json")
    if example is not None and content is not None:
        content["example"] = example


def cut_lists(value: Any) -> Any:
    """`value` with every list cut to its first `EXAMPLE_ITEMS` items (an example, not a dump)."""
    if isinstance(value, list):
        return [cut_lists(item) for item in value[:EXAMPLE_ITEMS]]
    if isinstance(value, dict):
        return {name: cut_lists(item) for name, item in value.items()}
    return value


def _describe_fields(schemas: Document) -> None:
    """Each resource's and each field's meaning, from the wire Structs' docstrings (a field's is
    the string under it, as the catalog's and settings' are), into Litestar's components of the
    same names."""
    for struct in WIRE_TYPES:
        target = schemas.get(struct.__name__)
        if target is None:
            continue
        if struct.__doc__:
            target["description"] = inspect.cleandoc(struct.__doc__)
        properties = target.get("properties", {})
        for field, meaning in field_docs(struct).items():
            if field in properties:
                properties[field]["description"] = meaning


def field_docs(struct: type) -> dict[str, str]:
    """The docstring under each annotated field of the class body (Python's attribute docstring
    convention, which `inspect` does not read)."""
    body = ast.parse(textwrap.dedent(inspect.getsource(struct))).body[0]
    assert isinstance(body, ast.ClassDef)
    found: dict[str, str] = {}
    for field, after in itertools.pairwise(body.body):
        if (
            isinstance(field, ast.AnnAssign)
            and isinstance(field.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            found[field.target.id] = inspect.cleandoc(after.value.value)
    return found


def documented_handlers(app: Litestar) -> Iterator[tuple[str, HTTPRouteHandler]]:
    for route in app.routes:
        if isinstance(route, HTTPRoute):
            for handler in route.route_handlers:
                if handler.resolve_include_in_schema() and "GET" in handler.http_methods:
                    yield route.path_format, handler


def _add_query_parameters(
    operation: Document, declared: tuple[QueryParameterDeclaration, ...]
) -> None:
    """The query parameters the route reads (`api.request_values`), which Litestar cannot see."""
    if declared:
        operation.setdefault("parameters", []).extend(p.openapi() for p in declared)


def _describe_parameters(operation: Document, name: str | None) -> None:
    examples = {**EXAMPLES, **EXAMPLES_OF.get(name or "", {})}
    for parameter in operation.get("parameters", []):
        key = parameter["name"]
        if key in ENUMS and parameter["in"] == "path":
            parameter["schema"] = {**_plain(parameter["schema"]), "enum": list(ENUMS[key])}
        if key in examples and (parameter["in"] == "path" or key == "keywords"):
            parameter["example"] = examples[key]
        if parameter["in"] == "path" and key in PATH_MEANINGS:
            parameter.setdefault("description", PATH_MEANINGS[key])


def _plain(schema: Document) -> Document:
    """A string schema without Litestar's `oneOf [string, null]` of an optional parameter (absent
    is how a client leaves it out; null is no value a query string can carry)."""
    kept = {key: value for key, value in schema.items() if key != "oneOf"}
    return {"type": "string", **kept}


def _drop_framework_400(operation: Document) -> None:
    """Litestar documents its own parameter validation as a 400 with its own body on every route
    with parameters; this API answers those as 422 in the `error` envelope (`api.errors`), and a
    route that can answer 400 declares it (`error_responses`)."""
    bad = operation.get("responses", {}).get("400", {})
    schema = bad.get("content", {}).get("application/json", {}).get("schema", {})
    if schema.get("description") == "Validation Exception":
        del operation["responses"]["400"]


SOURCE_HEADERS: Document = {
    "x-data-version": {
        "description": "the data version that answered (an `as_of` value gets this answer again)",
        "schema": {"type": "string"},
        "required": True,
    },
    "x-data-published": {
        "description": "when that version was published, RFC 3339 UTC",
        "schema": {"type": "string", "format": "date-time"},
        "required": True,
    },
}


FILL_HEADER: Document = {
    "x-fill": {
        "description": "the fill the backtest answered with: close or next_open",
        "schema": {"type": "string", "enum": list(FILLS)},
        "required": True,
    }
}


def _add_fill_header(operation: Document) -> None:
    """The backtests' `x-fill` on their 200 and 304, and on a 404 of the route's own (a 404 of
    `as_of` answers before the route reads `fill`)."""
    responses = operation["responses"]
    for status in ("200", "304"):
        responses[status].setdefault("headers", {}).update(FILL_HEADER)
    own = {"x-fill": {**FILL_HEADER["x-fill"], "required": False}}
    responses["404"].setdefault("headers", {}).update(own)


def _add_as_of_failures(operation: Document) -> None:
    """What `as_of` adds to a data route's failures: 422 malformed, 404 before the oldest retained."""
    responses = operation["responses"]
    error = _json(_ref("ErrorBody"))
    responses.setdefault("404", {"description": "Not Found", **error})
    responses.setdefault("422", {"description": "Unprocessable Content", **error})


def _add_answers(operation: Document, path: str, name: str) -> None:
    """What every /api/v2 answer carries (ETag and its 304) and the files of file operations."""
    responses = operation["responses"]
    if path.startswith("/api/v2"):
        responses["304"] = {
            "description": "Not Modified: If-None-Match held the current ETag; no body, free",
        }
        headers = responses["200"].setdefault("headers", {})
        headers["ETag"] = {
            "description": "the data version and the normalized request",
            "schema": {"type": "string"},
        }
        headers |= SOURCE_HEADERS
        responses["304"]["headers"] = dict(SOURCE_HEADERS)
    if name in FILE_OPERATIONS:
        binary = {"schema": {"type": "string", "contentMediaType": "application/octet-stream"}}
        responses["200"]["content"] = {fmt.media_type: binary for fmt in FORMATS.values()}
        responses["200"]["description"] = "the file, streamed"
        responses["200"]["headers"]["Content-Disposition"] = {
            "description": 'attachment; filename="<market>-<dataset>-<version>.<ext>"',
            "schema": {"type": "string"},
        }


def _add_metering(
    operation: Document, name: str, handler: HTTPRouteHandler, metering: MeteringConfig
) -> None:
    """Security, the cost, the balance headers and the metering layer's failures."""
    if handler.opt.get("key") == "optional":
        operation["security"] = [{}, {"bearer": []}]
    operation["x-token-cost"] = cost_extension(metering, name)
    cost = f"Cost: {cost_text(metering, name)}."
    description = operation.get("description")
    operation["description"] = f"{description}\n\n{cost}" if description else cost
    responses = operation["responses"]
    headers = responses["200"].setdefault("headers", {})
    for header, meaning in BALANCE_HEADERS.items():
        headers[header] = {"description": meaning, "schema": {"type": "integer"}, "required": True}
    responses.update(_metering_failures())


def _head_limits() -> Document:
    """What `api.request_limits` answers on any route, before authentication."""
    error = _json(_ref("ErrorBody"))
    return {
        "414": {
            "description": f"the path and query take more than {MAX_TARGET_BYTES} bytes",
            **error,
        },
        "431": {"description": f"the headers take more than {MAX_HEADER_BYTES} bytes", **error},
    }


def _metering_failures() -> Document:
    pipeline = _json(_ref("PipelineErrorBody"))
    token_limit = {"oneOf": [_ref("PipelineErrorBody"), _ref("TokenLimitErrorBody")]}
    return {
        "401": {
            "description": "missing, malformed or unknown key; or the budget cannot pay for the"
            " request (error_code DAILY_TOKEN_LIMIT or MONTHLY_TOKEN_LIMIT, free)",
            "content": {"application/json": {"schema": token_limit}},
        },
        "402": {"description": "the plan does not include the market or operation", **pipeline},
        "429": {"description": "rate or connection limit", "headers": RETRY_AFTER, **pipeline},
        "503": {
            "description": "a dependency (the data, the metering store) is briefly unavailable",
            "headers": RETRY_AFTER,
            **_json(_ref("ErrorBody")),
        },
    }


def cost_extension(metering: MeteringConfig, operation: str) -> Document:
    """`x-token-cost`: what a request costs in tokens, for machines (the rule the text states)."""
    rule = metering.cost_rule(operation)
    if isinstance(rule, int):
        return {"min": rule, "max": rule}
    if isinstance(rule, RowsCost):
        return {"min": rule.minimum, "max": None, "rows_per_token": rule.rows_per_token}
    steps = [{"up_to": bound, "tokens": tokens} for bound, tokens in rule.steps]
    low = min([rule.otherwise, *(tokens for _, tokens in rule.steps)])
    return {
        "min": low,
        "max": rule.ceiling,
        "scaled_by": _scaled_by(operation, rule),
        "steps": steps,
        "otherwise": rule.otherwise,
    }


def _scaled_by(operation: str, rule: ScaledCost) -> str:
    return "points returned" if rule.by_points else SCALED_BY[operation].name


def _add_error_schemas(schemas: Document) -> None:
    """The envelopes the metering layer answers with, when no route declared them already."""
    _, found = msgspec.json.schema_components(
        (ErrorBody, PipelineErrorBody, TokenLimitErrorBody),
        ref_template="#/components/schemas/{name}",
    )
    for name, schema in found.items():
        schemas.setdefault(name, schema)


def _ref(name: str) -> Document:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: Document) -> Document:
    return {"content": {"application/json": {"schema": schema}}}
