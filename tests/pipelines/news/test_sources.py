"""Feed sources: the file drop, listed paths, and URLs fetched from a real local HTTP server."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from pipelines.news.model import FeedDocument
from pipelines.news.sources import (
    CombinedNewsSource,
    FeedListNewsSource,
    FileDropNewsSource,
    HttpFeedFetcher,
    MissingSourceError,
    RecordedNewsSource,
)

from .conftest import FEEDS


@dataclass
class Route:
    """Responses served in turn for one path (the last one repeats), and how many were asked for."""

    responses: list[tuple[int, bytes]]
    delay_seconds: float = 0.0
    hits: int = field(default=0)
    headers: dict[str, str] = field(default_factory=dict)


class FeedServer:
    """An HTTP server on a free 127.0.0.1 port serving scripted responses."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        routes = self.routes

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                route = routes.get(self.path)
                if route is None:
                    self.send_error(404)
                    return
                status, body = route.responses[min(route.hits, len(route.responses) - 1)]
                route.hits += 1
                time.sleep(route.delay_seconds)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/rss+xml")
                    for name, value in route.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (the timeout test)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def url(self, path: str) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}{path}"


@pytest.fixture
def server() -> Iterator[FeedServer]:
    feed_server = FeedServer()
    feed_server.thread.start()
    yield feed_server
    feed_server.server.shutdown()
    feed_server.server.server_close()
    feed_server.thread.join()


LOCAL = ("127.0.0.1",)
"""The tests' feed server: a loopback host the outbound policy fetches only when allowed."""
FAST = HttpFeedFetcher(timeout_seconds=2.0, attempts=3, allowed_hosts=LOCAL)
COINWIRE = (FEEDS / "crypto" / "coinwire.xml").read_bytes()


def test_file_drop_reads_every_xml_feed_of_the_market_in_name_order(file_drop: Path) -> None:
    documents = FileDropNewsSource(file_drop).documents("crypto")
    assert [d.feed for d in documents] == [
        "coinwire",
        "empty",
        "latin1",
        "ledgerdaily",
        "not-xml",
        "truncated",
    ]
    assert documents[0].content == COINWIRE


def test_a_file_drop_this_host_cannot_see_fails_instead_of_reading_nothing(tmp_path: Path) -> None:
    """Issue 53: a worker with a data directory of its own read no news and the refresh published
    an empty raw_news; a market's missing folder now fails the step (an empty folder is no news)."""
    with pytest.raises(MissingSourceError, match=r"news folder .*forex does not exist"):
        FileDropNewsSource(tmp_path).documents("forex")
    (tmp_path / "news" / "forex").mkdir(parents=True)
    assert FileDropNewsSource(tmp_path).listing("forex") == []


def _feed_drop(root: Path) -> Path:
    """A market with a current document and two monthly archives of one feed."""
    market = root / "news" / "crypto"
    (market / "coinwire").mkdir(parents=True)
    shutil.copy(FEEDS / "crypto" / "coinwire.xml", market / "coinwire.xml")
    for month in ("2024-11", "2024-12"):
        shutil.copy(FEEDS / "crypto" / "coinwire.xml", market / "coinwire" / f"{month}.xml")
    (market / "coinwire" / ".2025-01.xml").write_bytes(b"half a document")  # being written
    return market


def test_file_drop_names_an_archive_document_after_its_folder(tmp_path: Path) -> None:
    market = _feed_drop(tmp_path)
    documents = FileDropNewsSource(tmp_path).documents("crypto")
    assert [(d.feed, Path(d.source).relative_to(market).as_posix()) for d in documents] == [
        ("coinwire", "coinwire.xml"),
        ("coinwire", "coinwire/2024-11.xml"),
        ("coinwire", "coinwire/2024-12.xml"),
    ]
    assert all(d.content == COINWIRE for d in documents)


