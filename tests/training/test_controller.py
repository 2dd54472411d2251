"""RolloutController: the staleness bound under random latencies, dynamic sampling counts.

The episodes here are a test double (an async function with random latency and a scripted
reward): the controller's logic is what is under test, not a model.
"""

import asyncio
import itertools
import random

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from training.api import TrainingFailed, Trajectory
from training.controller import RolloutController
from training.failures import engine_unreachable


class Q(int):
    """A question that is a number (the tests do arithmetic on it), with an id."""

    @property
    def question_id(self) -> str:
        return str(int(self))


class ListSource:
    def __init__(self, items):
        self.items = [Q(i) for i in items]

    def next_item(self):
        return self.items.pop(0) if self.items else None


def traj(item, reward):
    return Trajectory(question_id=str(item), prompt_ids=[1], output_ids=[2],
                      output_logprobs=[-0.1], output_versions=[0], reward=reward)


def make_episode(latencies, reward_of, check=None):
    counter = itertools.count()

    async def episode(item):
        i = next(counter)
        if check:
            check()
        await asyncio.sleep(latencies[i % len(latencies)])
        reward = reward_of(item, i)
        if reward is None:
            return None
        return Trajectory(question_id=str(item), prompt_ids=[1], output_ids=[2],
                          output_logprobs=[-0.1], output_versions=[0], reward=reward,
                          start_version=-1)
    return episode


async def drive(ctrl, n_steps, train_time=0.0):
    batches = []
    for _ in range(n_steps):
        batch = await ctrl.get_batch()
        if batch is None:
            break
        batches.append(batch)
        await asyncio.sleep(train_time)
        ctrl.set_version(ctrl.version + 1)
    await ctrl.aclose()
    return batches


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(eta=st.integers(0, 3), n=st.sampled_from([2, 4]), groups_per_batch=st.integers(1, 3),
       inflight=st.integers(1, 20),
       latencies=st.lists(st.floats(0.0, 0.004), min_size=1, max_size=40),
       seed=st.integers(0, 1000), train_time=st.sampled_from([0.0, 0.002]),
       late_groups=st.sampled_from(["wait", "drop"]))
def test_staleness_bound_never_violated(eta, n, groups_per_batch, inflight, latencies,
                                        seed, train_time, late_groups):
    batch_size = n * groups_per_batch
    rng = random.Random(seed)
    signal = {q: rng.random() < 0.7 for q in range(400)}

    def reward_of(item, i):            # groups of questions without signal get equal rewards
        return float(rng.random() < 0.5) if signal[item] else 1.0

    async def main():
        ctrl = None

        def check_admission():
            bound = (ctrl.eta + ctrl.version + 1) * ctrl.batch_size
            assert ctrl.accepted + ctrl.open_episodes <= bound
            assert ctrl.running_episodes <= ctrl.max_in_flight

        ctrl = RolloutController(make_episode(latencies, reward_of, check_admission),
                                 ListSource(range(400)), batch_size=batch_size, group_size=n,
                                 max_in_flight=inflight, eta=eta, late_groups=late_groups)
        batches = await drive(ctrl, 12, train_time)
        return ctrl, batches

    ctrl, batches = asyncio.run(main())
    assert len(batches) == 12
    for b in batches:
        assert len(b.trajectories) == batch_size
        assert all(0 <= s <= eta for s in b.staleness)
        assert all(b.version - t.start_version <= eta for t in b.trajectories)
    assert ctrl.max_staleness_seen <= eta
    assert sum(ctrl.staleness_hist.values()) == 12 * batch_size
    flat = sum(len({t.reward for t in g}) == 1 for b in batches for g in b.groups)
    assert flat <= ctrl.counts["groups_filler_kept"]      # all-equal groups only as filler


