"""The single-turn QA workflow: prompts, rewards from verifiers, trajectories from a real engine."""

import asyncio
import statistics

import pytest

from training.api import GenerationResult
from training.tasks import fact_copy_questions, format_answer, load_task, warm_start_pairs
from training.workflow import QAWorkflow, answer_reward, lognormal_latency
from warehouse.reader import StreamReader, TrainItem


@pytest.mark.parametrize("mode", ["reward", "strict", "judge"])
@pytest.mark.parametrize("response,gold,aliases,expected", [
    ("Answer: 7", "7", (), 1.0), ("Answer: 8", "7", (), 0.0),
    ("I think \\boxed{7}", "7", (), 1.0), ("", "7", (), 0.0),
    ("Answer: NYC", "New York City", ("NYC",), 1.0),
])
def test_answer_reward_uses_extraction_and_equivalence(response, gold, aliases, expected, mode):
    assert answer_reward(response, gold, aliases, mode=mode)[0] == expected


@pytest.mark.parametrize("mode", ["reward", "strict", "judge"])
@pytest.mark.parametrize("response", ["Answer: 7", "Answer: 3 7 9", "0007", "seven",
                                      "Answer: 7, 8", "It is 7 bridges and lots of filler " * 9])
def test_answer_reward_is_the_verifiers_reward(response, mode):
    """One reward path: the trainer pays exactly what verifiers.score_response pays."""
    from verifiers import score_response

    q = "How many bridges does Varno have?"
    want = score_response(response, "7", (), q, mode=mode)
    assert answer_reward(response, "7", (), q, mode) == (want.reward, want.rule)


class ScriptedEngine:
    """Test double: answers with a fixed text (the model itself is random, so cannot)."""

    def __init__(self, tokenizer, text, version=3):
        self.ids = tokenizer.encode(text, add_special_tokens=False)
        self.version = version

    async def agenerate(self, request):
        return GenerationResult(request.prompt_ids, self.ids, [-0.5] * len(self.ids),
                                [self.version] * len(self.ids), "stop")


def _item(q="Fact: Varo has 7 bridges. Question: How many bridges does Varo have?", a="7"):
    return TrainItem("q1", q, a, (), "medium", 0.5)


def test_episode_reward_and_fields(tiny_model_dir):
    from training.models import load_tokenizer

    tok = load_tokenizer(tiny_model_dir)
    wf = QAWorkflow(tok, max_new_tokens=8)
    right = asyncio.run(wf.run_episode(ScriptedEngine(tok, "Answer: 7"), _item()))
    wrong = asyncio.run(wf.run_episode(ScriptedEngine(tok, "Answer: 3"), _item()))
    assert (right.reward, wrong.reward) == (1.0, 0.0)
    assert right.prompt_ids == wf.prompt_ids(_item().question)
    assert tok.decode(right.prompt_ids).startswith("<|im_start|>user\nFact: Varo")
    assert right.text == "Answer: 7" and right.info.reward_rule != "no_match"
    assert right.start_version == -1            # set once, by the controller at admission
    assert len({right.episode_id, wrong.episode_id}) == 2 and len(right.episode_id) == 32


def test_long_prompt_is_rejected(tiny_model_dir):
    from training.models import load_tokenizer

    tok = load_tokenizer(tiny_model_dir)
    wf = QAWorkflow(tok, max_prompt_tokens=10)
    assert asyncio.run(wf.run_episode(ScriptedEngine(tok, "Answer: 7"), _item())) is None


def test_episode_with_the_hf_engine(tiny_model_dir):
    from training.engines.hf_engine import HFInferenceEngine
    from training.models import load_tokenizer

    tok = load_tokenizer(tiny_model_dir)
    engine = HFInferenceEngine(tiny_model_dir, version=2)
    try:
        traj = asyncio.run(QAWorkflow(tok, max_new_tokens=5).run_episode(engine, _item()))
    finally:
        engine.close()
    assert 1 <= len(traj.output_ids) <= 5
    assert len(traj.output_logprobs) == len(traj.output_ids) == len(traj.output_versions)
    assert all(lp <= 0 for lp in traj.output_logprobs)
    assert set(traj.output_versions) == {2} and traj.reward in (0.0, 1.0)


def test_tool_latency_is_lognormal_with_the_median():
    draw = lognormal_latency(1.0, 1.2, seed=0)
    xs = [draw() for _ in range(4000)]
    assert statistics.median(xs) == pytest.approx(1.0, rel=0.1)
    assert max(xs) > 10 * statistics.mean(xs) / 2      # long tail


