"""Webhooks: events derived from the warehouse, a durable outbox, signed delivery with retries (docs/webhooks.md)."""
