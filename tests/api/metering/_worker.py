"""A server-worker stand-in for the multi-process test: admit and settle N requests on one key."""

from __future__ import annotations

import asyncio
import sys

import msgspec

from api.metering.backends import open_store
from api.metering.config import Limits, load_config


async def main(url: str, key: str, requests: int, cost: int) -> int:
    config = msgspec.structs.replace(
        load_config(), limits=Limits(requests_per_window=100_000, concurrent=100_000)
    )
    store = open_store(url, config)
    account = await store.authenticate(key)
    assert account is not None

    async def one() -> int:
        admission = await store.admit(account, "stress", cost)
        if admission.charge is None:
            return 0
        net, balance = await store.settle(admission.charge, 200)
        assert balance.remaining_today >= 0
        return net

    spent = sum(await asyncio.gather(*(one() for _ in range(requests))))
    await store.close()
    return spent


if __name__ == "__main__":
    url, key, requests, cost = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    print(asyncio.run(main(url, key, requests, cost)))
