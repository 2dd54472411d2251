"""The band x hops table and its plot (matplotlib, imported only when a plot is drawn)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from difficulty.records import BANDS


def band_hops_table(rows: Sequence[dict[str, Any]], hops: dict[str, int]
                    ) -> tuple[dict[str, dict[str, int]], dict[str, float]]:
    """({hops: {band: count}}, {hops: mean pass rate}) with hops as strings (JSON keys)."""
    table: dict[str, dict[str, int]] = {}
    rates: dict[str, list[float]] = {}
    for r in rows:
        h = str(hops.get(r["question_id"], 1))
        table.setdefault(h, {b: 0 for b in BANDS})[r["band"]] += 1
        rates.setdefault(h, []).append(r["pass_rate"])
    order = sorted(table, key=int)
    return ({h: table[h] for h in order},
            {h: round(sum(rates[h]) / len(rates[h]), 4) for h in order})


def plot_band_hops(table: dict[str, dict[str, int]], path: Path, title: str = "") -> Path:
    """Stacked bars: share of each band per hop count (counts on top)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    hops = list(table)
    fig, ax = plt.subplots(figsize=(6, 4))
    bottom = [0.0] * len(hops)
    colors = ("#2c7bb6", "#abd9e9", "#ffffbf", "#fdae61", "#d7191c")
    for band, color in zip(BANDS, colors):
        share = [table[h][band] / max(1, sum(table[h].values())) for h in hops]
        ax.bar(hops, share, bottom=bottom, color=color, label=band, edgecolor="grey")
        bottom = [b + s for b, s in zip(bottom, share)]
    for i, h in enumerate(hops):
        ax.text(i, 1.01, f"n={sum(table[h].values())}", ha="center", fontsize=8)
    ax.set_xlabel("hops")
    ax.set_ylabel("share of questions")
    ax.set_ylim(0, 1.08)
    ax.set_title(f"bands by hops {title}".strip(), fontsize=9)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1, 0.5))
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def print_band_summary(s, no_tool: dict[str, int] | None = None) -> None:
    """The no-tool check's counts (on stderr, if it ran); band x hops counts, mean pass rate
    per hop count, stop reasons and the plot's path."""
    import sys
    if no_tool is not None:
        print(f"no-tool check: {no_tool['fail']} answered without tools (verdict fail), "
              f"{no_tool['pass']} not", file=sys.stderr)
    from datagen.tables import count_table, stdout_console
    table = count_table(f"band {s.run_id} ({s.solver})", "hops", *(f"{b}>" for b in BANDS),
                        "total>", "mean pass rate>")
    for hops, row in s.by_band_hops.items():
        table.add_row(hops, *(str(row.get(b, 0)) for b in BANDS), str(sum(row.values())),
                      f"{s.mean_pass_rate_by_hops.get(hops, 0.0):.3f}")
    console = stdout_console()
    console.print(table)
    stops = ", ".join(f"{k} {v}" for k, v in sorted(s.stop_reasons.items()))
    console.print(f"{s.banded} banded ({s.skipped_already_banded} already banded, skipped), "
                  f"{s.attempts} attempts ({s.failed_attempts} failed); stops: {stops or '-'}")
    if s.plot_path:  # unwrapped, so scripts can pick the path up
        print(f"plot: {s.plot_path}")
