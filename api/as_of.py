"""`as_of`: which retained data version answers a request (decisions.md, "Point in time").

The current manifest's log names every retained version and when it was published; the version
current at an instant is the newest published at or before it, so an answer never holds data
published after the instant it is asked for. Beyond the keep-all window only each day's last
version is retained, so there an instant is answered by the last version retained before it.
The rule itself is the catalog's (`pipelines.catalog.versions`), shared with `mi sql --as-of`.
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from datetime import datetime
from weakref import WeakKeyDictionary

from api.errors import InvalidParameter, NotFound
from api.params import shown
from api.warehouse import WarehouseSnapshot
from pipelines.catalog.manifest import LoggedVersion
from pipelines.catalog.versions import parse_as_of, published_at, retained_log, rfc3339


def as_of_target(raw: str) -> int | datetime:
    """A data version id, or an aware instant; 422 naming `as_of` for anything else."""
    try:
        return parse_as_of(raw)
    except ValueError:
        raise InvalidParameter(
            "as_of",
            "expected an RFC 3339 instant such as 2026-03-02T14:00:00Z or a data version id, "
            f"got {shown(raw)}",
        ) from None


class LogIndex:
    """One snapshot's log, indexed: versions by id, and publish instants for a bisection (the
    same answer as `pipelines.catalog.versions.version_for`, in O(log n) per request)."""

    __slots__ = ("by_version", "log", "published")

    def __init__(self, log: tuple[LoggedVersion, ...]) -> None:
        self.log = log
        self.by_version = {entry.version: entry for entry in log}
        self.published = [published_at(entry.published).timestamp() for entry in log]

    def find(self, target: int | datetime) -> LoggedVersion | None:
        if isinstance(target, int):
            return self.by_version.get(target)
        at = bisect_right(self.published, target.timestamp())
        return self.log[at - 1] if at else None


_indexes: WeakKeyDictionary[WarehouseSnapshot, LogIndex] = WeakKeyDictionary()
_indexes_lock = threading.Lock()


def log_index(snapshot: WarehouseSnapshot) -> LogIndex:
    """The snapshot's log index, built on its first `as_of` request and gone with it."""
    index = _indexes.get(snapshot)
    if index is None:
        with _indexes_lock:
            index = _indexes.setdefault(snapshot, LogIndex(retained_log(snapshot.manifest)))
    return index


def version_as_of(snapshot: WarehouseSnapshot, target: int | datetime) -> LoggedVersion:
    """The retained version that answers `target` in the current snapshot's log; 404 naming the
    oldest retained when none does."""
    index = log_index(snapshot)
    found = index.find(target)
    if found is not None:
        return found
    oldest = rfc3339(index.log[0].published)
    if isinstance(target, int):
        raise NotFound(f"Data version {target} is not retained; the oldest retained was published {oldest}")  # fmt: skip
    asked = target.strftime("%Y-%m-%dT%H:%M:%SZ")
    raise NotFound(f"as_of {asked} is before the oldest retained data version, published {oldest}")
