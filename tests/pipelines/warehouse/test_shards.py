"""Shards: a stable split of a market's symbols, no larger than the configured size."""

from __future__ import annotations

import zlib

import polars as pl
import pytest

from pipelines.warehouse.shards import Shard, shard_count, shard_index, shards_of


@pytest.mark.parametrize(
    ("symbols", "most", "count"),
    [
        (0, 1000, 1),
        (1000, 1000, 1),
        (1001, 1000, 2),
        (1895, 1000, 2),
        (2001, 1000, 4),
        (19_000, 1000, 32),
    ],
)
def test_the_shard_count_is_the_smallest_power_of_two_within_the_size(
    symbols: int, most: int, count: int
) -> None:
    assert shard_count(symbols, most) == count


def test_a_symbols_shard_is_its_crc32_modulo_the_count_on_every_host() -> None:
    assert shard_index(["BTC", "ETH"], 4).tolist() == [
        zlib.crc32(b"BTC") % 4,
        zlib.crc32(b"ETH") % 4,
    ]


def test_every_symbol_lands_in_exactly_one_shard_and_every_shard_is_listed() -> None:
    symbols = pl.Series([f"S{i}" for i in range(500)])
    shards = shards_of("crypto", symbols, 8)
    assert sorted(shards) == [Shard("crypto", k, 8) for k in range(8)]
    assert sorted(s for members in shards.values() for s in members) == sorted(symbols)


def test_a_shard_key_parses_back_and_segment_keys_belong_to_their_shard() -> None:
    shard = Shard("crypto", 3, 4)
    assert shard.key == "crypto/s3of4"
    assert Shard.parse(shard.key) == shard
    assert Shard.parse("crypto/s3of4/2026-03") == shard
    assert Shard.parse("crypto") is None
