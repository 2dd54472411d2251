"""difficulty stage."""
