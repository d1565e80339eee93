"""Fuzzing the feed parser and its text helpers: no input raises, bad input becomes rejects."""

from __future__ import annotations

from datetime import UTC, timedelta
from xml.sax.saxutils import escape

from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.news.dates import DAY_NAMES, MONTHS, read_date
from pipelines.news.model import FeedDocument
from pipelines.news.parse import ParsedFeed, ParsePolicy, parse_document
from pipelines.news.text import (
    article_id,
    canonical_guid,
    canonical_link,
    html_to_text,
    is_tracking_param,
    normalise_whitespace,
)

from .conftest import NOW, fixture_document

POLICY = ParsePolicy(now=NOW)
FUZZ = settings(max_examples=150, deadline=None)

MARKUP = st.sampled_from(
    [
        "<p>",
        "</p>",
        "<br/>",
        "<b>",
        "</b",
        "<a href='https://x.example/?a&b'>",
        "</a>",
        "<![",
        "<![ if mso]>",
        "<![endif]>",
        "<![CDATA[",
        "]]>",
        "<!--",
        "-->",
        "<!",
        "<!DOCTYPE",
        "<?php",
        "?>",
        "<script>",
        "</script>",
        "<style>",
        "</style>",
        "<",
        ">",
        "&",
        "&amp;",
        "&nbsp;",
        "&#",
        "&#55296;",
        "&#x110000;",
        "&#0;",
        "&bogus;",
        "\u00a0",
        "\x00",
        "\ud800",
    ]
)
HTML = st.lists(st.one_of(MARKUP, st.text(max_size=8)), max_size=12).map("".join)

URL_PIECES = st.sampled_from(
    [
        "http://",
        "https://",
        "HTTPS://",
        "ftp://",
        "//",
        "[",
        "]",
        "::1",
        "Example.COM",
        ":",
        ":443",
        ":99999",
        "@",
        "/",
        "?",
        "#",
        "&",
        "=",
        "rss",
        "utm_source=x",
        "%2F",
        "%",
        "+",
        "\uff03",
        " ",
        "\t",
        "é",
        "\ud800",
    ]
)
URLS = st.one_of(st.text(), st.lists(URL_PIECES, max_size=10).map("".join))

_FOREIGN_NAMES = sorted({*MONTHS, *DAY_NAMES})
DATES = st.one_of(
    st.text(max_size=30),
    st.builds(
        "{}, {} {} {} {:02}:{:02}:{:02} {}".format,
        st.sampled_from([*_FOREIGN_NAMES, "Sáb", "Thu", ""]),
        st.integers(-1, 40),
        st.sampled_from([*_FOREIGN_NAMES, "Fév.", "März", "Jan", "13"]),
        st.sampled_from([1, 99, 1969, 2024, 9999, 10000]),
        st.integers(0, 25),
        st.integers(0, 61),
        st.integers(0, 61),
        st.sampled_from(["GMT", "-0300", "+2400", "-9999", "BRT", "", "Z"]),
    ),
    st.sampled_from(["9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+05:00", "2025-02-30"]),
)


def field(tag: str, value: str | None, raw: bool) -> str:
    """An element holding `value`, escaped as XML demands or, when `raw`, as is (bad markup)."""
    if value is None:
        return ""
    return f"<{tag}>{value if raw else escape(value)}</{tag}>"


@st.composite
def rss_documents(draw: st.DrawFn) -> bytes:
    items = []
    for _ in range(draw(st.integers(0, 3))):
        raw = draw(st.booleans())
        parts = [
            field("title", draw(st.none() | HTML), raw),
            field("link", draw(st.none() | URLS), raw),
            field("guid", draw(st.none() | URLS), raw),
            field("pubDate", draw(st.none() | DATES), raw),
            field("description", draw(st.none() | HTML), raw),
        ]
        items.append(f"<item>{''.join(draw(st.permutations(parts)))}</item>")
    channel = f"<channel><title>t</title>{''.join(items)}</channel>"
    return f'<?xml version="1.0" encoding="utf-8"?><rss version="2.0">{channel}</rss>'.encode(
        "utf-8", "surrogatepass"
    )


