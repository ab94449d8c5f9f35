"""dedup: near-duplicate article detection and review with SimHash."""
