"""The search agent's learning-spike environment (examples/search_agent_spike_cpu.yaml): a
`datagen build` warehouse's pages and its passing one-hop year/number questions copied into a
new warehouse, every one of them banded `medium`, so that RL streams only them. It needs
verify's verdicts but not the band stage (its solver attempts take long on a big demo world).
`examples/search_spike_env.py` is its command line."""

from __future__ import annotations

from pathlib import Path

SPIKE_ANSWER_TYPES = ("year", "number")
ONE_HOP = ("select question_id from questions where hops = 1 and answer_type in ({types}) "
           "and question_id in (select question_id from verdicts) "
           "and question_id not in (select question_id from verdicts where status <> 'pass')")


def build_spike_warehouse(src: Path, dst: Path, types: tuple[str, ...] = SPIKE_ANSWER_TYPES) -> int:
    """Copy `src`'s pages and its one-hop questions whose answer_type is in `types` into
    `dst`, admitted as medium; returns their number."""
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
