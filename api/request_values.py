"""A request's parameters, read once by one parser, for every reader: metering prices a request from
the very values its handler serves (decisions.md, Parameters).

The query string is split here, not by Litestar: a route declares the query parameters it takes in
`opt["query"]` (`api.params` declarations, which the OpenAPI document also shows) and reads them
from `RequestValues.of(request.scope)`. The metering layer reads the scaled parameter of a request
from the same object before the route runs; the route gets that same value, never a second reading
of the raw query. A repeated parameter, an unknown one and a query that is not UTF-8 are each a 422
naming the parameter, raised by `check()` (the route's first step) rather than where metering reads,
so the order of checks stays authentication, limits, then the route.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast
from urllib.parse import unquote_to_bytes

from litestar.types import Scope

from api.errors import InvalidParameter
from api.params import (
    AS_OF,
    POINT_IN_TIME,
    Bounds,
    Default,
    Number,
    QueryParameterDeclaration,
    Text,
    parse_integer,
    parse_number,
    shortened,
)

VALUES_SCOPE = "mi.values"
"""The scope key of a request's `RequestValues`."""
_NO_DECLARATIONS: tuple[QueryParameterDeclaration, ...] = ()
_NO_PATH: Mapping[str, Any] = {}


class RequestValues:
    """The parameters of one request: its query split once, each value parsed once."""

    __slots__ = ("_integers", "_path", "_problem", "_query")

    def __init__(
        self,
        query: dict[str, str],
        path: Mapping[str, Any],
        problem: InvalidParameter | None,
    ) -> None:
        self._query = query
        self._path = path
        self._problem = problem
        self._integers: dict[Bounds[Any], int | None] = {}

    @classmethod
    def of(cls, scope: Scope) -> RequestValues:
        """The request's values, read on the first call (by whichever layer asks first)."""
        held = cast("dict[str, Any]", scope)
        found: RequestValues | None = held.get(VALUES_SCOPE)
        if found is None:
            found = held[VALUES_SCOPE] = cls.read(scope)
        return found

    @classmethod
    def read(cls, scope: Scope) -> RequestValues:
        handler = scope.get("route_handler")
        raw = scope.get("query_string", b"")
        declared = _NO_DECLARATIONS
        if handler is not None and raw:
            declared = handler.opt.get("query", _NO_DECLARATIONS)
            if handler.opt.get(POINT_IN_TIME):  # every data route also takes `as_of`
                declared = (*declared, AS_OF)
        query, problem = split_query(raw, declared)
        return cls(query, scope.get("path_params") or _NO_PATH, problem)

    def check(self) -> None:
        """422 for a repeated or unknown parameter or a query that is not UTF-8."""
        if self._problem is not None:
            raise self._problem

    def integer(self, bounds: Bounds[Default]) -> int | Default:
        """`bounds`' value as served: its default when absent, else parsed strictly and clamped
        (422 naming it when it is not an integer, outside 64 bits or below an unclamped bound)."""
        integers = self._integers
        if bounds in integers:
            return integers[bounds]  # type: ignore[return-value]  # (stored by this method)
        raw = (self._path if bounds.source == "path" else self._query).get(bounds.name)
        value = (
            bounds.default if raw is None else bounds.served(parse_integer(bounds.name, str(raw)))
        )
        integers[bounds] = value
        return value

    def text(self, declared: Text) -> str | None:
        """The parameter's text as sent, or its default."""
        return self._query.get(declared.name, declared.default)

    def number(self, declared: Number) -> float:
        raw = self._query.get(declared.name)
        return declared.default if raw is None else parse_number(declared.name, raw)


def split_query(
    raw: bytes, declared: tuple[QueryParameterDeclaration, ...]
) -> tuple[dict[str, str], InvalidParameter | None]:
    """The query's parameters by name, and the first problem with them (None: there is none).

    `+` is a space and `%XX` a byte, both in names and values, decoded as UTF-8 (as browsers and
    HTTP clients encode them); a part without `=` is a parameter with an empty value.
    """
    values: dict[str, str] = {}
    problem: InvalidParameter | None = None
    if not raw:
        return values, None
    names = {declaration.name for declaration in declared}
    for part in raw.split(b"&"):
        if not part:
            continue
        name_bytes, _, value_bytes = part.partition(b"=")
        try:
            name, value = _decoded(name_bytes), _decoded(value_bytes)
        except UnicodeDecodeError:
            problem = problem or InvalidParameter("query", "the query string is not UTF-8")
            continue
        if problem is None:
            problem = _problem_with(name, names, values)
        values[name] = value
    return values, problem


def _problem_with(name: str, names: set[str], seen: dict[str, str]) -> InvalidParameter | None:
    if name in seen:
        return InvalidParameter(name, "given more than once (no parameter takes several values)")
    if name not in names:
        takes = f"this route takes {', '.join(sorted(names))}" if names else "this route takes none"
        return InvalidParameter(shortened(name), f"unknown parameter; {takes}")
    return None


def _decoded(part: bytes) -> str:
    return unquote_to_bytes(part.replace(b"+", b" ")).decode("utf-8")
