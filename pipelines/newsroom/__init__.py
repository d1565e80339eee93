"""The newsroom: raw news tagged with instruments, enriched with sentiment, counted per day."""
