"""Predictable questions (training/predictable.py): a question whose group had all-equal
rewards is not generated again within the window, and the gradient share is counted right.

The episodes are a test double (an async function with a scripted reward), as in
test_controller.py: the controller's bookkeeping is under test, not a model."""

import asyncio
import doctest

import pytest

from training.api import Trajectory
from training.controller import MAX_DROPPED_BATCHES, RolloutController
from training.metrics import gradient_metrics
from training.predictable import PredictableQuestions
from training.trainer import build_train_batch


class Item(str):
    @property
    def question_id(self) -> str:
        return str(self)


class CyclingSource:
    """The questions again and again (epochs of a reader), each draw logged."""

    def __init__(self, names, rounds):
        self.queue = [Item(n) for _ in range(rounds) for n in names]
        self.served: list[str] = []

    def next_item(self):
        if not self.queue:
            return None
        self.served.append(self.queue[0])
        return self.queue.pop(0)


def solver(outcome):
    """An episode whose reward follows the question: 'always*' 1, 'never*' 0, 'mixed*'
    alternating within each group (every episode then has a nonzero advantage)."""
    calls: dict[str, int] = {}

    async def episode(item):
        await asyncio.sleep(0)
        i = calls[item] = calls.get(item, -1) + 1
        reward = outcome(item, i)
        return Trajectory(question_id=str(item), prompt_ids=[1], output_ids=[2],
                          output_logprobs=[-0.1], output_versions=[0], reward=reward)
    return episode


def by_name(item, i):
    return {"always": 1.0, "never": 0.0}.get(item.rstrip("0123456789"), float(i % 2))


async def run(ctrl, steps):
    """Batches as the trainer takes them, counting the gradient-carrying episodes; then every
    finished trajectory (trained or dropped) with the controller."""
    trained = []
    for _ in range(steps):
        batch = await ctrl.get_batch()
        if batch is None:
            break
        ctrl.count_gradient(int((build_train_batch(batch, 0)["advantages"] != 0).sum()))
        trained += batch.trajectories
        ctrl.set_version(ctrl.version + 1)
    await ctrl.aclose()
    return trained, [t for t, _, _ in ctrl.drain_finished()]


def controller(source, window, n=4, episode=None):
    # one group per batch, η = 0: groups run one after another, so their order is clear
    return RolloutController(episode or solver(by_name), source, batch_size=n, group_size=n,
                             max_in_flight=n, eta=0, predictable_versions=window)


def groups_in_order(trajs):
    """(question, start version, rewards) per group, in the order the groups finished."""
    seen: dict[str, tuple] = {}
    for t in trajs:
        q, v, rewards = seen.setdefault(t.group_id, (t.question_id, t.start_version, []))
        rewards.append(t.reward)
    return list(seen.values())


def test_doctests():
    import training.metrics
    import training.predictable

    for module in (training.predictable, training.metrics):
        result = doctest.testmod(module)
        assert result.attempted >= 1 and result.failed == 0


def test_predictable_questions_are_not_generated_again_within_the_window():
    window = 3
    source = CyclingSource(["always1", "never1", "mixed1", "mixed2", "always2"], rounds=12)
    ctrl = controller(source, window)
    _, finished = asyncio.run(run(ctrl, steps=20))
    marked: dict[str, int] = {}
    for q, v, rewards in groups_in_order(finished):
        assert v >= marked.get(q, v), f"{q} played at version {v}, marked until {marked[q]}"
        if len(set(rewards)) == 1:
            marked[q] = v + window
    played = {q for q, _, _ in groups_in_order(finished)}
    assert {"always1", "never1", "always2"} <= played     # each once before it was known
    skipped = len(source.served) - ctrl.counts["groups_started"]   # drawn, never opened
    assert ctrl.counts["skipped_predictable"] == skipped > 0
    mixed_played = sum(q.startswith("mixed") for q, _, _ in groups_in_order(finished))
    assert mixed_played == sum(q.startswith("mixed") for q in source.served)   # never skipped


def test_a_marked_question_is_played_again_once_the_window_passed():
    p = PredictableQuestions(versions=2, budget=10)
    p.record("q", start_version=5, rewards=[1.0, 1.0, 1.0])
    assert [p.skip("q", v) for v in (5, 6, 7, 8)] == [True, True, False, False]
    p.record("q", start_version=7, rewards=[1.0, 0.0, 1.0])     # signal clears the mark
    assert not p.skip("q", 7)
    off = PredictableQuestions(versions=0, budget=10)            # the default: off
    off.record("q", start_version=0, rewards=[0.0, 0.0])
    assert not off.skip("q", 0)


def test_a_stream_of_predictable_questions_still_fills_batches():
    """Budget: a step skips at most MAX_DROPPED_BATCHES batches' worth of groups, then plays
    marked questions, so the run does not cycle the stream without training."""
    n = 4
    source = CyclingSource(["always1", "never1"], rounds=400)
    ctrl = controller(source, window=1000, n=n)
    trained, _ = asyncio.run(run(ctrl, steps=3))
    assert len(trained) == 3 * n                                  # filler groups, as before
    # at most a budget per step: three steps and the fourth's draws before the close
    assert 0 < ctrl.counts["skipped_predictable"] <= 4 * MAX_DROPPED_BATCHES


def test_gradient_share_counts_trained_episodes_with_nonzero_advantage():
    source = CyclingSource(["always1", "mixed1", "never1", "mixed2"], rounds=3)
    ctrl = controller(source, window=0)
    trained, finished = asyncio.run(run(ctrl, steps=6))
    generated = len(finished)
    with_gradient = sum(t.question_id.startswith("mixed") for t in trained)
    metrics = gradient_metrics(ctrl.counts)
    assert metrics["episodes_generated"] == generated == 3 * 4 * 4
    assert metrics["episodes_with_gradient"] == with_gradient == 6 * 4
    assert metrics["gradient_share"] == pytest.approx(with_gradient / generated)
    assert metrics["questions_skipped_predictable"] == 0           # window 0: the rule is off


def test_an_episode_at_the_group_mean_carries_no_gradient():
    """Rewards 0, 0.5, 1: the middle one's advantage is 0, so it counts as no gradient."""
    rewards = {0: 0.0, 1: 0.5, 2: 1.0}
    source = CyclingSource(["graded"], rounds=1)
    ctrl = controller(source, window=0, n=3, episode=solver(lambda item, i: rewards[i]))
    asyncio.run(run(ctrl, steps=1))
    assert gradient_metrics(ctrl.counts)["gradient_share"] == pytest.approx(2 / 3)


def test_marks_survive_a_checkpoint():
    source = CyclingSource(["never1", "mixed1"], rounds=1)
    ctrl = controller(source, window=5)
    asyncio.run(run(ctrl, steps=1))
    state = ctrl.state_dict()
    assert state["predictable_until"] == {"never1": 5}
    again = controller(CyclingSource(["never1"], rounds=1), window=5)
    again.load_state_dict(state)
    assert again.predictable.skip("never1", again.version)
