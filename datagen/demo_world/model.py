"""Records of the demo world: entities, facts, and the world that holds them (no logic).

What may be said of what (kinds, types, relations) is declared in schema.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator


@dataclass(frozen=True)
class WorldFact:
    """One ground-truth triple. `obj` is the surface form printed on the page.

    Paths are site-relative ("/wiki/<slug>.html"): join them with the URL the world is served
    at. For entity-valued relations `object_id`/`object_path` name the target entity; for
    literals they are None and `value` holds the typed value (int, or an ISO date string).
    """

    subject_id: str
    subject: str
    relation: str
    obj: str
    value_type: str
    subject_path: str
    object_id: str | None = None
    object_path: str | None = None
    value: int | str | None = None

    def to_row(self) -> dict:
        return {"subject_id": self.subject_id, "subject": self.subject,
                "relation": self.relation, "object": self.obj, "value_type": self.value_type,
                "subject_path": self.subject_path, "object_id": self.object_id,
                "object_path": self.object_path,
                "value": None if self.value is None else str(self.value)}


@dataclass(frozen=True)
class Entity:
    entity_id: str
    kind: str
    name: str
    slug: str
    description: str = ""  # a short noun phrase, e.g. "a city in Veloria"
    type: str = ""  # its type within its kind (schema.TYPES): "marathon", "novelist", "city"

    @property
    def path(self) -> str:
        return f"/wiki/{self.slug}.html"


@dataclass
class World:
    """The whole fictional encyclopedia: entities by id and their facts, in a stable order."""

    seed: int
    entities: dict[str, Entity] = field(default_factory=dict)
    facts: list[WorldFact] = field(default_factory=list)

    def path(self, entity_id: str) -> str:
        """The entity's page path; join it with the served site's base URL."""
        return self.entities[entity_id].path

    def of_kind(self, kind: str) -> list[Entity]:
        return [e for e in self.entities.values() if e.kind == kind]

    def facts_about(self, entity_id: str) -> list[WorldFact]:
        return [f for f in self.facts if f.subject_id == entity_id]

    def __iter__(self) -> Iterator[Entity]:
        return iter(self.entities.values())

    def __len__(self) -> int:
        return len(self.entities)
