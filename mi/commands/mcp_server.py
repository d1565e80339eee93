"""`mi mcp`: the API as MCP tools for LLM agents, each a metered call made with the user's key."""

from __future__ import annotations

import logging
import os
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from datetime import date
from typing import Annotated, Any

import click
import httpx
from market_intelligence import (
    Adjustment,
    ApiError,
    AsyncClient,
    BacktestSummary,
    BriefList,
    CorporateActionList,
    CurrentAction,
    CurrentTrend,
    DataStatus,
    Fill,
    Indicators,
    InstrumentAnalysis,
    InstrumentSearch,
    Market,
    MarketIntelligenceError,
    MarketSummary,
    Ping,
    PriceHistory,
    RateLimited,
    RecommendationList,
    Resource,
    Scorecard,
    SentimentHistory,
    Strategy,
    SymbolList,
    TokenLimit,
    TrendHistory,
    TrendSegments,
    Unauthorized,
)
from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult
from pydantic import AnyHttpUrl, Field

from api.metering.config import MeteringConfig, cost_text
from api.metering.model import key_id_of
from api.params import (
    ADJUSTMENT,
    BACKTEST_YEARS,
    BRIEFS_LIMIT,
    FILL,
    INDICATOR_PERIOD,
    PRICE_POINTS_LIMIT,
    RECOMMENDATIONS_LIMIT,
    SENTIMENT_LIMIT,
    SYMBOLS_LIMIT,
    TREND_HISTORY_LIMIT,
    TREND_SEGMENTS_LIMIT,
    Bounds,
)
from mi.commands.keys import metering_config
from mi.commands.mcp_results import RESULT_URI, ResultStore, Source, output_schema, tool_result
from pipelines.platform.outbound import is_loopback

logger = logging.getLogger(__name__)

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
DELISTED_MEANING = "true: also the instruments delisted by then (default: only those listed)"
DayArg = Annotated[date | None, Field(description="A day, YYYY-MM-DD (inclusive)")]
AsOfArg = Annotated[
    str | None,
    Field(
        description="Answer as the API did then: an RFC 3339 instant (2026-03-02T09:00:00Z) or "
        "a data version id from an earlier result's `source.version`; omit for now"
    ),
]


def within(bounds: Bounds[Any], description: str | None = None) -> Any:
    """A tool argument's bounds, the API's own (`api.params`): an agent is refused what the API
    would clamp, and told the range."""
    return Field(ge=bounds.low, le=bounds.high, description=description or bounds.meaning)


def _describe(summary: str, config: MeteringConfig, *operations: str) -> str:
    costs = "; ".join(f"{operation}: {cost_text(config, operation)}" for operation in operations)
    return f"{summary}\nCost: {costs}."


