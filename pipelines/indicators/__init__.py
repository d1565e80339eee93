"""Technical indicators for every period at once (`all_periods.py`, `recursive.py`): what the pipeline computes."""
