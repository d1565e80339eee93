"""The API described for LLM agents and readers of plain text: `/llms.txt` (the llmstxt.org index),
`/llms-full.txt` (the whole reference in one file), and a Markdown page per operation
(`/docs/operations/{operationId}.md`; `/schema.md` is the twin of the `/schema` page).

All of it is rendered from the finished OpenAPI document (`api.openapi.finish`), so the routes,
their costs, parameters, fields and examples are written once, where the document gets them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

Document = dict[str, Any]

TITLE = "Market Intelligence API"
SUMMARY = (
    "Read-only market intelligence for crypto, forex, commodities and stocks: daily prices, "
    "technical indicators, trends, news briefs with sentiment, written analyses, strategy "
    "backtests and recommendations."
)
BASICS = """\
Every route is a GET answering JSON (bulk export answers a file). Send the API key as
`Authorization: Bearer mi_live_...`; every metered answer carries the key's balance in the
`x-tokens-cost`, `x-tokens-remaining` and `x-tokens-remaining-today` headers, and each operation
below states its cost in tokens. Errors are JSON: `{"error": "..."}` (400, 404, 422, 503) or
`{"success": false, "message": "..."}` (401, 402, 429), the message naming what was wrong. A 429 or
503 says how long to wait in `Retry-After`. Times are epoch milliseconds, days `YYYY-MM-DD` (UTC).
Repeat a request with `If-None-Match: <ETag>` to get a free 304 while the data has not changed."""
OPERATION_PAGE = "/docs/operations/{operation_id}.md"


def operations(document: Document) -> Iterator[tuple[str, Document]]:
    """(path, operation) of every GET, in the document's order."""
    for path, item in document["paths"].items():
        if "get" in item:
            yield path, item["get"]


def llms_txt(document: Document) -> str:
    """The llmstxt.org index: what the API is, how to call it, a line per operation."""
    lines = [f"# {TITLE}", "", f"> {SUMMARY}", "", BASICS, ""]
    by_tag: dict[str, list[str]] = {}
    for path, operation in operations(document):
        page = OPERATION_PAGE.format(operation_id=operation["operationId"])
        cost = _cost_words(operation)
        line = f"- [{operation['operationId']}]({page}): {operation.get('summary', '')}. `GET {path}`{cost}"
        by_tag.setdefault(operation.get("tags", ["other"])[0], []).append(line)
    texts = {tag["name"]: tag.get("description", "") for tag in document.get("tags", [])}
    for tag, listed in by_tag.items():
        lines += [f"## {tag}", "", texts.get(tag, ""), "", *listed, ""]
    lines += [
        "## Optional",
        "",
        "- [Full reference](/llms-full.txt): every operation's page in one file",
        "- [OpenAPI document](/schema/openapi.json): the same, for code generators",
        "- [Interactive docs](/schema): try the routes in a browser",
        "",
    ]
    return "\n".join(lines)


def llms_full_txt(document: Document) -> str:
    """The whole reference: the introduction, then every operation's page."""
    pages = [operation_page(document, path, op) for path, op in operations(document)]
    return "\n".join([f"# {TITLE}", "", f"> {SUMMARY}", "", BASICS, "", *pages])


def operation_page(document: Document, path: str, operation: Document) -> str:
    """One operation as Markdown: what it does, its parameters, its answer's fields, an example,
    and the statuses it can answer."""
    schemas = document.get("components", {}).get("schemas", {})
    lines = [
        f"## {operation['operationId']}: {operation.get('summary', '')}",
        "",
        f"`GET {path}`",
        "",
        operation.get("description", ""),
        "",
    ]
    parameters = operation.get("parameters", [])
    if parameters:
        lines += ["| parameter | in | type | meaning |", "|---|---|---|---|"]
        lines += [_parameter_row(p) for p in parameters]
        lines.append("")
    ok = operation.get("responses", {}).get("200", {})
    content = ok.get("content", {}).get("application/json", {})
    answer = _ref_name(content.get("schema", {}))
    if answer:
        lines += [f"Answer: `{answer}`", ""]
        lines += _fields(schemas, answer)
    if "example" in content:
        example = json.dumps(content["example"], indent=1)
        lines += ["Example (lists cut to two items):", "", "```json", example, "```", ""]
    statuses = sorted(s for s in operation.get("responses", {}) if s != "200")
    if statuses:
        answers = operation["responses"]
        said = "; ".join(f"{s} {_cell(answers[s].get('description', ''))}" for s in statuses)
        lines += [f"Other answers: {said}.", ""]
    return "\n".join(lines)


def _parameter_row(parameter: Document) -> str:
    where = parameter["in"] + ("" if parameter.get("required") else ", optional")
    kind, meaning = _type(parameter.get("schema", {})), _cell(parameter.get("description", ""))
    return f"| `{parameter['name']}` | {where} | {kind} | {meaning} |"


def _fields(schemas: Document, name: str, seen: frozenset[str] = frozenset()) -> list[str]:
    """The fields of a component as a table, then those of the components it holds."""
    schema = schemas.get(name, {})
    properties = schema.get("properties", {})
    if not properties or name in seen:
        return []
    lines = [
        f"`{name}`: {schema.get('description', '')}",
        "",
        "| field | type | meaning |",
        "|---|---|---|",
    ]
    nested = []
    for field, spec in properties.items():
        lines.append(f"| `{field}` | {_type(spec)} | {_cell(spec.get('description', ''))} |")
        nested += [ref for ref in _refs(spec) if ref not in nested]
    lines.append("")
    for ref in nested:
        lines += _fields(schemas, ref, seen | {name})
    return lines


def _refs(schema: Document) -> Iterator[str]:
    """Components a schema refers to, anywhere in it."""
    if "$ref" in schema:
        yield schema["$ref"].rsplit("/", 1)[-1]
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield from _refs(schema[key])
    for key in ("oneOf", "anyOf", "allOf"):
        for part in schema.get(key, []):
            yield from _refs(part)


def _type(schema: Document) -> str:
    """A schema's type in a few words: `integer`, `array of PricePoint`, `string or null`."""
    if "$ref" in schema:
        return f"`{_ref_name(schema)}`"
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return " or ".join(_type(part) for part in schema[key])
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array":
        return f"array of {_type(schema.get('items', {}))}"
    if "enum" in schema:
        return f"{kind}: " + ", ".join(f"`{v}`" for v in schema["enum"])
    return str(kind)


def _ref_name(schema: Document) -> str:
    ref = schema.get("$ref", "")
    return ref.rsplit("/", 1)[-1] if ref else ""


def _cost_words(operation: Document) -> str:
    cost = operation.get("x-token-cost")
    if not cost:
        return " (free)"
    low, high = cost.get("min"), cost.get("max")
    if high is None:
        return f" ({low} tokens or more)"
    return (
        f" ({low} token{'s' if low != 1 else ''})" if low == high else f" ({low} to {high} tokens)"
    )


def _cell(text: str) -> str:
    """Text fit for a table cell (one line, no bar)."""
    return " ".join(text.split()).replace("|", "\\|")
