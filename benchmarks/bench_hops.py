"""Are a warehouse's multi-hop questions multi-page? Measured from its stored rows only.

Independent of the composer's own bookkeeping (its trace and actions are not read): the
`questions` rows (question, hops, evidence (url, quote) in chain order, the quote stating
the answer last; `hop_kind` where the schema has it) and the `pages` rows (url, title). For
each question with hops >= 2:

- (a) pages: its quotes come from at least `hops` distinct pages;
- (b) bridged: each page after the first (in evidence order) is named in an earlier quote
  from an earlier page (its title, or its title without a trailing parenthetical
  disambiguation, as whole words, case aside);
- (c) hidden: no bridge entity (the title of an evidence page other than the first and the
  answer's) is named in the question text;
- (d) shortcut: one search of the question text (k = 3, the warehouse's BM25 index) returns
  the answer's page, or every compared page of a comparison (verifiers/shortcut.py: the
  check the verify stage runs).

A question passes when (a)-(c) hold; a comparison (hop_kind) is held to (a) only: its pages
are the entities compared, not a chain. Printed by hops, for every stored question with
hops >= 2 and for the train-ready ones; the last line is on all of them:

    python benchmarks/bench_hops.py WAREHOUSE_ROOT [--json OUT]

``RESULT multi=N pass=0.xxx shortcut=0.xxx two_page=N three_plus=N comparisons=N``
(`two_page`, `three_plus`: questions stored with hops = 2 and hops >= 3).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

QUESTIONS_SQL = """
select question_id, arg_max(question, created_at) as question, arg_max(hops, created_at) as hops,
       arg_max(evidence, created_at) as evidence{kind}
