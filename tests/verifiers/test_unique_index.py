"""The unique-answer check searches one BM25 page index (warehouse.StoredPages): handed in
as datagen's PageTools (the build's verify stage) or opened from the warehouse, its verdicts
on the demo world's composed questions are the same."""

import pytest

import warehouse
from datagen.tools import PageTools
from verifiers import CheckContext, UniqueAnswer
from warehouse import QuestionRecord, StoredPages


@pytest.fixture
def questions(demo_composed):
    wh = warehouse.open(demo_composed, read_only=True)
    try:
        return sorted(wh.read(QuestionRecord), key=lambda q: q.question_id)[:150]
    finally:
        wh.close()


def test_injected_page_tools_and_the_warehouse_index_give_the_same_verdicts(
        questions, demo_crawled_copy):
    wh = demo_crawled_copy
    tools = PageTools.open(wh)
    given = UniqueAnswer().run(questions, CheckContext(wh=wh, pages=tools))
    opened = UniqueAnswer().run(questions, CheckContext(wh=wh))
    assert [(r.status, r.reason) for r in given] == [(r.status, r.reason) for r in opened]
    statuses = {r.status for r in given}
    assert statuses == {"pass", "fail"}, statuses   # the comparison has both kinds of verdict
    # one index: the check's own came from the cache PageTools wrote (same snapshot, same docs)
    assert StoredPages.of(wh).index.urls == tools.index.urls
