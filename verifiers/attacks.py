"""A generated adversarial set for the reward mode: lists, runs, ranges, repeats, padding.

For each gold answer of a labelled set (one per question), typed by
:func:`verifiers.candidates.answer_type`, predictions that offer the gold among
golds of *other* questions of the same type, in every form a policy could try
(:data:`FORMS`), plus padded and coarser ones; and the same list forms with golds of
questions of *other* types (``mixed_<form>``: "Ravi Shastri, South Carolina, January
2017"), half of them after "Answer:" as a policy writes its final line. Nothing is
hand-picked: the distractors are drawn with a seeded RNG. Left out, as the issues ask:
distractors that ``is_equivalent`` already accepts for the gold (they would be right
answers), and, per form, golds or distractors that contain that form's separator.

The reward mode should pay for (almost) none of them; the judging mode pays for
many (it follows human raters, who accept a long answer containing the gold).
"""

from __future__ import annotations

import json
import random
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from verifiers.candidates import answer_type
from verifiers.normalize import STOPWORDS, squad_normalize


@dataclass(frozen=True)
class Attack:
    form: str
    kind: str  # the gold's answer type
    question: str
    gold: str
    aliases: tuple[str, ...]
    prediction: str


@dataclass(frozen=True)
class _Gold:
    question: str
    gold: str
    aliases: tuple[str, ...]
    kind: str


def _join(sep: str, n: int = 3) -> Callable:
    def build(g: _Gold, ds: list[str], rng: random.Random) -> str | None:
        items = _place(g.gold, ds[:n - 1], rng)
        return sep.join(items) if len(items) >= 2 else None
    return build


def _place(gold: str, ds: list[str], rng: random.Random) -> list[str]:
    items = list(ds)
    items.insert(rng.randrange(len(items) + 1), gold)
    return items


def _either(g, ds, rng):
    a, b = _place(g.gold, ds[:1], rng)
    return f"either {a} or {b}"


def _paren_or(g, ds, rng):
    a, b = _place(g.gold, ds[:1], rng)
    return f"{a} (or {b})"


def _bullets(marker: Callable[[int], str]) -> Callable:
    def build(g, ds, rng):
        return "\n".join(f"{marker(i)} {x}" for i, x in enumerate(_place(g.gold, ds[:2], rng)))
    return build


def _json(g, ds, rng):
    return json.dumps(_place(g.gold, ds[:2], rng))


def _int(text: str) -> int | None:
    t = text.strip()
    return int(t) if re.fullmatch(r"\d{1,7}", t) else None


def _run(g, ds, rng):
    nums = [d for d in ds if _int(d) is not None]
    return " ".join(_place(g.gold.strip(), nums[:2], rng)) if _int(g.gold) is not None and nums else None


def _neighbours(g, ds, rng):  # "1934 1935 1936": the gold among its neighbours
    v = _int(g.gold)
    if v is None:
        return None
    start = v - rng.randrange(3)
    return " ".join(str(x) for x in range(start, start + 3))


def _range(fmt: str) -> Callable:
    def build(g, ds, rng):
        v = _int(g.gold)
        if v is None:
            return None
        lo = v - rng.randrange(2)
        hi = lo + 1 + rng.randrange(2)
        if fmt == "abbrev":
            if v < 1000 or lo // 100 != hi // 100:
                return None
            return f"{lo}–{hi % 100:02d}"
        return fmt.format(lo=lo, hi=hi)
    return build


def _zero_pad(g, ds, rng):
    v = _int(g.gold)
    return None if v is None else "0" * (1 + rng.randrange(3)) + str(v)


def _repeat(g, ds, rng):
    return " ".join([g.gold.strip()] * (2 + rng.randrange(2)))


def _year_of(g: _Gold) -> int | None:
    found = re.findall(r"\b(1\d{3}|20\d{2})\b", g.gold)
    return int(found[-1]) if found else None


