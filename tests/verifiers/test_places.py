"""Place containment for answers to *where* questions (verifiers/places.py)."""

import pytest

from verifiers import is_equivalent, score_answer
from verifiers.normalize import canonical_tokens
from verifiers.places import as_place, gazetteer, related

WHERE = "where did it happen"


@pytest.mark.parametrize("pred,gold,why", [
    ("in the United States", "the Chicago metropolitan area", "the country of a city"),
    ("Illinois", "Chicago", "the state of a city"),
    ("Las Cruces", "southern New Mexico", "a city inside the gold state"),
    ("Doña Ana County", "southern New Mexico", "a county inside the gold state"),
    ("somewhere in Africa", "Senegal", "the continent of a country"),
    ("Southwest Asia", "Iran", "a region by its everyday name"),
    ("England", "Weston-super-Mare", "a UK nation"),
    ("Paris, Texas", "the United States", "the Paris its state picks, inside the gold"),
    ("a French village", "France", "an adjective of place before a noun of place"),
    ("on the African mainland", "Senegal", "a continent's adjective"),
    ("Latin America", "Brazil", "a union of UN sub-regions (not 'America', the US)"),
])
def test_a_place_containing_or_inside_the_gold_answers_where(pred, gold, why):
    assert is_equivalent(pred, gold, question=WHERE), (why, score_answer(pred, gold, question=WHERE))
    assert score_answer(pred, gold, question=WHERE).rule == "place"


@pytest.mark.parametrize("pred,gold,question,why", [
    ("in the United States", "Chicago", "who founded it", "only for where questions"),
    ("Shawnee, Oklahoma", "Woodward, Oklahoma", WHERE, "a rival city in the same state"),
    ("in Michigan, in the United States", "Chicago", WHERE, "a rival state"),
    ("It was not in the United States.", "Chicago", WHERE, "negated"),
    ("Texas", "San Antonio", "where in texas is the alamo", "the place the question names"),
    ("Texas", "Paris", WHERE, "Paris alone reads as the largest Paris, in France"),
    ("Europe", "Iran", WHERE, "another continent"),
    ("Let us see, Boston", "Chicago", WHERE, "'us' the pronoun"),
    ("It is an American drama film.", "Kansas", WHERE, "an adjective of place on its own"),
])
def test_unrelated_rival_or_unasserted_places_do_not(pred, gold, question, why):
    assert not is_equivalent(pred, gold, question=question), (
        why, score_answer(pred, gold, question=question))


def test_gold_readings_and_containment():
    chicago = as_place(canonical_tokens("the Chicago metropolitan area").words)
    assert [p.name for p in chicago] == ["Chicago"]
    assert [p.kind for p in as_place(canonical_tokens("Mexico City").words)] == ["city"]
    assert as_place(canonical_tokens("a brown dog").words) == []
    assert ("village",) not in gazetteer().by_name  # "The Villages", Florida: a noun of place
    us = gazetteer().by_name[("united", "state")][0]
    assert related(chicago[0], us) == "coarser" and related(us, chicago[0]) == "finer"
