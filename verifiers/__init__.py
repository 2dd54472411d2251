"""verifiers: is an answer right (the reward), and is a question fit to train on.

    normalize.py    SQuAD normalisation + canonical tokens (accents, numbers, ordinals, Roman numerals)
    numwords.py     spelled-out numbers, magnitudes, separators
    dates.py        full and partial dates in common formats
    names.py        person names with/without middle names, initials, titles
    equivalence.py  is_equivalent / score_answer: the rule cascade
    phrases.py      parts of a descriptive gold that answer on their own; acronyms
    extract.py      final answer from a long generation (\\boxed, "Answer:", last sentence)
    mathcheck.py    math-verify with per-case options and a timeout
    reward.py       reward(response, gold, ..., mode=) for RL: reward | strict | judge
    candidates.py   what the reward mode refuses: lists, ranges, repeats, padding, coarse
    attacks.py      the generated adversarial set for the reward mode
    fractions.py    fractions and decimals across written forms
    judge.py        LLMJudge over any OpenAI-compatible endpoint (off by default)
    checks.py       CheckResult, WellFormed, AnswerNotLeaked, Grounded
    uniqueness.py   UniqueAnswer (BM25 over pages offline, or the LLM judge)
    dedup.py        NearDuplicates (normalised hash + MiniLM embeddings, blocked search)
    decontam.py     Decontamination (n-gram / stem overlap against benchmark sets)
    runner.py       run_checks(wh, questions, checks, run_id) -> summary; one commit per batch
    agreement.py    loaders + agreement with human labels (EVOUNA, NQ301)
    contamination_set.py  labelled contamination set built from benchmark questions
"""

from verifiers.checks import (
    AnswerNotLeaked, Check, CheckContext, CheckResult, Grounded, QuestionCheck, WellFormed,
)
from verifiers.decontam import DEFAULT_BENCHMARKS, ContaminationIndex, Decontamination
from verifiers.dedup import NearDuplicates, SentenceEmbedder
from verifiers.equivalence import EquivalenceScore, is_equivalent, score_answer, token_f1
from verifiers.extract import extract_final_answer
from verifiers.judge import JudgeError, LLMJudge
from verifiers.mathcheck import MathTimeout, math_equivalent
from verifiers.normalize import squad_normalize
from verifiers.candidates import answer_type
from verifiers.reward import REWARD_MODES, RewardResult, reward, score_response
from verifiers.runner import default_checks, run_check, run_checks
from verifiers.uniqueness import UniqueAnswer

__all__ = [
    "is_equivalent", "score_answer", "EquivalenceScore", "token_f1", "squad_normalize",
    "extract_final_answer", "math_equivalent", "MathTimeout",
    "reward", "score_response", "RewardResult", "REWARD_MODES", "answer_type", "LLMJudge", "JudgeError",
    "Check", "QuestionCheck", "CheckContext", "CheckResult",
    "WellFormed", "AnswerNotLeaked", "Grounded", "UniqueAnswer", "NearDuplicates",
    "SentenceEmbedder", "Decontamination", "ContaminationIndex", "DEFAULT_BENCHMARKS",
    "run_checks", "run_check", "default_checks",
]
