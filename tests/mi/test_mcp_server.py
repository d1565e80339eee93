"""`mi mcp` driven by the MCP SDK's own client (stdio, and streamable HTTP), against a real `mi serve`."""

from __future__ import annotations

import asyncio
import subprocess
import time
from datetime import date
from pathlib import Path
from typing import Any

import httpx
import httpx2
import msgspec
import pytest
from market_intelligence import Client as ApiClient
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from api.metering.config import load_config
from tests.api.metering.conftest import MI, free_port, stop_group
from tests.served import ServedApi

pytestmark = pytest.mark.slow

TOOL_OPERATIONS = {
    "list_instruments": ["list-symbols"],
    "search_instruments": ["search-instruments"],
    "instrument_scorecard": ["scorecard"],
    "price_history": ["get-price-history"],
    "indicators": ["get-indicators"],
    "trend": ["get-trend-history", "get-current-trend"],
    "trend_segments": ["get-trend-segments"],
    "news_briefs": ["get-recent-briefs", "search-briefs"],
    "sentiment_history": ["get-sentiment-history"],
    "analysis": ["get-instrument-analysis"],
    "market_summary": ["get-market-summary"],
    "backtest_summary": ["get-backtest-summary"],
    "corporate_actions": ["get-corporate-actions"],
    "current_action": ["get-current-action"],
    "recommendations": ["get-recommendations"],
    "data_status": ["data-status"],
    "balance": ["ping"],
}
"""The tools an agent is offered (the issue's list and a balance) and the operations they call."""

CALLS: list[tuple[str, dict[str, Any], str, tuple[Any, ...], dict[str, Any]]] = [
    ("list_instruments", {"market": "stocks"}, "list_symbols", ("stocks",), {"limit": 100, "skip": 0, "include_delisted": False}),
    ("search_instruments", {"query": "eth"}, "search_instruments", ("crypto", "eth"), {"include_delisted": False}),
    ("instrument_scorecard", {"market": "forex", "symbol": "eurusd"}, "scorecard", ("forex", "eurusd"), {}),
    ("price_history", {"market": "crypto", "symbol": "BTC", "start": "2026-02-01", "end": "2026-02-10"},
     "get_price_history", ("crypto", "BTC"), {"limit": 90, "start": date(2026, 2, 1), "end": date(2026, 2, 10), "adjustment": "split"}),
    ("indicators", {"market": "stocks", "symbol": "AAPL", "period": 50}, "get_indicators", ("stocks", "AAPL"), {"period": 50}),
    ("trend", {"market": "crypto", "symbol": "ETH", "limit": 5}, "get_trend_history", ("ETH", 5), {}),
    ("trend", {"market": "commodities", "symbol": "GOLD"}, "get_current_trend", ("commodities", "GOLD"), {}),
    ("trend_segments", {"market": "stocks", "symbol": "NVDA", "limit": 3}, "get_trend_segments", ("stocks", "NVDA"), {"limit": 3}),
    ("news_briefs", {"market": "crypto", "symbol": "BTC", "limit": 2}, "get_recent_briefs", ("crypto", "BTC"), {"limit": 2}),
    ("news_briefs", {"market": "crypto", "symbol": "BTC", "keywords": "bitcoin"}, "search_briefs", ("crypto", "BTC"), {"keywords": "bitcoin", "limit": 10}),
    ("sentiment_history", {"market": "crypto", "symbol": "BNB", "limit": 60}, "get_sentiment_history", ("crypto", "BNB"), {"limit": 60}),
    ("analysis", {"symbol": "BTC"}, "get_instrument_analysis", ("BTC",), {}),
    ("market_summary", {}, "get_market_summary", (), {}),
    ("backtest_summary", {"symbol": "BTC", "strategy": "conservative", "years": 3, "fill": "next_open"}, "get_backtest_summary", ("BTC", "conservative"), {"years": 3, "fill": "next_open"}),
    ("current_action", {"symbol": "ETH"}, "get_current_action", ("ETH", "aggressive"), {}),
    ("corporate_actions", {"market": "stocks", "symbol": "AAPL", "start": "2020-01-01"}, "get_corporate_actions", ("stocks", "AAPL"), {"start": date(2020, 1, 1), "end": None}),
    ("recommendations", {"min_score": 0}, "get_recommendations", (), {"strategy": "aggressive", "limit": 10, "min_score": 0.0}),
    ("data_status", {"market": "stocks", "start": "2026-02-01", "end": "2026-02-10"}, "data_status", ("stocks",), {"start": date(2026, 2, 1), "end": date(2026, 2, 10)}),
]  # fmt: skip
"""Tool, its arguments, and the SDK call that must give the same data (the tool's defaults spelled out)."""
FREE_TOOLS = {"data_status"}
"""Tools whose operation costs 0 tokens with a valid key."""


