"""Daily prices domain of the raw layer: connectors, validation, assets and checks."""
