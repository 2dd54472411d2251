"""The trainer's streaming reader: exactly once per epoch, band mixing, restorable cursor,
new rows joining, across real process restarts."""

from __future__ import annotations

import json
from collections import Counter

import pytest

import warehouse
from tests.warehouse.conftest import run_child
from tests.warehouse.helpers import add_ready
from warehouse import StreamReader, TrainItem

ALL = {f"q{i:03d}" for i in range(60)}
EVEN = {"easy": 1.0, "medium": 1.0, "hard": 1.0}


def test_each_row_exactly_once_per_epoch_and_typed_items(shared_ready_wh):
    with StreamReader(shared_ready_wh, EVEN, seed=3, max_epochs=2) as reader:
        items = list(reader)
    assert all(isinstance(i, TrainItem) for i in items)
    first, second = items[:60], items[60:]
    assert Counter(i.question_id for i in first) == Counter(ALL)
    assert Counter(i.question_id for i in second) == Counter(ALL)
    assert [i.question_id for i in first] != [i.question_id for i in second]  # reshuffled
    item = next(i for i in items if i.question_id == "q004")
    assert item == TrainItem("q004", "What is q004?", "ans-q004", ("alias-q004",), "medium", 0.5)


def test_band_weights_set_the_mix_and_an_exhausted_band_gives_its_share(tmp_path):
    bands = {"easy": 300, "hard": 60}  # hard runs out first at a 1:1 mix
    with warehouse.open(tmp_path / "wh") as wh:
        for band, n in bands.items():
            add_ready(wh, [f"{band}{i}" for i in range(n)], band_of=lambda i, b=band: b)
        reader = StreamReader(wh, {"easy": 1, "hard": 1}, seed=0, max_epochs=1)
        items = reader.next_batch(100)
        mix = Counter(i.band for i in items)
        assert 35 <= mix["hard"] <= 65  # ~50 expected at 1:1 (binomial sd 5)
        rest = reader.next_batch(1000)
    assert len(items) + len(rest) == 360
    assert Counter(i.band for i in items + rest) == Counter(bands)
    assert all(i.band == "easy" for i in rest[-150:])  # hard exhausted: easy takes its share


def test_zero_weight_and_unlisted_bands_are_not_served(shared_ready_wh):
    with StreamReader(shared_ready_wh, {"hard": 1.0, "easy": 0.0}, seed=1, max_epochs=1) as r:
        items = list(r)
    assert {i.band for i in items} == {"hard"} and len(items) == 20


def test_where_filter_and_bad_weights(shared_ready_wh):
    with StreamReader(shared_ready_wh, EVEN, seed=0, where="question_id < 'q010'",
                      max_epochs=1) as r:
        assert {i.question_id for i in r} == {f"q{i:03d}" for i in range(10)}
    with pytest.raises(ValueError, match="unknown band"):
        StreamReader(shared_ready_wh, {"medum": 1.0}, seed=0)
    with pytest.raises(ValueError, match="positive weight"):
        StreamReader(shared_ready_wh, {"easy": 0.0}, seed=0)


def test_same_seed_same_stream_other_seed_other_stream(shared_ready_wh):
    def ids(seed):
        with StreamReader(shared_ready_wh, EVEN, seed=seed, max_epochs=1) as r:
            return [i.question_id for i in r.next_batch(30)]
    assert ids(7) == ids(7) and ids(7) != ids(8)


def test_new_rows_ahead_of_the_cursor_join_this_epoch_the_others_the_next(ready_wh):
    new = [f"new{i}" for i in range(30)]
    with warehouse.open(ready_wh) as wh:
        reader = StreamReader(wh, EVEN, seed=0, refresh_s=0.0, max_epochs=2)
        first = reader.next_batch(30)
        cursor = reader.state_dict()["cursor"]["hard"]
        ahead = {q for q in new if reader.key(q) > cursor}
        add_ready(wh, new, band_of=lambda i: "hard")
        epoch0 = first + reader.next_batch(60 - 30 + len(ahead))
        assert reader.epoch == 0 and reader.remaining() == {"easy": 0, "medium": 0, "hard": 0}
        epoch1 = list(reader)
    assert 0 < len(ahead) < len(new)  # both cases happen at this seed
    assert Counter(i.question_id for i in epoch0) == Counter(ALL | ahead)
    assert Counter(i.question_id for i in epoch1) == Counter(ALL | set(new))


def test_rows_that_leave_train_ready_are_dropped(ready_wh):
    from warehouse.schema import VerdictRecord
    with warehouse.open(ready_wh) as wh:
        reader = StreamReader(wh, EVEN, seed=0, refresh_s=0.0, max_epochs=1)
        served = {i.question_id for i in reader.next_batch(10)}
        victim = sorted(ALL - served)[0]
        wh.append([VerdictRecord(question_id=victim, check_name="grounding", status="fail")])
        rest = {i.question_id for i in reader}
    assert victim not in rest and len(served | rest) == 59


RESUME = """
import json, sys
from warehouse import StreamReader
path, state_file, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
r = StreamReader(path, {"easy": 1, "medium": 2, "hard": 3}, seed=11, max_epochs=2)
if n < 0:  # resume: load the cursor saved by the first process and read to the end
    r.load_state_dict(json.load(open(state_file)))
    items = list(r)
else:
    items = r.next_batch(n)
    json.dump(r.state_dict(), open(state_file, "w"))
print(json.dumps([[i.question_id, r.epoch] for i in items]))
"""