def stdio(api: ServedApi, key: str) -> StdioServerParameters:
    env = {**api.env, "MI_API_KEY": key, "MI_API_URL": api.base}
    return StdioServerParameters(command=MI, args=["mcp"], env=env)


def costs_in_words(operation: str) -> str:
    """How a description must state the operation's cost, read here from the raw configuration."""
    rule = load_config().costs[operation]
    if isinstance(rule, int):
        return f"{operation}: {rule} token"
    tokens = [step[1] for step in rule.steps] + [rule.otherwise]
    return f"{operation}: {min(tokens)} to {max(tokens)} tokens"


def test_every_tool_is_offered_with_the_token_cost_of_each_operation_it_calls(
    served_api: ServedApi,
) -> None:
    """Tool descriptions state their cost from the one metering configuration."""

    async def listed() -> dict[str, str]:
        async with Client(stdio(served_api, "unused-for-listing")) as agent:
            return {tool.name: tool.description or "" for tool in (await agent.list_tools()).tools}

    tools = asyncio.run(listed())
    assert set(tools) == set(TOOL_OPERATIONS)
    for name, operations in TOOL_OPERATIONS.items():
        for operation in operations:
            assert costs_in_words(operation) in tools[name], (name, tools[name])


def test_each_tool_answers_the_api_data_metered_on_the_users_key(served_api: ServedApi) -> None:
    """Each tool call is one API call on MI_API_KEY: its data is what the SDK gets for the same
    request, and the key's balance falls by exactly the cost the response reported."""
    key = served_api.new_key("sandbox")

    async def call_all() -> list[dict[str, Any]]:
        async with Client(stdio(served_api, key)) as agent:
            results = []
            for tool, arguments, *_ in CALLS:
                result = await agent.call_tool(tool, arguments)
                assert not result.is_error, (tool, result.content)
                results.append(result.structured_content)
            return results

    results = asyncio.run(call_all())
    with ApiClient(served_api.new_key("internal"), base_url=served_api.base) as sdk:
        for (tool, _, method, args, kwargs), result in zip(CALLS, results, strict=True):
            expected = msgspec.to_builtins(getattr(sdk, method)(*args, **kwargs))
            assert result["data"] == expected, tool
    remaining = 3000
    for (tool, *_), result in zip(CALLS, results, strict=True):
        tokens = result["tokens"]
        assert (tokens["cost"] == 0) if tool in FREE_TOOLS else (tokens["cost"] >= 1), tool
        remaining -= tokens["cost"]
        assert tokens["remaining"] == remaining, tool


def test_every_tool_says_its_data_version_and_answers_as_of_it(served_api: ServedApi) -> None:
    """Rule (decisions.md, Point in time): a tool's result names the data version that answered
    (`source`), and the same tool with that `as_of` answers the same data."""
    key = served_api.new_key("internal")

    async def call_twice() -> tuple[dict[str, Any], dict[str, Any], bool]:
        async with Client(stdio(served_api, key)) as agent:
            arguments = {"market": "crypto", "symbol": "BTC", "limit": 5}
            now = (await agent.call_tool("price_history", arguments)).structured_content
            assert now is not None
            version = now["source"]["version"]
            then = await agent.call_tool("price_history", {**arguments, "as_of": version})
            before = await agent.call_tool(
                "price_history", {**arguments, "as_of": "2001-01-01T00:00:00Z"}
            )
            assert then.structured_content is not None
            return now, then.structured_content, before.is_error

    now, then, refused = asyncio.run(call_twice())
    assert now["source"]["version"] is not None
    assert now["source"]["published"].endswith("Z")
    assert then["data"] == now["data"]
    assert then["source"] == now["source"]
    assert refused  # before the oldest retained version: a tool error naming it


def test_an_api_error_is_a_tool_error_the_agent_can_act_on(served_api: ServedApi) -> None:
    async def fail() -> tuple[bool, str, dict[str, Any]]:
        async with Client(stdio(served_api, served_api.new_key("sandbox"))) as agent:
            missing = await agent.call_tool("indicators", {"market": "crypto", "symbol": "NOPE"})
            balance = await agent.call_tool("balance", {})
            text = missing.content[0].text  # type: ignore[union-attr]
            return missing.is_error, text, balance.structured_content

    is_error, text, balance = asyncio.run(fail())
    assert is_error
    assert "NotFound (404)" in text
    assert "list_instruments" in text
    assert balance["data"] == {"text": "pong"}
    # The 404 cost its 1 token net, the balance call 1: the key paid for both, as any client.
    assert balance["tokens"]["remaining"] == 2998


