"""What `datagen compose` shows: a progress bar while it runs, then the summary table."""

from __future__ import annotations

from pathlib import Path


def compose_with_progress(warehouse: Path | None, cfg):
    """`compose_stage` under a progress bar on stderr (when it is a terminal)."""
    from datagen.compose.stage import compose_stage
    from datagen.tables import progress_bar
    with progress_bar("compose", "seeds {task.fields[seeds]} composed {task.fields[composed]}"
                      ) as bar:
        task = bar.add_task("compose", total=None, seeds=0, composed=0)

        def update(s) -> None:
            bar.update(task, completed=s.seeds_done, total=s.seeds_total, seeds=s.seeds,
                       composed=s.composed)
        return compose_stage(warehouse, cfg, progress=update)


def print_compose_summary(s) -> None:
    """Pages, facts, seeds, composed by hops, and rejections by reason; then questions/s."""
    from datagen.tables import count_table, stdout_console
    table = count_table(f"compose {s.run_id} ({s.backend})", "what", "detail", "count>")
    table.add_row("pages", f"{s.pages_without_facts} without facts", str(s.pages))
    table.add_row("facts", ", ".join(f"{k} {v}" for k, v in sorted(s.facts_by_source.items())),
                  str(s.facts))
    table.add_row("seeds", f"new {s.seeds_new}", str(s.seeds))
    for reason, n in s.seeds_rejected.most_common():
        table.add_row("seed rejected", reason, str(n))
    table.add_section()
    for hops, n in sorted(s.composed_by_hops.items()):
        table.add_row("composed", f"{hops} hops", str(n))
    table.add_row("composed", f"total (already composed earlier: {s.composed_existing})",
                  str(s.composed))
    rejections = [("seed not composed", s.not_composed), ("step rejected", s.rejected_steps)]
    for what, counts in rejections:
        for reason, n in counts.most_common():
            table.add_row(what, reason, str(n))
    console = stdout_console()
    console.print(table)
    console.print(f"{s.seeds_new + s.composed} questions written in {s.elapsed_s:.1f} s "
                  f"({s.questions_per_s:.0f} questions/s)")
