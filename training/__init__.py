"""training stage."""
