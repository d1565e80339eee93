"""The one base Struct every wire type derives from."""

from __future__ import annotations

import msgspec


class Wire(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=False):
    """Base of every JSON body the API sends.

    The spec is the contract every client codes against, so the wire conventions live here once:
    field names are the spec's names exactly (no renaming, no camelCase), no field is ever omitted
    (`omit_defaults=False`: a null is sent as `null`, never dropped), fields are keyword-only so a
    reordering can't silently swap values, and instances are frozen so a body built once per data
    version can be shared between requests and cached as bytes without anyone mutating it.
    """