def test_cursor_save_and_restore_across_process_restart(shared_ready_wh, tmp_path):
    state = tmp_path / "cursor.json"
    before = json.loads(run_child(RESUME, str(shared_ready_wh), str(state), "37"))
    assert json.loads(state.read_text())["epoch"] == 0
    after = json.loads(run_child(RESUME, str(shared_ready_wh), str(state), "-1"))
    stream = [qid for qid, _ in before + after]
    assert len(stream) == 120
    assert Counter(stream[:60]) == Counter(ALL) and Counter(stream[60:]) == Counter(ALL)
    # The restored reader continues exactly as an uninterrupted one would have.
    with StreamReader(shared_ready_wh, {"easy": 1, "medium": 2, "hard": 3}, seed=11,
                      max_epochs=2) as r:
        assert [i.question_id for i in r] == stream


def test_state_dict_is_json_and_version_checked(shared_ready_wh):
    with StreamReader(shared_ready_wh, EVEN, seed=0) as r:
        r.next_batch(5)
        state = json.loads(json.dumps(r.state_dict()))
        assert state["draws"] == 5 and set(state["cursor"]) == set(EVEN)
        with pytest.raises(ValueError, match="version"):
            r.load_state_dict({**state, "version": 99})


def test_cursor_size_does_not_grow_with_the_table(tmp_path):
    sizes = {}
    for n in (60, 2400):
        with warehouse.open(tmp_path / f"wh{n}") as wh:
            add_ready(wh, [f"q{i:05d}" for i in range(n)], band_of=lambda i: "easy")
            with StreamReader(wh, EVEN, seed=0, range_rows=500) as r:
                assert len(r.next_batch(n // 2)) == n // 2
                sizes[n] = len(json.dumps(r.state_dict()))
    assert max(sizes.values()) < 1024 and abs(sizes[60] - sizes[2400]) <= 8, sizes


def test_small_ranges_serve_the_same_stream(shared_ready_wh):
    def stream(**kw):
        with StreamReader(shared_ready_wh, {"easy": 1, "hard": 3}, seed=5, max_epochs=2,
                          **kw) as r:
            return [i.question_id for i in r]
    assert stream(range_rows=7) == stream()


def test_trainer_commits_to_rollouts_do_not_trigger_a_rescan(ready_wh):
    from warehouse.schema import RolloutRecord
    with warehouse.open(ready_wh) as wh:
        reader = StreamReader(wh, EVEN, seed=0, refresh_s=0.0)
        reader.next_batch(1)
        builds = reader.rebuilds
        wh.append([RolloutRecord(question_id="q001", policy_version=1, reward=1.0)] * 20)
        reader.next_batch(5)
        assert reader.rebuilds == builds  # no re-read for a rollouts-only commit
        add_ready(wh, ["fresh"], band_of=lambda i: "easy")
        reader.next_batch(5)
        assert reader.rebuilds == builds + 1


def test_empty_warehouse_yields_nothing_and_does_not_spin(wh_path):
    with StreamReader(wh_path, EVEN, seed=0) as reader:
        assert reader.next_batch(8) == [] and list(reader) == []


def test_a_reader_between_refreshes_never_blocks_writers(ready_wh):
    """The trainer's own reader (a second, read-only connection in the same process) must
    not hold the catalog's read lock after a refresh: a writer would then fail its commit
    (the trainer crashed this way after ~30 s of retries)."""
    from warehouse.schema import RolloutRecord
    with warehouse.open(ready_wh) as wh, StreamReader(ready_wh, EVEN, seed=0,
                                                     refresh_s=0.0) as reader:
        wh.max_retries = 2
        for i in range(5):
            reader.next_batch(2)           # refreshes: snapshot and change checks
            wh.append([RolloutRecord(question_id="q001", policy_version=i, reward=1.0)])
        assert wh.count("rollouts") == 5


@pytest.mark.parametrize("where, order", [
    ("band <> 'easy'", "md5(question_id)"),
    ("substr(md5(question_id), 1, 1) < '8'", "question_id DESC"),
])
def test_select_items_by_key_ranges_equals_the_view_query(shared_ready_wh, where, order):
    from warehouse.reader import select_items
    with warehouse.open(shared_ready_wh, read_only=True) as wh:
        want = wh.sql(f"select question_id from train_ready where {where} "
                      f"order by {order} limit 7").column(0).to_pylist()
        got = select_items(wh, where, order, limit=7, range_rows=5)
    assert [i.question_id for i in got] == want and len(want) == 7
    assert all(isinstance(i, TrainItem) and i.answer == f"ans-{i.question_id}" for i in got)


def test_scratch_folder_is_removed_on_close_and_when_dropped(shared_ready_wh, tmp_path):
    import gc
    with StreamReader(shared_ready_wh, EVEN, seed=0, range_rows=7, scratch_dir=tmp_path) as r:
        r.next_batch(5)
        assert len(list(tmp_path.iterdir())) == 1
    assert not list(tmp_path.iterdir())
    r = StreamReader(shared_ready_wh, EVEN, seed=0, scratch_dir=tmp_path)
    r.next_batch(5)
    del r
    gc.collect()
    assert not list(tmp_path.iterdir())