def _decade(g, ds, rng):
    y = _year_of(g)
    return None if y is None else rng.choice(["the {}s", "{}s", "in the {}s"]).format(y // 10 * 10)


def _century(g, ds, rng):
    y = _year_of(g)
    if y is None:
        return None
    n = (y - 1) // 100 + 1
    return f"the {n}th century"


def _padded(n_words: int) -> Callable:
    def build(g, ds, rng, filler: Sequence[str] = ()):
        words = [rng.choice(filler) for _ in range(n_words)]
        return " ".join([*words, g.gold] if rng.random() < 0.5 else [g.gold, *words])
    return build


ALL = ("year", "number", "date", "name", "other")
NUMERIC = ("year", "number")
# form -> (answer types it applies to, the separator a gold must not contain, builder)
FORMS: dict[str, tuple[tuple[str, ...], str, Callable]] = {
    "comma": (ALL, ",", _join(", ")),
    "semicolon": (ALL, ";", _join("; ")),
    "slash": (ALL, "/", _join("/", 2)),
    "pipe": (ALL, "|", _join(" | ")),
    "ampersand": (ALL, "&", _join(" & ", 2)),
    "and": (ALL, " and ", _join(" and ", 2)),
    "or": (ALL, " or ", _join(" or ", 2)),
    "nor": (ALL, " nor ", _join(" nor ", 2)),
    "either_or": (ALL, " or ", _either),
    "paren_or": (ALL, "(", _paren_or),
    "newline": (ALL, "\n", _join("\n")),
    "bullets": (ALL, "\n", _bullets(lambda i: "-")),
    "numbered": (ALL, "\n", _bullets(lambda i: f"{i + 1}.")),
    "json": (ALL, '"', _json),
    "number_run": (NUMERIC, "", _run),
    "neighbour_run": (NUMERIC, "", _neighbours),
    "range_dash": (NUMERIC, "", _range("{lo}-{hi}")),
    "range_abbrev": (("year",), "", _range("abbrev")),
    "range_between": (NUMERIC, "", _range("between {lo} and {hi}")),
    "range_from_to": (NUMERIC, "", _range("from {lo} to {hi}")),
    "zero_pad": (NUMERIC, "", _zero_pad),
    "repeat": (ALL, "", _repeat),
    "decade": (("year", "date"), "", _decade),
    "century": (("year",), "", _century),
    "pad_words": (ALL, "", _padded(12)),
    "pad_long": (ALL, "", _padded(60)),
}


# The list forms, again with golds of other types as distractors (issue 29).
MIXED_FORMS = tuple(f for f, (kinds, sep, _) in FORMS.items() if kinds == ALL and sep)


def golds_of(rows: Iterable) -> list[_Gold]:
    """One gold per question (rows with .question, .gold, .aliases: LabelledPair)."""
    seen, out = set(), []
    for r in rows:
        if r.question in seen or not r.gold.strip():
            continue
        seen.add(r.question)
        out.append(_Gold(r.question, r.gold.strip(), tuple(r.aliases), answer_type(r.gold)))
    return out


def build_attacks(rows: Iterable, seed: int = 0, forms_per_gold: int | None = None,
                  n_distractors: int = 3) -> list[Attack]:
    """The adversarial set over ``rows``; ``forms_per_gold`` samples that many forms per
    gold (None: every form that applies)."""
    from verifiers.equivalence import is_equivalent
    golds = golds_of(rows)
    rng = random.Random(seed)
    pools: dict[str, list[str]] = defaultdict(list)
    for g in golds:
        pools[g.kind].append(g.gold)
    filler = sorted({w for g in golds for w in re.findall(r"[a-z]{4,}", g.question.lower())
                     if w not in STOPWORDS})
    out = []
    for g in golds:
        same = _distractors(g, pools[g.kind], rng, n_distractors, is_equivalent)
        others = _mixed_distractors(g, pools, rng, n_distractors, is_equivalent)
        forms = [f for f, (kinds, _, _) in FORMS.items() if g.kind in kinds]
        forms += [f"mixed_{f}" for f in MIXED_FORMS]
        if forms_per_gold is not None:
            forms = rng.sample(forms, min(forms_per_gold, len(forms)))
        own = set(re.findall(r"[a-z]+", (g.question + " " + g.gold).lower()))
        words = [w for w in filler if w not in own]
        for form in forms:
            mixed = form.startswith("mixed_")
            pred = _predict(g, form.removeprefix("mixed_"), others if mixed else same, rng, words)
            if pred and mixed and rng.random() < 0.5:
                pred = "Answer: " + pred
            if pred:
                out.append(Attack(form, g.kind, g.question, g.gold, g.aliases, pred))
    return out


def _predict(g: _Gold, form: str, distractors: list[str], rng: random.Random,
             words: list[str]) -> str | None:
    """One prediction of ``form``, or None where the form does not apply (a separator in
    the gold or in every distractor, or a prediction that is an alias itself)."""
    _, sep, build = FORMS[form]
    if sep and sep in g.gold.lower():
        return None
    ds = [d for d in distractors if not (sep and sep in d.lower())]
    if sep and not ds:
        return None
    pred = build(g, ds, rng, words) if form.startswith("pad") else build(g, ds, rng)
    accepted = {squad_normalize(x) for x in (g.gold, *g.aliases)}  # an alias is no attack
    return pred if pred and squad_normalize(pred) not in accepted else None


def _distractors(g: _Gold, pool: list[str], rng: random.Random, n: int, is_equivalent) -> list[str]:
    """Golds of other questions of the same type that are not right answers here."""
    out: list[str] = []
    for _ in range(8 * n):
        if len(out) == n or len(pool) < 2:
            break
        d = rng.choice(pool)
        if squad_normalize(d) == squad_normalize(g.gold) or d in out:
            continue
        if is_equivalent(d, g.gold, g.aliases, g.question):
            continue
        out.append(d)
    return out


def _mixed_distractors(g: _Gold, pools: dict[str, list[str]], rng: random.Random, n: int,
                       is_equivalent) -> list[str]:
    """Golds of questions of other types, each type drawn in turn (shuffled), that are
    not right answers here."""
    kinds = [k for k in sorted(pools) if k != g.kind and pools[k]]
    rng.shuffle(kinds)
    out: list[str] = []
    for i in range(8 * n):
        if len(out) == n or not kinds:
            break
        d = rng.choice(pools[kinds[i % len(kinds)]])
        if d not in out and not is_equivalent(d, g.gold, g.aliases, g.question):
            out.append(d)
    return out


def attack_rates(attacks: Sequence[Attack], pays: Callable[[Attack], bool]) -> dict[str, tuple[int, int]]:
    """{form: (paid, n)} plus "all", "list" (every form but padding, mixed lists
    included), "mixed" (the mixed-type lists) and "pad"."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for a in attacks:
        paid = int(pays(a))
        groups = ("pad",) if a.form.startswith("pad") else (
            ("list", "mixed") if a.form.startswith("mixed_") else ("list",))
        for key in (a.form, "all", *groups):
            counts[key][0] += paid
            counts[key][1] += 1
    return {k: (v[0], v[1]) for k, v in counts.items()}
