"""Every fact of the demo world fits schema.RELATIONS: the relation applies to its subject's
type, its object has an allowed type or its value a plausible span, and dates are in order.

`problems` reads plain fact rows (facts.jsonl's shape) and derives each entity's type from
its type fact (occupation, org_type, ...), so it judges any world written to disk, an old
one included.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter

import pytest

from datagen.crawl.config import DEMO_ENTITIES
from datagen.crawl.demo import DEMO_SEED
from datagen.demo_world import build_world
from datagen.demo_world.schema import RELATIONS, START, TYPE_RELATION


def _types(entities: dict[str, str], rows: list[dict]) -> dict[str, str]:
    """entity id -> type: its type fact's value, else its kind (places)."""
    types = dict(entities)
    for r in rows:
        if r["relation"] == TYPE_RELATION.get(entities[r["subject_id"]]):
            types[r["subject_id"]] = r["object"]
    return types


def _year(row: dict) -> int:
    value = str(row["value"])
    return dt.date.fromisoformat(value).year if row["value_type"] == "date" else int(value)


def _starts(entities: dict[str, str], rows: list[dict]) -> dict[str, int]:
    """entity id -> the year it starts: birth, founding, release, the day it was held."""
    return {r["subject_id"]: _year(r) for r in rows
            if START.get(entities[r["subject_id"]]) == r["relation"]}


def _value_problem(row: dict, domain: tuple, types: dict[str, str]) -> str | None:
    """Why the fact's object or value falls outside the domain, or None."""
    vtype = row["value_type"]
    if vtype == "entity":
        ok, shown = types[row["object_id"]] in domain, types[row["object_id"]]
    elif vtype == "string":
        ok, shown = not domain or row["object"] in domain, row["object"]
    else:
        ok, shown = domain[0] <= _year(row) <= domain[1], row["object"]
    return None if ok else f"{shown!r} not in {domain}"


def _gap_problem(row: dict, starts: dict[str, int]) -> str | None:
    """Why the subject's and object's years are out of order, or None."""
    gap = RELATIONS[row["relation"]].gap
    if gap is None or row["subject_id"] not in starts or row["object_id"] not in starts:
        return None
    lag = starts[row["subject_id"]] - starts[row["object_id"]]
    return None if gap[0] <= lag <= gap[1] else f"dates out of order: {lag} years apart, not {gap}"


def _row_problem(row: dict, types: dict[str, str], starts: dict[str, int]) -> str | None:
    rel = RELATIONS.get(row["relation"])
    if rel is None or rel.value_type != row["value_type"]:
        return "unknown relation or value type"
    subject_type = types[row["subject_id"]]
    if subject_type not in rel.applies:
        return f"does not apply to {subject_type}"
    if row["value_type"] == "entity":
        return _value_problem(row, rel.applies[subject_type], types) or _gap_problem(row, starts)
    return _value_problem(row, rel.applies[subject_type], types)


def problems(entities: dict[str, str], rows: list[dict]) -> list[str]:
    """Every fact that does not fit the schema, as "relation of type 'subject': why"."""
    types, starts = _types(entities, rows), _starts(entities, rows)
    found = []
    for row in rows:
        why = _row_problem(row, types, starts)
        if why:
            found.append(f"{row['relation']} of {types[row['subject_id']]} "
                         f"{row['subject']!r}: {why}")
    return found + _capital_problems(rows) + _event_year_problems(rows)


def _capital_problems(rows: list[dict]) -> list[str]:
    """A country's capital lies in that country."""
    where = {r["subject_id"]: r["object_id"] for r in rows if r["relation"] == "located_in"}
    return [f"capital of country {r['subject']!r}: {r['object']!r} lies elsewhere" for r in rows
            if r["relation"] == "capital" and where.get(r["object_id"]) != r["subject_id"]]


def _event_year_problems(rows: list[dict]) -> list[str]:
    """An event's name ('1975 Kiarport Marathon') gives the year it was held."""
    return [f"held_on of event {r['subject']!r}: {r['object']} is another year" for r in rows
            if r["relation"] == "held_on"
            and re.match(r"\d{4}", r["subject"]) and int(r["subject"][:4]) != _year(r)]


def _world_rows(world) -> tuple[dict[str, str], list[dict]]:
    return {e.entity_id: e.kind for e in world}, [f.to_row() for f in world.facts]


def _summary(found: list[str]) -> list[tuple[str, int]]:
    """The commonest kinds of problem: relation, subject type and why, names left out."""
    return Counter(re.sub(r" '[^']*':|-?\d+ years", lambda m: ":" if "'" in m.group(0) else
                          "N years", p) for p in found).most_common(25)


def test_every_fact_of_the_default_world_fits_the_schema():
    """The world `datagen build` crawls by default, fact by fact."""
    found = problems(*_world_rows(build_world(DEMO_ENTITIES, DEMO_SEED)))
    assert not found, (len(found), _summary(found), found[:5])


@pytest.mark.parametrize("n, seed", [(30, 0), (31, 5), (120, 9), (250, 7), (600, 1)])
def test_small_and_other_worlds_fit_the_schema_too(n, seed):
    """Tests build small worlds: where a type has no fitting partner it is left out, not
    linked to a wrong one."""
    found = problems(*_world_rows(build_world(n, seed)))
    assert not found, (len(found), _summary(found), found[:5])


def test_every_type_occurs_and_entities_carry_their_type():
    world = build_world(DEMO_ENTITIES, DEMO_SEED)
    entities, rows = _world_rows(world)
    types = _types(entities, rows)
    assert all(types[e.entity_id] == e.type for e in world)
    assert set(types.values()) == {t for r in RELATIONS.values() for t in r.applies}