def call_tool_on_stdio(env: dict[str, str], tool: str, errlog: Path) -> tuple[bool, str]:
    """One tool call of `mi mcp` on stdio; the server's stderr kept in `errlog`."""

    async def call() -> tuple[bool, str]:
        with errlog.open("w") as log:
            params = StdioServerParameters(command=MI, args=["mcp"], env=env)
            async with Client(stdio_client(params, errlog=log)) as agent:
                result = await agent.call_tool(tool, {"market": "crypto"})
                return bool(result.is_error), result.content[0].text  # type: ignore[union-attr]

    return asyncio.run(call())


def test_with_the_api_down_a_tool_says_where_it_looked_and_logs_no_traceback(
    served_api: ServedApi, tmp_path: Path
) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    env = {**served_api.env, "MI_API_KEY": served_api.new_key("sandbox"), "MI_API_URL": down}
    is_error, text = call_tool_on_stdio(env, "list_instruments", tmp_path / "stderr")
    assert is_error
    assert f"cannot reach the Market Intelligence API at {down}" in text
    assert "`mi serve`" in text
    assert "Traceback" not in (tmp_path / "stderr").read_text()


def test_a_refused_key_is_a_tool_error_naming_the_key(
    served_api: ServedApi, tmp_path: Path
) -> None:
    env = {**served_api.env, "MI_API_KEY": "mi_live_notakeyatall00", "MI_API_URL": served_api.base}
    is_error, text = call_tool_on_stdio(env, "list_instruments", tmp_path / "stderr")
    assert is_error
    assert "Unauthorized (401)" in text
    assert "does not accept the API key" in text
    assert "MI_API_KEY" in text
    assert "Traceback" not in (tmp_path / "stderr").read_text()


def test_mi_mcp_without_a_key_exits_2_naming_the_variable(served_api: ServedApi) -> None:
    env = {name: value for name, value in served_api.env.items() if name != "MI_API_KEY"}
    done = subprocess.run(
        [MI, "mcp"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    assert "MI_API_KEY" in done.stderr


def mcp_over_http(served_api: ServedApi, host: str = "127.0.0.1") -> tuple[subprocess.Popen[bytes], int]:  # fmt: skip
    """`mi mcp --port` calling the served API, with no key of its own (MI_API_KEY unset)."""
    port = free_port()
    env = {k: v for k, v in served_api.env.items() if k != "MI_API_KEY"}
    server = subprocess.Popen(
        [MI, "mcp", "--port", str(port), "--host", host],
        env={**env, "MI_API_URL": served_api.base},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    wait_for_port(port, server)
    return server, port


def call_tool_over_http(port: int, key: str, tool: str, arguments: dict[str, Any]) -> tuple[set[str], Any]:  # fmt: skip
    async def over_http() -> tuple[set[str], Any]:
        headers = {"Authorization": f"Bearer {key}"}
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
            transport = streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)
            async with Client(transport) as agent:
                names = {t.name for t in (await agent.list_tools()).tools}
                result = await agent.call_tool(tool, arguments)
                return names, result.structured_content

    return asyncio.run(over_http())


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def test_mi_mcp_over_http_serves_each_caller_on_its_own_key(served_api: ServedApi) -> None:
    """decisions.md, Operations: the MCP server over HTTP requires credentials. A caller's bearer
    token is its own API key, and its tool calls are metered on it (today an uncredentialed
    tools/call spent the operator's key)."""
    server, port = mcp_over_http(served_api)
    try:
        key = served_api.new_key("sandbox")
        names, result = call_tool_over_http(port, key, "list_instruments", {"market": "crypto"})
        with ApiClient(key, base_url=served_api.base) as api:
            api.ping()
            remaining = api.balance.remaining if api.balance else None
    finally:
        stop_group(server)
    assert names == set(TOOL_OPERATIONS)
    assert result["data"] == {"symbols": ["BNB", "BTC", "ETH"]}
    # The verification ping (1), list-symbols (1) and this test's ping (1), all on the caller's key.
    assert remaining == 3000 - 3


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
@pytest.mark.parametrize("authorization", [None, "Bearer nope", "Bearer mi_live_0123456789_unknownkeyunknownkey"])  # fmt: skip
def test_mi_mcp_over_http_refuses_a_request_without_a_valid_key(
    served_api: ServedApi, host: str, authorization: str | None
) -> None:
    """No key, a malformed one or one the API does not know: 401 before any tool runs, on loopback
    and on every address alike."""
    server, port = mcp_over_http(served_api, host)
    try:
        headers = dict(MCP_HEADERS, **({"Authorization": authorization} if authorization else {}))
        answer = httpx.post(
            f"http://127.0.0.1:{port}/mcp", json=INITIALIZE, headers=headers, timeout=30
        )
    finally:
        stop_group(server)
    assert answer.status_code == 401
    assert "www-authenticate" in answer.headers


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, "mi mcp --port exited"
        try:
            httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    pytest.fail(f"mi mcp not listening on {port} within {timeout}s")
