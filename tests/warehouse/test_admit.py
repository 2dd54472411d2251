"""warehouse.admit: questions their maker vouches for join train_ready, banded, in one commit."""

import pytest

import warehouse
from warehouse import QuestionRecord
from warehouse.admit import admit


def test_admitted_questions_are_train_ready_in_their_band_and_others_are_not(tmp_path):
    with warehouse.open(tmp_path / "wh") as wh:
        with wh.transaction() as tx:
            tx.append([QuestionRecord(question_id=f"q{i}", question=f"Q{i}?", answer=str(i))
                       for i in range(3)])
            assert admit(tx, ["q0", "q1"], check="spike", solver="spike", band="hard",
                         pass_rate=0.2) == 2
        rows = wh.sql("select question_id, band from train_ready order by 1").to_pylist()
        verdicts = wh.sql("select check_name, status from verdicts").to_pylist()
    assert rows == [{"question_id": "q0", "band": "hard"}, {"question_id": "q1", "band": "hard"}]
    assert verdicts == [{"check_name": "spike", "status": "pass"}] * 2


def test_a_bad_band_fails_before_anything_is_stored(tmp_path):
    with warehouse.open(tmp_path / "wh") as wh:
        with pytest.raises(Exception, match="band"):
            with wh.transaction() as tx:
                tx.append([QuestionRecord(question_id="q0", question="Q?", answer="0")])
                admit(tx, ["q0"], check="spike", solver="spike", band="middling")
        assert wh.count("questions") == 0 and wh.count("verdicts") == 0