class MarketTools:
    """The tools, each call made by the API client of the caller (`clients`: on stdio the one
    client of MI_API_KEY; over HTTP the client of the key the request authenticated with)."""

    def __init__(self, clients: Callable[[], AsyncClient], results: ResultStore) -> None:
        self.clients = clients
        self.results = results

    @property
    def client(self) -> AsyncClient:
        return self.clients()

    def at(self, as_of: str | None) -> AsyncClient:
        """The caller's client, answering as of `as_of` when given (decisions.md, Point in time)."""
        return self.client if as_of is None else self.client.at(as_of)

    async def _answer(
        self, client: AsyncClient, tool: str, pending: Awaitable[Resource]
    ) -> CallToolResult:
        """The resource and the key's balance after the call (`mcp_results`: a large one as a
        preview and a link); API errors as tool errors an agent can act on."""
        try:
            resource = await pending
        except ApiError as failure:
            raise ToolError(_advice(failure)) from failure
        except MarketIntelligenceError as failure:  # the API unreachable: its URL, what to check
            raise ToolError(str(failure)) from failure
        source = Source(client.data_version, client.data_published)
        return tool_result(tool, resource, client.balance, self.results, source)

    async def list_instruments(
        self,
        market: Market,
        limit: Annotated[int, within(SYMBOLS_LIMIT)] = SYMBOLS_LIMIT.default,
        skip: int = 0,
        include_delisted: Annotated[bool, Field(description=DELISTED_MEANING)] = False,
        as_of: AsOfArg = None,
    ) -> CallToolResult:
        client = self.at(as_of)
        call = client.list_symbols(
            market, limit=limit, skip=skip, include_delisted=include_delisted
        )
        return await self._answer(client, "list_instruments", call)

    async def search_instruments(
        self,
        query: Annotated[str, Field(description="Part of a symbol or a name")],
        include_delisted: Annotated[bool, Field(description=DELISTED_MEANING)] = False,
        as_of: AsOfArg = None,
    ) -> CallToolResult:
        client = self.at(as_of)
        call = client.search_instruments("crypto", query, include_delisted=include_delisted)
        return await self._answer(client, "search_instruments", call)

    async def instrument_scorecard(
        self, market: Market, symbol: SymbolArg, as_of: AsOfArg = None
    ) -> CallToolResult:
        client = self.at(as_of)
        return await self._answer(client, "instrument_scorecard", client.scorecard(market, symbol))

    async def price_history(
        self,
        market: Market,
        symbol: SymbolArg,
        limit: Annotated[int | None, within(PRICE_POINTS_LIMIT, "Newest N days at most")] = 90,
        start: DayArg = None,
        end: DayArg = None,
        adjustment: Annotated[Adjustment, Field(description=ADJUSTMENT.meaning)] = "split",
        as_of: AsOfArg = None,
    ) -> CallToolResult:
        client = self.at(as_of)
        call = client.get_price_history(
            market, symbol, limit=limit, start=start, end=end, adjustment=adjustment
        )
        return await self._answer(client, "price_history", call)

    async def indicators(
        self,
        market: Market,
        symbol: SymbolArg,
        period: Annotated[
            int, within(INDICATOR_PERIOD, "Window in days")
        ] = INDICATOR_PERIOD.default,
        as_of: AsOfArg = None,
    ) -> CallToolResult:
        client = self.at(as_of)
        return await self._answer(
            client, "indicators", client.get_indicators(market, symbol, period=period)
        )

    async def trend(
        self,
        market: Market,
        symbol: SymbolArg,
        limit: Annotated[int, within(TREND_HISTORY_LIMIT, "Crypto: days of history")] = 30,
        as_of: AsOfArg = None,
    ) -> CallToolResult:
        client = self.at(as_of)
        if market == "crypto":
            return await self._answer(client, "trend", client.get_trend_history(symbol, limit))
        return await self._answer(client, "trend", client.get_current_trend(market, symbol))

    async def trend_segments(
        self,
        market: Market,
        symbol: SymbolArg,
        limit: Annotated[int, within(TREND_SEGMENTS_LIMIT)] = 10,
        as_of: AsOfArg = None,
    ) -> CallToolResult:
        client = self.at(as_of)
        return await self._answer(
            client, "trend_segments", client.get_trend_segments(market, symbol, limit=limit)
        )

    async def news_briefs(
        self,
        market: Market,
        symbol: SymbolArg,
        limit: Annotated[int, within(BRIEFS_LIMIT)] = BRIEFS_LIMIT.default,
        keywords: Annotated[
            str | None, Field(description="Words every title must hold (past 24 hours only)")
        ] = None,
        as_of: AsOfArg = None,
    ) -> CallToolResult:
        client = self.at(as_of)
        if keywords:
            call = client.search_briefs(market, symbol, keywords=keywords, limit=limit)
            return await self._answer(client, "news_briefs", call)
        return await self._answer(
            client, "news_briefs", client.get_recent_briefs(market, symbol, limit=limit)
        )

    async def sentiment_history(
        self,
        market: Market,
        symbol: SymbolArg,
        limit: Annotated[int, within(SENTIMENT_LIMIT, "Days")] = SENTIMENT_LIMIT.default,
        as_of: AsOfArg = None,
    ) -> CallToolResult:
        client = self.at(as_of)
        return await self._answer(
            client, "sentiment_history", client.get_sentiment_history(market, symbol, limit=limit)
        )

    async def analysis(self, symbol: CoinArg, as_of: AsOfArg = None) -> CallToolResult:
        client = self.at(as_of)
        return await self._answer(client, "analysis", client.get_instrument_analysis(symbol))

    async def market_summary(self, as_of: AsOfArg = None) -> CallToolResult:
        client = self.at(as_of)
        return await self._answer(client, "market_summary", client.get_market_summary())

    async def backtest_summary(
        self,
        symbol: CoinArg,
        strategy: Strategy = "aggressive",
        years: Annotated[int, within(BACKTEST_YEARS)] = BACKTEST_YEARS.default,
        fill: Annotated[Fill, Field(description=FILL.meaning)] = "close",
        as_of: AsOfArg = None,
    ) -> CallToolResult:
        client = self.at(as_of)
        call = client.get_backtest_summary(symbol, strategy, years=years, fill=fill)
        return await self._answer(client, "backtest_summary", call)

    async def current_action(
        self, symbol: CoinArg, strategy: Strategy = "aggressive", as_of: AsOfArg = None
    ) -> CallToolResult:
        client = self.at(as_of)
        return await self._answer(
            client, "current_action", client.get_current_action(symbol, strategy)
        )

    async def recommendations(
        self,
        strategy: Strategy = "aggressive",
        limit: Annotated[int, within(RECOMMENDATIONS_LIMIT)] = RECOMMENDATIONS_LIMIT.default,
        min_score: Annotated[float, Field(ge=0, le=5)] = 3.5,
        as_of: AsOfArg = None,
    ) -> CallToolResult:
        client = self.at(as_of)
        call = client.get_recommendations(strategy=strategy, limit=limit, min_score=min_score)
        return await self._answer(client, "recommendations", call)

    async def data_status(
        self, market: Market, start: DayArg = None, end: DayArg = None, as_of: AsOfArg = None
    ) -> CallToolResult:
        client = self.at(as_of)
        call = client.data_status(market, start=start, end=end)
        return await self._answer(client, "data_status", call)

    async def corporate_actions(
        self,
        market: Market,
        symbol: SymbolArg,
        start: DayArg = None,
        end: DayArg = None,
        as_of: AsOfArg = None,
    ) -> CallToolResult:
        client = self.at(as_of)
        call = client.get_corporate_actions(market, symbol, start=start, end=end)
        return await self._answer(client, "corporate_actions", call)

    async def balance(self) -> CallToolResult:
        return await self._answer(self.client, "balance", self.client.ping())