def test_eta_zero_is_synchronous():
    async def main():
        ctrl = RolloutController(
            make_episode([0.001, 0.003], lambda item, i: float(i % 2)), ListSource(range(100)),
            batch_size=4, group_size=2, max_in_flight=64, eta=0)
        return await drive(ctrl, 5)
    batches = asyncio.run(main())
    assert [b.staleness for b in batches] == [[0] * 4] * 5


def test_async_run_reaches_positive_staleness_under_straggling():
    """With η > 0 and a slow trainer, generation runs ahead: staleness > 0 happens."""
    async def main():
        ctrl = RolloutController(
            make_episode([0.0005], lambda item, i: float(i % 2)), ListSource(range(400)),
            batch_size=4, group_size=2, max_in_flight=64, eta=2)
        batches = await drive(ctrl, 8, train_time=0.01)
        return ctrl, batches
    ctrl, batches = asyncio.run(main())
    assert ctrl.max_staleness_seen == 2
    assert max(s for b in batches for s in b.staleness) == 2


def test_no_signal_and_rejected_groups_are_dropped_and_counted():
    # question q: 0 -> all correct, 1 -> all wrong, 2 -> one episode rejected, 3 -> mixed
    def reward_of(item, i):
        kind = item % 4
        if kind == 2 and i % 2 == 0:
            return None
        return {0: 1.0, 1: 0.0, 2: 1.0, 3: float(i % 2)}[kind]

    async def main():
        ctrl = RolloutController(make_episode([0.0], reward_of), ListSource(range(40)),
                                 batch_size=2, group_size=2, max_in_flight=2, eta=0)
        batches = await drive(ctrl, 100)
        return ctrl, batches
    ctrl, batches = asyncio.run(main())
    assert len(batches) == 10                       # 40 questions, 10 of them with signal
    assert all(b.items[0] % 4 == 3 for b in batches)
    assert ctrl.counts["dropped_no_signal"] == 20
    assert ctrl.counts["dropped_rejected_episode"] == 10
    assert ctrl.counts["groups_accepted"] == 10
    finished = ctrl.drain_finished()
    assert len(finished) == 80 - 10                 # rejected episodes are not trajectories
    assert sum(acc for _, _, acc in finished) == 20


def test_a_step_drops_at_most_its_budget_then_fills_with_all_correct_groups():
    """Every group all correct: each batch comes after 8 batches' worth of dropped groups,
    filled with them (advantage 0); without the budget no batch would ever come."""
    from training.controller import MAX_DROPPED_BATCHES
    from training.loss import grpo_advantages

    async def main():
        ctrl = RolloutController(make_episode([0.0], lambda item, i: 1.0),
                                 ListSource(range(500)), batch_size=4, group_size=2,
                                 max_in_flight=2, eta=0)
        return ctrl, await drive(ctrl, 5)
    ctrl, batches = asyncio.run(main())
    per_batch = MAX_DROPPED_BATCHES * 4 // 2                    # groups dropped per batch
    assert len(batches) == 5 and ctrl.counts["groups_filler_kept"] == 5 * 2
    assert ctrl.counts["dropped_no_signal"] == 5 * per_batch
    rewards = [[t.reward for t in g] for g in batches[0].groups]
    assert grpo_advantages(torch.tensor(rewards)).abs().max() == 0


def test_failed_episodes_drop_their_group_and_training_goes_on():
    """Episodes that raise (a reward error, one failed request) cost their group only."""
    from verifiers import MathTimeout

    failing = {5: MathTimeout("math-verify overran"), 12: RuntimeError("server answered 500"),
               13: MathTimeout("again")}

    async def episode(item):
        await asyncio.sleep(0.001 * (item % 3))
        if item in failing:
            raise failing[item]
        return traj(item, float(random.random() < 0.5) if item % 2 else 0.0)

    async def main():
        ctrl = RolloutController(episode, ListSource(range(60)), batch_size=4, group_size=2,
                                 max_in_flight=6, eta=1)
        batches = await drive(ctrl, 100)
        return ctrl, batches

    ctrl, batches = asyncio.run(main())
    assert ctrl.counts["dropped_failed/MathTimeout"] == 2
    assert ctrl.counts["dropped_failed/RuntimeError"] == 1
    assert 3 <= ctrl.counts["episodes_failed"] <= 6        # siblings may fail before the cancel
    trained = {i for b in batches for i in b.items}
    assert trained and not trained & set(failing)
    assert ctrl.running_episodes == 0
    for b in batches:                                        # start version set once, here
        assert [b.version - t.start_version for t in b.trajectories] == b.staleness


