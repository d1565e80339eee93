"""Parsing one feed document: each field, each reject reason, and malformed documents."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from pipelines.news.model import FeedDocument, NewsItem, Reject
from pipelines.news.parse import ParsedFeed, ParsePolicy, parse_document

from .conftest import NOW, fixture_document


def rss(*items: str) -> FeedDocument:
    xml = f'<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>t</title>{"".join(items)}</channel></rss>'
    return FeedDocument("inline", "inline.xml", xml.encode())


def only_item(parsed: ParsedFeed) -> NewsItem:
    assert parsed.rejects == []
    assert len(parsed.items) == 1
    return parsed.items[0]


def only_reject(parsed: ParsedFeed) -> Reject:
    assert parsed.items == []
    assert len(parsed.rejects) == 1
    return parsed.rejects[0]


@pytest.fixture
def coinwire(policy: ParsePolicy) -> ParsedFeed:
    return parse_document(fixture_document("crypto/coinwire.xml"), policy)


@pytest.fixture
def ledgerdaily(policy: ParsePolicy) -> ParsedFeed:
    return parse_document(fixture_document("crypto/ledgerdaily.xml"), policy)


def test_rss_item_fields_are_parsed_and_normalised(coinwire: ParsedFeed) -> None:
    item = coinwire.items[0]
    assert item.guid == "coinwire-1001"
    assert item.link == "https://coinwire.example.com/markets/btc-rally?id=7"
    assert item.title == "Bitcoin & Ether rally as ETF inflows surge"
    assert (
        item.body
        == "Bitcoin rose 4% on Thursday, while ether gained 6%. Analysts “cautious” & upbeat."
    )
    assert item.published_at == datetime(2025, 1, 9, 13, 30, tzinfo=UTC)  # 14:30 +0100
    assert (item.feed, item.location) == ("coinwire", "item 1")


def test_atom_entry_fields_are_parsed_and_normalised(ledgerdaily: ParsedFeed) -> None:
    item = ledgerdaily.items[2]
    assert item.guid == "urn:ledgerdaily:stablecoins"
    assert item.link == "https://ledgerdaily.example.org/2025/01/stablecoins?ref=home"
    assert item.title == "Stablecoin supply hits record"
    assert (
        item.body == "Supply Total stablecoin supply passed $200bn this week."
    )  # content beats summary
    assert item.published_at == datetime(2025, 1, 9, 20, 45, tzinfo=UTC)  # only <updated>, -05:00


def test_atom_published_is_preferred_to_updated(ledgerdaily: ParsedFeed) -> None:
    assert ledgerdaily.items[0].published_at == datetime(2025, 1, 8, 18, 0, tzinfo=UTC)


def test_item_missing_only_a_title_is_kept_with_a_null_title(coinwire: ParsedFeed) -> None:
    untitled = next(i for i in coinwire.items if i.guid == "coinwire-1002")
    assert untitled.title is None
    assert untitled.body == "A market note published without a headline."


def test_item_without_a_body_takes_its_title_as_body(policy: ParsePolicy) -> None:
    item = only_item(
        parse_document(
            rss(
                "<item><title>Headline only</title><guid>g</guid><pubDate>Thu, 09 Jan 2025 10:00:00 GMT</pubDate></item>"
            ),
            policy,
        )
    )
    assert (item.title, item.body) == ("Headline only", "Headline only")


def test_item_without_guid_is_identified_by_its_canonical_link(coinwire: ParsedFeed) -> None:
    item = next(i for i in coinwire.items if i.title == "Spot ether ETF approved")
    assert item.guid is None
    assert item.link == "https://news.example.com/markets/eth-etf"


def test_a_guid_that_is_not_a_url_is_not_taken_for_a_link(policy: ParsePolicy) -> None:
    # feedparser copies a permalink-by-default guid into `link`; an opaque one is no link.
    item = only_item(
        parse_document(
            rss(
                "<item><title>t</title><guid>opaque-9</guid><pubDate>Thu, 09 Jan 2025 10:00:00 GMT</pubDate></item>"
            ),
            policy,
        )
    )
    assert (item.guid, item.link) == ("opaque-9", None)


def test_a_date_without_a_zone_is_read_as_utc(policy: ParsePolicy) -> None:
    item = only_item(
        parse_document(
            rss(
                "<item><title>t</title><guid>g</guid><pubDate>Thu, 09 Jan 2025 10:00:00</pubDate></item>"
            ),
            policy,
        )
    )
    assert item.published_at == datetime(2025, 1, 9, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("location", "reason"),
    [
        ("item 3", "no guid and no link: neither is present"),
        ("item 4", "unparseable date: published 'sometime last week'"),
        ("item 7", "future date: 2033-01-01T00:00:00+00:00 is after 2025-01-10T12:00:00+00:00"),
        ("item 8", "empty title and body: the item has no text"),
        ("item 9", "missing date: the item has no published or updated date"),
    ],
)
def test_each_invalid_item_is_rejected_with_its_reason_location_and_raw_text(
    coinwire: ParsedFeed, location: str, reason: str
) -> None:
    reject = next(r for r in coinwire.rejects if r.location == location)
    assert reject.reason.startswith(reason)
    assert reject.source.endswith("coinwire.xml")
    assert reject.record.startswith("<item>")
    assert reject.record.endswith("</item>")


def test_a_date_within_the_clock_skew_is_accepted_and_beyond_it_rejected() -> None:
    document = rss(
        "<item><title>t</title><guid>g</guid><pubDate>Fri, 10 Jan 2025 12:10:00 GMT</pubDate></item>"
    )
    assert only_item(
        parse_document(document, ParsePolicy(now=NOW, clock_skew=timedelta(minutes=15)))
    )
    reject = only_reject(
        parse_document(document, ParsePolicy(now=NOW, clock_skew=timedelta(minutes=5)))
    )
    assert reject.reason.startswith("future date:")


def test_an_item_failing_several_rules_lists_every_reason(policy: ParsePolicy) -> None:
    reject = only_reject(
        parse_document(rss("<item><description>text</description></item>"), policy)
    )
    assert reject.reason == (
        "no guid and no link: neither is present | missing date: the item has no published or updated date"
    )


def test_every_item_read_is_either_kept_or_rejected(coinwire: ParsedFeed) -> None:
    assert coinwire.items_read == 9
    assert len(coinwire.items) + len(coinwire.rejects) == coinwire.items_read


def test_truncated_xml_keeps_the_salvaged_items_and_rejects_the_document(
    policy: ParsePolicy,
) -> None:
    parsed = parse_document(fixture_document("malformed/truncated.xml"), policy)
    assert [i.guid for i in parsed.items] == ["cutshort-1"]
    feed_reject, item_reject = parsed.rejects
    assert (feed_reject.location, item_reject.location) == ("feed", "item 2")
    assert feed_reject.reason.startswith("not well-formed XML:")
    assert feed_reject.record.startswith('<?xml version="1.0"')
    assert "Second item is cut" in item_reject.record


def test_non_utf8_bytes_are_decoded_and_the_document_rejected_for_its_encoding(
    policy: ParsePolicy,
) -> None:
    parsed = parse_document(fixture_document("malformed/latin1.xml"), policy)
    assert [i.title for i in parsed.items] == ["Café des marchés : l'euro recule"]
    assert only_reject(ParsedFeed(rejects=parsed.rejects)).reason.startswith("character encoding:")


def test_an_empty_file_is_rejected_as_an_empty_document(policy: ParsePolicy) -> None:
    reject = only_reject(parse_document(fixture_document("malformed/empty.xml"), policy))
    assert (reject.location, reject.reason) == ("feed", "empty document: 0 bytes")


def test_a_file_that_is_not_xml_is_rejected_as_not_a_feed(policy: ParsePolicy) -> None:
    reject = only_reject(parse_document(fixture_document("malformed/not-xml.xml"), policy))
    assert reject.reason.startswith("not an RSS or Atom feed:")
    assert "CSV export" in reject.record


def test_an_html_page_is_rejected_as_not_a_feed(policy: ParsePolicy) -> None:
    page = FeedDocument("page", "page.xml", b"<html><body><p>Moved</p></body></html>")
    assert only_reject(parse_document(page, policy)).reason.startswith("not an RSS or Atom feed:")


def test_an_unreadable_feed_is_rejected_with_the_read_error(policy: ParsePolicy) -> None:
    missing = FeedDocument("gone", "https://x.example/feed", None, "HTTP 404 (after 1 attempt(s))")
    reject = only_reject(parse_document(missing, policy))
    assert (reject.location, reject.reason) == (
        "feed",
        "unreadable feed: HTTP 404 (after 1 attempt(s))",
    )


def test_a_relative_link_without_a_guid_is_rejected_as_no_link(policy: ParsePolicy) -> None:
    document = rss(
        "<item><title>t</title><link>/markets/a</link><pubDate>Thu, 09 Jan 2025 10:00:00 GMT</pubDate></item>"
    )
    reason = only_reject(parse_document(document, policy)).reason
    assert reason == "no guid and no link: link '/markets/a' is not an absolute http(s) URL"


def test_a_rejects_raw_item_ignores_markup_quoted_in_cdata(policy: ParsePolicy) -> None:
    item = "<item><title>t</title><description><![CDATA[<item>quoted</item>]]></description></item>"
    assert only_reject(parse_document(rss(item), policy)).record == item


def test_a_reject_whose_raw_item_cannot_be_matched_keeps_its_fields_as_json(
    policy: ParsePolicy,
) -> None:
    # feedparser starts a second entry at a foreign <entry> inside an RSS item: 2 parsed, 1 raw.
    item = "<item><title>t</title><entry xmlns='urn:x'>z</entry></item>"
    parsed = parse_document(rss(item), policy)
    assert parsed.items_read == 2
    assert parsed.rejects[0].record == '{"title": "t"}'


def dated(pub_date: str) -> FeedDocument:
    return rss(f"<item><title>t</title><guid>g</guid><pubDate>{pub_date}</pubDate></item>")


@pytest.mark.parametrize(
    ("pub_date", "instant"),
    [
        ("Ter, 05 Mar 2024 14:30:00 -0300", datetime(2024, 3, 5, 17, 30, tzinfo=UTC)),
        ("Qua, 12 Fev 2025 08:00:00 GMT", datetime(2025, 2, 12, 8, 0, tzinfo=UTC)),
        ("Sáb, 06 Abr 2024 10:00:00 +0000", datetime(2024, 4, 6, 10, 0, tzinfo=UTC)),
        ("sab 04 mai 2024 10:00:00 +0000", datetime(2024, 5, 4, 10, 0, tzinfo=UTC)),
        ("Dom, 01 Set 2024 09:15:00 -0300", datetime(2024, 9, 1, 12, 15, tzinfo=UTC)),
        ("Sex, 11 Out 2024 23:00:00 -0300", datetime(2024, 10, 12, 2, 0, tzinfo=UTC)),
        ("Seg, 16 Dez 2024 07:00:00 +0000", datetime(2024, 12, 16, 7, 0, tzinfo=UTC)),
        ("Qui, 15 Ago 2024 12:00:00 -0300", datetime(2024, 8, 15, 15, 0, tzinfo=UTC)),
        ("mar., 10 dic. 2024 10:00:00 +0100", datetime(2024, 12, 10, 9, 0, tzinfo=UTC)),
        ("Mar 10 Ene 2024 10:00:00 +0100", datetime(2024, 1, 10, 9, 0, tzinfo=UTC)),
        ("lun. 12 févr. 2024 09:00:00 +0100", datetime(2024, 2, 12, 8, 0, tzinfo=UTC)),
        ("Jeu, 15 Août 2024 09:00:00 +0200", datetime(2024, 8, 15, 7, 0, tzinfo=UTC)),
        ("Di, 5. März 2024 14:30:00 +0100", datetime(2024, 3, 5, 13, 30, tzinfo=UTC)),
        ("Do, 03 Okt 2024 08:00:00 +0200", datetime(2024, 10, 3, 6, 0, tzinfo=UTC)),
    ],
)
def test_rfc822_dates_with_portuguese_spanish_french_or_german_names_are_read(
    pub_date: str, instant: datetime
) -> None:
    policy = ParsePolicy(now=datetime(2025, 12, 31, tzinfo=UTC))  # after every date above
    assert only_item(parse_document(dated(pub_date), policy)).published_at == instant


@pytest.mark.parametrize(
    ("pub_date", "instant"),
    [
        ("Thu, 09 Jan 2025 14:30:00 +0100", datetime(2025, 1, 9, 13, 30, tzinfo=UTC)),
        ("09 Jan 2025 14:30 EST", datetime(2025, 1, 9, 19, 30, tzinfo=UTC)),
        ("2025-01-09T14:30:00+01:00", datetime(2025, 1, 9, 13, 30, tzinfo=UTC)),
        ("2025-01-09", datetime(2025, 1, 9, tzinfo=UTC)),
        ("Thu Jan  9 14:30:00 2025", datetime(2025, 1, 9, 14, 30, tzinfo=UTC)),
    ],
)
def test_the_english_and_iso_dates_read_before_are_still_read_the_same(
    policy: ParsePolicy, pub_date: str, instant: datetime
) -> None:
    assert only_item(parse_document(dated(pub_date), policy)).published_at == instant


@pytest.mark.parametrize(
    "pub_date",
    [
        "sometime last week",
        "Qua, 31 Fev 2025 08:00:00 GMT",
        "Qua, 12 Fevereirinho 2025 08:00:00 GMT",
        "Fev Fev Fev",
        "Ter, Mar",
        "31 Dec 9999 23:00:00 -0200",
    ],
)
def test_a_date_no_reader_accepts_is_rejected_as_unparseable(
    policy: ParsePolicy, pub_date: str
) -> None:
    reason = only_reject(parse_document(dated(pub_date), policy)).reason
    assert reason == f"unparseable date: published {pub_date!r}"


def test_html_the_standard_parser_refuses_does_not_stop_the_item_or_its_feed(
    policy: ParsePolicy,
) -> None:
    # feedparser's sanitiser hands `<![ if mso]>` on as is; html.parser raised AssertionError on it.
    parsed = parse_document(
        rss(
            "<item><guid>a</guid><pubDate>Thu, 09 Jan 2025 10:00:00 GMT</pubDate>"
            "<description>&lt;p&gt;Rates &lt;![ if mso]&gt;held&lt;/p&gt;</description></item>",
            "<item><guid>b</guid><pubDate>Thu, 09 Jan 2025 10:00:00 GMT</pubDate>"
            "<description>Second</description></item>",
        ),
        policy,
    )
    assert parsed.rejects == []
    assert [i.guid for i in parsed.items] == ["a", "b"]
    assert "Rates" in parsed.items[0].body


def test_an_item_whose_normalisation_fails_is_a_parser_failure_reject_and_the_feed_goes_on(
    policy: ParsePolicy, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fragile(value: str) -> str:
        if "boom" in value:
            raise RuntimeError("boom")
        return value

    monkeypatch.setattr("pipelines.news.parse.normalise_whitespace", fragile)
    parsed = parse_document(
        rss(
            "<item><guid>a</guid><title>boom</title><pubDate>Thu, 09 Jan 2025 10:00:00 GMT</pubDate></item>",
            "<item><guid>b</guid><title>fine</title><pubDate>Thu, 09 Jan 2025 10:00:00 GMT</pubDate></item>",
        ),
        policy,
    )
    assert [i.guid for i in parsed.items] == ["b"]
    reject = only_reject(ParsedFeed(rejects=parsed.rejects))
    assert (reject.location, reject.reason) == ("item 1", "parser failure: RuntimeError: boom")
    assert reject.record.startswith("<item><guid>a</guid>")
    assert len(parsed.items) + len(parsed.rejects) == parsed.items_read


def test_a_document_feedparser_itself_fails_on_is_a_feed_reject(
    policy: ParsePolicy, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fails(*_: object, **__: object) -> None:
        raise UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")

    monkeypatch.setattr("pipelines.news.parse.feedparser.parse", fails)
    reject = only_reject(parse_document(rss("<item><guid>a</guid></item>"), policy))
    assert reject.location == "feed"
    assert reject.reason.startswith("parser failure: UnicodeEncodeError:")
    assert reject.record.startswith("<?xml")


@pytest.mark.parametrize("reference", ["&#xD800;", "&#55296;", "&#xdfff;", "&#57343;", "&#x0DBFF;"])
def test_a_lone_surrogate_rejects_only_its_item(policy: ParsePolicy, reference: str) -> None:
    """decisions.md, Inputs from sources: one bad item never costs the other items of its feed
    (feedparser raises on a character reference to a surrogate, for the whole document)."""
    when = "<pubDate>Thu, 09 Jan 2025 10:00:00 GMT</pubDate>"
    parsed = parse_document(
        rss(
            f"<item><guid>a</guid><title>fine {when[:0]}one</title>{when}</item>",
            f"<item><guid>b</guid><title>bad {reference} title</title>{when}</item>",
            f"<item><guid>c</guid><title>fine two</title><description>x</description>{when}</item>",
        ),
        policy,
    )
    assert [i.guid for i in parsed.items] == ["a", "c"]
    reject = only_reject(ParsedFeed(rejects=parsed.rejects))
    assert reject.location == "item 2"
    assert "lone surrogate" in reject.reason
    assert reference in reject.record
    assert len(parsed.items) + len(parsed.rejects) == parsed.items_read
