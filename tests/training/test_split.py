"""The evaluation split: each kind holds its questions out of the training stream, and the
fraction split is the same in DuckDB and in Python."""

import json

import pytest

from training.config import DataConfig, load_config
from training.split import in_eval_fraction, resolve_split
from training.tasks import load_task
from warehouse.reader import StreamReader


@pytest.fixture
def wh300(wh):
    load_task(wh, "fact_copy", 300, seed=3)
    return wh


def _streamed(wh, split) -> set[str]:
    reader = StreamReader(wh, {"medium": 1.0}, seed=0, where=split.train_where, max_epochs=1)
    return {item.question_id for item in reader}


def _all_ids(wh) -> set[str]:
    return {r["question_id"] for r in wh.sql("select question_id from train_ready").to_pylist()}


def test_fraction_split_holds_out_by_hash_and_never_streams_it(wh300):
    split = resolve_split(DataConfig(eval_fraction=0.2, eval_size=1000), wh300)
    everything = _all_ids(wh300)
    held = {i.question_id for i in split.items}
    assert split.kind == "fraction"
    assert held == {q for q in everything if in_eval_fraction(q, 0.2)}   # SQL == Python
    assert 0.1 < len(held) / len(everything) < 0.3
    streamed = _streamed(wh300, split)
    assert not streamed & held and streamed | held == everything


def test_default_split_is_five_percent_and_eval_size_caps_the_items(wh300):
    split = resolve_split(DataConfig(eval_size=4), wh300)
    held = {q for q in _all_ids(wh300) if in_eval_fraction(q, 0.05)}
    assert split.as_dict()["eval_fraction"] == 0.05 and len(split.items) == min(4, len(held))
    assert not _streamed(wh300, split) & held       # the whole split is held out, not only 4


def test_where_split(wh300):
    split = resolve_split(DataConfig(eval_where="question like 'How many gates%'"), wh300)
    assert split.items and all(i.question.startswith("How many gates") for i in split.items)
    streamed = _streamed(wh300, split)
    assert streamed and not any(q.startswith("How many gates") for q in _questions(wh300,
                                                                                    streamed))
    with pytest.raises(ValueError, match="data.eval_where .* not a valid condition"):
        resolve_split(DataConfig(eval_where="no_such_column = 1"), wh300)


def _questions(wh, ids):
    rows = wh.sql("select question_id, question from train_ready").to_pylist()
    return [r["question"] for r in rows if r["question_id"] in ids]


def test_file_split_skips_the_same_questions_in_the_warehouse(wh300, tmp_path):
    rows = wh300.sql("select question, answer from train_ready order by question_id "
                     "limit 5").to_pylist()
    path = tmp_path / "eval.jsonl"
    lines = [{"question": "  " + r["question"].upper() + " ", "answers": [r["answer"], "x"]}
             for r in rows] + [{"question": "Who wrote it?", "answers": "Ann"}]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    split = resolve_split(DataConfig(eval_file=str(path)), wh300)
    assert split.kind == "file" and len(split.items) == 6
    assert split.items[0].answer_aliases == ("x",) and split.items[-1].answer == "Ann"
    streamed = set(_questions(wh300, _streamed(wh300, split)))
    assert len(streamed) == 300 - 5 and not streamed & {r["question"] for r in rows}
    assert len(split.as_dict()["eval_file_sha256"]) == 64
    path.write_text('{"question": "q"}\n')
    with pytest.raises(ValueError, match="eval.jsonl:1: expected a JSON object"):
        resolve_split(DataConfig(eval_file=str(path)), wh300)


def test_task_split_uses_the_held_out_names_unless_a_fraction_is_asked(wh300):
    split = resolve_split(DataConfig(task="fact_copy", eval_size=8), wh300)
    assert split.kind == "task" and len(split.items) == 8
    assert not {i.question_id for i in split.items} & _all_ids(wh300)
    asked = resolve_split(DataConfig(task="fact_copy", eval_fraction=0.1), wh300)
    assert asked.kind == "fraction"


def test_a_task_run_streams_the_task_questions_only(wh300):
    """Other questions of the warehouse (here another seed's 300) are never streamed."""
    from training.tasks import task_questions

    load_task(wh300, "fact_copy", 300, seed=4)
    split = resolve_split(DataConfig(task="fact_copy", task_size=300, eval_size=8), wh300,
                          seed=3)
    ours = {q.question_id for q in task_questions("fact_copy", 300, "train", 3)}
    assert len(_all_ids(wh300)) > 300 and _streamed(wh300, split) == ours
    assert split.as_dict()["task_size"] == 300


def test_one_split_at_a_time():
    with pytest.raises(ValueError, match="set one of eval_fraction, eval_where, eval_file"):
        load_config(overrides={"data": {"eval_where": "true", "eval_fraction": 0.1}})

