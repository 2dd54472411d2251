"""Transitional: SIGTERM as Ctrl-C is implemented once, in warehouse/runs.py (run lineage
reads it to mark a stopped run `interrupted`). Import it from there."""

from warehouse.runs import sigterm_arrived, sigterm_interrupts  # noqa: F401