TOOLS: dict[str, tuple[str, tuple[str, ...], tuple[type[Resource], ...]]] = {
    "list_instruments": ("The symbols of a market, sorted, a page at a time.", ("list-symbols",), (SymbolList,)),
    "search_instruments": ("Crypto instruments whose symbol or name matches a query (at most 5).", ("search-instruments",), (InstrumentSearch,)),
    "instrument_scorecard": ("An instrument's technical scorecard: action, score 0 to 5, profit against buy-and-hold, trend.", ("scorecard",), (Scorecard,)),
    "price_history": ("Daily closing prices and volumes, oldest first: the newest `limit` days, or from `start` to `end`.", ("get-price-history",), (PriceHistory,)),
    "indicators": ("Technical indicators over `period` days: SMA, EMA, RSI, MACD, Bollinger Bands, stochastic, ATR, VWAP, OBV, Fibonacci levels, ADX, ROC.", ("get-indicators",), (Indicators,)),
    "trend": ("The trend: for crypto the last `limit` daily trend points (direction and strength), for forex, commodities and stocks the running trend episode.", ("get-trend-history", "get-current-trend"), (TrendHistory, CurrentTrend)),
    "trend_segments": ("Trend episodes (forex, commodities, stocks), newest first, with their gains, losses and durations.", ("get-trend-segments",), (TrendSegments,)),
    "news_briefs": ("News briefs about a symbol with sentiment (-5 to +5), newest first; with `keywords`, only titles holding them in the past 24 hours.", ("get-recent-briefs", "search-briefs"), (BriefList,)),
    "sentiment_history": ("Daily counts of positive, neutral and negative briefs about a symbol, newest first.", ("get-sentiment-history",), (SentimentHistory,)),
    "analysis": ("The newest written analysis of a coin.", ("get-instrument-analysis",), (InstrumentAnalysis,)),
    "market_summary": ("Today's written summary of the crypto market.", ("get-market-summary",), (MarketSummary,)),
    "backtest_summary": ("A strategy's backtest of a coin over `years`: returns, trades, win rate, against buy-and-hold.", ("get-backtest-summary",), (BacktestSummary,)),
    "current_action": ("What a strategy does on a coin on the latest day: Buy, Sell, Hold or Stay.", ("get-current-action",), (CurrentAction,)),
    "recommendations": ("Coins a strategy recommends: score at least `min_score` (0 to 5), best first.", ("get-recommendations",), (RecommendationList,)),
    "data_status": ("Each day of a market from `start` to `end` (default the last 30, at most 366), newest first: available, degraded (a warning check failed), pending (not due yet) or missing, with the failed checks.", ("data-status",), (DataStatus,)),
    "corporate_actions": ("An instrument's splits (ratio: new shares per old), cash dividends (amount per share), listing and delisting from `start` to `end`, oldest first.", ("get-corporate-actions",), (CorporateActionList,)),
    "balance": ("The key's token balance: spent and remaining this month and today.", ("ping",), (Ping,)),
}  # fmt: skip
"""Tool name (a method of MarketTools) -> what it gives, the API operations it may call, the
resources those answer (its output schema)."""


