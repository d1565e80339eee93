"""Rule: `mi mcp` fits an agent's context. Every tool declares its output schema and returns
structured content that holds to it; a result over a few thousand tokens is a preview plus a
`resource_link` to the whole of it; the tools' descriptions stay under 1,500 tokens in all.

Driven by the mcp SDK's own client against a real `mi serve`."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import jsonschema
import msgspec
import pytest
from market_intelligence import Client as ApiClient
from mcp import Client
from mcp.types import ResourceLink, TextContent

from mi.commands.mcp_results import BYTES_PER_TOKEN, RESULT_TOKENS, ResultStore
from tests.mi.test_mcp_server import CALLS, stdio
from tests.served import ServedApi

pytestmark = pytest.mark.slow

DESCRIPTION_TOKENS = 1_500


def test_the_tool_descriptions_stay_under_1500_tokens_in_all(served_api: ServedApi) -> None:
    async def listed() -> list[Any]:
        async with Client(stdio(served_api, "unused-for-listing")) as agent:
            return (await agent.list_tools()).tools

    tools = asyncio.run(listed())
    words = sum(len(tool.description or "") for tool in tools) / BYTES_PER_TOKEN
    assert words < DESCRIPTION_TOKENS, words
    assert all(tool.output_schema is not None for tool in tools)


def test_every_tools_structured_content_holds_to_its_output_schema(served_api: ServedApi) -> None:
    async def call_all() -> list[tuple[dict[str, Any], dict[str, Any]]]:
        async with Client(stdio(served_api, served_api.new_key("internal"))) as agent:
            schemas = {t.name: t.output_schema for t in (await agent.list_tools()).tools}
            answered = []
            for tool, arguments, *_ in CALLS:
                result = await agent.call_tool(tool, arguments)
                assert not result.is_error, (tool, result.content)
                answered.append((schemas[tool], result.structured_content))
            return answered

    for schema, content in asyncio.run(call_all()):
        jsonschema.validate(content, schema)
        assert "truncated" not in content  # each of these fits


def test_a_result_too_large_is_a_preview_and_a_link_to_the_whole(served_api: ServedApi) -> None:
    arguments = {"market": "crypto", "symbol": "BTC", "limit": 5000}

    async def call() -> tuple[Any, Any, str]:
        async with Client(stdio(served_api, served_api.new_key("internal"))) as agent:
            schema = next(t for t in (await agent.list_tools()).tools if t.name == "price_history")
            result = await agent.call_tool("price_history", arguments)
            links = [block for block in result.content if isinstance(block, ResourceLink)]
            assert len(links) == 1, result.content
            whole = await agent.read_resource(links[0].uri)
            return schema.output_schema, result, whole.contents[0].text  # type: ignore[union-attr]

    schema, result, whole = asyncio.run(call())
    assert not result.is_error
    content = result.structured_content
    jsonschema.validate(content, schema)
    with ApiClient(served_api.new_key("internal"), base_url=served_api.base) as sdk:
        expected = msgspec.to_builtins(sdk.get_price_history("crypto", "BTC", limit=5000))
    assert json.loads(whole) == expected
    points, total = expected["price_history"], len(expected["price_history"])
    cut = content["truncated"]
    assert cut["field"] == "price_history"
    assert cut["total"] == total > cut["shown"] > 0
    half = cut["shown"] // 2
    assert content["data"]["price_history"] == points[:half] + points[-half:]
    sent = sum(len(b.text) for b in result.content if isinstance(b, TextContent))
    assert sent < RESULT_TOKENS * BYTES_PER_TOKEN  # the agent reads a preview, not the series
    assert len(whole) > RESULT_TOKENS * BYTES_PER_TOKEN


def test_the_store_keeps_the_newest_results_within_its_count_and_bytes() -> None:
    store = ResultStore(count=3, size=10)
    first = store.put(b"12345")
    second = store.put(b"12345")
    assert store.get(first) == b"12345"
    third = store.put(b"1")  # 11 bytes kept: the oldest goes
    assert store.get(first) is None
    assert store.get(second) == b"12345"
    assert store.get(third) == b"1"
    ids = [store.put(b"x") for _ in range(3)]
    assert [store.get(i) for i in ids] == [b"x"] * 3
    assert store.get(second) is None
