"""Performance: env step rates, training throughput and A/B timings of two checkouts."""