def test_file_drop_listing_sees_a_rewritten_document_as_changed_and_the_others_unchanged(
    tmp_path: Path,
) -> None:
    market = _feed_drop(tmp_path)
    source = FileDropNewsSource(tmp_path)
    before = {f.path: f for f in source.listing("crypto")}
    assert sorted(Path(p).relative_to(market).as_posix() for p in before) == [
        "coinwire.xml",
        "coinwire/2024-11.xml",
        "coinwire/2024-12.xml",
    ]
    (market / "coinwire.xml").write_bytes(COINWIRE + b"\n")
    after = {f.path: f for f in source.listing("crypto")}
    changed = {Path(p).relative_to(market).as_posix() for p in after if after[p] != before[p]}
    assert changed == {"coinwire.xml"}
    assert after[str(market / "coinwire.xml")].size == len(COINWIRE) + 1


def test_file_drop_reads_exactly_the_documents_asked_for(tmp_path: Path) -> None:
    market = _feed_drop(tmp_path)
    wanted = [str(market / "coinwire" / "2024-12.xml"), str(market / "coinwire.xml")]
    documents = FileDropNewsSource(tmp_path).documents_at("crypto", wanted)
    assert [(d.feed, d.source) for d in documents] == [("coinwire", p) for p in sorted(wanted)]
    (missing,) = FileDropNewsSource(tmp_path).documents_at("crypto", [str(market / "gone.xml")])
    assert (missing.feed, missing.content) == ("gone", None)


def test_listed_paths_read_files_and_folders_and_report_missing_ones(tmp_path: Path) -> None:
    missing = tmp_path / "missing.xml"
    source = FeedListNewsSource({"crypto": [str(FEEDS / "crypto"), str(missing)]})
    documents = source.documents("crypto")
    assert [d.feed for d in documents] == ["coinwire", "ledgerdaily", "missing"]
    assert documents[2].content is None
    assert documents[2].error is not None
    assert documents[2].error.startswith("FileNotFoundError")
    assert source.documents("stocks") == []


def test_url_feed_is_fetched_over_http(server: FeedServer) -> None:
    server.routes["/coinwire.xml"] = Route([(200, COINWIRE)])
    url = server.url("/coinwire.xml")
    (document,) = FeedListNewsSource({"crypto": [url]}, FAST).documents("crypto")
    assert document == FeedDocument(url, url, COINWIRE)


def test_url_feed_is_retried_after_a_server_error_then_read(server: FeedServer) -> None:
    server.routes["/flaky.xml"] = Route([(503, b"busy"), (502, b"bad gateway"), (200, COINWIRE)])
    document = FAST.fetch(server.url("/flaky.xml"))
    assert document.content == COINWIRE
    assert server.routes["/flaky.xml"].hits == 3


def test_url_feed_retries_are_bounded_and_the_failure_becomes_a_document(
    server: FeedServer,
) -> None:
    server.routes["/down.xml"] = Route([(503, b"busy")])
    document = FAST.fetch(server.url("/down.xml"))
    assert (document.content, document.error) == (None, "HTTP 503 (after 3 attempt(s))")
    assert server.routes["/down.xml"].hits == 3


def test_url_feed_not_found_is_not_retried(server: FeedServer) -> None:
    document = FAST.fetch(server.url("/nowhere.xml"))
    assert document.error == "HTTP 404 (after 1 attempt(s))"


def test_url_feed_retries_wait_with_exponential_backoff(server: FeedServer) -> None:
    server.routes["/down.xml"] = Route([(500, b"")])
    fetcher = HttpFeedFetcher(attempts=4, backoff_seconds=0.5, allowed_hosts=LOCAL)
    fetcher.fetch(server.url("/down.xml"))
    assert server.routes["/down.xml"].hits == 4
    # The waits (before jitter) of the project's retry policy (tests/pipelines/platform/test_retries.py).
    assert [fetcher.retry.backoff(retry, 0.0) for retry in (1, 2, 3)] == [0.5, 1.0, 2.0]


