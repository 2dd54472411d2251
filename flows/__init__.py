"""flows stage."""
