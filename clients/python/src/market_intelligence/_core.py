"""What the sync and async clients share: headers, the ETag cache, balance and errors of a response."""

from __future__ import annotations

import copy
import os
import re
from collections import OrderedDict
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, TypeVar

import httpx
import msgspec

from market_intelligence.errors import (
    RETRYABLE,
    ApiError,
    ApiUnreachable,
    MissingApiKey,
    error_for,
    parse_retry_after,
)
from market_intelligence.models import Balance, Resource
from market_intelligence.routes import Call, Download

R = TypeVar("R", bound=Resource)

DEFAULT_BASE_URL = "http://127.0.0.1:8000"
API_KEY_ENV = "MI_API_KEY"
BASE_URL_ENV = "MI_API_URL"
BALANCE_HEADERS = {
    "cost": "x-tokens-cost",
    "limit": "x-tokens-limit",
    "limit_today": "x-tokens-limit-today",
    "remaining": "x-tokens-remaining",
    "remaining_today": "x-tokens-remaining-today",
}
NOT_MODIFIED = 304
_FILENAME = re.compile(r'filename="([^"/\\]+)"')
"""The file name of a bulk export's Content-Disposition (no path separators)."""

try:
    USER_AGENT = f"market-intelligence-client/{version('market-intelligence-client')}"
except PackageNotFoundError:  # pragma: no cover (run from a source tree without installing)
    USER_AGENT = "market-intelligence-client"


def balance_of(headers: httpx.Headers) -> Balance | None:
    """The x-tokens-* headers as a Balance; None when the response has none (public routes, or a
    401 for an unknown key, which has no account)."""
    try:
        values = {field: int(headers[name]) for field, name in BALANCE_HEADERS.items()}
    except (KeyError, ValueError):
        return None
    return Balance(**values)


@dataclass(frozen=True)
class Cached:
    etag: str
    body: bytes


