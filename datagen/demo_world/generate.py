"""Build a deterministic fictional world: the same (n, seed) always gives the same world.

Names are made from syllables so they never collide with real entities (a solver can't
answer from memory); every random choice comes from one `random.Random(seed)`.
"""

from __future__ import annotations

import datetime as dt
import random
import re

from datagen.demo_world.model import RELATIONS, Entity, Fact, World

_ONSETS = ["b", "br", "c", "d", "dr", "f", "g", "gr", "h", "k", "l", "m", "n", "p", "r", "s",
           "st", "t", "th", "v", "w", "z", "al", "el", "or", "is"]
_VOWELS = ["a", "e", "i", "o", "u", "ae", "ia", "ou", "ei"]
_CODAS = ["", "n", "r", "l", "s", "th", "m", "nd", "rk", "x"]
_CITY_SUFFIX = ["ford", "holm", "vale", "burg", "mouth", "stead", "haven", "wick", "port", "field"]
_COUNTRY_SUFFIX = ["ia", "and", "ora", "istan", "ovia", "ea", "eth"]
_ORG_KINDS = [("university", "University of {city}"), ("company", "{stem} Industries"),
              ("company", "{stem} Motors"), ("band", "The {stem} Collective"),
              ("institute", "{stem} Institute"), ("club", "{city} Athletic Club"),
              ("orchestra", "{city} Philharmonic"), ("publisher", "{stem} Press")]
_WORK_ADJ = ["Silent", "Crimson", "Last", "Hidden", "Golden", "Broken", "Distant", "Secret",
             "Winter", "Burning", "Quiet", "Northern", "Hollow", "Paper", "Glass", "Iron"]
_WORK_NOUN = ["River", "Garden", "Lantern", "Harbour", "Orchard", "Mirror", "Tide", "Bridge",
              "Letters", "Season", "Tower", "Crossing", "Meadow", "Archive", "Compass", "Shore"]
_GENRES = {"film": ["drama", "comedy", "thriller", "documentary", "western", "musical"],
           "novel": ["mystery", "historical fiction", "science fiction", "romance", "satire"]}
_OCCUPATIONS = ["painter", "engineer", "novelist", "film director", "physicist", "architect",
                "composer", "chemist", "journalist", "mathematician", "cartographer", "sculptor"]
_EVENTS = [("film festival", "{city} Film Festival"), ("treaty", "Treaty of {city}"),
           ("exhibition", "{city} Exhibition"), ("battle", "Battle of {city}"),
           ("marathon", "{city} Marathon"), ("book fair", "{city} Book Fair"),
           ("congress", "{city} Science Congress")]
_CURRENCIES = ["crown", "mark", "florin", "thaler", "ducat", "lira", "real", "dinar"]
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"]


class _Namer:
    """Unique pronounceable names from syllables."""

    def __init__(self, rng: random.Random):
        self.rng, self.used = rng, set()

    def stem(self, syllables: int = 2) -> str:
        while True:
            s = "".join(self.rng.choice(_ONSETS) + self.rng.choice(_VOWELS)
                        + self.rng.choice(_CODAS) for _ in range(syllables)).capitalize()
            if s not in self.used and 3 <= len(s) <= 12:
                self.used.add(s)
                return s

    def unique(self, make) -> str:
        for _ in range(1000):
            name = make()
            if name not in self.used:
                self.used.add(name)
                return name
        raise RuntimeError("name space exhausted; raise the syllable count")


def article(noun: str) -> str:
    """'a' or 'an' for a common noun (by its first letter; good enough for our word lists)."""
    low = noun.lower()
    return "an" if low[:1] in "aeiou" and not low.startswith(("uni", "eu", "one")) else "a"


def format_date(d: dt.date) -> str:
    return f"{d.day} {_MONTHS[d.month - 1]} {d.year}"


def _slug(name: str, used: set[str]) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    slug, i = base, 2
    while slug in used:
        slug, i = f"{base}-{i}", i + 1
    used.add(slug)
    return slug


class _Builder:
    def __init__(self, n: int, seed: int):
        self.rng = random.Random(seed)
        self.namer = _Namer(self.rng)
        self.world = World(seed=seed)
        self.slugs: set[str] = set()
        self.counts = _plan(n)
        self.serial: dict[str, int] = {}

    def add(self, kind: str, name: str, description: str) -> Entity:
        self.serial[kind] = self.serial.get(kind, 0) + 1
        eid = f"{kind[:3].upper()}{self.serial[kind]:05d}"
        e = Entity(eid, kind, name, _slug(name, self.slugs), description)
        self.world.entities[eid] = e
        return e

    def fact(self, subj: Entity, relation: str, obj) -> None:
        vtype = RELATIONS[relation][1]
        if isinstance(obj, Entity):
            f = Fact(subj.entity_id, subj.name, relation, obj.name, vtype, subj.path,
                     obj.entity_id, obj.path)
        elif isinstance(obj, dt.date):
            f = Fact(subj.entity_id, subj.name, relation, format_date(obj), vtype, subj.path,
                     value=obj.isoformat())
        elif isinstance(obj, int):
            shown = str(obj) if vtype == "year" else f"{obj:,}"
            f = Fact(subj.entity_id, subj.name, relation, shown, vtype, subj.path, value=obj)
        else:
            f = Fact(subj.entity_id, subj.name, relation, str(obj), vtype, subj.path, value=obj)
        self.world.facts.append(f)

    def date(self, lo: int, hi: int) -> dt.date:
        return dt.date(self.rng.randint(lo, hi), self.rng.randint(1, 12), self.rng.randint(1, 28))


