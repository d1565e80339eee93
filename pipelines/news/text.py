"""Text normalisation of feed items: markup to plain text, canonical links and stable article ids."""

from __future__ import annotations

import hashlib
import html
import re
from html.parser import HTMLParser
from urllib.parse import SplitResult, unquote_plus, urlsplit, urlunsplit

TRACKING_PARAMS: frozenset[str] = frozenset(
    {"fbclid", "gclid", "dclid", "msclkid", "yclid", "igshid", "mc_cid", "mc_eid", "_ga", "_hsenc"}
)
"""Query parameters that identify a campaign or a click, not a page (besides every `utm_*`)."""

ARTICLE_ID_LENGTH = 20
"""Hex digits of the SHA-1 kept as the article id (80 bits: collisions are not a practical concern)."""

_WHITESPACE = re.compile(r"\s+")
_SKIPPED_ELEMENTS = frozenset({"script", "style", "head", "template"})
_SKIPPED_CONTENT = re.compile(
    rf"<({'|'.join(sorted(_SKIPPED_ELEMENTS))})\b[^>]*>.*?(?:</\1\s*>|$)",
    re.IGNORECASE | re.DOTALL,
)
_TAG = re.compile(r"<[^>]*(?:>|$)")
_DEFAULT_PORTS = {"http": 80, "https": 443}


class _TextExtractor(HTMLParser):
    """Collects the text of an HTML fragment; entities are decoded by the parser itself."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED_ELEMENTS:
            self._skipping += 1
        # Block-level and line-break tags separate words that the markup placed on separate lines.
        self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED_ELEMENTS and self._skipping:
            self._skipping -= 1
        self.parts.append(" ")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def normalise_whitespace(text: str) -> str:
    """Collapse every run of whitespace (non-breaking spaces included) into one space, trimmed."""
    return _WHITESPACE.sub(" ", text.replace("\u00a0", " ")).strip()


def html_to_text(fragment: str) -> str:
    """Plain text of an HTML fragment: tags removed, entities decoded, whitespace normalised.

    Never raises: markup the standard parser refuses is stripped by a plain tag pattern instead.
    """
    extractor = _TextExtractor()
    try:
        extractor.feed(fragment)
        extractor.close()
    # The standard parser raises on some malformed declarations (`<![ ` raises AssertionError in
    # _markupbase); which errors depends on the Python release, and feed markup is untrusted.
    except Exception:
        return _stripped_text(fragment)
    return normalise_whitespace("".join(extractor.parts))


def _stripped_text(fragment: str) -> str:
    """The text of markup the HTML parser refuses: skipped elements and every `<...>` removed."""
    without_tags = _TAG.sub(" ", _SKIPPED_CONTENT.sub(" ", fragment))
    return normalise_whitespace(html.unescape(without_tags))


def is_tracking_param(name: str) -> bool:
    lowered = name.lower()
    return lowered.startswith("utm_") or lowered in TRACKING_PARAMS


def canonical_link(url: str) -> str | None:
    """The canonical form of an absolute http(s) URL, or None when `url` is not one.

    Scheme and host are lower-cased, a default port and the fragment are dropped, an empty path
    becomes `/` and tracking parameters are removed; the rest of the query is kept byte for byte.
    """
    try:
        # urlsplit refuses some netlocs (a bad IPv6 literal, characters NFKC maps to `/?#@:`),
        # and reading the port refuses one that is not a number from 0 to 65535.
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    return urlunsplit((scheme, _netloc(parts, port), parts.path or "/", _query(parts.query), ""))


def _netloc(parts: SplitResult, port: int | None) -> str:
    """Host (lower-cased by urlsplit, user info dropped) and the port unless it is the default."""
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host  # an IPv6 literal keeps its brackets
    return host if port in (None, _DEFAULT_PORTS[parts.scheme.lower()]) else f"{host}:{port}"


def _query(query: str) -> str:
    """The query without its tracking parameters; every other parameter keeps its exact bytes.

    Not parsed and re-encoded: that would add `=` to a bare key (`?rss` to `?rss=`) and
    percent-encode reserved characters, changing the link and the id of an item without a guid.
    """
    kept = [p for p in query.split("&") if not is_tracking_param(unquote_plus(p.split("=")[0]))]
    return "&".join(kept)


def canonical_guid(guid: str) -> str:
    """A guid as compared and hashed: trimmed, and canonicalised when it is a permalink URL."""
    stripped = guid.strip()
    return canonical_link(stripped) or stripped


def article_id(guid: str | None, link: str | None) -> str:
    """Stable id of an article: SHA-1 hex (first 20 digits) of its guid, else its canonical link."""
    identity = guid or link
    if not identity:
        raise ValueError("an article needs a guid or a link")
    # surrogatepass: a lone surrogate (from a bad character reference) is hashed, not refused;
    # every other string encodes exactly as in UTF-8, so existing ids are unchanged.
    digest = hashlib.sha1(identity.encode("utf-8", "surrogatepass"), usedforsecurity=False)
    return digest.hexdigest()[:ARTICLE_ID_LENGTH]
