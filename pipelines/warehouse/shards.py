"""Shards: a market's symbols split by a stable hash, so that a step holds one shard in memory at a time."""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import polars as pl

from pipelines.platform.settings import DEFAULT_SHARD_SYMBOLS

_KEY = re.compile(r"^(?P<market>[^/]+)/s(?P<index>\d+)of(?P<count>\d+)$")


@dataclass(frozen=True, order=True)
class Shard:
    """One shard of a market: symbols whose crc32 is `index` modulo `count`."""

    market: str
    index: int
    count: int

    @property
    def key(self) -> str:
        """The shard's partition key in the manifest (`crypto/s0of2`); time segments add `/<segment>`."""
        return f"{self.market}/s{self.index}of{self.count}"

    @classmethod
    def parse(cls, key: str) -> Shard | None:
        """The shard a partition key (or a segment key under it) belongs to; None if unsharded."""
        match = _KEY.match("/".join(key.split("/")[:2]))
        if match is None:
            return None
        return cls(match["market"], int(match["index"]), int(match["count"]))


def shard_count(symbols: int, most: int = DEFAULT_SHARD_SYMBOLS) -> int:
    """The smallest power of two of shards that keeps the expected shard size within `most`.

    Powers of two change rarely as a universe grows (a change rebuilds the market once).
    """
    if most < 1:
        raise ValueError(f"a shard must hold at least one symbol, not {most}")
    count = 1
    while symbols > count * most:
        count *= 2
    return count


def shard_index(symbols: Iterable[str], count: int) -> np.ndarray:
    """Each symbol's shard: crc32 of its UTF-8 bytes modulo `count` (stable across runs and hosts)."""
    return np.fromiter((zlib.crc32(s.encode()) % count for s in symbols), dtype=np.int64)


def shards_of(market: str, symbols: pl.Series, count: int) -> dict[Shard, list[str]]:
    """The market's symbols by shard (every shard present, possibly empty), sorted."""
    index = shard_index(symbols.to_list(), count)
    out: dict[Shard, list[str]] = {Shard(market, k, count): [] for k in range(count)}
    for symbol, k in zip(symbols.to_list(), index.tolist(), strict=True):
        out[Shard(market, k, count)].append(symbol)
    return {shard: sorted(members) for shard, members in out.items()}
