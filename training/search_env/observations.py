"""What the search agent's tools show it: search hits and pages as observation text.

`format_search` lays out hits (`title | url` then the snippet, or, for `snippet: sentence`,
the snippet first and the url after it, so that a cut observation keeps the text);
`best_sentences` orders a page's sentences by the query's rarer words; `cut_at_word` never
leaves half a word, which no tokenizer of the pages knows.
"""

from __future__ import annotations

import re
from collections import Counter


def format_search(hits, snippet_chars: int, url_last: bool = False) -> str:
    """Per hit: a `title | url` line, then its snippet (cut at `snippet_chars`); `url_last`:
    `title: snippet`, then the url on its own line, so that an observation cut short keeps
    the snippet (a url is ~30 tokens of a small tokenizer).

    >>> from datagen.tools.records import SearchHit
    >>> print(format_search([SearchHit("http://w/varo", "Varo", "Varo is old.", 1.0)], 40, True))
    Varo: Varo is old.
    http://w/varo
    """
    if not hits:
        return "no results"
    if url_last:
        return "\n".join(f"{h.title}: {cut_at_word(h.snippet, snippet_chars)}\n{h.url}"
                         for h in hits)
    return "\n".join(f"{h.title} | {h.url}\n{cut_at_word(h.snippet, snippet_chars)}" for h in hits)


def cut_at_word(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, at a space when one is in the second half:
    half a word is a word no tokenizer of the pages knows (a word-level one reads `<unk>`).

    >>> cut_at_word("Varo was founded in 1934 by Ila.", 22), cut_at_word("Varo", 2)
    ('Varo was founded in', 'Va')
    """
    if len(text) <= limit:
        return text
    space = text.rfind(" ", 0, limit + 1)
    return text[:space] if space > limit // 2 else text[:limit]


_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_RULE = re.compile(r"^[|\s:-]*$")   # a table's |---|---| line


def _units(text: str) -> list[str]:
    """A page's sentences, one table row (`Attendance | 30,745`) counted as one."""
    out = []
    for line in text.splitlines():
        if "|" in line:
            row = " | ".join(c.strip() for c in line.strip().strip("|").split("|") if c.strip())
            out += [row] if row and not _RULE.match(line) else []
        else:
            out += [p.strip() for p in _SENTENCE.split(line) if p.strip()]
    return out


_STOP = frozenset("a an the of in on at to by for and or is was were be how what when which who "
                  "whom whose where many much did does do has had have it its".split())


def _stems(text: str) -> set[str]:
    """Content words cut to 5 letters, so "attended" meets "attendance"."""
    return {w[:5] for w in re.findall(r"\w+", text.lower()) if w not in _STOP}


def best_sentences(text: str, query: str) -> str:
    """The page's sentences (and table rows), those sharing the query's rarer words first.

    Words are compared as stems without stop words; a word counts 1 / (the number of the page's
    sentences holding it), so the page's own name, which is in every sentence, hardly counts
    and "attended" or "founded" decides; ties keep the page's order.

    >>> best_sentences("Varo is old. The bridge opened in 1934. It is red.", "when did the bridge open")
    'The bridge opened in 1934. Varo is old. It is red.'
    >>> best_sentences("Varo is a fair.\\n| Attendance | 30,745 |\\nVaro was in Leith.", "Varo attendance")
    'Attendance | 30,745 Varo is a fair. Varo was in Leith.'
    """
    words = _stems(query)
    parts = _units(text)
    bags = [_stems(p) & words for p in parts]
    df = Counter(w for bag in bags for w in bag)
    score = [-sum(1 / df[w] for w in bag) for bag in bags]
    order = sorted(range(len(parts)), key=lambda i: score[i])
    return " ".join(parts[i] for i in order)


def format_page(view) -> str:
    more = f" (more: <open>{view.url}#{view.next_offset}</open>)" if view.next_offset else ""
    return f"{view.title} | {view.url}{more}\n{view.text}"
