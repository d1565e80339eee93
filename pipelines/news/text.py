"""Text normalisation of feed items: markup to plain text, canonical links and stable article ids."""

from __future__ import annotations

import hashlib
import re
from html.parser import HTMLParser
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

TRACKING_PARAMS: frozenset[str] = frozenset(
    {"fbclid", "gclid", "dclid", "msclkid", "yclid", "igshid", "mc_cid", "mc_eid", "_ga", "_hsenc"}
)
"""Query parameters that identify a campaign or a click, not a page (besides every `utm_*`)."""

ARTICLE_ID_LENGTH = 20
"""Hex digits of the SHA-1 kept as the article id (80 bits: collisions are not a practical concern)."""

_WHITESPACE = re.compile(r"\s+")
_SKIPPED_ELEMENTS = frozenset({"script", "style", "head", "template"})
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
    """Plain text of an HTML fragment: tags removed, entities decoded, whitespace normalised."""
    extractor = _TextExtractor()
    extractor.feed(fragment)
    extractor.close()
    return normalise_whitespace("".join(extractor.parts))


def is_tracking_param(name: str) -> bool:
    lowered = name.lower()
    return lowered.startswith("utm_") or lowered in TRACKING_PARAMS


def canonical_link(url: str) -> str | None:
    """The canonical form of an absolute http(s) URL, or None when `url` is not one.

    Scheme and host are lower-cased, a default port and the fragment are dropped, tracking
    parameters are removed and the remaining query keeps its order.
    """
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    try:
        port = parts.port
    except ValueError:
        return None
    host = parts.hostname  # already lower-cased by urlsplit
    host = f"[{host}]" if ":" in host else host  # an IPv6 literal keeps its brackets
    netloc = host if port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    query = [
        (k, v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
        if not is_tracking_param(k)
    ]
    return urlunsplit((scheme, netloc, parts.path or "/", urlencode(query), ""))


def canonical_guid(guid: str) -> str:
    """A guid as compared and hashed: trimmed, and canonicalised when it is a permalink URL."""
    stripped = guid.strip()
    return canonical_link(stripped) or stripped


def article_id(guid: str | None, link: str | None) -> str:
    """Stable id of an article: SHA-1 hex (first 20 digits) of its guid, else its canonical link."""
    identity = guid or link
    if not identity:
        raise ValueError("an article needs a guid or a link")
    return hashlib.sha1(identity.encode("utf-8"), usedforsecurity=False).hexdigest()[
        :ARTICLE_ID_LENGTH
    ]
