"""The search agent's learning-spike environment (examples/search_agent_spike_cpu.yaml), the
command line of `training.search_env.spike`: a `datagen build` warehouse's pages and its
passing one-hop year/number questions (`--types year`: only the year ones) copied into a new
warehouse, every one of them banded `medium`, so that RL streams only them:

    datagen build --config build.yaml -w runs/spike_build     # demo: {entities: 3000, seed: 7}
    python examples/search_spike_env.py runs/spike_build runs/spike_wh
    datagen train --config examples/search_agent_spike_cpu.yaml --run-dir runs/spike -w runs/spike_wh
"""

from __future__ import annotations

import sys
from pathlib import Path

from training.search_env.spike import SPIKE_ANSWER_TYPES, build_spike_warehouse


def main(argv: list[str] | None = None) -> int:
    """Copy SRC's pages and one-hop number questions into DST; prints the count."""
    args = list(sys.argv[1:] if argv is None else argv)
    types = SPIKE_ANSWER_TYPES
    if "--types" in args:   # e.g. --types year: the year questions only
        at = args.index("--types")
        types = tuple(args[at + 1].split(",")) if at + 1 < len(args) else ()
        del args[at:at + 2]
        if not types or not set(types) <= set(SPIKE_ANSWER_TYPES):
            print(f"--types takes a comma-separated subset of {','.join(SPIKE_ANSWER_TYPES)}",
                  file=sys.stderr)
            return 2
    if len(args) != 2:
        print("usage: python examples/search_spike_env.py SRC_WAREHOUSE DST_WAREHOUSE "
              "[--types year,number]", file=sys.stderr)
        return 2
    src, dst = Path(args[0]), Path(args[1])
    if dst.exists():
        print(f"{dst} exists: give a new folder", file=sys.stderr)
        return 2
    n = build_spike_warehouse(src, dst, types)
    print(f"{n} one-hop {'/'.join(types)} questions in {dst}")
    return 0 if n else 1


if __name__ == "__main__":
    raise SystemExit(main())