def test_url_feed_that_answers_too_slowly_times_out(server: FeedServer) -> None:
    server.routes["/slow.xml"] = Route([(200, COINWIRE)], delay_seconds=0.5)
    fetcher = HttpFeedFetcher(timeout_seconds=0.1, attempts=2, allowed_hosts=LOCAL)
    document = fetcher.fetch(server.url("/slow.xml"))
    assert document.content is None
    assert document.error is not None
    assert document.error == "no whole answer within 0.1s (after 2 attempt(s))"


def test_url_feed_larger_than_the_limit_is_refused(server: FeedServer) -> None:
    server.routes["/big.xml"] = Route([(200, COINWIRE)])
    document = HttpFeedFetcher(max_bytes=100, allowed_hosts=LOCAL).fetch(server.url("/big.xml"))
    assert document.error == "the answer is larger than 100 bytes (after 1 attempt(s))"


def test_unreachable_host_becomes_a_document_with_the_connection_error() -> None:
    with ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler) as closed:
        port = closed.server_address[1]  # bound then closed: nothing listens there any more
    document = HttpFeedFetcher(timeout_seconds=1.0, attempts=2, allowed_hosts=LOCAL).fetch(
        f"http://127.0.0.1:{port}/feed.xml"
    )
    assert document.error is not None
    assert document.error.startswith("ConnectError")


def test_combined_source_concatenates_its_parts(file_drop: Path) -> None:
    recorded = FeedDocument("zz", "memory", b"")
    combined = CombinedNewsSource(
        [FileDropNewsSource(file_drop), RecordedNewsSource({"crypto": [recorded]})]
    )
    assert combined.documents("crypto")[-1] == recorded
    assert len(combined.documents("crypto")) == 7


def test_file_drop_lists_each_document_by_its_path_under_the_root(
    file_drop: Path, tmp_path: Path
) -> None:
    """The name is what `news_files` remembers: the same for a drop moved elsewhere."""
    moved = tmp_path / "moved"
    shutil.copytree(file_drop, moved)
    here = FileDropNewsSource(file_drop).listing("crypto")
    there = FileDropNewsSource(moved).listing("crypto")
    assert [f.name for f in here] == [f.name for f in there]
    assert all(f.name.startswith("news/crypto/") for f in here)
    assert [f.path for f in here] != [f.path for f in there]


def test_a_redirect_is_checked_as_the_first_url_was(server: FeedServer) -> None:
    """docs/news-ingestion.md: every hop of a redirect meets the outbound policy (today a feed on an
    allowed host could redirect the fetcher to an address inside the network)."""
    inside = FeedServer()
    inside.routes["/secret"] = Route([(200, b"internal")])
    inside.server.server_close()
    inside.server = ThreadingHTTPServer(("127.0.0.2", 0), inside.server.RequestHandlerClass)
    inside.thread = threading.Thread(target=inside.server.serve_forever, daemon=True)
    inside.thread.start()
    try:
        target = inside.url("/secret")
        server.routes["/moved.xml"] = Route([(302, b"")], headers={"Location": target})
        document = HttpFeedFetcher(attempts=1, allowed_hosts=LOCAL).fetch(server.url("/moved.xml"))
    finally:
        inside.server.shutdown()
        inside.server.server_close()
    assert document.content is None
    assert document.error is not None
    assert "127.0.0.2, an address inside a network" in document.error
    assert inside.routes["/secret"].hits == 0


def test_a_redirect_within_the_policy_is_followed(server: FeedServer) -> None:
    server.routes["/feed.xml"] = Route([(200, COINWIRE)])
    server.routes["/old.xml"] = Route([(301, b"")], headers={"Location": "/feed.xml"})
    document = FAST.fetch(server.url("/old.xml"))
    assert document.content == COINWIRE


def test_a_feed_on_a_host_inside_the_network_is_not_fetched_unless_allowed(
    server: FeedServer,
) -> None:
    server.routes["/feed.xml"] = Route([(200, COINWIRE)])
    document = HttpFeedFetcher(attempts=1).fetch(server.url("/feed.xml"))
    assert document.error is not None
    assert "list the host in allowed_hosts" in document.error
    assert server.routes["/feed.xml"].hits == 0
