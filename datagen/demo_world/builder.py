"""The tools generate.py builds a world with: names, dates, and a builder that keeps facts
inside schema.RELATIONS.

Names are made from syllables so they never collide with real entities (a solver can't
answer from memory); every random choice comes from the builder's one `random.Random(seed)`.
`Builder` draws objects and values inside each relation's domain and refuses a fact
outside it, so no generator step can say what the schema does not allow.
"""

from __future__ import annotations

import datetime as dt
import math
import random
import re

from datagen.demo_world.model import Entity, WorldFact, World
from datagen.demo_world.schema import RELATIONS, START, TYPE_RELATION

_ONSETS = ["b", "br", "c", "d", "dr", "f", "g", "gr", "h", "k", "l", "m", "n", "p", "r", "s",
           "st", "t", "th", "v", "w", "z", "al", "el", "or", "is"]
_VOWELS = ["a", "e", "i", "o", "u", "ae", "ia", "ou", "ei"]
_CODAS = ["", "n", "r", "l", "s", "th", "m", "nd", "rk", "x"]
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


def _span(lo: int, hi: int, rng: random.Random) -> int:
    """A value in [lo, hi]: log-uniform over wide spans (towns, firms and crowds are mostly
    small, a few are huge), uniform over narrow ones."""
    if hi < 20 * lo:
        return rng.randint(lo, hi)
    return min(hi, max(lo, round(math.exp(rng.uniform(math.log(lo), math.log(hi))))))


def _fits(ok: bool, relation: str, subj: Entity, obj) -> None:
    """Refuse a fact the schema does not allow: the generator has a bug, say where."""
    if not ok:
        allowed = RELATIONS[relation].applies[subj.type]
        raise ValueError(f"{relation} of {subj.type} {subj.name!r} cannot be {obj!r} "
                         f"(schema.RELATIONS[{relation!r}] allows {allowed})")


class Builder:
    """The world being built, and the draws that keep each fact inside its relation."""

    def __init__(self, n: int, seed: int):
        self.rng = random.Random(seed)
        self.namer = _Namer(self.rng)
        self.world = World(seed=seed)
        self.slugs: set[str] = set()
        self.counts = role_counts(n)
        self.serial: dict[str, int] = {}
        self.start: dict[str, int] = {}  # entity id -> the year it starts (START)
        self.home: dict[str, Entity] = {}  # entity id -> the place it is located in
        self.taken: dict[str, set[str]] = {}  # relation -> ids that are already its object

    def add(self, kind: str, etype: str, name: str, description: str = "") -> Entity:
        """A new entity, with the fact that names its type (an organisation's org_type...)."""
        self.serial[kind] = self.serial.get(kind, 0) + 1
        eid = f"{kind[:3].upper()}{self.serial[kind]:05d}"
        e = Entity(eid, kind, name, _slug(name, self.slugs),
                   description or f"{article(etype)} {etype}", etype)
        self.world.entities[eid] = e
        if kind in TYPE_RELATION:
            self.fact(e, TYPE_RELATION[kind], etype)
        return e

    def domain(self, etype: str, relation: str) -> tuple:
        """The relation's domain for subjects of this type; one that does not fit raises."""
        applies = RELATIONS[relation].applies
        if etype not in applies:
            raise ValueError(f"{relation} does not apply to {article(etype)} {etype}")
        return applies[etype]

    def fact(self, subj: Entity, relation: str, obj) -> None:
        """Record one fact, checking the object's type or the value's span first."""
        domain, vtype = self.domain(subj.type, relation), RELATIONS[relation].value_type
        if isinstance(obj, Entity):
            _fits(obj.type in domain, relation, subj, obj.type)
            f = WorldFact(subj.entity_id, subj.name, relation, obj.name, vtype, subj.path,
                     obj.entity_id, obj.path)
            self.taken.setdefault(relation, set()).add(obj.entity_id)
        elif isinstance(obj, dt.date):
            _fits(domain[0] <= obj.year <= domain[1], relation, subj, obj)
            f = WorldFact(subj.entity_id, subj.name, relation, format_date(obj), vtype, subj.path,
                     value=obj.isoformat())
        elif isinstance(obj, int):
            _fits(domain[0] <= obj <= domain[1], relation, subj, obj)
            shown = str(obj) if vtype == "year" else f"{obj:,}"
            f = WorldFact(subj.entity_id, subj.name, relation, shown, vtype, subj.path, value=obj)
        else:
            _fits(not domain or obj in domain, relation, subj, obj)
            f = WorldFact(subj.entity_id, subj.name, relation, str(obj), vtype, subj.path, value=obj)
        if START.get(subj.kind) == relation:
            self.start[subj.entity_id] = obj.year if isinstance(obj, dt.date) else obj
        self.world.facts.append(f)

    def number(self, subj: Entity, relation: str) -> int:
        """A number fact drawn from the relation's plausible span for this subject."""
        value = _span(*self.domain(subj.type, relation), self.rng)
        self.fact(subj, relation, value)
        return value

    def candidates(self, subj: Entity, relation: str, pool: list[Entity]) -> list[Entity]:
        """Entities of `pool` that may be the object: of an allowed type, and (when the
        subject is already dated) dated so the relation's gap holds."""
        allowed, gap = self.domain(subj.type, relation), RELATIONS[relation].gap
        year = self.start.get(subj.entity_id)
        return [e for e in pool if e.type in allowed
                and (gap is None or year is None or e.entity_id not in self.start
                     or gap[0] <= year - self.start[e.entity_id] <= gap[1])]

    def choose(self, subj: Entity, relation: str, pool: list[Entity],
               spread: bool = False) -> Entity | None:
        """A random fitting entity of `pool`, or None. `spread` prefers one that is nobody's
        object yet: most directors then have one film, and "the film X directed" names it."""
        fits = self.candidates(subj, relation, pool)
        if spread:
            taken = self.taken.get(relation, set())
            fits = [e for e in fits if e.entity_id not in taken] or fits
        return self.rng.choice(fits) if fits else None

    def link(self, subj: Entity, relation: str, pool: list[Entity],
             spread: bool = False) -> Entity | None:
        """Link the subject to a fitting entity of `pool` (`choose`); None (no fact) if none fits."""
        obj = self.choose(subj, relation, pool, spread)
        if obj is None:
            return None
        self.fact(subj, relation, obj)
        if relation == "located_in":
            self.home[subj.entity_id] = obj
        return obj

    def years(self, kind: str, etype: str, links: list[tuple[str, Entity]]) -> tuple[int, int]:
        """The years an entity's START may take: its type's span, narrowed by each
        (relation, object) it is linked to, so that every gap holds."""
        lo, hi = self.domain(etype, START[kind])
        for rel, obj in links:
            gap, since = RELATIONS[rel].gap, self.start.get(obj.entity_id)
            if gap is not None and since is not None:
                lo, hi = max(lo, since + gap[0]), min(hi, since + gap[1])
        if lo > hi:
            raise ValueError(f"no year fits {article(etype)} {etype} linked to {links}")
        return lo, hi

    def date(self, lo: int, hi: int) -> dt.date:
        return dt.date(self.rng.randint(lo, hi), self.rng.randint(1, 12), self.rng.randint(1, 28))


def role_counts(n: int) -> dict[str, int]:
    """How many entities of each kind a world of n has (people take what rounding leaves)."""
    shares = {"country": 0.012, "city": 0.15, "person": 0.42, "organisation": 0.14,
              "work": 0.2, "event": 0.078}
    counts = {k: max(2, round(n * s)) for k, s in shares.items()}
    counts["person"] += n - sum(counts.values())
    return counts