VERIFIED_SECONDS = 300.0
"""How long a key an HTTP client authenticated with is trusted before the API is asked again."""
CLIENTS_KEPT = 256
"""API clients kept for the keys of HTTP callers (least recently used closed first)."""


class ApiKeyVerifier:
    """MCP over HTTP: a caller's bearer token is its own Market Intelligence API key, and its
    tool calls are metered on that key (the server holds none of its own: nobody spends the
    operator's key). A key is verified by the API itself, with a ping (1 token) at most once per
    `VERIFIED_SECONDS`; a key the API refuses, or one that is not even well formed, is a 401 from
    the mcp SDK's bearer middleware before any tool runs."""

    def __init__(self, api_url: str, recheck_seconds: float = VERIFIED_SECONDS) -> None:
        self.api_url = api_url
        self.recheck_seconds = recheck_seconds
        self._clients: OrderedDict[str, AsyncClient] = OrderedDict()
        self._verified: dict[str, float] = {}

    async def verify_token(self, token: str) -> AccessToken | None:
        key_id = key_id_of(token)
        if key_id is None:
            return None
        if self._verified.get(token, 0.0) <= time.monotonic():
            try:
                await self.client_of(token).ping()
            except Unauthorized:
                self._forget(token)
                return None
            except (ApiError, httpx.HTTPError) as failure:  # the API down: nothing can be served
                logger.warning("cannot verify an MCP caller's key with the API: %s", failure)
                return None
            self._verified[token] = time.monotonic() + self.recheck_seconds
        return AccessToken(token=token, client_id=key_id, scopes=[])

    def client_of(self, token: str) -> AsyncClient:
        client = self._clients.get(token)
        if client is None:
            client = self._clients[token] = AsyncClient(token, base_url=self.api_url)
            while len(self._clients) > CLIENTS_KEPT:
                evicted, _ = self._clients.popitem(last=False)
                self._verified.pop(evicted, None)
        self._clients.move_to_end(token)
        return client

    def caller(self) -> AsyncClient:
        """The client of the key the current HTTP request authenticated with."""
        access = get_access_token()
        if access is None:  # the bearer middleware lets no request through without one
            raise ToolError("Unauthorized: send your API key as 'Authorization: Bearer <key>'")
        return self.client_of(access.token)

    def _forget(self, token: str) -> None:
        self._verified.pop(token, None)
        self._clients.pop(token, None)