class EtagCache:
    """The last 200 body and ETag of each request, least recently used dropped first.

    A repeated request sends `If-None-Match`; the server answers 304 with no body while the data
    has not changed, and the client returns the body it kept.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[str, Cached] = OrderedDict()

    def get(self, key: str) -> Cached | None:
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
        return entry

    def put(self, key: str, entry: Cached) -> None:
        if self.size <= 0:
            return
        self._entries[key] = entry
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)


class Core:
    """Settings and per-client state: the key, the ETag cache, the last balance, the decoders."""

    def __init__(
        self,
        api_key: str | None,
        base_url: str | None,
        retry_attempts: int,
        max_retry_wait: float,
        cache_size: int,
    ) -> None:
        self.api_key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        self.base_url = (base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL).rstrip("/")
        if retry_attempts < 1:
            raise ValueError("retry_attempts counts the first try too: at least 1")
        self.retry_attempts = retry_attempts
        self.max_retry_wait = max_retry_wait
        self.cache = EtagCache(cache_size)
        self.balance: Balance | None = None
        self.revalidated = False
        self.as_of: str | None = None
        """Every data request carries it (`Client.at`): the API answers as it did then."""
        self.data_version: str | None = None
        self.data_published: str | None = None
        self._decoders: dict[type[Resource], msgspec.json.Decoder[Any]] = {}

    def url(self, call: Call[R]) -> str:
        return self.base_url + call.path

    def params(self, call: Call[R]) -> dict[str, str | int | float]:
        """The call's query, with this client's `as_of` on a data route."""
        if self.as_of is None or not call.data:
            return call.query
        return {**call.query, "as_of": self.as_of}

    def at(self, as_of: str) -> Core:
        """The same settings and key answering `as_of`, with a cache and state of its own."""
        past = copy.copy(self)
        past.cache = EtagCache(self.cache.size)
        past.as_of = as_of
        past.balance, past.revalidated, past.data_version, past.data_published = (None, False, None, None)  # fmt: skip
        return past

    def note_source(self, headers: httpx.Headers) -> None:
        """Remember which data version answered (`x-data-version`, `x-data-published`)."""
        version = headers.get("x-data-version")
        if version is not None:
            self.data_version, self.data_published = version, headers.get("x-data-published")

    def headers(self, call: Call[R]) -> dict[str, str]:
        """The request's headers; MissingApiKey, before anything is sent, for a metered route
        without a key."""
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        elif not call.public:
            raise MissingApiKey()
        cached = self.cache.get(call.key)
        if cached is not None:
            headers["If-None-Match"] = cached.etag
        return headers

    def outcome(self, call: Call[R], response: httpx.Response) -> R:
        """The resource a response carries (a 304: the cached one), or its typed error raised.

        Remembers the response's balance headers as the client's last balance.
        """
        self.balance = balance_of(response.headers) or self.balance
        self.note_source(response.headers)
        self.revalidated = response.status_code == NOT_MODIFIED
        cached = self.cache.get(call.key)
        if self.revalidated and cached is not None:
            return self.decode(call, cached.body)
        if response.status_code != httpx.codes.OK:
            raise self.error(response)
        etag = response.headers.get("etag")
        if etag:
            self.cache.put(call.key, Cached(etag, response.content))
        return self.decode(call, response.content)

    def file_url(self, download: Download) -> str:
        return self.base_url + download.path

    def file_params(self, download: Download) -> dict[str, str | int | float]:
        """The download's query, with this client's `as_of` (a bulk export is a data route)."""
        return download.query if self.as_of is None else {**download.query, "as_of": self.as_of}

    def file_headers(self) -> dict[str, str]:
        """A bulk export's headers: the key, no If-None-Match (files are not kept in memory)."""
        if not self.api_key:
            raise MissingApiKey()
        return {
            "User-Agent": USER_AGENT,
            "Accept": "*/*",
            "Authorization": f"Bearer {self.api_key}",
        }

    def unreachable(self, failure: httpx.TransportError) -> ApiUnreachable:
        """httpx's failure to get an answer as the error naming the URL and what to check."""
        if isinstance(failure, httpx.TimeoutException):
            reason = f"no answer within the timeout: {type(failure).__name__}"
        else:
            reason = str(failure) or type(failure).__name__
        return ApiUnreachable(self.base_url, reason)

    def file_target(self, response: httpx.Response, destination: str | os.PathLike[str]) -> Path:
        """Where a bulk export's 200 goes; a failure's typed error raised (its body already read).
        Remembers the balance headers.

        A destination that is a folder, or ends in a path separator (`"exports/"`), is a folder:
        created if missing, the file saved in it under the server's file name. Any other is
        the file's path."""
        self.balance = balance_of(response.headers) or self.balance
        self.revalidated = False
        if response.status_code != httpx.codes.OK:
            raise self.error(response)
        text, path = os.fspath(destination), Path(destination)
        if not (text.endswith(("/", os.sep)) or path.is_dir()):
            return path
        path.mkdir(parents=True, exist_ok=True)
        named = _FILENAME.search(response.headers.get("content-disposition", ""))
        if named is None:
            raise ValueError("the response names no file: give a file path, not a directory")
        return path / named.group(1)

    def decode(self, call: Call[R], body: bytes) -> R:
        decoder = self._decoders.get(call.answer)
        if decoder is None:
            decoder = self._decoders[call.answer] = msgspec.json.Decoder(call.answer)
        decoded: R = decoder.decode(body)
        return decoded

    def error(self, response: httpx.Response) -> ApiError:
        try:
            body = msgspec.json.decode(response.content)
        except msgspec.DecodeError:
            body = {}
        return error_for(
            response.status_code,
            body if isinstance(body, dict) else {},
            balance_of(response.headers),
            parse_retry_after(response.headers.get("retry-after")),
        )

    def backoff(self, failure: Exception) -> bool | float:
        """stamina's backoff hook: retry 429 and 503 after the server's `Retry-After`.

        Without the header stamina's exponential backoff applies. A wait longer than
        `max_retry_wait` is not waited for: the error is raised at once, carrying `retry_after`,
        so the caller decides (a batch job may sleep, an interactive tool should not).
        """
        if not isinstance(failure, RETRYABLE):
            return False
        if failure.retry_after is None:
            return True
        if failure.retry_after > self.max_retry_wait:
            return False
        return failure.retry_after
