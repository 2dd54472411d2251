"""What may be said of what in the demo world: entity types, and each relation's domain.

This is the one place that says a marathon is organised by a club, a film is directed by a
film director and a treaty draws no crowd. The generator draws every fact from it and
tests/crawl/test_demo_world_plausible.py checks every fact of the default world against it.

Every entity has a kind ("person") and a type within it ("novelist"); places are their own
type. A relation lists the subject types it applies to, each with its domain:

    entity relations   the object types allowed         ("film director",)
    number, year       the plausible span (lo, hi)      (70, 200)
    date               the span of years (lo, hi)        (1850, 1990)
    string             the values allowed, () for any   ("drama", "comedy")

`gap` orders time along an entity relation: the subject's start year minus the object's
start year (START: birth, founding, release, the day it was held) lies in [lo, hi]. A
director is 20 to 75 when the film comes out; an event's organiser exists before it.
"""

from __future__ import annotations

from typing import NamedTuple

KINDS = ("country", "city", "person", "organisation", "work", "event")

OCCUPATIONS = ("painter", "engineer", "novelist", "film director", "physicist", "architect",
               "composer", "chemist", "journalist", "mathematician", "cartographer", "sculptor")
ORG_TYPES = ("university", "company", "band", "institute", "club", "orchestra", "publisher")
WORK_TYPES = ("film", "novel")
EVENT_TYPES = ("film festival", "treaty", "exhibition", "battle", "marathon", "book fair",
               "congress")
TYPES: dict[str, tuple[str, ...]] = {
    "country": ("country",), "city": ("city",), "person": OCCUPATIONS,
    "organisation": ORG_TYPES, "work": WORK_TYPES, "event": EVENT_TYPES}
# The relation whose value is an entity's type (places have none: their kind is their type).
TYPE_RELATION = {"person": "occupation", "organisation": "org_type", "work": "work_type",
                 "event": "event_type"}
# The relation that dates an entity: where it sits in time (countries are timeless here).
START = {"city": "founded_year", "person": "born_on", "organisation": "founded_year",
         "work": "released_year", "event": "held_on"}

SCHOLARS = ("physicist", "chemist", "mathematician", "cartographer")
WRITERS = ("novelist", "journalist")
CROWDS = ("film festival", "exhibition", "marathon", "book fair", "congress")


class Relation(NamedTuple):
    """A relation's domain per subject type, its value type and infobox label (see above)."""

    applies: dict[str, tuple]
    value_type: str
    label: str
    gap: tuple[int, int] | None = None


def each(types: tuple[str, ...], domain: tuple) -> dict[str, tuple]:
    """The same domain for several subject types."""
    return {t: domain for t in types}


def own_type(types: tuple[str, ...]) -> dict[str, tuple]:
    """A type relation's domain: each type's only value is its own name."""
    return {t: (t,) for t in types}


_OPEN = 10_000  # a gap with no upper bound: an old university can teach a young student
_MEMBERS = {**each(("painter", "sculptor", "architect"), ("institute", "club")),
            "engineer": ("company", "institute", "club"),
            **each(WRITERS, ("publisher", "club")),
            "film director": ("company", "club"),
            **each(SCHOLARS, ("university", "institute", "club")),
            "composer": ("band", "orchestra", "club")}
_FOUNDERS = {"university": SCHOLARS + ("architect", "engineer"),
             "company": ("engineer", "chemist", "architect", "film director"),
             "band": ("composer",), "institute": SCHOLARS + ("engineer", "architect"),
             "club": OCCUPATIONS, "orchestra": ("composer",),
             "publisher": WRITERS + ("cartographer",)}
_ORGANISERS = {"film festival": ("company", "institute"),
               "exhibition": ("institute", "university"), "marathon": ("club",),
               "book fair": ("publisher",), "congress": ("university", "institute")}
_STAFF = {"university": (300, 20_000), "company": (12, 90_000), "band": (3, 12),
          "institute": (20, 3_000), "club": (5, 500), "orchestra": (40, 180),
          "publisher": (10, 3_000)}
_CROWD = {"film festival": (2_000, 150_000), "exhibition": (1_000, 250_000),
          "marathon": (500, 60_000), "book fair": (2_000, 200_000), "congress": (150, 8_000)}
_HELD = {**each(EVENT_TYPES, (1850, 2020)), "film festival": (1930, 2020),
         "marathon": (1897, 2020)}
GENRES = {"film": ("drama", "comedy", "thriller", "documentary", "western", "musical"),
          "novel": ("mystery", "historical fiction", "science fiction", "romance", "satire")}
CURRENCIES = ("crown", "mark", "florin", "thaler", "ducat", "lira", "real", "dinar")

RELATIONS: dict[str, Relation] = {
    "capital": Relation({"country": ("city",)}, "entity", "Capital"),
    "area_km2": Relation({"country": (8_000, 900_000)}, "number", "Area (km²)"),
    "currency": Relation({"country": ()}, "string", "Currency"),  # named after the country
    "located_in": Relation({"city": ("country",), **each(ORG_TYPES + EVENT_TYPES, ("city",))},
                           "entity", "Location", gap=(0, _OPEN)),
    "population": Relation({"city": (2_000, 3_000_000)}, "number", "Population"),
    "founded_year": Relation({"city": (800, 1850), **each(ORG_TYPES, (1800, 2015))},
                             "year", "Founded"),
    "born_in": Relation(each(OCCUPATIONS, ("city",)), "entity", "Place of birth",
                        gap=(0, _OPEN)),
    "born_on": Relation(each(OCCUPATIONS, (1850, 1990)), "date", "Born"),
    "occupation": Relation(own_type(OCCUPATIONS), "string", "Occupation"),
    "member_of": Relation(_MEMBERS, "entity", "Member of", gap=(-60, _OPEN)),
    "educated_at": Relation(each(OCCUPATIONS, ("university",)), "entity", "Education",
                            gap=(-20, _OPEN)),
    "founded_by": Relation(_FOUNDERS, "entity", "Founder", gap=(25, 70)),
    "org_type": Relation(own_type(ORG_TYPES), "string", "Organisation type"),
    "employees": Relation(_STAFF, "number", "Employees"),
    "work_type": Relation(own_type(WORK_TYPES), "string", "Medium"),
    "directed_by": Relation({"film": ("film director",)}, "entity", "Directed by",
                            gap=(20, 75)),
    "written_by": Relation({"novel": WRITERS}, "entity", "Written by", gap=(18, 80)),
    "released_year": Relation({"film": (1900, 2024), "novel": (1850, 2024)}, "year",
                              "Released"),
    "genre": Relation(GENRES, "string", "Genre"),
    "runtime_minutes": Relation({"film": (70, 200)}, "number", "Running time (minutes)"),
    "pages": Relation({"novel": (120, 900)}, "number", "Pages"),
    "event_type": Relation(own_type(EVENT_TYPES), "string", "Event type"),
    "held_on": Relation(_HELD, "date", "Date"),
    "organised_by": Relation(_ORGANISERS, "entity", "Organised by", gap=(0, _OPEN)),
    "attendance": Relation({t: _CROWD[t] for t in CROWDS}, "number", "Attendance"),
}
