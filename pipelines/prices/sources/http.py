"""HTTP plumbing shared by the web connectors: timeouts, bounded retries with backoff, clear errors."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

import httpx
import polars as pl

from pipelines.prices.sources.base import (
    RAW_INSTRUMENTS_SCHEMA,
    PriceSource,
    RawInstruments,
    SourceError,
)

RETRYABLE = frozenset({429, 500, 502, 503, 504})


@dataclass(frozen=True)
class HttpPolicy:
    """How hard to try: per-request timeout, retries after the first attempt, exponential backoff."""

    timeout_seconds: float = 30.0
    max_retries: int = 4
    backoff_seconds: float = 1.0
    max_backoff_seconds: float = 60.0


@dataclass
class HttpFetcher:
    """GET with retries on 429/5xx and transport errors; any other failure raises `SourceError`."""

    policy: HttpPolicy = field(default_factory=HttpPolicy)
    sleep: Callable[[float], None] = time.sleep
    user_agent: str = "market-intelligence/0.1 (+connectors)"

    def get(
        self, url: str, params: Mapping[str, str | int], ok: Collection[int] = (200,)
    ) -> httpx.Response:
        headers = {"User-Agent": self.user_agent}
        with httpx.Client(timeout=self.policy.timeout_seconds, headers=headers) as client:
            for attempt in range(self.policy.max_retries + 1):
                last_try = attempt == self.policy.max_retries
                try:
                    response = client.get(url, params=dict(params))
                except httpx.TransportError as error:
                    if last_try:
                        raise SourceError(f"GET {url} failed: {error!r}") from error
                    self.sleep(self._delay(attempt, None))
                    continue
                if response.status_code in ok:
                    return response
                if response.status_code not in RETRYABLE or last_try:
                    raise SourceError(_describe(response, attempt + 1))
                self.sleep(self._delay(attempt, response.headers.get("Retry-After")))
        raise AssertionError("unreachable: the loop returns or raises")

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        """Honour the server's Retry-After (seconds) when given, else back off exponentially."""
        if retry_after is not None and retry_after.strip().isdigit():
            return min(float(retry_after), self.policy.max_backoff_seconds)
        return min(self.policy.backoff_seconds * 2**attempt, self.policy.max_backoff_seconds)


def _describe(response: httpx.Response, attempts: int) -> str:
    body = response.text[:300].replace("\n", " ")
    return f"GET {response.url} failed with HTTP {response.status_code} after {attempts} attempt(s): {body}"


@dataclass(frozen=True)
class ListedInstrument:
    """An instrument named in the sources file, with its ticker at the remote source."""

    symbol: str
    name: str
    logo: str = ""
    remote: str = ""


def listed_instruments(
    listing: Sequence[ListedInstrument], config_path: str, market: str
) -> RawInstruments:
    """The configured instrument list as raw rows, located by their index in the sources file."""
    rows = [
        {
            "symbol": item.symbol,
            "name": item.name,
            "logo": item.logo,
            "source": config_path,
            "location": f"markets.{market}.instruments[{index}]",
            "record": f"{item.symbol},{item.name},{item.logo},{item.remote}",
        }
        for index, item in enumerate(listing)
    ]
    return RawInstruments(pl.DataFrame(rows, schema=RAW_INSTRUMENTS_SCHEMA))


def remote_tickers(listing: Sequence[ListedInstrument]) -> dict[str, str]:
    """Canonical symbol -> remote ticker, for the instruments that name one."""
    return {item.symbol.strip().upper(): item.remote for item in listing if item.remote}


class ListedHttpSource(PriceSource):
    """An HTTP price API whose instruments are listed in the sources file.

    Remote calls cost time and quota, so these sources are incremental: only bars after the newest
    stored date are fetched.
    """

    def __init__(
        self, listing: Sequence[ListedInstrument], config_path: str, http: HttpFetcher | None
    ) -> None:
        self.listing, self.config_path = listing, config_path
        self.http = http or HttpFetcher()

    @property
    def incremental(self) -> bool:
        return True

    def instruments(self, market: str) -> RawInstruments:
        return listed_instruments(self.listing, self.config_path, market)

    def remote_tickers(self) -> dict[str, str]:
        return remote_tickers(self.listing)