def test_systematic_failures_stop_with_one_error():
    """More than half of a step's episodes failing ends training."""
    async def boom(item):
        raise ValueError("workflow bug")

    async def main():
        ctrl = RolloutController(boom, ListSource(range(400)), batch_size=4, group_size=2,
                                 max_in_flight=4, eta=1)
        with pytest.raises(TrainingFailed, match="step, more than half .*ValueError"):
            await asyncio.wait_for(ctrl.get_batch(), timeout=10)
        await ctrl.aclose()
        return ctrl
    ctrl = asyncio.run(main())
    assert ctrl.counts["episodes_failed"] == 3              # > 0.5 · max(ended, batch of 4)


def test_some_failures_below_the_fraction_do_not_stop_training():
    rng = random.Random(0)

    async def episode(item):
        await asyncio.sleep(0)
        if rng.random() < 0.25:                 # a quarter of the episodes: below one half
            raise RuntimeError("one bad request")
        return traj(item, float(rng.random() < 0.5))

    async def main():
        ctrl = RolloutController(episode, ListSource(range(10_000)), batch_size=32,
                                 group_size=2, max_in_flight=8, eta=0)
        return ctrl, await drive(ctrl, 20)
    ctrl, batches = asyncio.run(main())
    assert len(batches) == 20 and ctrl.counts["dropped_failed/RuntimeError"] > 0


def test_an_unreachable_engine_stops_at_once():
    import httpx

    async def refused(item):
        await asyncio.sleep(0)
        try:
            raise httpx.ConnectError("[Errno 111] Connection refused", request=httpx.Request(
                "POST", "http://127.0.0.1:9/v1/completions"))
        except httpx.ConnectError as exc:   # as the engine wraps it
            raise RuntimeError("generation failed") from exc

    async def main():
        ctrl = RolloutController(refused, ListSource(range(400)), batch_size=64,
                                 group_size=8, max_in_flight=1, eta=1)
        with pytest.raises(TrainingFailed, match=r"^the inference engine is unreachable "
                           r"\(ConnectError: \[Errno 111\] Connection refused at "
                           r"http://127.0.0.1:9/v1/completions\)$"):
            await asyncio.wait_for(ctrl.get_batch(), timeout=10)
        await ctrl.aclose()
        return ctrl
    assert asyncio.run(main()).counts["episodes_failed"] == 1


def test_engine_unreachable_reads_the_cause_chain():
    import httpx

    try:
        try:
            raise ConnectionRefusedError(111, "refused")
        except OSError as exc:
            raise ValueError("wrapped") from exc
    except ValueError as exc:
        assert engine_unreachable(exc)
    assert engine_unreachable(httpx.ConnectTimeout("slow"))
    assert not engine_unreachable(httpx.ReadError("peer closed"))   # one response lost
    assert not engine_unreachable(TimeoutError("math"))


