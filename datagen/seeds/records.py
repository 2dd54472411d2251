"""Records of seed mining: a fact with its verbatim evidence, and a seed question (no logic)."""

from __future__ import annotations

from dataclasses import dataclass

from warehouse import Evidence

# a fact's value_type -> the answer_type its question is stored with
ANSWER_TYPE_OF_KIND = {"entity": "entity", "year": "year", "number": "number", "date": "date",
                       "string": "other"}


@dataclass(frozen=True)
class Fact:
    """(subject, relation, value) read off a stored page, with the sentence or row that says it.

    `relation` is a demo-world relation (infobox label) or a generic one mined from prose:
    `is_a` (the lead sentence's noun phrase), `born_on`, `died_on`, `founded_year`,
    `released_year`, ..., or `link` (a sentence of the subject's page naming another page).
    `typed` is the parsed value (int for years and numbers, ISO string for dates).
    """

    subject: str
    subject_url: str
    relation: str
    value: str
    value_type: str
    evidence: Evidence
    source: str                      # infobox | link | list (a link inside an enumeration) | prose
    object_url: str | None = None    # the page the value names, for entity values
    typed: int | str | None = None
    sentence: str = ""               # link facts: the sentence with the subject and the value

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.subject_url, self.relation, self.value)


@dataclass(frozen=True)
class Page:
    """What seed mining reads of a stored page."""

    url: str
    title: str
    text: str
    html: str = ""
    links: tuple[tuple[str, str], ...] = ()   # (absolute url, anchor)
