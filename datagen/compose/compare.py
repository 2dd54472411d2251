"""Comparisons: which of two entities of one kind came first, by a date each one's page
states ('Who was born first, the director who directed Fritz the Cat or Steve Krantz?'), or,
answered yes or no as 14 % of HotpotQA's questions are, whether one came before the other
('Was the director who directed Fritz the Cat born before Steve Krantz?') or whether two
people's pages give them one nationality ('Were the director who directed Fritz the Cat and
Gregory La Cava of the same nationality?').

Each side is a question the composer kept (a seed or a composed bridge) whose ask is a date
of that kind, or a nationality; the entity it asks about is named or described as that
question describes it. Every pair has a described side, so the solver has to resolve the
description whichever side wins; a 'which' is won by the described side, or, half the time
when the other side is named, by the named one: its answer is then in the question, one of
the two set side by side, as in people's comparisons (HotpotQA's name both). Its pages are
all the pages of both sides. A pair whose one search finds every compared page is a
shortcut and is dropped.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from functools import partial
from itertools import zip_longest

from datagen.seeds.chain import Chain, render_node, trace
from warehouse import QuestionRecord, content_id

# ask relation -> what is compared; the question's wordings, first and later
COMPARED_DATES = {"born_on": "born", "born_year": "born", "died_on": "died",
                  "died_year": "died", "released_year": "released",
                  "published_year": "published", "founded_year": "founded"}
COMPARE_ASKS = {
    "born": (["Who was born first, {a} or {b}?", "Which of {a} and {b} was born earlier?"],
             ["Who was born later, {a} or {b}?", "Which of {a} and {b} was born more recently?"]),
    "died": (["Who died first, {a} or {b}?", "Which of {a} and {b} died earlier?"],
             ["Who died later, {a} or {b}?", "Which of {a} and {b} died more recently?"]),
    "released": (["Which came out first, {a} or {b}?", "Which was released earlier, {a} or {b}?"],
                 ["Which came out later, {a} or {b}?", "Which was released more recently, {a} "
                  "or {b}?"]),
    "published": (["Which was published first, {a} or {b}?"],
                  ["Which was published later, {a} or {b}?"]),
    "founded": (["Which was founded first, {a} or {b}?"], ["Which was founded later, {a} or {b}?"]),
}
# a nationality is compared for sameness only: yes/no wordings, never 'which'
SAME = {"nationality": "nationality"}
YES_NO_SAME = {"nationality": ("Were {a} and {b} of the same nationality?",
                               "Did {a} and {b} have the same nationality?")}
# kind -> the yes/no wordings: (before, after)
YES_NO_ASKS = {
    "born": ("Was {a} born before {b}?", "Was {a} born after {b}?"),
    "died": ("Did {a} die before {b}?", "Did {a} die after {b}?"),
    "released": ("Was {a} released before {b}?", "Was {a} released after {b}?"),
    "published": ("Was {a} published before {b}?", "Was {a} published after {b}?"),
    "founded": ("Was {a} founded before {b}?", "Was {a} founded after {b}?"),
}
SHARE = 0.3   # comparisons at most this share of a run's multi-page questions
MAX_WORDS = 45   # two quoted clozes side by side: right, but no one would ask it
PAIRS_PER_ENTITY = 4   # a described entity compared with four others at most


@dataclass(frozen=True)
class Side:
    """A kept question's entity and the date (ISO date or year) or nationality its ask
    states."""

    chain: Chain
    kind: str           # born | died | released | published | founded | nationality
    noun: str           # the entity's kind ('director', 'film'): sides of one noun pair up
    when: str           # a date, sortable: 'YYYY' or 'YYYY-MM-DD'; or the nationality

    @property
    def dated(self) -> bool:
        return self.kind not in SAME


def side_of(chain: Chain, noun: str) -> Side | None:
    """The chain as a side of a comparison, when its ask is a comparable date or a
    nationality."""
    kind = COMPARED_DATES.get(chain.ask.relation) or SAME.get(chain.ask.relation)
    when = chain.ask.answer if kind in SAME else _when(chain.ask.answer)
    if not kind or not when or not noun:
        return None
    return Side(chain, kind, noun.split()[-1], when)


def _when(answer: str) -> str:
    from datagen.seeds.patterns import parse_date
    if answer.isdigit() and len(answer) == 4:
        return answer
    return parse_date(answer) or ""


def pairs(sides: list[Side], seed: int, salt: str = "compare") -> list[tuple[Side, Side]]:
    """Described sides, each paired with another side of its kind and noun (of a date, one
    whose year differs; in a seeded order): a description in one pair at most, so an entity
    described through several pages is compared up to PAIRS_PER_ENTITY times, each time with
    another entity. Another `salt` draws other pairs (the yes/no questions' own)."""
    rng = random.Random(content_id(seed, salt))
    groups: dict[tuple[str, str], list[Side]] = {}
    for s in sides:
        groups.setdefault((s.kind, s.noun), []).append(s)
    out, against = [], {}
    for key in sorted(groups):
        group = sorted(groups[key], key=_order)   # the same order whatever the run's order
        rng.shuffle(group)
        for s in group:
            met = against.setdefault(s.chain.root.url, set())
            if s.chain.root.named or len(met) >= PAIRS_PER_ENTITY:
                continue
            other = _foil(group, s, met, rng)
            if other is not None:
                met.add(other.chain.root.url)
                out.append((s, other))
    return out


def _foil(group: list[Side], s: Side, met: set[str], rng: random.Random) -> Side | None:
    """The first side from a random place in the group that `s` can be compared with
    (another entity, not met yet; of a date, another year): drawn, so no one entity is
    everyone's foil. A nationality's foil may share it or not, as drawn: yes or no."""
    start = rng.randrange(len(group))
    for i in range(len(group)):
        o = group[(start + i) % len(group)]
        if o.chain.root.url != s.chain.root.url and o.chain.root.url not in met \
                and (o.when[:4] != s.when[:4] or not s.dated):
            return o
    return None


def _order(side: Side) -> tuple[str, str, str, str]:
    """A side's place before the seeded shuffle: its content, never its URL (ports vary)."""
    c = side.chain
    return (c.root.name, c.ask.relation, c.question, c.ask.answer)


def compare(described: Side, other: Side,
            rng: random.Random) -> tuple[Side, Side, str, list, str] | None:
    """(winner, loser, question, evidence, answer) of the pair, asked so that the winner's
    name is the answer: the described side's, or, drawn half the time when `other` is named,
    `other`'s. The last quote is one of the winner's that names it (a quote states the
    answer). None when none of its quotes names it."""
    named = other.chain.root.named and rng.random() < 0.5
    winner, loser = (other, described) if named else (described, other)
    name = winner.chain.root.name
    own = winner.chain.evidence()
    naming = [i for i, e in enumerate(own) if name in e.quote]
    if not naming:
        return None
    first = winner.when[:4] < loser.when[:4]
    template = rng.choice(COMPARE_ASKS[winner.kind][0 if first else 1])
    a, b = render_node(described.chain.root), render_node(other.chain.root)
    a, b = (a, b) if rng.random() < 0.5 else (b, a)
    question = template.format(a=a, b=b)
    last = own.pop(naming[-1])
    return (winner, loser, question[0].upper() + question[1:],
            loser.chain.evidence() + own + [last], name)


def ask_yes_no(one: Side, other: Side,
               rng: random.Random) -> tuple[Side, Side, str, list, str]:
    """(the side named first, the other, question, evidence, answer): whether one side came
    before (or after) the other, either side named first and either wording drawn, so 'yes'
    and 'no' come out about as often; or whether the two share a nationality. The evidence
    is both sides' own, each ending on the quote that states its date or nationality: the
    answer is no span of a page but the order, or sameness, of what two quotes state."""
    a, b = (one, other) if rng.random() < 0.5 else (other, one)
    before = rng.random() < 0.5
    asks = YES_NO_ASKS[one.kind] if one.dated else YES_NO_SAME[one.kind]
    question = asks[0 if before else 1].format(a=render_node(a.chain.root),
                                               b=render_node(b.chain.root))
    same = a.when == b.when if not one.dated else (a.when[:4] < b.when[:4]) == before
    answer = "yes" if same else "no"
    return a, b, question[0].upper() + question[1:], b.chain.evidence() + a.chain.evidence(), \
        answer


def comparison_record(winner: Side, other: Side, question: str, evidence: list, answer: str,
                      composer: str, backend: str, seed: int) -> QuestionRecord:
    """The comparison as a stored question: its pages are both sides' pages; its answer the
    winner's name, or yes or no (then `winner` is the side the question names first)."""
    from datagen.compose.run import question_id
    from verifiers import yes_or_no
    urls = list(dict.fromkeys(e.url for e in evidence))
    steps = winner.chain.fact_count + other.chain.fact_count
    sides = [trace(s.chain, backend, seed) for s in (winner, other)]
    return QuestionRecord(
        question_id=question_id(question, answer), question=question, answer=answer,
        hops=len(urls), steps=steps, hop_kind="comparison", actions=("COMPARE",),
        evidence=tuple(evidence), source_urls=tuple(urls), composer=composer, backend=backend,
        answer_type="yes_no" if yes_or_no(answer) else "entity",
        trace=json.dumps({"version": 1, "comparison": winner.kind, "question": question,
                          "answer": answer, "sides": sides}, ensure_ascii=False, default=str))


def comparisons(sides: list[Side], validator, composer: str, backend: str, seed: int,
                limit: int, hops: tuple[int, int]) -> list[QuestionRecord]:
    """Up to `limit` comparisons of the run's sides, on `hops` pages (lo, hi), that pass the
    length, leak and shortcut checks: 'which came first' questions of dates and, from pairs
    drawn apart (dates and nationalities, in a seeded order), yes/no ones (at most half the
    limit), taken in turn."""
    rng = random.Random(content_id(seed, "compare-wording"))
    kept = partial(_kept, validator=validator, hops=hops)
    which = _first(limit, kept, (
        comparison_record(*worded, composer, backend, seed)
        for described, other in pairs([s for s in sides if s.dated], seed)
        if (worded := compare(described, other, rng))))
    drawn = pairs(sides, seed, "compare-yes-no")
    random.Random(content_id(seed, "yes-no-order")).shuffle(drawn)   # kinds mixed in the cap
    yes_no = _first(limit // 2, kept, (comparison_record(*ask_yes_no(one, other, rng), composer,
                                                         backend, seed) for one, other in drawn))
    return [r for pair in zip_longest(which, yes_no) for r in pair if r is not None][:limit]


def _first(n: int, keep, records) -> list[QuestionRecord]:
    """The first `n` of `records` that `keep` keeps. `records` is a generator drawing on the
    wording rng: none is made once `n` are kept, so what follows draws the same numbers."""
    out: list[QuestionRecord] = []
    while len(out) < n and (rec := next(records, None)) is not None:
        out += [rec] if keep(rec) else []
    return out


def _kept(rec: QuestionRecord, validator, hops: tuple[int, int]) -> bool:
    """Whether a worded comparison is kept: short enough, on `hops` pages, its answer not in
    its wording but as one of the two compared, and no one search of it finds every page
    compared."""
    from verifiers import AnswerNotLeaked
    from verifiers.shortcut import COMPARISON, is_shortcut, shortcut_pages
    if len(rec.question.split()) > MAX_WORDS or not hops[0] <= rec.hops <= hops[1] \
            or AnswerNotLeaked().check_one(rec, None).status != "pass":
        return False
    hits = shortcut_pages(validator.search, rec.question) if validator.search else []
    return not is_shortcut(hits, "", rec.source_urls, COMPARISON)