from questions where hops >= 2 group by question_id order by question_id
"""
TITLES_SQL = "select url, arg_max(title, fetched_at) as title from pages group by url"


@dataclass(frozen=True)
class HopQuestion:
    """A stored multi-hop question as the benchmark reads it."""

    question_id: str
    question: str
    hops: int
    urls: tuple[str, ...]    # evidence urls, in chain order
    quotes: tuple[str, ...]  # the quotes beside them
    kind: str = "bridge"


@dataclass(frozen=True)
class Verdict:
    """What the benchmark found for one question."""

    hops: int
    kind: str
    pages: bool
    bridged: bool
    hidden: bool
    shortcut: bool

    @property
    def passes(self) -> bool:
        """(a)-(c): the question needs the pages it claims, and hides its bridges."""
        return self.pages and self.bridged and self.hidden


def read_questions(wh) -> list[HopQuestion]:
    """Every question stored with hops >= 2 (its latest row), from the `questions` table."""
    has_kind = "hop_kind" in wh.sql("select * from questions limit 0").column_names
    rows = wh.sql(QUESTIONS_SQL.format(kind=", arg_max(hop_kind, created_at) as hop_kind"
                                       if has_kind else "")).to_pylist()
    return [HopQuestion(r["question_id"], r["question"], int(r["hops"]),
                        tuple(e["url"] for e in r["evidence"] or ()),
                        tuple(e["quote"] for e in r["evidence"] or ()),
                        r.get("hop_kind") or "bridge") for r in rows]


def train_ready_ids(wh) -> set[str]:
    """The ids in the `train_ready` view (every latest verdict pass, and a band)."""
    return {r["question_id"] for r in wh.sql("select question_id from train_ready").to_pylist()}


def name_forms(title: str) -> list[str]:
    """A page's name as a text may write it: its title, and without a trailing parenthetical
    disambiguation ("Mercury (planet)" -> "Mercury")."""
    bare = re.sub(r"\s*\([^()]*\)\s*$", "", title).strip()
    return [t for t in dict.fromkeys([title.strip(), bare]) if t]


def names(text: str, title: str) -> bool:
    """Whether `text` names the page titled `title` (whole words, case and spacing aside)."""
    squashed = " ".join(text.split())
    return any(re.search(rf"(?<!\w){re.escape(' '.join(f.split()))}(?!\w)", squashed, re.I)
               for f in name_forms(title))


def distinct_pages(q: HopQuestion) -> list[str]:
    """The evidence pages in order of first appearance."""
    return list(dict.fromkeys(q.urls))


def bridged(q: HopQuestion, titles: dict[str, str]) -> bool:
    """(b): every page after the first is named in a quote, earlier in the chain, from
    another page (an unstored page has no title to be named by, so it fails)."""
    pages = distinct_pages(q)
    for page in pages[1:]:
        first = q.urls.index(page)
        earlier = [quote for url, quote in zip(q.urls[:first], q.quotes[:first]) if url != page]
        if page not in titles or not any(names(quote, titles[page]) for quote in earlier):
            return False
    return True


def hidden(q: HopQuestion, titles: dict[str, str]) -> bool:
    """(c): no bridge entity (an evidence page other than the first and the answer's) is
    named in the question text."""
    pages = distinct_pages(q)
    bridges = [p for p in pages[1:] if p != q.urls[-1]]
    return not any(p in titles and names(q.question, titles[p]) for p in bridges)


def judge(q: HopQuestion, titles: dict[str, str], hits: list[str]) -> Verdict:
    """(a)-(d) of one question, given what one search of its text returned."""
    from verifiers.shortcut import COMPARISON, is_shortcut
    pages = distinct_pages(q)
    chain = q.kind != COMPARISON
    return Verdict(q.hops, q.kind, len(pages) >= q.hops,
                   bridged(q, titles) if chain else True, hidden(q, titles) if chain else True,
                   is_shortcut(hits, q.urls[-1] if q.urls else "", pages, q.kind))


def measure(wh) -> tuple[list[HopQuestion], list[Verdict]]:
    """Every multi-hop question judged; the searches in one batch over every stored page."""
    from verifiers.shortcut import shortcut_pages_many
    from warehouse import StoredPages
    questions = read_questions(wh)
    titles = {r["url"]: r["title"] or "" for r in wh.sql(TITLES_SQL).to_pylist()}
    found = shortcut_pages_many(StoredPages.of(wh), [q.question for q in questions]) \
        if questions else []
    return questions, [judge(q, titles, hits) for q, hits in zip(questions, found)]


def figures(verdicts: list[Verdict]) -> dict:
    """Counts and shares, overall and by hops."""
    by_hops: dict[int, list[Verdict]] = defaultdict(list)
    for v in verdicts:
        by_hops[v.hops].append(v)
    out = _shares(verdicts)
    out["by_hops"] = {str(h): _shares(vs) for h, vs in sorted(by_hops.items())}
    out["two_page"] = len(by_hops.get(2, []))
    out["three_plus"] = sum(len(vs) for h, vs in by_hops.items() if h >= 3)
    return out


def _shares(vs: list[Verdict]) -> dict:
    """One group's count, the share passing (and each of (a)-(c)), the share of shortcuts."""
    n = len(vs)

    def share(pred) -> float:
        """The share of the group for which `pred` holds (0 for an empty group)."""
        return round(sum(1 for v in vs if pred(v)) / n, 4) if n else 0.0
    return {"multi": n, "pass": share(lambda v: v.passes), "pages": share(lambda v: v.pages),
            "bridged": share(lambda v: v.bridged), "hidden": share(lambda v: v.hidden),
            "shortcut": share(lambda v: v.shortcut),
            "comparisons": sum(1 for v in vs if v.kind == "comparison")}


def report(root: Path) -> dict:
    """The figures of the warehouse at `root`: all multi-hop questions, the train-ready ones."""
    import warehouse
    with warehouse.open(root, create=False, read_only=True) as wh:
        questions, verdicts = measure(wh)
        ready = train_ready_ids(wh)
    chosen = [v for q, v in zip(questions, verdicts) if q.question_id in ready]
    return {"warehouse": str(root), "all": figures(verdicts), "train_ready": figures(chosen)}


def print_figures(name: str, f: dict) -> None:
    """One block: a line per hops, then the group's total."""
    print(f"{name}: {f['multi']} questions with hops >= 2")
    print("  hops   multi   pass  pages bridged hidden shortcut comparisons")
    for h, s in list(f["by_hops"].items()) + [("all", f)]:
        print(f"  {h:>4} {s['multi']:>7} {s['pass']:6.3f} {s['pages']:6.3f} {s['bridged']:7.3f} "
              f"{s['hidden']:6.3f} {s['shortcut']:8.3f} {s['comparisons']:>11}")


def result_line(f: dict) -> str:
    """The RESULT line (on all stored multi-hop questions)."""
    return (f"RESULT multi={f['multi']} pass={f['pass']:.3f} shortcut={f['shortcut']:.3f} "
            f"two_page={f['two_page']} three_plus={f['three_plus']} "
            f"comparisons={f['comparisons']}")


def main(argv: list[str] | None = None) -> int:
    """Measure the warehouse at WAREHOUSE_ROOT; print the tables and the RESULT line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", metavar="WAREHOUSE_ROOT", type=Path)
    ap.add_argument("--json", metavar="OUT", type=Path, help="also write the figures here")
    args = ap.parse_args(argv)
    if not args.root.is_dir():
        print(f"error: no warehouse folder at {args.root}", file=sys.stderr)
        return 2
    out = report(args.root)
    print_figures("all stored", out["all"])
    print_figures("train_ready", out["train_ready"])
    if args.json:
        args.json.write_text(json.dumps(out, indent=2), encoding="utf-8")
    print(result_line(out["all"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