def build_server(
    clients: Callable[[], AsyncClient],
    config: MeteringConfig,
    *,
    verifier: ApiKeyVerifier | None = None,
    url: str | None = None,
) -> MCPServer:
    """The MCP server: one tool per entry of TOOLS, its cost read from `config`. With `verifier`
    (streamable HTTP at `url`) every request needs a bearer API key (the mcp SDK's auth)."""
    auth = None
    if verifier is not None:
        assert url is not None
        auth = AuthSettings(
            issuer_url=AnyHttpUrl(verifier.api_url),  # keys are the API's (`mi keys create`)
            resource_server_url=AnyHttpUrl(url),
            validate_token_resource=False,  # an API key names no resource; the API checks it
        )
    results = ResultStore()
    # Warnings only: at INFO the SDK would log every tool call and HTTP request to stderr.
    server: MCPServer = MCPServer(
        "market-intelligence",
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        token_verifier=verifier,
        auth=auth,
        tools=market_tools(MarketTools(clients, results), config),
    )

    @server.resource(
        RESULT_URI,
        name="result",
        description="The whole result of a tool call that was too large to return (its link).",
        mime_type="application/json",
    )
    def full_result(result_id: str) -> str:
        body = results.get(result_id)
        if body is None:
            raise ValueError("this result is no longer kept: call the tool again")
        return body.decode()

    return server


def market_tools(tools: MarketTools, config: MeteringConfig) -> list[Tool]:
    """One tool per entry of TOOLS, its cost read from `config`, its output schema declared.

    The tools build their own CallToolResult (a preview and a link when large), so the SDK derives
    no schema from their annotation: the API resources each answers are declared instead (the
    SDK's FuncMetadata fields are read live, so the schema set here is the one it publishes).
    """
    made = []
    for name, (summary, operations, answers) in TOOLS.items():
        description = _describe(summary, config, *operations)
        tool = Tool.from_function(getattr(tools, name), name=name, description=description)
        tool.fn_metadata.output_schema = output_schema(*answers)
        made.append(tool)
    return made


def _advice(failure: ApiError) -> str:
    """The API's message and what an agent can do about it."""
    said = f"{type(failure).__name__} ({failure.status_code}): {failure.message}"
    if isinstance(failure, TokenLimit):
        return f"{said}. The {failure.limit_type} token budget is spent; more at {failure.upgrade_url}."
    if isinstance(failure, Unauthorized):
        return (
            f"{said}. The API does not accept the API key this MCP server calls it with "
            f"({API_KEY_ENV} of `mi mcp`): set it to a valid key (`mi keys create --plan ...`) "
            "and restart the server."
        )
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
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    help="With a non-loopback --host: a Host header the server answers (name:port; repeatable).",
)
def mcp(port: int | None, host: str, allowed_hosts: tuple[str, ...]) -> None:
    """Serve the API as MCP tools for LLM agents (stdio, or streamable HTTP with --port).

    Calls the API at MI_API_URL (default http://127.0.0.1:8000). On stdio every tool call is
    metered on the key in MI_API_KEY. Over HTTP each caller authenticates with its own API key
    (`Authorization: Bearer <key>`), and its tool calls are metered on that key.
    """
    api_url = os.environ.get(API_URL_ENV) or DEFAULT_API_URL
    if port is None:
        key = os.environ.get(API_KEY_ENV)
        if not key:
            raise click.ClickException(
                f"set {API_KEY_ENV} to an API key (mi keys create --plan ...)"
            )
        # The client lives as long as the process: one event loop serves every session.
        client = AsyncClient(key, base_url=api_url)
        build_server(lambda: client, metering_config()).run("stdio")
        return
    url = f"http://{host}:{port}/mcp"
    verifier = ApiKeyVerifier(api_url)
    server = build_server(verifier.caller, metering_config(), verifier=verifier, url=url)
    security = None  # loopback: the SDK checks Host and Origin itself
    if not is_loopback(host) and allowed_hosts:
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=list(allowed_hosts)
        )
    click.echo(f"MCP server on {url} (callers authenticate with their API key)", err=True)
    server.run("streamable-http", host=host, port=port, transport_security=security)