def test_state_dict_keeps_untrained_items_and_counters():
    async def main():
        ctrl = RolloutController(make_episode([0.001], lambda item, i: float(i % 2)),
                                 ListSource(range(100)), batch_size=4, group_size=2,
                                 max_in_flight=8, eta=1)
        await drive(ctrl, 3)
        return ctrl.state_dict()
    state = asyncio.run(main())
    assert state["version"] == 3 and state["consumed"] == 3
    trained_items = 3 * 2
    assert state["pending_items"][0] == trained_items   # admission order: next untrained first
    assert sum(int(v) for v in state["staleness_hist"].values()) == 12

    async def resumed():
        ctrl = RolloutController(make_episode([0.001], lambda item, i: float(i % 2)),
                                 ListSource(range(100, 200)), batch_size=4, group_size=2,
                                 max_in_flight=8, eta=1)
        ctrl.load_state_dict(state)
        batch = await ctrl.get_batch()
        await ctrl.aclose()
        return ctrl, batch
    ctrl, batch = asyncio.run(resumed())
    assert batch.version == 3
    assert batch.items == state["pending_items"][:2]
    assert sum(ctrl.staleness_hist.values()) == 16


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="multiple"):
        RolloutController(None, ListSource([]), batch_size=3, group_size=2, max_in_flight=8,
                          eta=0)
    with pytest.raises(ValueError, match="max_in_flight"):
        RolloutController(None, ListSource([]), batch_size=4, group_size=4, max_in_flight=0,
                          eta=0)


def test_slots_are_per_episode_not_per_group():
    """A slot freed by a fast episode starts the next one at once, while its group's
    straggler still runs (with per-group slots, one straggler idles n - 1 slots)."""
    seen: set = set()
    holder: list[RolloutController] = []
    peak = 0

    async def episode(item):
        nonlocal peak
        peak = max(peak, holder[0].running_episodes)
        straggler = item not in seen           # the first episode of each group is slow
        seen.add(item)
        await asyncio.sleep(0.5 if straggler else 0.002)
        return Trajectory(question_id=str(item), prompt_ids=[1], output_ids=[2],
                          output_logprobs=[-0.1], output_versions=[0],
                          reward=float(straggler), start_version=-1)

    async def main():
        ctrl = RolloutController(episode, ListSource(range(40)), batch_size=16, group_size=4,
                                 max_in_flight=8, eta=3)
        holder.append(ctrl)
        ctrl.fill()
        await asyncio.sleep(0.2)               # every straggler started so far still runs
        counts = ctrl.counts["groups_started"], ctrl.running_episodes
        await ctrl.aclose()
        return counts

    started, running = asyncio.run(main())
    assert running == 8 and peak <= 8
    # Per-group slots would hold 2 groups; per-episode slots keep opening groups while the
    # fast episodes finish, up to the staleness bound (η + 1) · B = 64 episodes = 16 groups.
    assert started == 8       # 8 stragglers fill the 8 slots, one per group


def test_late_groups_dropped_instead_of_waited_for():
    """A straggler that never finishes: with late_groups="drop" training goes on, the late
    group is dropped and its episode cancelled (with "wait" the trainer would wait forever)."""
    never = asyncio.Event()
    calls = itertools.count()

    async def episode(item):
        i = next(calls)
        if i == 0:
            await never.wait()                 # the first episode of group 0 never ends
        await asyncio.sleep(0.001)
        return Trajectory(question_id=str(item), prompt_ids=[1], output_ids=[2],
                          output_logprobs=[-0.1], output_versions=[0], reward=float(i % 2),
                          start_version=-1)

    async def main():
        ctrl = RolloutController(episode, ListSource(range(200)), batch_size=4, group_size=2,
                                 max_in_flight=8, eta=1, late_groups="drop")
        batches = await asyncio.wait_for(drive(ctrl, 6), timeout=30)
        return ctrl, batches

    ctrl, batches = asyncio.run(main())
    assert len(batches) == 6
    assert all(s <= 1 for b in batches for s in b.staleness)
    assert ctrl.counts["dropped_late"] >= 1 and 0 not in [i for b in batches for i in b.items]
    assert ctrl.running_episodes == 0 and ctrl.cancelled_episode_s > 0


