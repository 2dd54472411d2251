"""Predictable questions: skip generating a question whose outcome this run already knows.

A GRPO group whose rewards are all equal (a question the policy always or never solves) has
zero advantage: its episodes train nothing, and the controller drops it after generating it
(`dropped_no_signal`, DAPO's dynamic sampling). This rule saves the generation too, from the
question's history in this run:

- a group of question q that finished with all-equal rewards at start version v marks q
  predictable until version v + W (W = `rollout.predictable_versions`; 0 turns the rule off);
- when the stream serves a marked question before that version, it is skipped, not generated
  (counted as `skipped_predictable`), and the next question is drawn;
- after W versions q is played again, since the policy may have moved: a group with signal
  clears the mark, another all-equal group renews it;
- a step skips at most `budget` questions (the controller's no-signal budget, in groups);
  past it marked questions are played, so a stream of nothing but predictable questions still
  fills batches instead of cycling through the reader's epochs.

Only this run's outcomes count: the warehouse's rollouts of other runs were another policy's
(and in a study, one arm would steer by another's history). The marks are checkpointed with
the controller. GRESO ("Act only when it pays", 2025) skips zero-variance prompts from their
history the same way, with a probability; this rule is a deterministic, bounded window.
"""

from __future__ import annotations

from typing import Sequence


class PredictableQuestions:
    """The marks of one run and the per-step skip budget."""

    def __init__(self, versions: int, budget: int):
        if versions < 0 or budget < 0:
            raise ValueError(f"versions {versions} and budget {budget} must be >= 0")
        self.versions, self.budget = versions, budget
        self.until: dict[str, int] = {}    # question -> first policy version to play it again
        self.skipped_this_step = 0

    def skip(self, question_id: str, version: int) -> bool:
        """Should the stream's next question be skipped at this policy version?

        >>> p = PredictableQuestions(versions=2, budget=8)
        >>> p.record("q", start_version=3, rewards=[0.0, 0.0])
        >>> [p.skip("q", v) for v in (3, 4, 5)]
        [True, True, False]
        """
        until = self.until.get(question_id)
        if until is None or version >= until or self.skipped_this_step >= self.budget:
            return False
        self.skipped_this_step += 1
        return True

    def record(self, question_id: str, start_version: int, rewards: Sequence[float]) -> None:
        """A full group's outcome: all-equal rewards mark the question, signal clears it."""
        if not self.versions:
            return
        if len(set(rewards)) == 1:
            self.until[question_id] = start_version + self.versions
        else:
            self.until.pop(question_id, None)

    def new_step(self) -> None:
        """A batch was handed out: the next step has its own budget."""
        self.skipped_this_step = 0
