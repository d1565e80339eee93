"""Where feed documents come from: the file drop, configured paths and URLs, or recorded bytes."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from pipelines.news.model import FeedDocument
from pipelines.prices.sources.listing import SourceFile, stat_files
from pipelines.retries import (
    RETRYABLE_STATUSES,
    RetryableError,
    RetryPolicy,
    retry_after_seconds,
    retrying,
)

USER_AGENT = "market-intelligence-news/0.1 (+feed reader)"


class NewsSource(ABC):
    """Reads every feed of a market as raw documents; parsing is the same whatever the source."""

    @abstractmethod
    def documents(self, market: str) -> list[FeedDocument]:
        """Every feed of `market`; a feed that cannot be read is a document with an `error`."""


def read_file(path: Path, feed: str | None = None) -> FeedDocument:
    """A local feed file; an unreadable file is a document with the reason, never an exception."""
    name = feed or path.stem
    try:
        return FeedDocument(name, str(path), path.read_bytes())
    except OSError as error:
        return FeedDocument(name, str(path), None, f"{type(error).__name__}: {error}")


@dataclass(frozen=True)
class FileDropNewsSource(NewsSource):
    """The file-drop layout: `<root>/news/<market>/<feed>.xml` and its archives
    `<root>/news/<market>/<feed>/*.xml` are the feeds of that market (hidden files are not).

    An archive document is named after its folder (`wire` for `news/crypto/wire/2026-02.xml`), so
    an article has the same `feed` whichever document it was read from.
    """

    root: Path

    def documents(self, market: str) -> list[FeedDocument]:
        return self.documents_at(market, [f.path for f in self.listing(market)])

    def listing(self, market: str) -> list[SourceFile]:
        """Every feed document of the market (current documents and archives), by path."""
        folder = self.root / "news" / market
        if not folder.is_dir():
            return []
        paths = [*folder.glob("*.xml"), *folder.glob("*/*.xml")]
        listed = (p for p in paths if not p.name.startswith(".") and p.is_file())
        return sorted(stat_files(listed, self.root), key=lambda f: f.path)

    def documents_at(self, market: str, paths: Sequence[str]) -> list[FeedDocument]:
        """Exactly these documents (paths as `listing` gives them), in path order."""
        folder = self.root / "news" / market
        documents = []
        for text in sorted(set(paths)):
            path = Path(text)
            feed = path.parent.name if path.parent != folder else path.stem
            documents.append(read_file(path, feed))
        return documents


@dataclass(frozen=True)
class HttpFeedFetcher:
    """GETs a feed URL with timeouts and a bounded number of attempts; failures become documents."""

    timeout_seconds: float = 10.0
    attempts: int = 3
    backoff_seconds: float = 0.5
    """Pause before the second attempt; doubled before each further one (plus jitter)."""
    max_bytes: int = 10 * 1024 * 1024

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, not {self.attempts}")

    @property
    def retry(self) -> RetryPolicy:
        """The project's one retry policy with this fetcher's attempts and first wait."""
        return RetryPolicy(attempts=self.attempts, wait_initial=self.backoff_seconds, wait_max=30.0)

    def fetch(self, url: str) -> FeedDocument:
        headers = {
            "User-Agent": USER_AGENT,
            "Accept": "application/rss+xml, application/atom+xml, */*",
        }
        tries = 0
        with httpx.Client(
            timeout=self.timeout_seconds, headers=headers, follow_redirects=True
        ) as client:
            try:
                for attempt in retrying(self.retry, (RetryableError, httpx.HTTPError)):
                    with attempt:
                        tries = attempt.num
                        return FeedDocument(url, url, self._body(client, url))
            except (_UnreadableError, RetryableError) as error:
                failure = str(error)
            except httpx.HTTPError as error:
                failure = f"{type(error).__name__}: {error}"
        return FeedDocument(url, url, None, f"{failure} (after {tries} attempt(s))")

    def _body(self, client: httpx.Client, url: str) -> bytes:
        """The feed's bytes; RetryableError when another attempt may help, _UnreadableError when
        it cannot (httpx's own errors, all worth another attempt, pass through)."""
        with client.stream("GET", url) as response:
            status = response.status_code
            if status == httpx.codes.OK:
                return self._read_bounded(response)
            if status in RETRYABLE_STATUSES:
                wait = retry_after_seconds(response.headers.get("Retry-After"), time.time())
                raise RetryableError(f"HTTP {status}", wait)
            raise _UnreadableError(f"HTTP {status}")

    def _read_bounded(self, response: httpx.Response) -> bytes:
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > self.max_bytes:
                raise _UnreadableError(f"response larger than {self.max_bytes} bytes")
            chunks.append(chunk)
        return b"".join(chunks)


class _UnreadableError(Exception):
    """A feed another attempt would not read either (an answer such as 404, or too large)."""


def is_url(location: str) -> bool:
    return location.startswith(("http://", "https://"))


@dataclass(frozen=True)
class FeedListNewsSource(NewsSource):
    """Feeds listed per market: URLs (fetched over HTTP), feed files, and folders of `*.xml` feeds."""

    feeds: Mapping[str, Sequence[str]]
    """market -> URLs and paths of its feeds."""
    fetcher: HttpFeedFetcher = field(default_factory=HttpFeedFetcher)

    def documents(self, market: str) -> list[FeedDocument]:
        return [
            document for location in self.feeds.get(market, ()) for document in self._read(location)
        ]

    def _read(self, location: str) -> list[FeedDocument]:
        if is_url(location):
            return [self.fetcher.fetch(location)]
        path = Path(location)
        if path.is_dir():
            return [read_file(p) for p in sorted(path.glob("*.xml")) if p.is_file()]
        return [read_file(path)]


@dataclass(frozen=True)
class CombinedNewsSource(NewsSource):
    """Every document of every part, in the parts' order (the batch re-sorts them by feed)."""

    parts: Sequence[NewsSource]

    def documents(self, market: str) -> list[FeedDocument]:
        return [document for part in self.parts for document in part.documents(market)]


@dataclass(frozen=True)
class RecordedNewsSource(NewsSource):
    """Documents held in memory: for tests and for replaying a captured fetch."""

    recorded: Mapping[str, Sequence[FeedDocument]]

    def documents(self, market: str) -> list[FeedDocument]:
        return list(self.recorded.get(market, ()))