def _plan(n: int) -> dict[str, int]:
    shares = {"country": 0.012, "city": 0.15, "person": 0.42, "organisation": 0.14,
              "work": 0.2, "event": 0.078}
    counts = {k: max(2, round(n * s)) for k, s in shares.items()}
    counts["person"] += n - sum(counts.values())
    return counts


def _places(b: _Builder) -> None:
    countries = []
    for _ in range(b.counts["country"]):
        name = b.namer.unique(lambda: b.namer.stem(2) + b.rng.choice(_COUNTRY_SUFFIX))
        c = b.add("country", name, "a country")
        countries.append(c)
        b.fact(c, "area_km2", b.rng.randrange(8_000, 900_000, 10))
        b.fact(c, "currency", f"{name[:-1] if name.endswith('a') else name} {b.rng.choice(_CURRENCIES)}")
    for i in range(b.counts["city"]):
        country = countries[i % len(countries)]
        name = b.namer.unique(lambda: b.namer.stem(1) + b.rng.choice(_CITY_SUFFIX))
        city = b.add("city", name, f"a city in {country.name}")
        b.fact(city, "located_in", country)
        b.fact(city, "population", b.rng.randrange(2_000, 3_000_000))
        b.fact(city, "founded_year", b.rng.randint(800, 1850))
        if i < len(countries):
            b.fact(country, "capital", city)


def _people_and_orgs(b: _Builder) -> None:
    cities = b.world.of_kind("city")
    people = []
    for _ in range(b.counts["person"]):
        name = b.namer.unique(lambda: f"{b.namer.stem(2)} {b.namer.stem(2)}")
        job = b.rng.choice(_OCCUPATIONS)
        p = b.add("person", name, article(job) + " " + job)
        people.append(p)
        b.fact(p, "born_on", b.date(1850, 1990))
        b.fact(p, "born_in", b.rng.choice(cities))
        b.fact(p, "occupation", job)
    orgs = []
    for _ in range(b.counts["organisation"]):
        kind, pattern = b.rng.choice(_ORG_KINDS)
        home = b.rng.choice(cities)
        name = b.namer.unique(lambda: pattern.format(city=b.rng.choice(cities).name,
                                                     stem=b.namer.stem(2)))
        o = b.add("organisation", name, article(kind) + " " + kind)
        orgs.append(o)
        b.fact(o, "org_type", kind)
        b.fact(o, "located_in", home)
        b.fact(o, "founded_year", b.rng.randint(1800, 2015))
        b.fact(o, "founded_by", b.rng.choice(people))
        b.fact(o, "employees", b.rng.randrange(12, 90_000))
    universities = [o for o in orgs if o.description == "a university"] or orgs
    for p in people:
        if b.rng.random() < 0.6:
            b.fact(p, "member_of", b.rng.choice(orgs))
        if b.rng.random() < 0.5:
            b.fact(p, "educated_at", b.rng.choice(universities))


def _works_and_events(b: _Builder) -> None:
    people = b.world.of_kind("person")
    orgs = b.world.of_kind("organisation")
    cities = b.world.of_kind("city")
    for _ in range(b.counts["work"]):
        kind = b.rng.choice(["film", "novel"])
        name = b.namer.unique(lambda: f"The {b.rng.choice(_WORK_ADJ)} {b.rng.choice(_WORK_NOUN)}"
                              if b.rng.random() < 0.5 else
                              f"{b.rng.choice(_WORK_ADJ)} {b.rng.choice(_WORK_NOUN)} of {b.namer.stem(1)}")
        w = b.add("work", name, article(kind) + " " + kind)
        b.fact(w, "work_type", kind)
        b.fact(w, "directed_by" if kind == "film" else "written_by", b.rng.choice(people))
        b.fact(w, "released_year", b.rng.randint(1900, 2024))
        b.fact(w, "genre", b.rng.choice(_GENRES[kind]))
        b.fact(w, "runtime_minutes" if kind == "film" else "pages",
               b.rng.randint(70, 190) if kind == "film" else b.rng.randint(120, 900))
    for _ in range(b.counts["event"]):
        city = b.rng.choice(cities)
        kind, pattern = b.rng.choice(_EVENTS)
        name = b.namer.unique(lambda: f"{b.rng.randint(1850, 2020)} {pattern.format(city=city.name)}")
        e = b.add("event", name, article(kind) + " " + kind)
        b.fact(e, "event_type", kind)
        b.fact(e, "located_in", city)
        b.fact(e, "held_on", dt.date(int(name[:4]), b.rng.randint(1, 12), b.rng.randint(1, 28)))
        b.fact(e, "organised_by", b.rng.choice(orgs))
        b.fact(e, "attendance", b.rng.randrange(150, 250_000))


def build_world(n: int = 2000, seed: int = 0) -> World:
    """A world of about `n` entities (at least 30) with their facts, deterministic in (n, seed)."""
    if n < 30:
        raise ValueError(f"a demo world needs at least 30 entities (got {n})")
    b = _Builder(n, seed)
    _places(b)
    _people_and_orgs(b)
    _works_and_events(b)
    return b.world
