"""`datagen eval`: a policy over a question set, scored as training scores it.

    questions.py  EvalQuestion; question sets: JSONL, train_ready (--where), HotpotQA's converter
    scoring.py    Attempt; EM, F1, judge and reward; avg@k / pass@k by band, hops, kind
    policies.py   the policies (checkpoint, endpoint, random, oracle) and the checkpoint loaders
                  (`datagen band --solver policy:` too)
    run.py        EvalConfig -> evaluate() -> EvalReport: the one call the CLI makes
"""

from training.evaluation.run import EvalConfig, EvalReport, evaluate, run_eval

__all__ = ["EvalConfig", "EvalReport", "evaluate", "run_eval"]
