"""The reward mode against a generated adversarial set (issue 11, "Must show").

The set is generated from the golds of EVOUNA-NQ and NQ301 (verifiers/attacks.py):
each gold listed among golds of other questions of its type and, in the same list
forms, of other types (issue 29), plus padded and coarser answers. A sample of forms per gold
keeps the test under a minute; the benchmark scores every form of every gold.
"""

import re

import pytest

from verifiers.agreement import load_evouna, load_nq301
from verifiers.attacks import FORMS, MIXED_FORMS, attack_rates, build_attacks
from verifiers.equivalence import is_equivalent
from verifiers.reward import score_response

pytestmark = pytest.mark.shared_data


@pytest.fixture(scope="module")
def attacks():
    from tests.conftest import SHARED_DATA  # the shared_data fixture is per test
    folder = SHARED_DATA / "answer_equivalence"
    rows = load_evouna(folder / "evouna_nq.json") + load_nq301(folder / "nq301_human_judgments.jsonl")
    return build_attacks(rows, seed=0, forms_per_gold=4)


def _pays(a):
    return score_response(a.prediction, a.gold, a.aliases, a.question).reward > 0


def test_reward_mode_pays_almost_none_of_the_generated_attacks(attacks):
    assert {a.kind for a in attacks} == {"year", "number", "date", "name", "other"}
    # every form is generated, and every list form again with golds of other types
    assert {a.form for a in attacks} == set(FORMS) | {f"mixed_{f}" for f in MIXED_FORMS}
    rates = attack_rates(attacks, _pays)
    table = {k: f"{p}/{n}" for k, (p, n) in sorted(rates.items())}
    paid, n = rates["all"]
    assert n > 10000 and paid / n <= 0.01, table
    for group in ("list", "mixed"):
        paid, n = rates[group]
        assert n > 3000 and paid / n <= 0.01, (group, table)
    small = {k for k, (_, n) in rates.items() if n < 100}
    for form, (paid, n) in rates.items():
        # A form with few golds of its type (ranges need years or numbers) may pay for one.
        assert paid / n <= 0.02 or (form in small and paid <= 1), (form, table)


def test_the_judging_mode_pays_for_many_of_them(attacks):
    """The set is a real test: the lenient mode accepts a large share of it."""
    sample = attacks[::10]
    judged = sum(is_equivalent(a.prediction, a.gold, a.aliases, a.question) for a in sample)
    assert judged / len(sample) > 0.3


def test_generator_leaves_out_what_the_issue_excludes():
    """Not hand-picked, but not unfair either: a distractor the judge accepts for the gold
    is no attack, nor is a form whose separator the gold itself contains."""
    from verifiers.agreement import LabelledPair
    rows = [LabelledPair(q, g, a, "", True, "all") for q, g, a in [
        ("who sang it", "Simon & Garfunkel", ()),
        ("who wrote it", "Paul Simon", ()),
        ("who painted it", "Paul Simon Jr.", ()),  # the judge accepts it for "Paul Simon"
        ("who built it", "Gustave Eiffel", ()),
        ("when was it built", "1889", ()),
        ("when did it open", "1931", ()),
        ("when did it close", "1889", ("in 1889",)),
    ]]
    attacks = build_attacks(rows, seed=0)
    assert not [a for a in attacks if a.gold == "Simon & Garfunkel" and a.form == "ampersand"]
    assert not [a for a in attacks if a.gold == "Paul Simon" and "Paul Simon Jr." in a.prediction]
    assert {a.kind for a in attacks} == {"name", "year"}
    mixed = [a for a in attacks if a.form.startswith("mixed_")]
    assert mixed and all(a.prediction.removeprefix("Answer: ") != a.gold for a in mixed)
    # a mixed list draws its distractors from golds of other types only
    years = {"1889", "1931"}
    assert [a for a in mixed if a.kind == "year"]
    assert not [a for a in mixed if a.kind == "year"
                and (years - {a.gold}) & set(re.findall(r"\d{4}", a.prediction))]
    years = {a.form for a in attacks if a.kind == "year"}
    assert {"neighbour_run", "range_dash", "zero_pad", "decade", "century"} <= years
    assert all(a.prediction.strip() for a in attacks)
    assert build_attacks(rows, seed=0) == attacks  # seeded: the same set every run
