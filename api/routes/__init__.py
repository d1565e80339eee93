"""Route handlers, one module per route group of the spec."""