def test_task_questions_split_and_warm_start_answers_are_random():
    train = fact_copy_questions(300, "train")
    ev = fact_copy_questions(50, "eval")
    names = lambda qs: {q.question.split(" does ")[1].split()[0] for q in qs}   # noqa: E731
    assert not names(train) & names(ev)
    pairs = warm_start_pairs(train)
    agree = sum(a == format_answer(q.answer) for (_, a), q in zip(pairs, train)) / len(train)
    assert agree < 0.25                                 # format only, not the task


def test_warm_start_digits_tell_nothing_about_the_fact():
    """Within each gold digit the random digits are balanced (counts differ by at most one),
    for several seeds: no gold is taught to avoid, or favour, any digit."""
    from collections import Counter

    train = fact_copy_questions(1200, "train")
    for seed in range(3):
        pairs = warm_start_pairs(train, seed)
        assert len({a for _, a in pairs}) == 10
        for gold in "0123456789":
            got = Counter(a for (_, a), q in zip(pairs, train) if q.answer == gold)
            counts = [got[d] for d in "0123456789"]
            assert max(counts) - min(counts) <= 1, (seed, gold, counts)
    assert warm_start_pairs(train, 0) != warm_start_pairs(train, 1)


def test_load_task_into_train_ready(wh):
    n = load_task(wh, "fact_copy", 30)
    assert load_task(wh, "fact_copy", 30) == n          # idempotent
    assert wh.count("questions") == 30
    reader = StreamReader(wh, {"medium": 1.0}, seed=0)
    items = reader.next_batch(30)
    assert len({i.question_id for i in items}) == 30
    assert all(i.answer in i.question for i in items)


@pytest.mark.parametrize("response,mode,expected", [
    ("Answer: 3 7 9", "reward", 0.0),   # a list of guesses (the tiny policy's first hack)
    ("0007", "reward", 0.0),            # zero padding (its second hack) ...
    ("0007", "judge", 1.0),             # ... which the lenient judging mode accepts
    ("0007", "strict", 0.0), ("Answer: 7", "strict", 1.0), ("Answer: seven", "strict", 0.0),
    ("7 7 7", "reward", 0.0),           # repeats
])
def test_the_default_reward_refuses_the_hacks_a_policy_found(response, mode, expected):
    assert answer_reward(response, "7", mode=mode)[0] == expected


@pytest.mark.parametrize("mode,expected", [("reward", 0.0), ("strict", 0.0), ("judge", 1.0)])
def test_a_response_cut_by_the_budget_pays_only_in_judge_mode(tiny_model_dir, mode, expected):
    from training.models import load_tokenizer

    class Truncated(ScriptedEngine):
        async def agenerate(self, request):
            r = await super().agenerate(request)
            return GenerationResult(r.prompt_ids, r.output_ids, r.output_logprobs,
                                    r.output_versions, "length")

    tok = load_tokenizer(tiny_model_dir)
    traj = asyncio.run(QAWorkflow(tok, reward_mode=mode).run_episode(
        Truncated(tok, "Answer: 7"), _item()))
    assert traj.reward == expected
    assert (traj.info.reward_rule == "truncated") == (mode != "judge")


def test_the_workflow_passes_its_mode_and_reports_the_rule(tiny_model_dir):
    from training.models import load_tokenizer

    tok = load_tokenizer(tiny_model_dir)
    spray = ScriptedEngine(tok, "0007")
    lenient = asyncio.run(QAWorkflow(tok, reward_mode="judge").run_episode(spray, _item()))
    default = asyncio.run(QAWorkflow(tok).run_episode(spray, _item()))
    assert (lenient.reward, default.reward) == (1.0, 0.0)
    assert default.info.reward_rule.startswith("refused")


def test_reward_exceptions_propagate_from_the_episode(tiny_model_dir, monkeypatch):
    """A reward that fails raises (the controller drops and counts the group): never 0.0."""
    import verifiers
    from training.models import load_tokenizer
    from verifiers import MathTimeout

    def slow(*args, **kwargs):
        raise MathTimeout("math-verify overran 5 s")

    monkeypatch.setattr(verifiers, "score_response", slow)
    tok = load_tokenizer(tiny_model_dir)
    with pytest.raises(MathTimeout):
        asyncio.run(QAWorkflow(tok).run_episode(ScriptedEngine(tok, "Answer: 7"), _item()))
