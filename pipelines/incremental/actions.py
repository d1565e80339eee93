"""What a symbol's analytics depend on besides its bars: its adjustment rows and its delisting.

A change of either (a new split or dividend, a delisting) recomputes that symbol in full and only
it (decisions.md, Corporate actions): the prices' `history_id` a domain reads is combined with a
digest of them, so the domain's state, written with that id, no longer matches.
"""

from __future__ import annotations

import hashlib

import polars as pl


def delisted_after_last_bar(
    delistings: pl.DataFrame, price_state: pl.DataFrame, weekdays: bool
) -> pl.DataFrame:
    """symbol, date of each delisting that ends its symbol's bars: dated after the last bar and no
    later than the next trading day (the next weekday in a weekday market). Its trades close at
    that bar, and its current action is Stay. A delisting announced for a later day is not yet
    one (the symbol still trades); one dated among the bars ends nothing (the bars say it traded)."""
    last = price_state.select("symbol", "last_date")
    next_day = (
        pl.col("last_date").dt.add_business_days(1)
        if weekdays
        else pl.col("last_date") + pl.duration(days=1)
    )
    return (
        delistings.select("symbol", "date")
        .join(last, on="symbol")
        .filter((pl.col("date") > pl.col("last_date")) & (pl.col("date") <= next_day))
        .select("symbol", "date")
        .unique("symbol", keep="first")
        .sort("symbol")
    )


def actions_digest(factors: pl.DataFrame, delistings: pl.DataFrame) -> pl.DataFrame:
    """symbol, digest (a 62-bit integer) of each symbol's adjustment rows and delisting (one that
    ends its bars, `delisted_after_last_bar`): what the analytics of a symbol depend on besides its
    bars. A change of it (a new split or dividend, a delisting) recomputes that symbol in full
    (`with_actions`)."""
    rows = pl.concat(
        [
            factors.select(
                "symbol",
                pl.format(
                    "{}:{}:{}:{}", "date", "split_ratio", "dividend_factor", "dividend"
                ).alias("_row"),
            ),
            delistings.select("symbol", pl.format("{}:delisting", "date").alias("_row")),
        ]
    )
    if rows.is_empty():
        return pl.DataFrame(schema={"symbol": pl.String, "digest": pl.Int64})
    joined = (
        rows.sort("symbol", "_row")
        .group_by("symbol", maintain_order=True)
        .agg(pl.col("_row").str.join("|"))
    )
    digests = [_digest(text) for text in joined["_row"].to_list()]
    return joined.select("symbol").with_columns(digest=pl.Series(digests, dtype=pl.Int64))


def with_actions(price_state: pl.DataFrame, digests: pl.DataFrame) -> pl.DataFrame:
    """`price_state` rows whose `history_id` also names the symbol's actions (`actions_digest`):
    the same id as long as neither the bars nor the actions change, another once either does, so
    a domain's state written with it recomputes exactly the symbols an action touched."""
    if digests.is_empty():
        return price_state
    joined = price_state.join(digests, on="symbol", how="left", maintain_order="left")
    return joined.with_columns(
        history_id=pl.col("history_id").xor(pl.col("digest").fill_null(0))
    ).drop("digest")


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 2
