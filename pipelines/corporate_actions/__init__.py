"""Corporate actions: splits, dividends, listings and delistings as their sources report them."""
