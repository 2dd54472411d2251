"""The reader's side of the training loop (training/reband.py): an exploration share ε of the
excluded bands, re-tries served first, and a stream that runs dry saying why."""

from __future__ import annotations

from collections import Counter

import pytest

import warehouse
from tests.warehouse.helpers import add_ready
from warehouse import StreamReader

SIZES = {"medium": 300, "too_easy": 100, "too_hard": 60}


@pytest.fixture(scope="module")
def mixed_wh(tmp_path_factory):
    """300 medium, 100 too_easy, 60 too_hard questions (read only)."""
    path = tmp_path_factory.mktemp("loop") / "wh"
    with warehouse.open(path) as wh:
        for band, n in SIZES.items():
            add_ready(wh, [f"{band}{i:03d}" for i in range(n)], band_of=lambda i, b=band: b)
    return path


def test_explore_share_draws_excluded_bands_and_the_epoch_ends_with_the_weighted(mixed_wh):
    with StreamReader(mixed_wh, {"medium": 1.0}, seed=2, max_epochs=1,
                      explore_share=0.1) as reader:
        first = reader.next_batch(200)
        epoch = first + reader.next_batch(1000)
        state = reader.state_dict()
    bands = Counter(i.band for i in epoch)
    ids = [i.question_id for i in epoch]
    assert len(ids) == len(set(ids))                     # still never twice in an epoch
    assert bands["medium"] == 300                        # every weighted row, once
    explored = bands["too_easy"] + bands["too_hard"]
    assert 15 <= explored <= 55                          # ~ε/(1-ε)·300 = 33 expected
    assert bands["too_easy"] and bands["too_hard"]       # split between the excluded bands
    assert 8 <= sum(i.band != "medium" for i in first) <= 36   # ε of each stretch, ~20
    assert state["explore_share"] == 0.1 and set(state["cursor"]) >= {"too_easy", "too_hard"}
    with StreamReader(mixed_wh, {"medium": 1.0}, seed=2, max_epochs=1) as plain:
        assert {i.band for i in plain} == {"medium"}       # ε = 0: the old behaviour


def test_retries_come_first_and_leave_the_stream_order_alone(mixed_wh):
    with StreamReader(mixed_wh, {"medium": 1.0}, seed=5, explore_share=0.1) as a, \
            StreamReader(mixed_wh, {"medium": 1.0}, seed=5, explore_share=0.1) as b:
        old = a.next_batch(10)
        extra = [i for i in old if i.band == "medium"][:3]
        assert a.retry(extra) == 3
        again = a.next_batch(13)
        assert again[:3] == extra
        assert [i.question_id for i in old + again[3:]] == [
            i.question_id for i in b.next_batch(20)]
        saved = a.state_dict()
        rest_a = a.next_batch(40)
    with StreamReader(mixed_wh, {"medium": 1.0}, seed=5, explore_share=0.1) as c:
        c.load_state_dict(saved)                       # explored bands' cursors restored too
        assert c.next_batch(40) == rest_a


def test_a_stream_with_no_weighted_rows_comes_back_empty_and_says_why(mixed_wh):
    with StreamReader(mixed_wh, {"easy": 1.0, "hard": 1.0}, seed=0,
                      explore_share=0.1) as reader:
        assert reader.next_batch(8) == []                # explored rows alone are no stream
        assert reader.ended == "no_rows"
        assert "no rows left in the streamed bands (easy, hard + explored" in \
            reader.dry_message()
    with StreamReader(mixed_wh, {"too_hard": 1.0}, seed=0, max_epochs=1) as reader:
        assert len(reader.next_batch(100)) == 60 and reader.ended == "max_epochs"
    with pytest.raises(ValueError, match="explore_share"):
        StreamReader(mixed_wh, {"medium": 1.0}, explore_share=1.0)
