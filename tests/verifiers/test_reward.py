"""Final-answer extraction, the math path, the reward and the optional LLM judge."""

import threading
import time

import pytest

from verifiers import (
    JudgeError, LLMJudge, MathTimeout, extract_final_answer, math_equivalent, reward,
    score_response,
)


@pytest.mark.parametrize("response,answer", [
    ("Long reasoning... so x = 3.\n\nThe answer is \\boxed{\\frac{1}{2}}.", "\\frac{1}{2}"),
    ("\\boxed{1} first, then corrected: \\boxed{2}", "2"),
    ("<think>maybe \\boxed{7}</think>\nAfter checking, Answer: 8", "8"),
    ("Let me think.\nFinal answer: **Marie Curie**", "Marie Curie"),
    ("It was built in 1889. The tower is in Paris.", "The tower is in Paris."),
    ("\\boxed{\\begin{pmatrix} 1 & 2 \\end{pmatrix}}", "\\begin{pmatrix} 1 & 2 \\end{pmatrix}"),
    ("I considered several.\n1. Lyon\n2. Paris", "1. Lyon\n2. Paris"),  # a closing list, whole
    ("It was found in 1848. It was James W. Marshall.", "It was James W. Marshall."),
    ("Lyon, or Dr. Carver", "Lyon, or Dr. Carver"),  # a title's full stop ends no sentence
])
def test_extract_final_answer(response, answer):
    assert extract_final_answer(response) == answer


@pytest.mark.parametrize("pred,gold,options,expected", [
    ("$\\frac{1}{2}$", "$0.5$", None, True),
    ("\\frac34i", "\\frac{3}{4}i", None, True),  # bare LaTeX gets delimited
    ("4, 10, -2", "10, 4, -2", None, False),  # a bare list is ordered
    ("$\\{4, 10\\}$", "$\\{10, 4\\}$", None, True),  # a set is not
    ("1,000.99$", "1000.99", {"match_types": ["expr"]}, True),
    ("3.1416", "3.14159", {"match_types": ["latex", "expr"], "precision": 2}, True),
    ("3.1416", "3.14159", {"match_types": ["latex", "expr"], "precision": 6}, False),
])
def test_math_equivalent_passes_options_through(pred, gold, options, expected):
    assert math_equivalent(pred, gold, options) is expected


@pytest.mark.integration  # off the main thread it starts a math worker process
def test_math_timeout_is_raised_not_scored_zero():
    # ^400 took 0.98 s here: it raced the 1 s timeout and sometimes won. ^700 takes > 5 s.
    slow = ("$(x+2)^{700}$", "$(x+1)^{700}$")
    with pytest.raises(MathTimeout):
        math_equivalent(*slow, timeout_s=1)
    caught = []

    # Other expressions off the main thread: sympy caches what it computed above, and a
    # cached answer would come back before any timeout (seen on an idle machine).
    slow_other = ("$(x+3)^{650}$", "$(x+5)^{650}$")

    def off_main():  # the trainer may call the reward from a worker thread
        started = time.monotonic()
        try:
            caught.append(("returned", math_equivalent(*slow_other, timeout_s=1)))
        except BaseException as exc:  # noqa: BLE001 - reported below, whatever it is
            caught.append((type(exc).__name__, str(exc)))
        caught.append(("after_s", round(time.monotonic() - started, 2)))

    t = threading.Thread(target=off_main)
    t.start()
    t.join(30)
    # The details say what happened if this ever fails (it failed once, unexplained).
    assert caught and caught[0][0] == "MathTimeout" and "threaded" in caught[0][1], caught


def test_a_lost_timeout_alarm_is_still_a_timeout(monkeypatch):
    """The alarm's exception can vanish (raised inside a garbage-collector callback, as
    hypothesis installs one); math-verify then runs to the end. A step that overran its
    timeout is reported as a timeout anyway, not as its late answer."""
    import math_verify

    def parse_that_swallows_the_alarm(text, **kwargs):
        time.sleep(2.5)  # runs on past its 1 s, as if the alarm's exception had been lost
        return []

    monkeypatch.setattr(math_verify, "parse", parse_that_swallows_the_alarm)
    with pytest.raises(MathTimeout, match="alarm was lost"):
        math_equivalent("$1$", "$1$", timeout_s=1)


def test_reward_paths():
    assert reward("...so \\boxed{\\dfrac{1}{2}}", "0.5") == 1.0
    assert reward("...so \\boxed{\\dfrac{1}{3}}", "0.5") == 0.0
    assert reward("I looked it up.\nAnswer: Wilhelm Röntgen", "Wilhelm Conrad Röntgen") == 1.0
    assert reward("I looked it up.\nAnswer: not Röntgen", "Wilhelm Conrad Röntgen") == 0.0
    assert score_response("", "Paris").rule == "no_answer"


def judge_client(base_url: str, model: str):
    """The judge's model client, as the CLI or a flow hands it in (datagen.llm)."""
    from datagen.llm import ChatClient, EndpointConfig
    return ChatClient(EndpointConfig(base_url=base_url, model=model, max_retries=0,
                                     preflight=False, cache=False))


