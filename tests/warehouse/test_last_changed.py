"""`Warehouse.last_changed`: the snapshot that last wrote one of some tables (a cache key)."""

from warehouse import PageRecord, VerdictRecord
from warehouse.schema import utcnow


def _page(i: int) -> PageRecord:
    return PageRecord(url=f"http://x/{i}", title="t", text="text", content_hash=f"h{i}",
                      fetched_at=utcnow())


def test_last_changed_moves_only_with_its_tables(wh):
    start = wh.last_changed(["pages"])
    wh.append([_page(1)])
    after_page = wh.last_changed(["pages"])
    assert after_page > start
    wh.append([VerdictRecord(question_id="q", check_name="c", status="pass")])
    assert wh.last_changed(["pages"]) == after_page          # another table's commit
    assert wh.last_changed(["verdicts"]) > after_page
    assert wh.last_changed(["pages", "verdicts"]) == wh.current_snapshot()
    wh.close()
    import warehouse
    reopened = warehouse.open(wh.root)                      # reopening commits nothing
    assert reopened.last_changed(["pages"]) == after_page
    reopened.close()


def test_one_rule_for_both_scans_compaction_counts_for_no_table(wh):
    """last_changed and changed_since read snapshots alike: rows written count for their
    table, a commit that only rewrites files (maintain's flush and merge) counts for none."""
    from warehouse.maintain import maintain
    for i in range(3):
        wh.append([_page(10 * i + j) for j in range(10)])
    before, snap = wh.last_changed(["pages"]), wh.current_snapshot()
    maintain(wh, keep_snapshots_days=1)
    assert wh.current_snapshot() > snap
    kinds = {k for s in wh.snapshots() if s["snapshot_id"] > snap for k in dict(s["changes"])}
    assert kinds and kinds <= {"flushed_inlined", "merge_adjacent"}, kinds
    assert wh.last_changed(["pages"]) == before
    assert not wh.changed_since(snap, ["pages"])
    wh.append([_page(99)])
    assert wh.changed_since(snap, ["pages"]) and wh.last_changed(["pages"]) > before


def test_an_unknown_kind_of_change_counts_for_every_table():
    from warehouse.snapshots import changes_tables
    assert changes_tables({"tables_inserted_into": ["6"]}, {"6"})
    assert not changes_tables({"tables_inserted_into": ["7"]}, {"6", "main.pages"})
    assert changes_tables({"tables_created": ["main.pages"]}, {"6", "main.pages"})
    assert not changes_tables({"merge_adjacent": ["6"]}, {"6"})
    assert changes_tables({"some_new_kind": ["9"]}, {"6"})
