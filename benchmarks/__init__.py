"""Benchmarks: `python -m benchmarks` measures the project against anchors measured in the same run."""
