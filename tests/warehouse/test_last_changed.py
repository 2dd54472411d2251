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
