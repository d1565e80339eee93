"""Markup to text, canonical links and article ids."""

from __future__ import annotations

import hashlib

import pytest

from pipelines.news.text import article_id, canonical_guid, canonical_link, html_to_text


@pytest.mark.parametrize(
    ("fragment", "text"),
    [
        ("<p>Bitcoin <b>rose</b></p><p>again</p>", "Bitcoin rose again"),
        ("Fish &amp; chips &ldquo;hot&rdquo; &#8364;5", "Fish & chips “hot” €5"),
        ("a&nbsp;b\n\n\t c", "a b c"),
        ("<script>var x = '<p>';</script>visible<style>p {}</style>", "visible"),
        ("line<br/>break", "line break"),
        ("  ", ""),
    ],
)
def test_html_is_stripped_to_text_with_entities_decoded_and_whitespace_normalised(
    fragment: str, text: str
) -> None:
    assert html_to_text(fragment) == text


@pytest.mark.parametrize(
    ("url", "canonical"),
    [
        ("https://Example.COM/a/b?id=1#frag", "https://example.com/a/b?id=1"),
        ("HTTP://example.com:80/a", "http://example.com/a"),
        ("https://example.com:8443/a", "https://example.com:8443/a"),
        (
            "https://example.com/a?utm_source=x&id=2&UTM_Medium=y&fbclid=z",
            "https://example.com/a?id=2",
        ),
        ("https://example.com/a?b=2&a=1", "https://example.com/a?b=2&a=1"),
        ("https://example.com", "https://example.com/"),
        ("https://[2001:db8::1]:443/a", "https://[2001:db8::1]/a"),
    ],
)
def test_canonical_link_lowercases_host_and_drops_tracking_params_and_fragment(
    url: str, canonical: str
) -> None:
    assert canonical_link(url) == canonical


@pytest.mark.parametrize(
    "url", ["/relative/path", "coinwire-1001", "ftp://example.com/a", "", "https://"]
)
def test_canonical_link_is_none_for_anything_but_an_absolute_http_url(url: str) -> None:
    assert canonical_link(url) is None


def test_a_permalink_guid_is_canonicalised_and_an_opaque_guid_only_trimmed() -> None:
    assert canonical_guid(" https://Example.com/a?utm_source=x ") == "https://example.com/a"
    assert canonical_guid(" urn:uuid:1234 ") == "urn:uuid:1234"


def test_article_id_is_the_sha1_prefix_of_the_guid_else_of_the_link() -> None:
    expected = hashlib.sha1(b"coinwire-1001").hexdigest()[:20]
    assert article_id("coinwire-1001", "https://example.com/a") == expected
    assert (
        article_id(None, "https://example.com/a")
        == hashlib.sha1(b"https://example.com/a").hexdigest()[:20]
    )


def test_article_id_is_stable_across_runs() -> None:
    # A literal: an id that changed between releases would orphan every stored article.
    assert article_id("coinwire-1001", None) == "6ee5ab9680f5570bb01c"


def test_article_id_needs_a_guid_or_a_link() -> None:
    with pytest.raises(ValueError, match="guid or a link"):
        article_id(None, None)


@pytest.mark.parametrize(
    ("url", "canonical"),
    [
        ("https://example.com/feed?rss", "https://example.com/feed?rss"),
        ("https://example.com/a?q=a/b:c,d@e", "https://example.com/a?q=a/b:c,d@e"),
        ("https://example.com/a?q=x%20y+z&r=%2F", "https://example.com/a?q=x%20y+z&r=%2F"),
        ("https://example.com/a?b=&a&&c=1", "https://example.com/a?b=&a&&c=1"),
        ("https://example.com/a?id=1;page=2", "https://example.com/a?id=1;page=2"),
        ("https://example.com/a?q=é", "https://example.com/a?q=é"),
        ("https://example.com/a?rss&utm_source=x&fbclid=y", "https://example.com/a?rss"),
        ("https://example.com/a?utm%5Fsource=x&id=1", "https://example.com/a?id=1"),
        ("https://example.com/a?utm_source=x", "https://example.com/a"),
        ("https://example.com/a?", "https://example.com/a"),
        ("https://example.com?rss#top", "https://example.com/?rss"),
    ],
)
def test_canonical_link_keeps_the_query_bytes_except_tracking_params(
    url: str, canonical: str
) -> None:
    assert canonical_link(url) == canonical


@pytest.mark.parametrize("url", ["http://[abc/", "https://[::1", "http://a\uff03b/", "http://a:x/"])
def test_canonical_link_is_none_for_a_url_urlsplit_refuses(url: str) -> None:
    assert canonical_link(url) is None
    assert canonical_guid(f" {url} ") == url


@pytest.mark.parametrize(
    ("fragment", "text"),
    [
        ("<p>Rates <![ if mso]>held</p>", "Rates held"),
        ("<p>a &amp; b</p><![ x]><script>hidden('<p>')</script>c<br>d", "a & b c d"),
        ("<![ if !mso]><style>p {}</style>", ""),
    ],
)
def test_html_the_standard_parser_refuses_is_stripped_to_text_without_raising(
    fragment: str, text: str
) -> None:
    assert html_to_text(fragment) == text


def test_article_id_of_a_lone_surrogate_is_a_hash_not_an_error() -> None:
    assert len(article_id("guid-\ud800", None)) == 20
