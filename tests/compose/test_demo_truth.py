"""The composed demo questions, checked against the demo world's ground truth.

Written without importing datagen.compose (or datagen.seeds): it reads facts.jsonl and
entities.jsonl that the demo world writes, derives each question's answer set from the
trace's chain, and checks every constraint's wording against the question text.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest

import warehouse
from verifiers import AnswerNotLeaked


class Truth:
    def __init__(self, site: Path):
        self.facts = [json.loads(x) for x in (site / "facts.jsonl").read_text().splitlines()]
        self.entities = [json.loads(x) for x in (site / "entities.jsonl").read_text().splitlines()]
        self.by_name = {e["name"]: e["entity_id"] for e in self.entities}
        self.name_of = {e["entity_id"]: e["name"] for e in self.entities}
        self.by_rel = defaultdict(list)
        for f in self.facts:
            self.by_rel[f["relation"]].append(f)

    def match(self, node: dict) -> set[str]:
        if not node.get("clauses"):
            return {self.by_name[node["name"]]}
        out = None
        for c in node["clauses"]:
            found = self.clause(c)
            out = found if out is None else out & found
        return out

    def clause(self, c: dict) -> set[str]:
        facts, value = self.by_rel[c["relation"]], c["value"]
        if "literal" in value:
            assert c["direction"] == "out"
            fuzz = value.get("fuzz")
            if fuzz:
                return {f["subject_id"] for f in facts if _within(f, fuzz)}
            return {f["subject_id"] for f in facts if f["object"] == value["literal"]}
        inner = self.match(value)
        if c["direction"] == "out":
            return {f["subject_id"] for f in facts if f["object_id"] in inner}
        return {f["object_id"] for f in facts if f["subject_id"] in inner}

    def answers(self, trace: dict) -> set[str]:
        subjects = self.match(trace["root"])
        rel = trace["ask"]["relation"]
        if rel == "self":
            return {self.name_of[s] for s in subjects}
        return {f["object"] for f in self.by_rel[rel] if f["subject_id"] in subjects}


def _within(fact: dict, fuzz: dict) -> bool:
    value = fact["value"]
    if fact["value_type"] in ("year", "number"):
        value = int(value)
    return fuzz["lo"] <= value <= fuzz["hi"]


def _worded(node: dict, question: str) -> list[str]:
    """Problems with how the node's constraints appear in the question."""
    problems = []
    if not node.get("clauses"):
        return [] if node["name"] in question else [f"name {node['name']!r} missing"]
    for c in node["clauses"]:
        if c["phrase"] not in question:
            problems.append(f"phrase {c['phrase']!r} missing")
        value = c["value"]
        if "literal" in value:
            shown = value["fuzzed"] or value["literal"]
            if shown not in question:
                problems.append(f"value {shown!r} missing")
            if value["fuzzed"] and re.search(rf"(?<!\w){re.escape(value['literal'])}(?!\w)",
                                             question):  # '1930' may stand in 'the 1930s'
                problems.append(f"fuzzed value {value['literal']!r} still shown")
        else:
            problems += _worded(value, question)
    return problems


@pytest.fixture(scope="module")
def composed(demo_composed):
    wh = warehouse.open(demo_composed, read_only=True)
    try:
        rows = wh.sql("select * from questions").to_pylist()
        texts = {r["url"]: " ".join((r["text"] or "").split())
                 for r in wh.sql("select url, text from pages").to_pylist()}
    finally:
        wh.close()
    return rows, texts


def test_composed_questions_are_right_and_unique_by_ground_truth(demo_site, composed):
    rows, _ = composed
    truth = Truth(demo_site[0])
    multi = [r for r in rows if r["composer"].startswith("compose:")]
    assert len(multi) >= 150   # 235 when hops became pages (bridges only)
    hops = Counter(r["hops"] for r in multi)
    assert set(hops) <= {2, 3, 4}
    # pages reached by bridges: fewer chains reach 4 pages (162 / 59 / 14 at pages-as-hops)
    assert hops[2] / len(multi) >= 0.15 and hops[3] / len(multi) >= 0.15 and hops[4] > 0, hops
    bad = []
    for r in multi:
        trace = json.loads(r["trace"])
        problems = []
        for side in _chains(trace):   # a comparison: each side's description and date
            problems += _worded(side["root"], r["question"])
            answers = truth.answers(side)
            want = side["ask"]["answer"] if "sides" in trace else r["answer"]
            if answers != {want}:
                problems.append(f"answers by ground truth: {sorted(answers)[:3]}")
        if r["answer_type"] == "yes_no" and r["answer"] != _yes_no(r["question"], trace):
            problems.append("the answer is not the order of the two dates")
        if problems:
            bad.append((r["question"], r["answer"], problems))
    assert len(bad) <= 0.01 * len(multi), bad[:5]