def test_without_dynamic_sampling_all_equal_groups_are_kept_and_counted():
    """`rollout.dynamic_sampling: false`: a group whose rewards are all equal is trained on
    (advantage 0) instead of dropped, and still counted as groups_no_signal."""
    import asyncio

    from training.controller import RolloutController

    async def episode(item):
        return traj(item, 0.0)

    async def run(dynamic: bool):
        c = RolloutController(episode, ListSource(range(8)), batch_size=4, group_size=2,
                              max_in_flight=4, eta=0, dynamic_sampling=dynamic)
        batch = await c.get_batch()
        return c, batch

    kept, batch = asyncio.run(run(False))
    assert batch is not None and len(batch.trajectories) == 4
    assert kept.counts["groups_no_signal"] >= 2 and kept.counts["dropped_no_signal"] == 0
    dropped, batch = asyncio.run(run(True))
    assert batch is None                                    # every group dropped: ran dry
    assert dropped.counts["dropped_no_signal"] == 8 and dropped.counts["groups_accepted"] == 0


def test_all_wrong_groups_are_played_again_hotter_until_one_has_a_signal():
    """Questions 0-2 are answered only by the second hot episode fn (a "hotter" sampler that
    finds the gold); question 3 always right. All-wrong groups climb the ladder one rung at a
    time and stop at its top; all-right ones are never replayed."""
    played: list[tuple[int, int]] = []   # (item, rung), one per episode

    def fn(rung):
        async def episode(item):
            played.append((item, rung))
            first = played.count((item, rung)) == 1    # the top rung: one of two is right
            await asyncio.sleep(0)
            return traj(item, 1.0 if item == 3 or (rung == 2 and first) else 0.0)
        return episode

    async def main():
        ctrl = RolloutController(fn(0), ListSource(range(4)), batch_size=2, group_size=2,
                                 max_in_flight=2, eta=0, hot_episode_fns=[fn(1), fn(2)])
        return ctrl, await drive(ctrl, 10)
    ctrl, batches = asyncio.run(main())
    rungs = {i: sorted({r for it, r in played if it == i}) for i in range(4)}
    assert rungs == {0: [0, 1, 2], 1: [0, 1, 2], 2: [0, 1, 2], 3: [0]}
    assert ctrl.counts["groups_replayed_hotter"] == 3 * 2
    assert sorted(b for batch in batches for b in batch.items) == [0, 1, 2]   # top rung paid
    assert ctrl.counts["dropped_no_signal"] == 3 * 2 + 1        # rungs 0-1, and question 3


def test_pick_batch_waits_only_while_a_straggler_would_miss_its_deadline():
    """η = 1, batches of one group: a group started at version 0 is still running, so taking a
    ready version-1 group now would train the straggler two versions late; the pick waits.
    When dropping late groups, it never waits."""
    from types import SimpleNamespace as G

    from training.deadlines import pick_batch
    ready = [G(start_version=1, finish_seq=0)]
    assert pick_batch(ready, [0], consumed=1, eta=1, k=1) is None
    assert pick_batch(ready, [0], consumed=1, eta=1, k=1, late_groups="drop") == ready
    assert pick_batch(ready, [1], consumed=1, eta=1, k=1) == ready
    both = [G(start_version=1, finish_seq=0), G(start_version=0, finish_seq=1)]
    assert pick_batch(both, [], consumed=0, eta=1, k=1) == [both[1]]   # earliest deadline


@pytest.mark.vllm
def test_a_dead_in_process_engine_is_systematic_and_says_it_died():
    """vLLM's EngineDeadError (its engine process killed, for memory say) fails every
    episode alike: it stops a run at once, named as a death rather than unreachable."""
    from training.failures import unreachable_message

    dead = pytest.importorskip("vllm.v1.engine.exceptions").EngineDeadError
    try:
        try:
            raise dead()
        except dead as exc:
            raise RuntimeError("generation failed") from exc
    except RuntimeError as exc:
        assert engine_unreachable(exc)
        assert unreachable_message(exc).startswith("the inference engine died (EngineDeadError: ")
    assert not engine_unreachable(RuntimeError("one bad response"))