@st.composite
def atom_documents(draw: st.DrawFn) -> bytes:
    entries = []
    for _ in range(draw(st.integers(0, 3))):
        link = draw(st.none() | URLS)
        kind = draw(st.sampled_from(["html", "text", "xhtml"]))
        parts = [
            field("id", draw(st.none() | URLS), False),
            f'<title type="{kind}">{escape(draw(HTML))}</title>',
            f'<link rel="alternate" href="{escape(link, {chr(34): "&quot;"})}"/>' if link else "",
            field("published", draw(st.none() | DATES), False),
            field("updated", draw(st.none() | DATES), False),
            f'<content type="{kind}">{escape(draw(HTML))}</content>',
        ]
        entries.append(f"<entry>{''.join(parts)}</entry>")
    feed = f'<feed xmlns="http://www.w3.org/2005/Atom"><title>t</title>{"".join(entries)}</feed>'
    return f'<?xml version="1.0" encoding="utf-8"?>{feed}'.encode("utf-8", "surrogatepass")


def assert_every_item_kept_or_rejected(parsed: ParsedFeed) -> None:
    item_rejects = [r for r in parsed.rejects if r.location != "feed"]
    assert len(parsed.items) + len(item_rejects) == parsed.items_read
    for item in parsed.items:
        assert item.published_at.tzinfo == UTC
        assert item.published_at <= POLICY.now + POLICY.clock_skew
        assert item.body
        assert item.guid or item.link
        assert len(item.article_id) == 20
    for reject in parsed.rejects:
        assert reject.reason


def parse(content: bytes) -> ParsedFeed:
    return parse_document(FeedDocument("fuzz", "fuzz.xml", content), POLICY)


@FUZZ
@given(content=st.binary(max_size=400))
def test_a_document_of_arbitrary_bytes_never_raises(content: bytes) -> None:
    assert_every_item_kept_or_rejected(parse(content))


@FUZZ
@given(content=rss_documents())
def test_an_rss_document_with_random_fields_never_raises(content: bytes) -> None:
    assert_every_item_kept_or_rejected(parse(content))


@FUZZ
@given(content=atom_documents())
def test_an_atom_document_with_random_fields_never_raises(content: bytes) -> None:
    assert_every_item_kept_or_rejected(parse(content))


@FUZZ
@given(content=rss_documents(), cut=st.integers(0, 400))
def test_a_truncated_rss_document_never_raises(content: bytes, cut: int) -> None:
    assert_every_item_kept_or_rejected(parse(content[:cut]))


COINWIRE = fixture_document("crypto/coinwire.xml").content or b""


@FUZZ
@given(
    encoding=st.sampled_from(["UTF-8", "utf-16", "latin-1", "cp037", "undefined", "rot13", "x"]),
    at=st.integers(0, len(COINWIRE)),
    noise=st.binary(max_size=16),
)
def test_a_real_feed_with_a_foreign_encoding_or_spliced_bytes_never_raises(
    encoding: str, at: int, noise: bytes
) -> None:
    declared = COINWIRE.replace(b'encoding="UTF-8"', f'encoding="{encoding}"'.encode(), 1)
    assert_every_item_kept_or_rejected(parse(declared[:at] + noise + declared[at:]))


@FUZZ
@given(fragment=st.one_of(HTML, st.text()))
def test_html_to_text_never_raises_and_returns_normalised_text(fragment: str) -> None:
    text = html_to_text(fragment)
    assert text == normalise_whitespace(text)


@FUZZ
@given(text=st.text())
def test_normalise_whitespace_never_raises_and_is_idempotent(text: str) -> None:
    once = normalise_whitespace(text)
    assert normalise_whitespace(once) == once


@FUZZ
@given(url=URLS)
def test_canonical_link_never_raises_and_is_idempotent(url: str) -> None:
    link = canonical_link(url)
    assert link is None or (
        link.startswith(("http://", "https://")) and canonical_link(link) == link
    )
    assert canonical_guid(url) in (link, url.strip())


@FUZZ
@given(
    params=st.lists(
        st.one_of(
            st.text("abz=%/:;,+é", max_size=6), st.sampled_from(["utm_source=x", "fbclid=1"])
        ),
        min_size=1,
        max_size=6,
    )
)
def test_canonical_link_keeps_each_other_query_parameter_byte_for_byte(params: list[str]) -> None:
    kept = [p for p in params if not is_tracking_param(p.split("=")[0])]
    query = "&".join(kept)
    expected = f"https://example.com/a?{query}" if query else "https://example.com/a"
    assert canonical_link(f"https://example.com/a?{'&'.join(params)}") == expected


@FUZZ
@given(guid=st.text(min_size=1), link=st.none() | st.text())
def test_article_id_never_raises_for_an_item_with_a_guid(guid: str, link: str | None) -> None:
    assert len(article_id(guid, link)) == 20


@FUZZ
@given(raw=DATES)
def test_read_date_never_raises_and_returns_utc(raw: str) -> None:
    instant = read_date(raw)
    assert instant is None or instant.utcoffset() == timedelta(0)
