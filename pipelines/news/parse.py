"""Parse one fetched feed document (RSS 2.0 or Atom 1.0) into normalised items and rejects."""

from __future__ import annotations

import calendar
import io
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import feedparser

from pipelines.news.dates import read_date
from pipelines.news.model import REASON_SEPARATOR, FeedDocument, NewsItem, Reject
from pipelines.news.text import (
    article_id,
    canonical_guid,
    canonical_link,
    html_to_text,
    normalise_whitespace,
)

RECORD_LIMIT = 8_000
"""Characters of raw text kept in a reject's `record` (a whole item, or the head of a bad document)."""

_RAW_ITEM = re.compile(r"<(item|entry)\b[\s\S]*?(?:</\1\s*>|$)")
_SURROGATE_REFERENCE = re.compile(
    rb"&#(?:[xX]0*[dD][89a-fA-F][0-9a-fA-F]{2}|0*(?:5529[6-9]|55[3-9][0-9]{2}|56[0-9]{3}|57[0-2][0-9]{2}|573[0-3][0-9]|5734[0-3]));"
)
"""A character reference to a UTF-16 surrogate (U+D800 to U+DFFF, `&#xD800;` or `&#55296;`): no
character at all, on which feedparser's lenient parser raises for the whole document."""
NOT_A_CHARACTER = "\ufdd0"
"""What such a reference is read as instead (a noncharacter, never text): the item holding it is
rejected alone (decisions.md, Inputs from sources: one bad item never costs the others)."""
_NOT_A_CHARACTER_REFERENCE = b"&#xFDD0;"
SURROGATE_REASON = (
    "a character reference to a lone surrogate (U+D800 to U+DFFF), which is no character"
)
_OPAQUE = re.compile(r"<!\[CDATA\[[\s\S]*?(?:\]\]>|$)|<!--[\s\S]*?(?:-->|$)")


@dataclass(frozen=True)
class ParsePolicy:
    """What a parsed item is checked against: the reading instant and the clock skew allowed."""

    now: datetime
    clock_skew: timedelta = timedelta(minutes=15)


@dataclass
class ParsedFeed:
    """The outcome of one document: its valid items in document order, and its rejects."""

    items: list[NewsItem] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
    items_read: int = 0


def parse_documents(documents: Sequence[FeedDocument], policy: ParsePolicy) -> list[ParsedFeed]:
    """`parse_document` of each document, in order (a chunk of work for a worker process)."""
    return [parse_document(document, policy) for document in documents]


def parse_document(document: FeedDocument, policy: ParsePolicy) -> ParsedFeed:
    """Every item of `document`; a document-level problem is one reject at location `feed`.

    A malformed document (bad XML, wrong encoding) keeps every item feedparser salvages.
    """
    if document.content is None:
        reason = f"unreadable feed: {document.error or 'no content'}"
        return ParsedFeed(rejects=[_feed_reject(document, "", reason)])
    if not document.content.strip():
        reason = f"empty document: {len(document.content)} bytes"
        return ParsedFeed(rejects=[_feed_reject(document, "", reason)])
    content = _SURROGATE_REFERENCE.sub(_NOT_A_CHARACTER_REFERENCE, document.content)
    try:
        # A stream, never bytes or a string: feedparser would treat those as a path or URL to open.
        parsed = feedparser.parse(io.BytesIO(content), sanitize_html=True)
    # feedparser's lenient parser raises on some bad markup (a character reference to a lone
    # surrogate raises UnicodeEncodeError); one such document must not stop the market's news.
    except Exception as error:
        text = _decode(document.content, None)
        return ParsedFeed(rejects=[_feed_reject(document, text, _parser_failure(error))])
    text = _decode(document.content, _raw(parsed, "encoding"))
    entries: list[dict[str, Any]] = list(_raw(parsed, "entries", []))
    outcome = ParsedFeed(items_read=len(entries))
    problem = _document_problem(parsed, len(entries))
    if problem:
        outcome.rejects.append(_feed_reject(document, text, problem))
    raw_items = _raw_items(text, len(entries))
    for index, entry in enumerate(entries):
        location = f"item {index + 1}"
        item_or_reasons = _parse_entry_guarded(entry, document, location, policy)
        if isinstance(item_or_reasons, NewsItem):
            outcome.items.append(item_or_reasons)
        else:
            record = raw_items[index] if raw_items else _entry_as_json(entry)
            reason = REASON_SEPARATOR.join(item_or_reasons)
            outcome.rejects.append(Reject(document.source, location, record[:RECORD_LIMIT], reason))
    return outcome


def _parse_entry_guarded(
    entry: dict[str, Any], document: FeedDocument, location: str, policy: ParsePolicy
) -> NewsItem | list[str]:
    """`parse_entry`, with an unexpected error turned into the item's reject reason."""
    if _holds(entry, NOT_A_CHARACTER):
        return [SURROGATE_REASON]
    try:
        return parse_entry(entry, document, location, policy)
    # Normalisation runs library code on untrusted markup: a defect met by one item must cost
    # that item only, not the feed's other items (nor the market's news step).
    except Exception as error:
        return [_parser_failure(error)]


def _holds(value: object, text: str) -> bool:
    """Whether any string in a parsed entry (its fields, nested details, lists) contains `text`."""
    if isinstance(value, str):
        return text in value
    if isinstance(value, dict):
        return any(_holds(item, text) for item in value.values())
    if isinstance(value, list | tuple):
        return any(_holds(item, text) for item in value)
    return False


