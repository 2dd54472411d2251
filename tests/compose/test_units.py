"""Small parts of seeding and composing: blurred forms, prose patterns, wordings, ids."""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter

import pytest

from datagen.compose import fuzz, parse_hops
from datagen.compose.run import question_id
from datagen.seeds import patterns, wording
from datagen.seeds.chain import Literal


@pytest.mark.parametrize("year", [1204, 1930, 1933, 1935, 1939, 2024])
def test_year_forms_contain_the_year_and_hide_it(year):
    for text, kind, lo, hi in fuzz.forms(Literal(str(year), "year", year)):
        assert lo <= year <= hi and not re.search(rf"\b{year}\b", text) and kind
    assert any("early" in t or "mid-" in t or "late" in t
               for t, *_ in fuzz.forms(Literal(str(year), "year", year)))


@pytest.mark.parametrize("iso", ["1923-05-03", "1899-12-31", "2000-02-29", "1950-07-15"])
def test_date_forms_bound_the_date(iso):
    found = fuzz.forms(Literal("x", "date", iso))
    assert {k for _, k, _, _ in found} >= {"month", "year"}
    for _, _, lo, hi in found:
        assert lo <= iso <= hi
        dt.date.fromisoformat(lo), dt.date.fromisoformat(hi)


@pytest.mark.parametrize("n", [25, 999, 52_314, 1_006_064])
def test_number_forms_bound_the_number(n):
    found = fuzz.forms(Literal(f"{n:,}", "number", n))
    assert found
    for text, _, lo, hi in found:
        assert lo <= n <= hi and not re.search(rf"(?<![\d,]){n:,}(?![\d,])", text)


def test_a_fuzzed_or_untyped_literal_is_not_blurred_again():
    assert fuzz.forms(Literal("1930", "year", 1930, fuzzed="the 1930s")) == []
    assert fuzz.forms(Literal("drama", "string")) == []


def test_prose_patterns():
    np, head, verb = patterns.lead("Arthur's Magazine (1844–1846) was an American literary "
                                   "periodical published in Philadelphia.", "Arthur's Magazine")
    assert np.startswith("American literary periodical") and head == "American literary periodical"
    assert patterns.lead("Kestrel Point is a town.", "Harlow Vance") is None


@pytest.mark.parametrize("lead, title, head", [
    ("Paul Thomas Mann (6 June 1875 – 12 August 1955) was a German novelist.", "Thomas Mann",
     "German novelist"),
    ('Christopher James "Chris" Weidman (born 1984) is an American fighter.', "Chris Weidman",
     "American fighter"),
    ("Eric Clifford Ambler OBE (1909–1998) was a British author.", "Eric Ambler", "British author"),
    ("Randy Bruce Traywick (born 1959), better known by his stage name, Randy Travis, is an "
     "American singer.", "Randy Travis", "American singer"),
    ("Donna Helmintoller, better known as Paige O'Hara (born 1956), is an American actress.",
     "Paige O'Hara", "American actress")])
def test_a_lead_names_its_subject_by_the_full_or_birth_name(lead, title, head):
    assert patterns.lead(lead, title)[1] == head


def test_a_sentence_opening_with_the_full_name_has_its_slot_there():
    from datagen.seeds.questions import with_slot
    text = "Stephan Douglas Jenkins is the lead singer of ___"
    assert with_slot(text, "Stephan Jenkins", "{v}") == "{v} is the lead singer of ___"
    assert with_slot("Stephan Douglas Smith is a singer", "Stephan Jenkins", "{v}") is None


def test_a_lead_about_someone_else_is_not_the_pages():
    assert patterns.lead("Paul Mann was a German novelist.", "Thomas Mann") is None
    assert patterns.lead("Ann Thomas Mann was a German novelist.", "Thomas Mann Jr") is None
    m = patterns.PAREN_DATES.search("Scott Derrickson (born July 16, 1966) is a director")
    assert patterns.parse_date(m.group("a")) == "1966-07-16"
    assert patterns.year_verb("The club was founded in 1923 by miners.")[:2] == ("founded_year", 1923)
    assert patterns.sentences("A b. C d.\nE f? G") == ["A b.", "C d.", "E f?", "G"]


def test_every_asked_relation_has_three_phrasings():
    for rel, templates in wording.ASKS.items():
        assert len(set(templates)) >= 3, rel
    for key, templates in wording.CLAUSES.items():
        assert len(set(templates)) >= 3, key
    shapes = Counter(t.split()[0] for ts in wording.ASKS.values() for t in ts)
    assert len(shapes) >= 8   # not all 'What ...'


def test_question_id_is_a_content_id_of_normalised_text():
    assert question_id("Where  is X?", "Y") == question_id("where is x?", " y ")
    assert question_id("Where is X?", "Y") != question_id("Where is X?", "Z")


def test_parse_hops():
    assert parse_hops("2-4") == (2, 4) and parse_hops("3") == (3, 3)
    for bad in ("1-3", "4-2", "x", "2-3-4"):
        with pytest.raises(ValueError):
            parse_hops(bad)
