"""The verify stage's library code (verifiers.stage): one run, its rerun, its counts."""

from __future__ import annotations

from verifiers.config import VerifyConfig
from verifiers.stage import in_ids, reason_kind, run_verify

LIGHT = ["well_formed", "answer_not_leaked"]


def test_a_rerun_skips_what_holds_every_verdict(demo_crawled, tmp_path):
    from datagen.compose import ComposeConfig, run_compose
    from tests.conftest import _copy_warehouse
    wh = _copy_warehouse(demo_crawled, tmp_path / "wh")
    try:
        run_compose(wh, ComposeConfig(seed=0, max_questions=40))
        cfg = VerifyConfig(decontamination="off", batch_size=50)
        first = run_verify(wh, cfg, only=LIGHT)
        again = run_verify(wh, cfg, only=LIGHT)
        picked = run_verify(wh, cfg, only=LIGHT, where=in_ids(["no-such-id", "x'y"]))
    finally:
        wh.close()
    assert first.questions > 50 and first.verdicts == 2 * first.questions
    assert set(first.by_check) == set(LIGHT)
    assert again.questions == 0 and picked.questions == 0


def test_reasons_of_one_kind_count_together():
    assert reason_kind("answer 'Kelm' in question 0123456789abcdef (3 times)") == \
        reason_kind("answer 'Kelm' in question fedcba9876543210 (12 times)")