def _yes_no(question: str, trace: dict) -> str:
    """The answer the dates (the first-named side's first) or nationalities of a yes/no
    comparison's sides give."""
    first, second = (s["ask"]["answer"] for s in trace["sides"])
    if trace["comparison"] == "nationality":
        return "yes" if first == second else "no"
    first, second = (re.search(r"\d{4}", x).group() for x in (first, second))
    return "yes" if (first < second) == (" before " in question) else "no"


def test_every_quote_is_verbatim_and_no_answer_is_in_its_question_but_as_an_option(composed):
    rows, texts = composed
    leak = AnswerNotLeaked()
    assert any(r["answer_type"] == "yes_no" for r in rows)
    for r in rows:
        assert r["evidence"], r["question"]
        for ev in r["evidence"]:
            assert " ".join(ev["quote"].split()) in texts[ev["url"]], ev
        if r["answer_type"] != "yes_no":   # a yes or no: the order of two quoted dates
            assert r["answer"] in r["evidence"][-1]["quote"], "the last quote states the answer"
        rec = warehouse.QuestionRecord(question_id=r["question_id"], question=r["question"],
                                       answer=r["answer"], answer_aliases=tuple(r["answer_aliases"]),
                                       hop_kind=r["hop_kind"])
        assert leak.check_one(rec, None).status == "pass", r["question"]
        assert r["answer_type"] in ("year", "number", "date", "entity", "yes_no", "other")
        assert len(r["evidence"]) == r["steps"] or r["composer"].startswith("seed:")
        assert len({e["url"] for e in r["evidence"]}) == r["hops"]


def _chains(trace: dict) -> list[dict]:
    """The chain traces of a stored question: its own, or a comparison's two sides."""
    return trace["sides"] if "sides" in trace else [trace]


def _shape(question: str, trace: dict) -> str:
    names = []

    def walk(node):
        names.append(node["name"])
        for c in node.get("clauses", []):
            v = c["value"]
            names.extend([v["literal"], v["fuzzed"] or ""] if "literal" in v else [])
            if "literal" not in v:
                walk(v)
    for side in _chains(trace):
        walk(side["root"])
    for n in sorted(filter(None, names), key=len, reverse=True):
        question = question.replace(n, "<X>")
    return re.sub(r"\d[\d,]*", "<N>", question)


def test_wording_varies(composed):
    rows, _ = composed
    multi = [r for r in rows if r["composer"].startswith("compose:")]
    shapes = Counter(_shape(r["question"], json.loads(r["trace"])) for r in multi)
    assert len(shapes) >= 100
    assert shapes.most_common(1)[0][1] <= 0.05 * len(multi), shapes.most_common(3)


def test_every_composed_hop_is_a_page_its_chain_bridges_to(demo_composed):
    """Measured as benchmarks/bench_hops.py measures any warehouse, from stored rows alone:
    each multi-page question quotes >= hops pages, each page after the first is named in an
    earlier quote, no bridge entity is named in the question, and no search of its text
    (k = 3) returns the answer's page."""
    import importlib.util
    import sys
    from pathlib import Path
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_hops.py"
    spec = importlib.util.spec_from_file_location("bench_hops", path)
    bench = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_hops", bench)   # its dataclasses look their module up
    spec.loader.exec_module(bench)
    wh = warehouse.open(demo_composed, read_only=True)
    try:
        questions, verdicts = bench.measure(wh)
    finally:
        wh.close()
    assert len(questions) >= 150
    failed = [(q.question, v) for q, v in zip(questions, verdicts)
              if not (v.pages and v.bridged and v.hidden) or v.shortcut]
    assert not failed, failed[:3]