@pytest.mark.integration
def test_llm_judge_over_loopback_chat_completions(chat_server):
    judge = LLMJudge(judge_client(chat_server.base_url, "judge-model"))
    chat_server.reply = lambda prompt: 'Sure! {"equivalent": true}'
    # The rules cannot settle a paraphrase with no shared word: the judge decides.
    r = score_response("Answer: the Big Apple", "New York City", judge=judge,
                       question="Which city is nicknamed after a fruit?")
    assert (r.reward, r.rule) == (1.0, "llm_judge")
    body = chat_server.requests[-1]
    assert body["model"] == "judge-model" and body["temperature"] == 0.0
    assert "New York City" in body["messages"][0]["content"]
    # A case the rules settle never reaches the judge.
    n = len(chat_server.requests)
    assert reward("Answer: New York City", "New York City", judge=judge) == 1.0
    assert reward("Answer: not New York City", "New York City", judge=judge) == 0.0
    assert len(chat_server.requests) == n
    chat_server.reply = lambda prompt: '{"equivalent": false}'
    assert reward("Answer: the Big Apple", "New York City", judge=judge) == 0.0


@pytest.mark.integration
def test_llm_judge_failures_raise(chat_server):
    judge = LLMJudge(judge_client(chat_server.base_url, "m"))
    chat_server.reply = lambda prompt: "I think so"
    with pytest.raises(JudgeError, match="not JSON"):
        judge.equivalent("q", "a", (), "b")
    chat_server.reply = lambda prompt: '{"equivalent": "maybe"}'
    with pytest.raises(JudgeError, match="boolean"):
        judge.equivalent("q", "a", (), "b")
    chat_server.status = 500
    with pytest.raises(JudgeError, match="failed.*http_5xx"):
        judge.equivalent("q", "a", (), "b")


def test_reward_modes_api():
    from verifiers import REWARD_MODES
    assert REWARD_MODES == ("reward", "strict", "judge")
    listed = "Answer: Lyon, Paris or Nice"
    assert score_response(listed, "Paris").rule == "refused_list"  # reward is the default
    assert reward(listed, "Paris", mode="judge") == 1.0  # human raters' leniency
    assert reward(listed, "Paris", mode="strict") == 0.0
    assert reward("Answer: the Paris", "Paris", mode="strict") == 1.0  # SQuAD-normalised
    assert reward("Answer: It is Paris.", "Paris", mode="strict") == 0.0
    with pytest.raises(ValueError, match="reward, strict, judge"):
        reward("Paris", "Paris", mode="lenient")


@pytest.mark.parametrize("answer,gold,rule", [
    ("1934 1935 1936", "1934", "refused_list"),
    ("1934-1935", "1934", "refused_range"),
    ("1934–36", "1934", "refused_range"),
    ("between 1934 and 1936", "1934", "refused_range"),
    ("Paris, Paris", "Paris", "refused_repeat"),
    ("0008", "8", "refused_zero_padding"),
    ("the 1930s", "1934", "refused_coarse"),
    ("Barack Obama (or George Bush)", "Barack Obama", "refused_list"),
    ("Lyon and Paris", "Paris", "refused_list"),
    ('["Lyon", "Paris"]', "Paris", "refused_list"),
    ("- Lyon\n- Paris\n- Nice", "Paris", "refused_list"),
    ("Paris " + "lorem ipsum dolor sit amet consectetur adipiscing elit sed", "Paris",
     "refused_padding"),
    ("x " * 150 + "Paris", "Paris", "refused_padding"),
    # a number run into letters: the toy policy's syllables around the digit (fact_copy)
    ("ne7ka", "7", "refused_glued"),
    ("a7", "7", "refused_glued"),
    ("7Fact", "7", "refused_glued"),
    ("x1934", "1934", "refused_glued"),
])
def test_reward_mode_refuses_what_the_judge_accepts(answer, gold, rule):
    result = score_response(answer, gold)
    assert (result.reward, result.rule) == (0.0, rule)
    assert reward(answer, gold, mode="judge") == 1.0


@pytest.mark.parametrize("answer,gold,aliases,question", [
    ("The novel 1984 was written by George Orwell.", "George Orwell", (), "Who wrote the novel 1984?"),
    ("10-12 years", "10–12 years", (), None),
    ("Simon & Garfunkel", "Simon & Garfunkel", (), None),
    ("330 m (1,083 ft)", "330 m", (), None),
    ("It was built in 1934.", "1934", (), "When was it built?"),
    ("January 26, 1788", "26 January 1788", (), None),
    ("W. C. Röntgen", "Wilhelm Conrad Röntgen", (), None),
    ("the Big Apple", "New York City", ("the Big Apple",), None),
    ("7", "7", (), "How many bridges does Varno have? Fact: Varno has bridges: 7"),
    ("7km", "7 km", (), None),
    ("the 7th", "7th", (), None),
    ("It closes at 7pm.", "7", (), "When does it close?"),
    ("The B-52", "B-52", (), None),
])
def test_reward_mode_still_pays_genuine_equivalents(answer, gold, aliases, question):
    result = score_response(answer, gold, aliases, question)
    assert result.reward == 1.0, result
