"""Near-duplicate detection with the real all-MiniLM-L6-v2 (one load per session)."""

import numpy as np

from verifiers import CheckContext, NearDuplicates
from verifiers.dedup import cluster, similar_pairs

from .conftest import make_question


def test_near_duplicates_keep_one_per_cluster(embedder):
    qs = [make_question("a", "Who directed the film Jaws?", "Steven Spielberg"),
          make_question("b", "who directed the film jaws", "Spielberg"),  # exact after normalising
          make_question("c", "Who was the director of the movie Jaws?", "Steven Spielberg"),
          make_question("d", "Who composed the music for the film Jaws?", "John Williams"),
          make_question("e", "In what year did the Eiffel Tower open?", "1889"),
          make_question("f", "When did the Eiffel Tower open?", "1889")]
    results = NearDuplicates(embedder=embedder).run(qs, CheckContext())
    assert [r.status for r in results] == ["pass", "fail", "fail", "pass", "pass", "fail"]
    assert results[1].details["kind"] == "exact" and results[1].details["kept"] == "a"
    assert results[2].details["kind"] == "semantic" and results[2].details["kept"] == "a"
    assert results[5].details["kept"] == "e" and results[5].details["similarity"] >= 0.92
    # The threshold is configurable: strict enough, the paraphrases stand on their own.
    strict = NearDuplicates(embedder=embedder, threshold=0.99).run(qs, CheckContext())
    assert [r.status for r in strict] == ["pass", "fail", "pass", "pass", "pass", "pass"]


def test_blocked_search_equals_brute_force():
    rng = np.random.default_rng(0)
    base = rng.normal(size=(40, 16)).astype(np.float32)
    emb = np.concatenate([base, base[:10] + 0.05 * rng.normal(size=(10, 16)).astype(np.float32)])
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    sims = emb @ emb.T
    brute = {(i, j) for i in range(50) for j in range(i + 1, 50) if sims[i, j] >= 0.9}
    for block in (1, 7, 64):
        assert {(i, j) for i, j, _ in similar_pairs(emb, 0.9, block=block)} == brute
    roots, how = cluster([f"q{i}" for i in range(50)], emb, 0.9)
    assert all(roots[40 + k] == k for k in range(10)) and set(how) == set(range(40, 50))


def test_near_duplicates_against_stored_questions(wh, embedder):
    from verifiers import run_checks
    first = [make_question("old", "In what year did the Eiffel Tower open?", "1889")]
    check = NearDuplicates(embedder=embedder, against_stored=True)
    wh.append(first, run_id="compose-1")
    run_checks(wh, first, [check], run_id="verify-1")
    later = [make_question("new", "When did the Eiffel Tower open?", "1889"),
             make_question("other", "Who designed the Eiffel Tower?", "Gustave Eiffel")]
    results = check.run(later, CheckContext(wh=wh))
    assert [r.status for r in results] == ["fail", "pass"]
    assert results[0].details["kept"] == "old" and results[0].details["kept_is_stored"]
    # Without the option only the batch itself is compared.
    assert [r.status for r in NearDuplicates(embedder=embedder).run(later, CheckContext(wh=wh))] \
        == ["pass", "pass"]


def test_each_text_is_embedded_once_per_check():
    """Batches re-read the stored questions; the check embeds each text only once."""
    import numpy as np

    from verifiers.dedup import NearDuplicates

    class Counting:
        def __init__(self):
            self.seen = []

        def encode(self, texts):
            self.seen += list(texts)
            return np.eye(8, dtype=np.float32)[[hash(t) % 8 for t in texts]]

    emb = Counting()
    check = NearDuplicates(embedder=emb)
    a, b = ["What is the capital of Varno?", "Who founded Kell?"], ["Who founded Kell?", "When?"]
    first, second = check._encode(a), check._encode(b)
    assert sorted(emb.seen) == sorted(set(a + b))
    assert np.array_equal(first[1], second[0])
