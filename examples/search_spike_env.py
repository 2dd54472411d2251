"""The search agent's learning-spike environment (examples/search_agent_spike_cpu.yaml).

Takes a `datagen build` warehouse and copies its pages and its passing one-hop year/number
questions (`--types year`: only the year ones) into a new warehouse, every one of them banded
`medium`, so that RL streams only them. It needs verify's verdicts but not the band stage (its
solver attempts take long on a big demo world):

    datagen build --config build.yaml -w runs/spike_build     # demo: {entities: 3000, seed: 7}
    python examples/search_spike_env.py runs/spike_build runs/spike_wh
    datagen train --config examples/search_agent_spike_cpu.yaml --run-dir runs/spike -w runs/spike_wh
"""

from __future__ import annotations

import sys
from pathlib import Path

ANSWER_TYPES = ("year", "number")
ONE_HOP = ("select question_id from questions where hops = 1 and answer_type in ({types}) "
           "and question_id in (select question_id from verdicts) "
           "and question_id not in (select question_id from verdicts where status <> 'pass')")


def main(argv: list[str] | None = None) -> int:
    """Copy SRC's pages and one-hop number questions into DST; prints the count."""
    args = list(sys.argv[1:] if argv is None else argv)
    types = ANSWER_TYPES
    if "--types" in args:   # e.g. --types year: the year questions only
        at = args.index("--types")
        types = tuple(args[at + 1].split(",")) if at + 1 < len(args) else ()
        del args[at:at + 2]
        if not types or not set(types) <= set(ANSWER_TYPES):
            print(f"--types takes a comma-separated subset of {','.join(ANSWER_TYPES)}",
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
    n = build(src, dst, types)
    print(f"{n} one-hop {'/'.join(types)} questions in {dst}")
    return 0 if n else 1


def build(src: Path, dst: Path, types: tuple[str, ...] = ANSWER_TYPES) -> int:
    """The copy, of the questions whose answer_type is in `types`; returns their number."""
    import warehouse
    from warehouse import FetchRecord, PageRecord, QuestionRecord
    from warehouse.admit import admit

    source = warehouse.open(src, read_only=True)
    try:
        one_hop = ONE_HOP.format(types=", ".join(f"'{t}'" for t in types))
        questions = source.sql(f"select * from questions where question_id in ({one_hop})")
        ids = questions.column("question_id").to_pylist()
        pages = {t: source.sql(f"select * from {t.TABLE}") for t in (PageRecord, FetchRecord)}
    finally:
        source.close()
    wh = warehouse.open(dst)
    try:
        with wh.transaction() as tx:
            for rtype, table in pages.items():
                tx.append(table, rtype)
            tx.append(questions, QuestionRecord)
            admit(tx, ids, check="spike", solver="spike")
    finally:
        wh.close()
    return len(ids)


if __name__ == "__main__":
    raise SystemExit(main())
