"""Build a deterministic fictional world: the same (n, seed) always gives the same world.

Places first, then people, the organisations they found, the works they make and the events
organisations run. Each step links an entity only to entities that already exist and fit
(schema.RELATIONS), then dates it inside every gap those links impose: a film comes out
when its director is 20 to 75, a marathon is run by a club founded before it.
"""

from __future__ import annotations

from datagen.demo_world.builder import Builder
from datagen.demo_world.model import Entity, World
from datagen.demo_world.schema import (
    CURRENCIES, EVENT_TYPES, OCCUPATIONS, RELATIONS, WORK_TYPES,
)

_CITY_SUFFIX = ["ford", "holm", "vale", "burg", "mouth", "stead", "haven", "wick", "port", "field"]
_COUNTRY_SUFFIX = ["ia", "and", "ora", "istan", "ovia", "ea", "eth"]
# (type, name pattern): {city} is the organisation's home city; companies have two patterns.
_ORG_NAMES = [("university", "University of {city}"), ("company", "{stem} Industries"),
              ("company", "{stem} Motors"), ("band", "The {stem} Collective"),
              ("institute", "{stem} Institute"), ("club", "{city} Athletic Club"),
              ("orchestra", "{city} Philharmonic"), ("publisher", "{stem} Press")]
_EVENT_NAMES = {"film festival": "{city} Film Festival", "treaty": "Treaty of {city}",
                "exhibition": "{city} Exhibition", "battle": "Battle of {city}",
                "marathon": "{city} Marathon", "book fair": "{city} Book Fair",
                "congress": "{city} Science Congress"}
_WORK_ADJ = ["Silent", "Crimson", "Last", "Hidden", "Golden", "Broken", "Distant", "Secret",
             "Winter", "Burning", "Quiet", "Northern", "Hollow", "Paper", "Glass", "Iron"]
_WORK_NOUN = ["River", "Garden", "Lantern", "Harbour", "Orchard", "Mirror", "Tide", "Bridge",
              "Letters", "Season", "Tower", "Crossing", "Meadow", "Archive", "Compass", "Shore"]
# How common each type is (1 if not named): works need many makers, else "the film
# directed by X" rarely names one film; battles and treaties are few and have no organiser.
_WEIGHT = {"film director": 3, "novelist": 3, "battle": 0.5, "treaty": 0.5}
_CREATOR = {"film": "directed_by", "novel": "written_by"}
_LENGTH = {"film": "runtime_minutes", "novel": "pages"}


def _pick_type(b: Builder, types) -> str:
    return b.rng.choices(types, [_WEIGHT.get(t, 1) for t in types])[0]


def _fitting(b: Builder, types: list[str], relation: str, pool: list[Entity]) -> list[str]:
    """The types whose `relation` can find an object in `pool` (all of a small world's
    film directors may be missing: it then has no films)."""
    allowed = RELATIONS[relation].applies
    kinds = {e.type for e in pool}
    return [t for t in types if t not in allowed or kinds & set(allowed[t])]


def add_places(b: Builder) -> None:
    """Countries and their cities; each country's capital is its most populous city."""
    countries = []
    for _ in range(b.counts["country"]):
        name = b.namer.unique(lambda: b.namer.stem(2) + b.rng.choice(_COUNTRY_SUFFIX))
        c = b.add("country", "country", name, "a country")
        countries.append(c)
        b.number(c, "area_km2")
        b.fact(c, "currency", f"{name[:-1] if name.endswith('a') else name} "
                              f"{b.rng.choice(CURRENCIES)}")
    sizes: dict[str, list[tuple[int, Entity]]] = {}
    for i in range(b.counts["city"]):
        country = countries[i % len(countries)]
        name = b.namer.unique(lambda: b.namer.stem(1) + b.rng.choice(_CITY_SUFFIX))
        city = b.add("city", "city", name, f"a city in {country.name}")
        b.link(city, "located_in", [country])
        people = b.number(city, "population")
        sizes.setdefault(country.entity_id, []).append((people, city))
        b.fact(city, "founded_year", b.rng.randint(*b.domain("city", "founded_year")))
    for c in countries:
        b.fact(c, "capital", max(sizes[c.entity_id], key=lambda s: s[0])[1])


def add_people(b: Builder) -> None:
    """People: born in a city that already existed, with an occupation."""
    cities = b.world.of_kind("city")
    for _ in range(b.counts["person"]):
        name = b.namer.unique(lambda: f"{b.namer.stem(2)} {b.namer.stem(2)}")
        p = b.add("person", _pick_type(b, OCCUPATIONS), name)
        b.fact(p, "born_on", b.date(*b.domain(p.type, "born_on")))
        b.link(p, "born_in", cities)


