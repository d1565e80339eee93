"""HTTP plumbing shared by the web connectors: timeouts, the project's retry policy, clear errors."""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import httpx
import msgspec
import polars as pl

from pipelines.platform.outbound import (
    OutboundPolicy,
    OutboundRefused,
    Resolver,
    TooLarge,
    UnresolvedHost,
    fetch_sync,
)
from pipelines.platform.retries import (
    RETRYABLE_STATUSES,
    RetryableError,
    RetryPolicy,
    retry_after_seconds,
    retrying,
)
from pipelines.prices.sources.base import (
    RAW_INSTRUMENTS_SCHEMA,
    PriceSource,
    RawInstruments,
    SourceError,
)


class HttpPolicy(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How hard to try and what may be reached: each attempt's deadline, retries after the first
    attempt and their waits, the largest answer read, and hosts allowed although they resolve
    inside a network (the sources file's `[http]` keys; `pipelines.platform.outbound`)."""

    timeout_seconds: float = 30.0
    max_retries: int = 4
    backoff_seconds: float = 1.0
    max_backoff_seconds: float = 60.0
    jitter_seconds: float = 1.0
    max_answer_mb: int = 64
    allowed_hosts: tuple[str, ...] = ()

    @property
    def outbound(self) -> OutboundPolicy:
        return OutboundPolicy.of(
            allowed_hosts=self.allowed_hosts,
            max_bytes=self.max_answer_mb << 20,
            deadline_seconds=self.timeout_seconds,
        )

    @property
    def retry(self) -> RetryPolicy:
        """The keys as the project's one retry policy (`pipelines/platform/retries.py`)."""
        return RetryPolicy(
            attempts=self.max_retries + 1,
            wait_initial=self.backoff_seconds,
            wait_max=self.max_backoff_seconds,
            wait_jitter=self.jitter_seconds,
        )


@dataclass
class HttpFetcher:
    """GET through the outbound policy (`pipelines.platform.outbound`: public addresses unless allowed,
    each redirect checked as the first URL, the answer read up to `max_answer_mb`, each attempt
    within `timeout_seconds`), with retries on the retryable statuses and transport errors; any
    other failure, or the last one, raises `SourceError`."""

    policy: HttpPolicy = field(default_factory=HttpPolicy)
    user_agent: str = "market-intelligence/0.1 (+connectors)"
    resolve: Resolver | None = None

    def get(
        self, url: str, params: Mapping[str, str | int], ok: Collection[int] = (200,)
    ) -> httpx.Response:
        tries = 0
        transient = (_BusyError, httpx.TransportError, TimeoutError, UnresolvedHost)
        outbound = self.policy.outbound
        try:
            for attempt in retrying(self.policy.retry, transient):
                with attempt:
                    tries = attempt.num
                    answer = fetch_sync(
                        "GET",
                        url,
                        outbound,
                        self.user_agent,
                        params=dict(params),
                        resolve=self.resolve,
                    )
                    response = answer.as_response()
                    if response.status_code in ok:
                        return response
                    if response.status_code not in RETRYABLE_STATUSES:
                        raise SourceError(_describe(response, tries))
                    raise _BusyError(response)
        except (httpx.TransportError, TimeoutError, OutboundRefused, TooLarge) as error:
            reason = (
                f"no whole answer within {self.policy.timeout_seconds}s"
                if isinstance(error, TimeoutError)
                else repr(error)
            )
            raise SourceError(f"GET {url} failed: {reason}") from error
        except _BusyError as busy:
            raise SourceError(_describe(busy.response, tries)) from busy
        raise AssertionError("unreachable: the last attempt returns or raises")


class _BusyError(RetryableError):
    """A retryable status: another attempt may help, after the server's Retry-After if given."""

    def __init__(self, response: httpx.Response) -> None:
        wait = retry_after_seconds(response.headers.get("Retry-After"), time.time())
        super().__init__(f"HTTP {response.status_code}", wait)
        self.response = response


def _describe(response: httpx.Response, attempts: int) -> str:
    body = response.text[:300].replace("\n", " ")
    return f"GET {response.url} failed with HTTP {response.status_code} after {attempts} attempt(s): {body}"


class ListedInstrument(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
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