def _parser_failure(error: Exception) -> str:
    return f"parser failure: {type(error).__name__}: {error}"


def parse_entry(
    entry: dict[str, Any], document: FeedDocument, location: str, policy: ParsePolicy
) -> NewsItem | list[str]:
    """One normalised item, or the reasons it cannot be used."""
    # dict.get, not entry.get: feedparser's own lookup warns about its `updated` fallback.
    raw_guid = _text_field(entry, "id")
    guid = canonical_guid(raw_guid) if raw_guid else None
    link = canonical_link(_text_field(entry, "link") or "")
    title = _title(entry)
    body = _body(entry) or title or ""
    published_at, date_problem = _published_at(entry)
    reasons = []
    if guid is None and link is None:
        reasons.append(f"no guid and no link: {_describe_link(entry)}")
    if date_problem:
        reasons.append(date_problem)
    elif published_at is not None and published_at > policy.now + policy.clock_skew:
        reasons.append(
            f"future date: {published_at.isoformat()} is after {policy.now.isoformat()} "
            f"plus the allowed clock skew of {policy.clock_skew}"
        )
    if not body:
        reasons.append("empty title and body: the item has no text")
    if reasons or published_at is None:
        return reasons
    return NewsItem(
        article_id=article_id(guid, link),
        feed=document.feed,
        source=document.source,
        location=location,
        guid=guid,
        link=link,
        title=title,
        body=body,
        published_at=published_at,
    )


def _decode(content: bytes, encoding: str | None) -> str:
    """The document as text in the encoding feedparser settled on, for the rejects' records."""
    try:
        return content.decode(encoding or "utf-8", errors="replace")
    except LookupError:
        return content.decode("utf-8", errors="replace")


def _raw(mapping: dict[str, Any], key: str, default: Any = None) -> Any:
    """A stored value, bypassing FeedParserDict's aliases (its `updated` alias warns)."""
    return dict.get(mapping, key, default)


def _document_problem(parsed: dict[str, Any], entries: int) -> str | None:
    exception = _raw(parsed, "bozo_exception")
    salvaged = f"{entries} items salvaged"
    if isinstance(
        exception, feedparser.CharacterEncodingOverride | feedparser.CharacterEncodingUnknown
    ):
        return f"character encoding: {exception}; {salvaged}"
    if not _raw(parsed, "version") and not entries:
        detail = f" ({exception})" if exception else ""
        return f"not an RSS or Atom feed: no feed format recognised{detail}"
    if exception is not None:
        return f"not well-formed XML: {exception}; {salvaged}"
    return None


def _feed_reject(document: FeedDocument, text: str, reason: str) -> Reject:
    return Reject(document.source, "feed", text[:RECORD_LIMIT], reason)


def _raw_items(text: str, entries: int) -> list[str] | None:
    """The raw XML of each item, when it can be matched one to one with the parsed entries."""
    # Markup quoted in CDATA or comments is blanked (same length) so it cannot look like an item.
    masked = _OPAQUE.sub(lambda m: " " * len(m.group(0)), text)
    raw = [text[m.start() : m.end()] for m in _RAW_ITEM.finditer(masked)]
    return raw if len(raw) == entries else None


def _entry_as_json(entry: dict[str, Any]) -> str:
    keys = ("id", "link", "title", "published", "updated", "summary")
    return json.dumps({k: _raw(entry, k) for k in keys if _raw(entry, k)}, ensure_ascii=False)


def _text_field(entry: dict[str, Any], key: str) -> str | None:
    value = _raw(entry, key)
    return value.strip() or None if isinstance(value, str) else None


def _is_html(detail: Any) -> bool:
    return isinstance(detail, dict) and "html" in str(_raw(detail, "type") or "")


def _as_text(value: str, detail: Any) -> str:
    return html_to_text(value) if _is_html(detail) else normalise_whitespace(value)


def _title(entry: dict[str, Any]) -> str | None:
    title = _text_field(entry, "title")
    return _as_text(title, _raw(entry, "title_detail")) or None if title else None


def _body(entry: dict[str, Any]) -> str:
    """Text of the fullest body the item carries: its content, else its summary (description)."""
    for content in _raw(entry, "content") or []:
        value = _raw(content, "value") or ""
        text = _as_text(value, content) if value.strip() else ""
        if text:
            return text
    summary = _text_field(entry, "summary")
    return _as_text(summary, _raw(entry, "summary_detail")) if summary else ""


def _published_at(entry: dict[str, Any]) -> tuple[datetime | None, str | None]:
    """The item's instant (published, else updated) in UTC, or the reason there is none."""
    for key in ("published", "updated"):
        raw = _text_field(entry, key)
        instant = _from_struct_time(_raw(entry, f"{key}_parsed"))
        if instant is None and raw:
            instant = read_date(raw)
        if instant is not None:
            return instant, None
        if raw:
            return None, f"unparseable date: {key} {raw!r}"
    return None, "missing date: the item has no published or updated date"


def _from_struct_time(parsed: Any) -> datetime | None:
    """feedparser's UTC time tuple as an instant; None when absent or beyond what datetime holds."""
    if not isinstance(parsed, time.struct_time):
        return None
    try:
        return datetime.fromtimestamp(calendar.timegm(parsed), UTC)
    except (ValueError, OverflowError, OSError):
        return None


def _describe_link(entry: dict[str, Any]) -> str:
    link = _text_field(entry, "link")
    return f"link {link!r} is not an absolute http(s) URL" if link else "neither is present"
