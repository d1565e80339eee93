"""`mi mcp`: the API as MCP tools for LLM agents, each a metered call made with the user's key."""

from __future__ import annotations

import os
from collections.abc import Awaitable
from datetime import date
from typing import Annotated, Any

import click
import msgspec
from market_intelligence import (
    ApiError,
    AsyncClient,
    Market,
    RateLimited,
    Resource,
    Strategy,
    TokenLimit,
)
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from api.metering.config import MeteringConfig, cost_text
from mi.commands.keys import metering_config

API_KEY_ENV = "MI_API_KEY"
API_URL_ENV = "MI_API_URL"
DEFAULT_API_URL = "http://127.0.0.1:8000"

INSTRUCTIONS = """\
Market intelligence for crypto, forex, commodities and stocks: prices, technical indicators,
trends, news briefs with sentiment, written analyses, strategy backtests and recommendations.
Every tool is a metered call of the Market Intelligence API on the user's key: its description
states what it costs in tokens, and every result carries the key's balance after the call
(`tokens`). Prefer narrow requests (a `limit`) where a full series is not needed. Symbols are
matched in any case; list_instruments gives a market's symbols. Crypto has trend history,
analyses and backtests; forex, commodities and stocks have the current trend and its segments."""

SymbolArg = Annotated[str, Field(description="Instrument symbol, e.g. BTC, EURUSD, GOLD, AAPL")]
CoinArg = Annotated[str, Field(description="Crypto symbol, e.g. BTC, ETH")]
DayArg = Annotated[date | None, Field(description="A day, YYYY-MM-DD (inclusive)")]


def _describe(summary: str, config: MeteringConfig, *operations: str) -> str:
    costs = "; ".join(f"{operation}: {cost_text(config, operation)}" for operation in operations)
    return f"{summary}\nCost: {costs}."


class MarketTools:
    """The tools, bound to one API client (the user's key and the API's address)."""

    def __init__(self, client: AsyncClient) -> None:
        self.client = client

    async def _answer(self, pending: Awaitable[Resource]) -> dict[str, Any]:
        """The resource as JSON and the key's balance after the call; API errors as tool errors
        an agent can act on."""
        try:
            resource = await pending
        except ApiError as failure:
            raise ToolError(_advice(failure)) from failure
        balance = self.client.balance
        return {
            "data": msgspec.to_builtins(resource),
            "tokens": None if balance is None else msgspec.to_builtins(balance),
        }

    async def list_instruments(
        self, market: Market, limit: Annotated[int, Field(ge=1, le=1000)] = 100, skip: int = 0
    ) -> dict[str, Any]:
        return await self._answer(self.client.list_symbols(market, limit=limit, skip=skip))

    async def search_instruments(
        self, query: Annotated[str, Field(description="Part of a symbol or a name")]
    ) -> dict[str, Any]:
        return await self._answer(self.client.search_instruments("crypto", query))

    async def instrument_scorecard(self, market: Market, symbol: SymbolArg) -> dict[str, Any]:
        return await self._answer(self.client.scorecard(market, symbol))

    async def price_history(
        self,
        market: Market,
        symbol: SymbolArg,
        limit: Annotated[int | None, Field(ge=1, description="Newest N days at most")] = 90,
        start: DayArg = None,
        end: DayArg = None,
    ) -> dict[str, Any]:
        call = self.client.get_price_history(market, symbol, limit=limit, start=start, end=end)
        return await self._answer(call)

    async def indicators(
        self,
        market: Market,
        symbol: SymbolArg,
        period: Annotated[int, Field(ge=2, le=365, description="Window in days")] = 30,
    ) -> dict[str, Any]:
        return await self._answer(self.client.get_indicators(market, symbol, period=period))

    async def trend(
        self,
        market: Market,
        symbol: SymbolArg,
        limit: Annotated[int, Field(ge=1, le=5000, description="Crypto: days of history")] = 30,
    ) -> dict[str, Any]:
        if market == "crypto":
            return await self._answer(self.client.get_trend_history(symbol, limit))
        return await self._answer(self.client.get_current_trend(market, symbol))

    async def trend_segments(
        self,
        market: Market,
        symbol: SymbolArg,
        limit: Annotated[int, Field(ge=1, le=500)] = 10,
    ) -> dict[str, Any]:
        return await self._answer(self.client.get_trend_segments(market, symbol, limit=limit))

    async def news_briefs(
        self,
        market: Market,
        symbol: SymbolArg,
        limit: Annotated[int, Field(ge=1, le=500)] = 10,
        keywords: Annotated[
            str | None, Field(description="Words every title must hold (past 24 hours only)")
        ] = None,
    ) -> dict[str, Any]:
        if keywords:
            call = self.client.search_briefs(market, symbol, keywords=keywords, limit=limit)
            return await self._answer(call)
        return await self._answer(self.client.get_recent_briefs(market, symbol, limit=limit))

    async def sentiment_history(
        self,
        market: Market,
        symbol: SymbolArg,
        limit: Annotated[int, Field(ge=1, le=3650, description="Days")] = 30,
    ) -> dict[str, Any]:
        return await self._answer(self.client.get_sentiment_history(market, symbol, limit=limit))

    async def analysis(self, symbol: CoinArg) -> dict[str, Any]:
        return await self._answer(self.client.get_instrument_analysis(symbol))

    async def market_summary(self) -> dict[str, Any]:
        return await self._answer(self.client.get_market_summary())

    async def backtest_summary(
        self,
        symbol: CoinArg,
        strategy: Strategy = "aggressive",
        years: Annotated[int, Field(ge=1, le=20)] = 2,
    ) -> dict[str, Any]:
        return await self._answer(self.client.get_backtest_summary(symbol, strategy, years=years))

    async def current_action(
        self, symbol: CoinArg, strategy: Strategy = "aggressive"
    ) -> dict[str, Any]:
        return await self._answer(self.client.get_current_action(symbol, strategy))

    async def recommendations(
        self,
        strategy: Strategy = "aggressive",
        limit: Annotated[int, Field(ge=1, le=100)] = 10,
        min_score: Annotated[float, Field(ge=0, le=5)] = 3.5,
    ) -> dict[str, Any]:
        call = self.client.get_recommendations(strategy=strategy, limit=limit, min_score=min_score)
        return await self._answer(call)

    async def balance(self) -> dict[str, Any]:
        return await self._answer(self.client.ping())


