"""Real text: the shared corpora written as local sites, crawled with `datagen crawl FOLDER`,
then composed with the same code as the demo world (no corpus-specific code)."""

from __future__ import annotations

from collections import Counter

import pytest

import warehouse
from datagen import sites
from datagen.compose import ComposeConfig, run_compose
from verifiers import AnswerNotLeaked, is_equivalent

# corpus -> (writer, source under shared/data/corpus, fewest seeds, fewest 2-page questions,
# max_questions: stop composing once the floor is safely met). A hop is a page reached by a
# bridge (a sentence of one page naming the next): these small corpora have few (seed 0:
# hotpotqa 9, wikispeedia 3, kilt 0 of 99 unrelated articles); the HotpotQA dev685 site is
# the corpus for volume (benchmarks/bench_hops.py)
CORPORA = {
    "hotpotqa": (sites.write_hotpotqa_site, "hotpotqa_train100_corpus.json", 100, 5, None),
    "kilt": (sites.write_kilt_site, "kilt_wikipedia_pages_99.jsonl", 50, 0, None),
    "wikispeedia": (sites.write_wikispeedia_site, "wikispeedia_subset", 50, 2, None),
}


@pytest.mark.shared_data
@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_real_corpus_composes_with_verbatim_evidence(corpus, shared_data, tmp_path, capsys):
    from datagen.cli import main
    writer, source, min_seeds, min_two_hop, max_questions = CORPORA[corpus]
    site = writer(shared_data / "corpus" / source, tmp_path / "site")
    root = tmp_path / "wh"
    assert main(["crawl", str(site), "--warehouse", str(root)]) == 0
    capsys.readouterr()
    wh = warehouse.open(root)
    try:
        summary = run_compose(wh, ComposeConfig(seed=0, max_questions=max_questions))
        rows = wh.sql("select * from questions").to_pylist()
        texts = {r["url"]: " ".join((r["text"] or "").split())
                 for r in wh.sql("select url, text from pages").to_pylist()}
    finally:
        wh.close()
    hops = Counter(r["hops"] for r in rows if r["composer"].startswith("compose:"))
    print(f"{corpus}: seeds {summary.seeds}, composed by hops {dict(hops)}")
    assert summary.seeds >= min_seeds and hops[2] >= min_two_hop, (summary.seeds, hops)
    for r in rows:
        for ev in r["evidence"]:
            assert " ".join(ev["quote"].split()) in texts[ev["url"]], ev
        if r["answer_type"] == "yes_no":   # as verifiers.Grounded: two pages compared
            assert r["hop_kind"] == "comparison" and len(set(r["source_urls"])) >= 2, r
        else:
            assert is_equivalent(r["evidence"][-1]["quote"], r["answer"]), r
        rec = warehouse.QuestionRecord(question_id="", question=r["question"], answer=r["answer"],
                                       hop_kind=r["hop_kind"])   # a comparison names options
        assert AnswerNotLeaked().check_one(rec, None).status == "pass", r["question"]
