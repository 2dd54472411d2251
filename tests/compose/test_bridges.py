"""Bridges on encyclopedic text: what the lead sentences state (years, nationality, who made
a work), the typed relations a bridge is worded with, and several questions per seed, each
through another page. Pages are written here in the shape of Wikipedia's first paragraphs."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from datagen.compose.compare import MAX_WORDS, comparisons, side_of
from datagen.compose.compose import Composer, _elided
from datagen.compose.embedded import EmbeddedBackend
from datagen.compose.steps import inject_options, kind_clash, trim_cloze
from datagen.compose.validate import Validator
from datagen.seeds import FactStore, make_seeds, mine_pages, wording
from datagen.seeds.chain import render_question
from datagen.seeds.records import Page

BASE = "http://site.test/"
PAGES = {
    "Ralph Bakshi": "Ralph Bakshi (born 1938) is an American director of animated and "
                    "live-action films. He began his career at Terrytoons.",
    "Fritz the Cat (film)": 'Fritz the Cat is a 1972 American adult animated comedy film '
                            'written and directed by Ralph Bakshi. It was the first animated '
                            'film to receive an X rating.',
    "Heavy Traffic": "Heavy Traffic is a 1973 American live-action animated film directed "
                     "by Ralph Bakshi and produced by Steve Krantz.",
    "Wizards (film)": "Wizards is a 1977 American animated science fantasy film written, "
                      "produced and directed by Ralph Bakshi.",
    "Steve Krantz": "Steve Krantz (May 20, 1923 – January 4, 2007) was an American film "
                    "producer and writer.",
    "Gregory La Cava": "Gregory La Cava (March 10, 1892 – March 1, 1952) was an American "
                       "film director.",
}


def _page(title: str, text: str) -> Page:
    url = BASE + title.replace(" ", "_")
    links = tuple((BASE + t.replace(" ", "_"), t.split(" (")[0]) for t in PAGES
                  if t != title and t.split(" (")[0] in text)
    return Page(url, title, text, "", links)


@pytest.fixture(scope="module")
def store() -> FactStore:
    pages = [_page(t, x) for t, x in PAGES.items()]
    return FactStore(mine_pages(pages), {p.url: p.title for p in pages})


def _facts(store: FactStore, title: str) -> dict[str, str]:
    return {f.relation: f.value for f in store.by_subject[BASE + title.replace(" ", "_")]}


def test_lead_sentences_state_years_nationality_and_makers(store):
    bakshi = _facts(store, "Ralph Bakshi")
    assert bakshi["born_year"] == "1938" and bakshi["nationality"] == "American"
    fritz = _facts(store, "Fritz the Cat (film)")
    assert fritz["released_year"] == "1972"
    assert fritz["directed_by"] == "Ralph Bakshi"   # 'written and directed by': one person
    heavy = _facts(store, "Heavy Traffic")
    assert heavy["directed_by"] == "Ralph Bakshi" and heavy["produced_by"] == "Steve Krantz"
    assert "nationality" not in fritz   # a work's lead names a nationality, not a person's


def test_nationality_asks_hide_the_nationality_and_accept_the_country(store):
    seeds = [s for s in make_seeds(store) if s.chain.ask.relation == "nationality"]
    assert seeds, "a person's lead gives a nationality seed"
    chain = seeds[0].chain
    question = render_question(chain)
    assert "American" not in question and chain.ask.aliases == ("United States",)


def test_a_named_maker_in_a_list_is_no_typed_relation():
    pages = [_page("Heavy Traffic", "Heavy Traffic is a 1973 film directed by Ralph Bakshi "
                                    "and Steve Krantz."),
             _page("Ralph Bakshi", PAGES["Ralph Bakshi"])]
    facts = mine_pages(pages)
    assert not {f.relation for f in facts if f.value == "Ralph Bakshi"} - {"link"}


@pytest.mark.parametrize("cloze, trimmed", [
    ('{v} (Swedish: "Livets") is a 1913 film directed by ___ from a screenplay by Peter Stone',
     "{v} is a 1913 film directed by ___"),
    ("{v} stars Robert Morse, ___, Don Ameche and Joey Wong", None),   # a list keeps its items
    ("{v} was the best friend of ___", None),
    ("{v} got a break through the movie '___' in which he composed songs",
     "{v} got a break through the movie '___'"),   # no preposition left hanging
])
def test_a_cloze_keeps_the_clause_of_its_blank(cloze, trimmed):
    assert trim_cloze(cloze) == (trimmed or cloze)


def _composer(store: FactStore, per_seed: int) -> Composer:
    validator = Validator(store, {})   # no search: uniqueness and shortcuts not judged here
    validator.page_texts = _texts()
    return Composer(store, validator, EmbeddedBackend(fuzz_rate=0.0), (2, 2),
                    bridges_per_seed=per_seed)


def _texts() -> dict[str, str]:
    return {BASE + t.replace(" ", "_"): " ".join(x.split()) for t, x in PAGES.items()}


def test_a_seed_is_composed_once_per_page_that_names_its_entity(store):
    seed = next(s for s in make_seeds(store) if s.chain.ask.relation == "born_year")
    outcomes = _composer(store, 3).compose_all(seed.chain, random.Random(0))
    chains = [o.chain for o in outcomes if o.chain]
    bridges = Counter(c.evidence()[0].url for c in chains)
    assert len(chains) == 3 and len(bridges) == 3, [o.reason for o in outcomes]
    for c in chains:
        assert c.hops == 2 and "Bakshi" not in c.question, c.question
    assert len(_composer(store, 1).compose_all(seed.chain, random.Random(0))) == 1


def test_an_entity_named_through_a_typed_relation_can_go_by_its_description(store):
    seed = next(s for s in make_seeds(store) if s.chain.ask.relation == "born_year")
    chains = [o.chain for o in _composer(store, 3).compose_all(seed.chain, random.Random(0))]
    typed = next(c for c in chains if c and "Fritz the Cat" in c.question)
    elided = _elided(typed, store)
    assert elided is not None
    question = render_question(elided)
    assert "Fritz the Cat" not in question and "1972 American adult animated comedy film" \
        in question, question
    assert elided.hops == 2


def test_a_question_naming_the_answers_surname_is_rejected(store):
    seed = next(s for s in make_seeds(store) if s.chain.ask.relation == "directed_by"
                and s.chain.ask.answer == "Ralph Bakshi")
    validator = _composer(store, 1).validator
    seed.chain.question = render_question(seed.chain)
    assert validator.check(seed.chain) == "", seed.chain.question
    seed.chain.question = "Who directed the film that followed Bakshi's Fritz the Cat?"
    assert validator.check(seed.chain) == "answer_in_question"


def test_a_namesake_born_after_the_work_is_no_bridge_and_died_years_read():
    pages = [_page("I Was All His", "I Was All His is a 1958 West German drama film directed "
                                    "by Wolfgang Becker."),
             _page("Wolfgang Becker", "Wolfgang Becker (born 22 June 1954) is a German film "
                                      "director and writer.")]
    pages[0] = Page(pages[0].url, pages[0].title, pages[0].text, "",
                    ((BASE + "Wolfgang_Becker", "Wolfgang Becker"),))
    store = FactStore(mine_pages(pages), {p.url: p.title for p in pages})
    seed = next(s for s in make_seeds(store) if s.chain.ask.relation == "born_on")
    options = inject_options(seed.chain, store, {id(f): i for i, f in enumerate(store.facts)},
                             random.Random(0))
    assert not [o for o in options if o.new_page]
    assert all("was died" not in t and "was {e} died" not in t
               for t in wording.templates_for("died_year", prose=True))


def test_a_maker_named_in_a_relative_clause_is_not_the_pages():
    pages = [_page("Where's Walter", "Where's Walter is an online series by Drake Bell created "
                                     "as a continuation of Drake & Josh, which was created by "
                                     "Dan Schneider."),
             _page("Dan Schneider", "Dan Schneider (born January 14, 1966) is an American actor.")]
    pages[0] = Page(pages[0].url, pages[0].title, pages[0].text, "",
                    ((BASE + "Dan_Schneider", "Dan Schneider"),))
    assert "created_by" not in {f.relation for f in mine_pages(pages)}


def test_a_comparison_is_won_by_either_side_and_quotes_every_page(store):
    composer, rng, sides = _composer(store, 3), random.Random(0), []
    for seed in make_seeds(store):
        seed.chain.question = render_question(seed.chain)
        chains = [seed.chain] + [o.chain for o in composer.compose_all(seed.chain, rng) if o.chain]
        sides += [side_of(c, store.noun(c.root.url)) for c in chains]
    records = comparisons([s for s in sides if s], composer.validator, "compose:embedded",
                          "embedded", 0, 10, (2, 4))
    which = [r for r in records if r.answer_type == "entity"]
    assert which
    for r in which:   # Bakshi (1938), described through a film, against La Cava (1892)
        later = "later" in r.question or "recently" in r.question
        assert r.hop_kind == "comparison", r.question
        assert r.answer == ("Ralph Bakshi" if later else "Gregory La Cava"), r.question
        assert "Bakshi" not in r.question and "Gregory La Cava" in r.question
        assert r.hops == 3 and r.answer in r.evidence[-1].quote
        assert len(r.question.split()) <= MAX_WORDS
    assert not comparisons([s for s in sides if s], composer.validator, "compose:embedded",
                           "embedded", 0, 10, (2, 2))   # 3 pages: over hops_max 2


def test_a_yes_no_comparison_is_answered_by_the_order_of_the_two_dates(store):
    """'Was Gregory La Cava born before the director who directed Fritz the Cat?' is yes
    (1892, 1938) and the same pair worded 'after', or the other way round, is no: every
    wording the composer draws is answered by the dates, and quotes both pages."""
    composer, rng, sides = _composer(store, 3), random.Random(0), []
    for seed in make_seeds(store):
        seed.chain.question = render_question(seed.chain)
        chains = [seed.chain] + [o.chain for o in composer.compose_all(seed.chain, rng) if o.chain]
        sides += [side_of(c, store.noun(c.root.url)) for c in chains]
    records = [r for r in comparisons([s for s in sides if s], composer.validator,
                                      "compose:embedded", "embedded", 0, 10, (2, 4))
               if r.answer_type == "yes_no"]
    assert records   # La Cava is met once: as a birth date here, not as a nationality too
    for r in records:
        la_cava_first = r.question.index("La Cava") < r.question.index("director")
        before = " before " in r.question
        assert r.answer == ("yes" if la_cava_first == before else "no"), r.question
        assert "Bakshi" not in r.question and r.hops == 3, r.question
        assert {"1892", "1938"} <= {y for e in r.evidence for y in ("1892", "1938")
                                    if y in e.quote}


def test_a_nationality_is_compared_for_sameness():
    from datagen.compose.compare import Side, ask_yes_no, side_of
    from datagen.seeds.chain import Ask, Chain, Node
    from datagen.seeds.records import Evidence

    def side(name: str, demonym: str) -> Side:
        ev = Evidence(BASE + name, f"{name} was an {demonym} director.")
        chain = Chain(Ask("nationality", "", demonym, "entity", ev),
                      Node(name, BASE + name, "director", []))
        return side_of(chain, "film director")
    rng = random.Random(0)
    american, other_american, french = side("A", "American"), side("B", "American"), \
        side("C", "French")
    assert american.kind == "nationality" and not american.dated
    for _ in range(20):
        a, b, question, evidence, answer = ask_yes_no(american, french, rng)
        assert "nationality" in question and answer == "no" and len(evidence) == 2
        assert ask_yes_no(american, other_american, rng)[4] == "yes"


def test_yes_no_wordings_draw_both_answers():
    from datagen.compose.compare import Side, ask_yes_no
    from datagen.seeds.chain import Ask, Chain, Node
    from datagen.seeds.records import Evidence

    def side(name: str, year: str) -> Side:
        ev = Evidence(BASE + name, f"{name} was born in {year}.")
        return Side(Chain(Ask("born_year", "", year, "year", ev),
                          Node(name, BASE + name, "director", [])), "born", "director", year)
    rng, one, other = random.Random(0), side("A", "1900"), side("B", "1950")
    answers = Counter(ask_yes_no(one, other, rng)[4] for _ in range(200))
    assert set(answers) == {"yes", "no"} and min(answers.values()) > 60, answers


@pytest.mark.parametrize("noun, sentence, clash", [
    ("film", 'She has starred as Roxie Hart in "Chicago", at the Cambridge Theatre.', True),
    ("novel", 'He had roles in films such as "The Apple Dumpling Gang" (1975).', True),
    ("film", 'He also had roles in films such as "The Apple Dumpling Gang" (1975).', False),
    ("director", "He worked with Gregory La Cava on stage.", False),   # not a work
    ("film", "She played Roxie Hart in a Copenhagen production of \"Chicago\".", True),
])
def test_a_bridge_to_another_kind_of_work_of_that_title_clashes(noun, sentence, clash):
    assert kind_clash(noun, sentence) == clash


def test_a_list_page_is_not_the_she_of_its_sentences():
    from datagen.seeds.questions import with_slot
    assert with_slot("She played the lead in ___", "Shruti Haasan filmography", "{v}") is None
    assert with_slot("She played the lead in ___", "Shruti Haasan", "{v}") == \
        "{v} played the lead in ___"


def test_it_was_produced_by_on_a_bands_page_is_about_something_else():
    pages = [_page("Cat Butt", "Cat Butt was an American band. They recorded their first "
                               "album. It was produced by Jack Endino of Skin Yard."),
             _page("Jack Endino", "Jack Endino (born 1964) is an American producer.")]
    pages[0] = Page(pages[0].url, pages[0].title, pages[0].text, "",
                    ((BASE + "Jack_Endino", "Jack Endino"),))
    assert "produced_by" not in {f.relation for f in mine_pages(pages)}


def test_a_year_a_persons_page_states_dates_their_work_not_them():
    page = _page("Maria von Trapp", "Maria von Trapp (26 January 1905 – 28 March 1987) was an "
                                    "Austrian singer. She wrote a memoir which was published "
                                    "in 1949.")
    rels = {f.relation for f in mine_pages([page])}
    assert "born_on" in rels and "published_year" not in rels
    film = _page("Heavy Traffic", PAGES["Heavy Traffic"] + " It was released in 1973.")
    assert "released_year" in {f.relation for f in mine_pages([film])}


def test_each_described_side_is_compared_with_a_drawn_foil(store):
    from datagen.compose.compare import Side, pairs
    from datagen.seeds.chain import Ask, Chain, Clause, Literal, Node
    from datagen.seeds.records import Evidence

    def side(name: str, year: int, described: bool) -> Side:
        ev = Evidence(BASE + name, f"{name} was born in {year}.")
        clauses = [Clause("is_a", "out", Literal("a director", "string"), "{v}", ev,
                          BASE + name)] if described else []
        root = Node(name, BASE + name, "director", clauses)
        return Side(Chain(Ask("born_year", "", str(year), "year", ev), root), "born",
                    "director", str(year))
    sides = [side(f"D{i}", 1900 + i, True) for i in range(12)] + \
            [side(f"N{i}", 1950 + i, False) for i in range(12)]
    foils = {o.chain.root.name for _, o in pairs(sides, seed=0)}
    assert len(foils) >= 6   # the group's first for every described side would be one


def test_death_years_compare_who_died_first():
    """'Who died first, the producer of Heavy Traffic or Gregory La Cava?': a death date
    on each side's page is compared as a birth date is, in its own words."""
    from datagen.compose.compare import Side, compare, side_of
    from datagen.seeds.chain import Ask, Chain, Clause, Literal, Node
    from datagen.seeds.records import Evidence

    def chain(name: str, year: str, described: bool) -> Chain:
        ev = Evidence(BASE + name, f"{name} (1900 - {year}) was a producer.")
        clauses = [Clause("is_a", "out", Literal("a producer", "string"), "{v}", ev,
                          BASE + name)] if described else []
        return Chain(Ask("died_year", "", year, "year", ev), Node(name, BASE + name, "producer",
                                                                  clauses))
    krantz, la_cava = side_of(chain("Steve Krantz", "2007", True), "producer"), \
        side_of(chain("Gregory La Cava", "1952", False), "producer")
    assert isinstance(krantz, Side) and krantz.kind == la_cava.kind == "died"
    answers = set()
    for seed in range(20):   # won by the described side, or (drawn) by the named one
        winner, _, question, evidence, answer = compare(krantz, la_cava, random.Random(seed))
        later = "later" in question or "recently" in question
        assert "died" in question and answer == ("Steve Krantz" if later else "Gregory La Cava")
        assert winner.chain.root.name == answer and evidence[-1].quote.startswith(answer)
        assert "Steve Krantz" not in question and "Gregory La Cava" in question
        answers.add(answer)
    assert answers == {"Steve Krantz", "Gregory La Cava"}
