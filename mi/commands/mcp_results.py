"""What an MCP tool hands an agent: the data as structured content under a declared output schema,
small enough for its context; a large result as a preview plus a link to the whole of it.

Agents pay for every token of a result, and some refuse large ones outright (Claude Code rejects a
tool result over 25,000 tokens). So a result over `RESULT_TOKENS` (estimated as 4 bytes of JSON a
token) comes back with its longest list cut to its first and last items, `truncated` saying what
was cut, and a `resource_link` to the whole result: the server keeps the last results (bounded in
count and bytes) as the resource `mi://results/{id}`, an unguessable id, which the agent reads
with `resources/read` if it needs every row.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from typing import Any

import msgspec
from market_intelligence import Balance, Resource
from mcp.types import CallToolResult, ContentBlock, ResourceLink, TextContent

RESULT_TOKENS = 4_000
"""A result estimated above this many tokens is previewed (with a link), never sent whole."""
PREVIEW_TOKENS = 1_000
"""About what a preview may take."""
BYTES_PER_TOKEN = 4
"""The estimate of a JSON token's size (English and JSON average about 4 bytes a token)."""
RESULTS_KEPT = 64
RESULT_BYTES_KEPT = 64 * 1024 * 1024
"""Full results kept for their links: the newest, at most this many and this many bytes."""
RESULT_URI = "mi://results/{result_id}"


class Source(msgspec.Struct, frozen=True):
    """Which data version answered (the API's `x-data-version` and `x-data-published`): pass
    `version` as a tool's `as_of` to have the same answer again."""

    version: str | None
    published: str | None


NO_SOURCE = Source(None, None)
"""A result no data version answered (the balance tool's ping)."""


class ResultStore:
    """The full JSON of large results, least recently written dropped first."""

    def __init__(self, count: int = RESULTS_KEPT, size: int = RESULT_BYTES_KEPT) -> None:
        self.count, self.size = count, size
        self._results: OrderedDict[str, bytes] = OrderedDict()
        self._bytes = 0

    def put(self, body: bytes) -> str:
        result_id = secrets.token_urlsafe(16)
        self._results[result_id] = body
        self._bytes += len(body)
        while len(self._results) > self.count or (self._bytes > self.size and len(self._results) > 1):  # fmt: skip
            _, dropped = self._results.popitem(last=False)
            self._bytes -= len(dropped)
        return result_id

    def get(self, result_id: str) -> bytes | None:
        return self._results.get(result_id)


def output_schema(*answers: type[Resource]) -> dict[str, Any]:
    """The schema of a tool's structured content: the API resource it answers (one of `answers`)
    under `data`, the key's balance after the call under `tokens`, the data version that answered
    under `source`, and, for a preview, `truncated`."""
    refs, components = msgspec.json.schema_components(
        [*answers, Balance | None, Source], ref_template="#/$defs/{name}"
    )
    *data, tokens, source = refs
    return {
        "type": "object",
        "properties": {
            "data": data[0] if len(data) == 1 else {"anyOf": data},
            "tokens": tokens,
            "source": source,
            "truncated": {
                "type": "object",
                "description": "Present when `data` is a preview: the list cut, the items shown "
                "(the first and last), the total, and the resource holding the whole result.",
                "properties": {
                    "field": {"type": "string"},
                    "shown": {"type": "integer"},
                    "total": {"type": "integer"},
                    "full_result": {"type": "string", "format": "uri"},
                },
                "required": ["field", "shown", "total", "full_result"],
            },
        },
        "required": ["data", "tokens", "source"],
        "$defs": components,
    }


def tool_result(
    tool: str,
    resource: Resource,
    balance: Balance | None,
    store: ResultStore,
    source: Source = NO_SOURCE,
) -> CallToolResult:
    """The resource as the tool's result: whole when small, else a preview and a link."""
    data = msgspec.to_builtins(resource)
    tokens = None if balance is None else msgspec.to_builtins(balance)
    said = msgspec.to_builtins(source)
    body = msgspec.json.encode(data)
    if len(body) <= RESULT_TOKENS * BYTES_PER_TOKEN:
        return _whole(data, tokens, said)
    field, preview, shown, total = _preview(data)
    if not field:  # no list to cut
        return _whole(data, tokens, said)
    uri = RESULT_URI.format(result_id=store.put(body))
    cut = {"field": field, "shown": shown, "total": total, "full_result": uri}
    content = {"data": preview, "tokens": tokens, "source": said, "truncated": cut}
    summary = (
        f"{tool}: about {len(body) // BYTES_PER_TOKEN:,} tokens of data, too many to show: "
        f"`{field}` has {total:,} items, of which the first {shown // 2:,} and the last "
        f"{shown // 2:,} are shown. The whole result is the resource {uri} (read it only if "
        "every item is needed), or ask again for fewer."
    )
    blocks: list[ContentBlock] = [
        TextContent(text=summary),
        TextContent(text=msgspec.json.encode(content).decode()),
        ResourceLink(uri=uri, name=f"{tool} result", mime_type="application/json", size=len(body)),
    ]
    return CallToolResult(content=blocks, structured_content=content)


def _whole(
    data: dict[str, Any], tokens: dict[str, Any] | None, source: dict[str, Any]
) -> CallToolResult:
    content = {"data": data, "tokens": tokens, "source": source}
    text = msgspec.json.encode(content).decode()
    return CallToolResult(content=[TextContent(text=text)], structured_content=content)


def _preview(data: dict[str, Any]) -> tuple[str, dict[str, Any], int, int]:
    """`data` with its longest list cut to its first and last items, about `PREVIEW_TOKENS` in
    all: (the list's field, the preview, items shown, items in all)."""
    lists = {name: value for name, value in data.items() if isinstance(value, list)}
    if not lists:
        return "", data, 0, 0
    sizes = {name: len(msgspec.json.encode(value)) for name, value in lists.items()}
    field = max(sizes, key=sizes.__getitem__)
    items = lists[field]
    each = max(1, sizes[field] // max(1, len(items)))
    keep = max(2, (PREVIEW_TOKENS * BYTES_PER_TOKEN) // each)
    if keep >= len(items):
        return field, data, len(items), len(items)
    half = keep // 2
    return field, {**data, field: items[:half] + items[-half:]}, 2 * half, len(items)
