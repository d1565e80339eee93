"""The two jobs assembled from the domains' assets: their publish steps, schedules and the
freshness checks that watch them."""
