"""verifiers: is an answer right (the reward), and is a question fit to train on.

The file tree is in verifiers/README.md.
"""

from verifiers.checks import (
    AlternativesJudge, AnswerNotLeaked, Check, CheckContext, CheckResult, Grounded, PageSearch,
    QuestionCheck, WellFormed,
)
from verifiers.decontam import DEFAULT_BENCHMARKS, ContaminationIndex, Decontamination
from verifiers.dedup import NearDuplicates, SentenceEmbedder
from verifiers.equivalence import EquivalenceScore, is_equivalent, score_answer, token_f1
from verifiers.extract import extract_final_answer
from verifiers.judge import JudgeError, LLMJudge
from verifiers.mathcheck import MathTimeout, math_equivalent
from verifiers.normalize import squad_normalize, yes_or_no
from verifiers.candidates import answer_type
from verifiers.reward import REWARD_MODES, RewardResult, reward, score_response
from verifiers.runner import CheckTally, ChecksSummary, default_checks, run_check, run_checks
from verifiers.shortcut import Shortcut, is_shortcut, shortcut_flags, shortcut_pages
from verifiers.uniqueness import PageWords, UniqueAnswer, question_terms

__all__ = [
    "is_equivalent", "score_answer", "EquivalenceScore", "token_f1", "squad_normalize", "yes_or_no",
    "extract_final_answer", "math_equivalent", "MathTimeout",
    "reward", "score_response", "RewardResult", "REWARD_MODES", "answer_type", "LLMJudge", "JudgeError",
    "Check", "QuestionCheck", "CheckContext", "CheckResult", "PageSearch", "AlternativesJudge",
    "WellFormed", "AnswerNotLeaked", "Grounded", "UniqueAnswer", "PageWords", "question_terms",
    "NearDuplicates", "Shortcut", "is_shortcut", "shortcut_pages", "shortcut_flags",
    "SentenceEmbedder", "Decontamination", "ContaminationIndex", "DEFAULT_BENCHMARKS",
    "run_checks", "run_check", "default_checks", "ChecksSummary", "CheckTally",
]
