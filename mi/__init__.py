"""mi package."""
