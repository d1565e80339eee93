"""News ingestion: RSS 2.0 and Atom feeds of each market, parsed into raw_news and news_rejects."""