def add_orgs(b: Builder) -> None:
    """Organisations founded by a fitting person in their working life, in their home city;
    then people join them and study at universities that existed in their youth."""
    people, cities = b.world.of_kind("person"), b.world.of_kind("city")
    patterns = [p for p in _ORG_NAMES
                if p[0] in _fitting(b, [p[0]], "founded_by", people)]
    for _ in range(b.counts["organisation"]):
        etype, pattern = b.rng.choice(patterns)
        home, name = _org_name(b, pattern, cities)
        o = b.add("organisation", etype, name)
        b.link(o, "located_in", [home])
        founder = b.choose(o, "founded_by", people, spread=True)
        b.fact(o, "founded_year", b.rng.randint(*b.years(
            "organisation", etype, [("founded_by", founder), ("located_in", home)])))
        b.fact(o, "founded_by", founder)
        b.number(o, "employees")
    orgs = b.world.of_kind("organisation")
    for p in people:
        if b.rng.random() < 0.6:
            b.link(p, "member_of", orgs)
        if b.rng.random() < 0.5:
            b.link(p, "educated_at", orgs)


def _org_name(b: Builder, pattern: str, cities: list[Entity]) -> tuple[Entity, str]:
    """(home city, a new name): a name with {city} names its home ('Kiarport Philharmonic')."""
    for _ in range(1000):
        home = b.rng.choice(cities)
        name = pattern.format(city=home.name, stem=b.namer.stem(2))
        if name not in b.namer.used:
            b.namer.used.add(name)
            return home, name
    raise RuntimeError(f"no new name for {pattern!r}; give the world more cities")


def add_works(b: Builder) -> None:
    """Films by film directors, novels by writers, released while their maker was working."""
    people = b.world.of_kind("person")
    types = _fitting(b, list(WORK_TYPES), "directed_by", people)
    types = _fitting(b, types, "written_by", people)
    for _ in range(b.counts["work"] if types else 0):
        etype = b.rng.choice(types)
        w = b.add("work", etype, b.namer.unique(lambda: _work_name(b)))
        maker = b.link(w, _CREATOR[etype], people, spread=True)
        years = b.years("work", etype, [(_CREATOR[etype], maker)])
        b.fact(w, "released_year", b.rng.randint(*years))
        b.fact(w, "genre", b.rng.choice(b.domain(etype, "genre")))
        b.number(w, _LENGTH[etype])


def _work_name(b: Builder) -> str:
    adj, noun = b.rng.choice(_WORK_ADJ), b.rng.choice(_WORK_NOUN)
    return f"The {adj} {noun}" if b.rng.random() < 0.5 else f"{adj} {noun} of {b.namer.stem(1)}"


def add_events(b: Builder) -> None:
    """Events in a city, after its founding; those with an organiser are held in the
    organiser's home city after it was founded, and those that draw crowds have an attendance."""
    orgs, cities = b.world.of_kind("organisation"), b.world.of_kind("city")
    types = _fitting(b, list(EVENT_TYPES), "organised_by", orgs)
    for _ in range(b.counts["event"]):
        etype = _pick_type(b, types)
        organiser = _organiser(b, etype, orgs)
        city = b.home[organiser.entity_id] if organiser else b.rng.choice(cities)
        links = [("located_in", city)] + ([("organised_by", organiser)] if organiser else [])
        name = b.namer.unique(lambda: f"{b.rng.randint(*b.years('event', etype, links))} "
                                      f"{_EVENT_NAMES[etype].format(city=city.name)}")
        e = b.add("event", etype, name)
        b.fact(e, "located_in", city)
        b.fact(e, "held_on", b.date(int(name[:4]), int(name[:4])))
        if organiser:
            b.fact(e, "organised_by", organiser)
        if etype in RELATIONS["attendance"].applies:
            b.number(e, "attendance")


def _organiser(b: Builder, etype: str, orgs: list[Entity]) -> Entity | None:
    """A fitting organiser for an event of this type, or None for events nobody organises."""
    allowed = RELATIONS["organised_by"].applies.get(etype)
    return b.rng.choice([o for o in orgs if o.type in allowed]) if allowed else None


def build_world(n: int = 2000, seed: int = 0) -> World:
    """A world of about `n` entities (at least 30) with their facts, deterministic in (n, seed)."""
    if n < 30:
        raise ValueError(f"a demo world needs at least 30 entities (got {n})")
    b = Builder(n, seed)
    for step in (add_places, add_people, add_orgs, add_works, add_events):
        step(b)
    return b.world
