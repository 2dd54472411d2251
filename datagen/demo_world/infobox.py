"""Read an infobox table back from a page's HTML (what later stages mine for facts).

Works on any page with a `<table class="infobox">` of `<th>label</th><td>value</td>` rows;
on demo-world pages each label maps back to its relation through RELATIONS.
"""

from __future__ import annotations

from dataclasses import dataclass

from datagen.demo_world.schema import RELATIONS

LABEL_TO_RELATION = {r.label: name for name, r in RELATIONS.items()}


@dataclass(frozen=True)
class InfoboxRow:
    label: str
    value: str
    href: str | None = None        # the linked entity's URL/path when the value is a link
    relation: str | None = None    # the demo-world relation, when the label is one of ours


def read_infobox(html: str) -> tuple[str | None, list[InfoboxRow]]:
    """(entity id or None, rows) of the first infobox on the page; ([], None) if it has none."""
    import lxml.html
    tree = lxml.html.fromstring(html)
    tables = tree.xpath("//table[contains(concat(' ', normalize-space(@class), ' '), ' infobox ')]")
    if not tables:
        return None, []
    table = tables[0]
    rows = []
    for tr in table.iter("tr"):
        th, td = tr.find("th"), tr.find("td")
        if th is None or td is None:
            continue
        label = " ".join(th.text_content().split())
        link = td.find(".//a")
        rows.append(InfoboxRow(label, " ".join(td.text_content().split()),
                               link.get("href") if link is not None else None,
                               LABEL_TO_RELATION.get(label)))
    return table.get("data-entity-id"), rows
