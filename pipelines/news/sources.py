"""Where feed documents come from: the file drop, configured paths and URLs, or recorded bytes."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from pipelines.news.model import FeedDocument
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
from pipelines.prices.sources.listing import FileBounds, SourceFile, stat_files

USER_AGENT = "market-intelligence-news/0.1 (+feed reader)"


class MissingSourceError(RuntimeError):
    """A source the run must read is not there (a folder of the file drop this host cannot see)."""


class NewsSource(ABC):
    """Reads every feed of a market as raw documents; parsing is the same whatever the source."""

    @abstractmethod
    def documents(self, market: str) -> list[FeedDocument]:
        """Every feed of `market`; a feed that cannot be read is a document with an `error`."""

    def expects_news(self, market: str) -> bool:
        """Whether the source carries news for `market` at all: a market it has no feed for is
        never stale (no freshness warning), while an empty feed or folder of one still is."""
        del market
        return True


def read_file(
    path: Path, feed: str | None = None, bounds: FileBounds | None = None
) -> FeedDocument:
    """A local feed file; an unreadable file (or one larger than `bounds` allow, left unread) is a
    document with the reason, never an exception."""
    name = feed or path.stem
    refused = (bounds or FileBounds()).size_refused(path)
    if refused is not None:
        return FeedDocument(name, str(path), None, refused)
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
    bounds: FileBounds = field(default_factory=FileBounds)
    """A document larger than this is a feed reject, unread."""

    def documents(self, market: str) -> list[FeedDocument]:
        return self.documents_at(market, [f.path for f in self.listing(market)])

    def listing(self, market: str) -> list[SourceFile]:
        """Every feed document of the market (current documents and archives), by path."""
        folder = self.root / "news" / market
        if not folder.is_dir():
            # A run must never publish less than it should: a host that cannot see the drop (a
            # worker with a data directory of its own) fails the step instead of reading nothing.
            raise MissingSourceError(
                f"news folder {folder} does not exist: this host cannot see the file drop "
                "(every worker of a run must read the same sources: docs/deployment.md)"
            )
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
            documents.append(read_file(path, feed, self.bounds))
        return documents


@dataclass(frozen=True)
class HttpFeedFetcher:
    """GETs a feed URL through the outbound policy (`pipelines.platform.outbound`: public addresses only
    unless `allowed_hosts` names the host, each redirect checked as the first URL, the body read
    up to `max_bytes`, each attempt within `timeout_seconds`), a bounded number of attempts;
    failures become documents."""

    timeout_seconds: float = 10.0
    attempts: int = 3
    backoff_seconds: float = 0.5
    """Pause before the second attempt; doubled before each further one (plus jitter)."""
    max_bytes: int = 10 * 1024 * 1024
    allowed_hosts: tuple[str, ...] = ()
    """Hosts fetched although they resolve inside a network (the operator's own feed server)."""
    resolve: Resolver | None = None

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, not {self.attempts}")

    @property
    def retry(self) -> RetryPolicy:
        """The project's one retry policy with this fetcher's attempts and first wait."""
        return RetryPolicy(attempts=self.attempts, wait_initial=self.backoff_seconds, wait_max=30.0)

    @property
    def policy(self) -> OutboundPolicy:
        return OutboundPolicy.of(
            allowed_hosts=self.allowed_hosts,
            max_bytes=self.max_bytes,
            deadline_seconds=self.timeout_seconds,
        )

    def fetch(self, url: str) -> FeedDocument:
        headers = {"Accept": "application/rss+xml, application/atom+xml, */*"}
        tries = 0
        transient = (RetryableError, httpx.HTTPError, TimeoutError, UnresolvedHost)
        try:
            for attempt in retrying(self.retry, transient):
                with attempt:
                    tries = attempt.num
                    return FeedDocument(url, url, self._body(url, headers))
        except (_UnreadableError, RetryableError) as error:
            failure = str(error)
        except (OutboundRefused, TooLarge) as error:
            failure = str(error)
        except TimeoutError:
            failure = f"no whole answer within {self.timeout_seconds}s"
        except httpx.HTTPError as error:
            failure = f"{type(error).__name__}: {error}"
        return FeedDocument(url, url, None, f"{failure} (after {tries} attempt(s))")

    def _body(self, url: str, headers: dict[str, str]) -> bytes:
        """The feed's bytes; RetryableError when another attempt may help, _UnreadableError when
        it cannot (a refused URL, a body too large and httpx's own errors pass through)."""
        answer = fetch_sync(
            "GET", url, self.policy, USER_AGENT, headers=headers, resolve=self.resolve
        )
        if answer.status == httpx.codes.OK:
            return answer.body
        if answer.status in RETRYABLE_STATUSES:
            wait = retry_after_seconds(answer.headers.get("Retry-After"), time.time())
            raise RetryableError(f"HTTP {answer.status}", wait)
        raise _UnreadableError(f"HTTP {answer.status}")


class _UnreadableError(Exception):
    """A feed another attempt would not read either (an answer such as 404)."""


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

    def expects_news(self, market: str) -> bool:
        return bool(self.feeds.get(market))

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

    def expects_news(self, market: str) -> bool:
        return any(part.expects_news(market) for part in self.parts)


@dataclass(frozen=True)
class RecordedNewsSource(NewsSource):
    """Documents held in memory: for tests and for replaying a captured fetch."""

    recorded: Mapping[str, Sequence[FeedDocument]]

    def documents(self, market: str) -> list[FeedDocument]:
        return list(self.recorded.get(market, ()))

    def expects_news(self, market: str) -> bool:
        return market in self.recorded
