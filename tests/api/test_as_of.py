"""Rule: the API's indexed `as_of` lookup answers as the catalog's rule (`version_for`) does."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from api.as_of import LogIndex, as_of_target
from api.errors import InvalidParameter
from pipelines.catalog import Manifest
from pipelines.catalog.manifest import LoggedVersion
from pipelines.catalog.versions import version_for

START = datetime(2026, 3, 1, tzinfo=UTC)


@given(
    gaps=st.lists(st.integers(0, 10_000), min_size=1, max_size=30),
    probes=st.lists(st.integers(-100, 400_000), max_size=20),
)
def test_the_index_finds_the_version_the_rule_names(gaps: list[int], probes: list[int]) -> None:
    at, log = START, []
    for number, gap in enumerate(gaps):
        at += timedelta(seconds=gap)
        log.append(LoggedVersion(1000 + number, at.isoformat(timespec="milliseconds")))
    manifest = Manifest(log[-1].version, log[-1].published, {}, tuple(log))
    index = LogIndex(tuple(log))
    for probe in probes:
        instant = START + timedelta(seconds=probe)
        assert index.find(instant) == version_for(manifest, instant)
        assert index.find(1000 + probe) == version_for(manifest, 1000 + probe)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2026-03-02T14:00:00Z", datetime(2026, 3, 2, 14, tzinfo=UTC)),
        ("2026-03-02T16:00:00.5+02:00", datetime(2026, 3, 2, 14, 0, 0, 500_000, tzinfo=UTC)),
        ("1795518178742963441", 1795518178742963441),
    ],
)
def test_as_of_takes_an_instant_with_a_zone_or_a_version_id(
    raw: str, expected: datetime | int
) -> None:
    assert as_of_target(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "2026-03-02",
        "2026-03-02T14:00:00",
        "2026-13-02T14:00:00Z",
        "now",
        "-5",
        "1e9",
        "12345678901234567890",  # 20 digits: beyond any version id
    ],
)
def test_anything_else_is_a_422_naming_as_of(raw: str) -> None:
    with pytest.raises(InvalidParameter, match="as_of"):
        as_of_target(raw)
