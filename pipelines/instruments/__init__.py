"""Instruments domain of the raw layer: validation and the instruments assets."""
