"""Written analyses: typed facts, numbers for people, the template writer and the optional LLM writer."""
