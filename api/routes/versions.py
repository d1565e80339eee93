"""/api/v1/versions: the retained data versions that every data route's `as_of` answers from."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Any

import anyio.to_thread
from litestar import Controller, Request, get

from api.dependencies import current_snapshot, serving_of
from api.errors import InvalidParameter, error_responses
from api.params import VERSIONS_FROM, VERSIONS_LIMIT, VERSIONS_TO, day_param, shown
from api.request_values import RequestValues
from api.schemas import DataVersion, VersionList
from pipelines.catalog.manifest import LoggedVersion
from pipelines.catalog.versions import parse_as_of, published_at, retained_log, rfc3339


class VersionsController(Controller):
    """The version log, newest first. Free with a valid key (`list-versions` costs 0 tokens)."""

    path = "/api/v1"
    tags = ["versions"]  # noqa: RUF012 (Litestar reads this class attribute)

    @get(
        "/versions",
        summary="The retained data versions",
        opt={"operation": "list-versions", "query": (VERSIONS_FROM, VERSIONS_TO, VERSIONS_LIMIT)},
        responses=error_responses(422, 503),
    )
    async def list_versions(self, request: Request[Any, Any, Any]) -> VersionList:
        values = RequestValues.of(request.scope)
        values.check()
        since = instant_param("from", values.text(VERSIONS_FROM), end_of_day=False)
        until = instant_param("to", values.text(VERSIONS_TO), end_of_day=True)
        if since is not None and until is not None and since > until:
            raise InvalidParameter("from", "must not be later than 'to'")
        limit = values.integer(VERSIONS_LIMIT)
        reader = serving_of(request).reader
        log = retained_log(current_snapshot(reader).manifest)
        page = [e for e in reversed(log) if _within(e, since, until)][:limit]

        def described() -> list[DataVersion]:  # records are read at most once per version
            return [
                DataVersion(
                    version=str(e.version),
                    published=rfc3339(e.published),
                    changed=dict(reader.changes(e.version)),
                )
                for e in page
            ]

        return VersionList(versions=await anyio.to_thread.run_sync(described))


def instant_param(name: str, raw: str | None, *, end_of_day: bool) -> datetime | None:
    """An RFC 3339 instant, or a day (its first instant, or its last with `end_of_day`)."""
    if raw is None:
        return None
    if len(raw) == 10:
        day = day_param(name, raw)
        assert day is not None
        start = datetime.combine(day, time(), UTC)
        return start + timedelta(days=1, microseconds=-1) if end_of_day else start
    try:
        parsed = parse_as_of(raw)  # a version id parses too, but is not an instant
    except ValueError:
        parsed = None
    if not isinstance(parsed, datetime):
        raise InvalidParameter(name, f"expected an RFC 3339 instant or a day YYYY-MM-DD, got {shown(raw)}")  # fmt: skip
    return parsed


def _within(entry: LoggedVersion, since: datetime | None, until: datetime | None) -> bool:
    at = published_at(entry.published)
    return (since is None or at >= since) and (until is None or at <= until)
