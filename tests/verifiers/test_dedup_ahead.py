"""Embedding ahead in a background thread gives the verdicts of embedding batch by batch."""

from __future__ import annotations

import numpy as np

from verifiers import CheckContext, NearDuplicates

from .conftest import make_question


class WordEmbedder:
    """A bag-of-words embedder that records the groups it was asked to embed."""

    def __init__(self, fail: bool = False):
        self.groups: list[list[str]] = []
        self.fail = fail

    def encode(self, texts):
        if self.fail:
            raise RuntimeError("model missing")
        self.groups.append(list(texts))
        vocab = ["jaws", "film", "tower", "eiffel", "open", "directed", "who", "when", "sea"]
        emb = np.array([[t.lower().count(w) for w in vocab] for t in texts], np.float32) + 1e-3
        return emb / np.linalg.norm(emb, axis=1, keepdims=True)


QS = [make_question("a", "Who directed the film Jaws?", "x"),
      make_question("b", "When did the Eiffel Tower open?", "x"),
      make_question("c", "who directed the film jaws", "x"),
      make_question("d", "When did the Eiffel tower open to all?", "x"),
      make_question("e", "Who directed the sea film?", "x")]


def _verdicts(ahead: bool, embedder):
    check = NearDuplicates(embedder=embedder, threshold=0.9)
    batches = [QS[:2], QS[2:4], QS[4:]]
    if ahead:
        check.encode_ahead([[q.question for q in b] for b in batches])
    return [r for b in batches for r in check.run(b, CheckContext())]


def test_embedding_ahead_gives_the_same_verdicts_and_groups():
    plain, early = WordEmbedder(), WordEmbedder()
    assert _verdicts(True, early) == _verdicts(False, plain)
    assert early.groups == plain.groups and len(plain.groups) == 3


def test_an_embedding_error_ahead_is_the_batch_error():
    from verifiers.runner import run_check
    check = NearDuplicates(embedder=WordEmbedder(fail=True))
    check.encode_ahead([[q.question for q in QS]])
    results = run_check(check, QS, CheckContext())
    assert {r.status for r in results} == {"error"} and "model missing" in results[0].reason


def test_a_second_process_embeds_every_other_batch_to_the_same_bits(embedder, monkeypatch):
    """A large run's batches split between the thread and a spawned process: every vector is
    bit-identical to embedding batch by batch in this process, so the verdicts are too."""
    import verifiers.dedup as dedup
    monkeypatch.setattr(dedup, "SECOND_PROCESS_TEXTS", 4)
    qs = [make_question(f"q{i}", text, "x") for i, text in enumerate(
        [q.question for q in QS] + [f"Which river flows through town number {i}?"
                                    for i in range(12)])]
    batches = [qs[i:i + 3] for i in range(0, len(qs), 3)]
    plain = NearDuplicates(embedder=embedder)
    want = [r for b in batches for r in plain.run(b, CheckContext())]
    split = NearDuplicates(embedder=embedder)
    assert split._second_process(len(qs)) is not None   # (started on its first job only)
    split.encode_ahead([[q.question for q in b] for b in batches])
    got = [r for b in batches for r in split.run(b, CheckContext())]
    assert got == want and split._memo.keys() == plain._memo.keys()
    assert all(np.array_equal(split._memo[t], plain._memo[t]) for t in plain._memo)
