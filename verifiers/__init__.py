"""verifiers stage."""
