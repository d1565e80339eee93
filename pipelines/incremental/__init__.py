"""Incremental runs: shards of symbols, per-symbol modes, and tables rewritten shard by shard."""