TOOLS: dict[str, tuple[str, tuple[str, ...]]] = {
    "list_instruments": ("The symbols of a market, sorted, a page at a time.", ("list-symbols",)),
    "search_instruments": ("Crypto instruments whose symbol or name matches a query (at most 5).", ("search-instruments",)),
    "instrument_scorecard": ("An instrument's technical scorecard: action, score 0 to 5, profit against buy-and-hold, trend.", ("scorecard",)),
    "price_history": ("Daily closing prices and volumes, oldest first: the newest `limit` days, or from `start` to `end`.", ("get-price-history",)),
    "indicators": ("Technical indicators over `period` days: SMA, EMA, RSI, MACD, Bollinger Bands, stochastic, ATR, VWAP, OBV, Fibonacci levels, ADX, ROC.", ("get-indicators",)),
    "trend": ("The trend: for crypto the last `limit` daily trend points (direction and strength), for forex, commodities and stocks the running trend episode.", ("get-trend-history", "get-current-trend")),
    "trend_segments": ("Trend episodes (forex, commodities, stocks), newest first, with their gains, losses and durations.", ("get-trend-segments",)),
    "news_briefs": ("News briefs about a symbol with sentiment (-5 to +5), newest first; with `keywords`, only titles holding them in the past 24 hours.", ("get-recent-briefs", "search-briefs")),
    "sentiment_history": ("Daily counts of positive, neutral and negative briefs about a symbol, newest first.", ("get-sentiment-history",)),
    "analysis": ("The newest written analysis of a coin.", ("get-instrument-analysis",)),
    "market_summary": ("Today's written summary of the crypto market.", ("get-market-summary",)),
    "backtest_summary": ("A strategy's backtest of a coin over `years`: returns, trades, win rate, against buy-and-hold.", ("get-backtest-summary",)),
    "current_action": ("What a strategy does on a coin on the latest day: Buy, Sell, Hold or Stay.", ("get-current-action",)),
    "recommendations": ("Coins a strategy recommends: score at least `min_score` (0 to 5), best first.", ("get-recommendations",)),
    "balance": ("The key's token balance: spent and remaining this month and today.", ("ping",)),
}  # fmt: skip
"""Tool name (a method of MarketTools) -> what it gives, the API operations it may call."""


def build_server(client: AsyncClient, config: MeteringConfig) -> MCPServer:
    """The MCP server: one tool per entry of TOOLS, its cost read from `config`."""
    # Warnings only: at INFO the SDK would log every tool call and HTTP request to stderr.
    server: MCPServer = MCPServer(
        "market-intelligence", instructions=INSTRUCTIONS, log_level="WARNING"
    )
    tools = MarketTools(client)
    for name, (summary, operations) in TOOLS.items():
        server.add_tool(
            getattr(tools, name), name=name, description=_describe(summary, config, *operations)
        )
    return server


def _advice(failure: ApiError) -> str:
    """The API's message and what an agent can do about it."""
    said = f"{type(failure).__name__} ({failure.status_code}): {failure.message}"
    if isinstance(failure, TokenLimit):
        return f"{said}. The {failure.limit_type} token budget is spent; more at {failure.upgrade_url}."
    if isinstance(failure, RateLimited) and failure.retry_after is not None:
        return f"{said}. Retry after {failure.retry_after:.0f} seconds."
    if failure.status_code == 404:
        return f"{said}. Check the market and the symbol (list_instruments)."
    return said


@click.command("mcp")
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    help="Serve streamable HTTP on this port (path /mcp) instead of stdio.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address for --port.")
def mcp(port: int | None, host: str) -> None:
    """Serve the API as MCP tools for LLM agents (stdio, or streamable HTTP with --port).

    Calls the API at MI_API_URL (default http://127.0.0.1:8000) with the key in MI_API_KEY, so
    every tool call is metered on that key.
    """
    key = os.environ.get(API_KEY_ENV)
    if not key:
        raise click.ClickException(f"set {API_KEY_ENV} to an API key (mi keys create --plan ...)")
    # The client lives as long as the process: one event loop serves every session.
    client = AsyncClient(key, base_url=os.environ.get(API_URL_ENV) or DEFAULT_API_URL)
    server = build_server(client, metering_config())
    if port is None:
        server.run("stdio")
    else:
        click.echo(f"MCP server on http://{host}:{port}/mcp", err=True)
        server.run("streamable-http", host=host, port=port)
