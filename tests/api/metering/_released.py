"""A server worker that dies between a response and its released settle: it admits one ping at
the given time, releases its settle (queued for the next group) and exits before that group runs."""

from __future__ import annotations

import asyncio
import os
import sys

from api.metering.backends import open_store
from api.metering.config import load_config


async def main(url: str, key: str, now: float) -> None:
    store = open_store(url, load_config(), clock=lambda: now)
    account = await store.authenticate(key)
    assert account is not None
    admission = await store.admit(account, "ping", 1)
    assert admission.charge is not None
    store.release(admission.charge, 200)  # the response would leave now
    os._exit(0)  # killed before the loop's next iteration: the released settle never runs


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
