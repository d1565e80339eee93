"""The trade simulator: strategies, a backtest kernel on arrays, metrics, scores and their assets."""
