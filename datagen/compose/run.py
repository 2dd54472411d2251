"""run_compose: pages -> facts -> seeds -> composed questions, committed in batches.

Resumable: question ids are content ids of the normalised question and answer, rows already
in the warehouse are not written again, and a seed that already has a composed child (of
this backend) is not composed again. So a rerun after a crash continues where the last
committed batch ended, and a rerun after success adds nothing.

Sharded (`shard=(i, n)`, the Dask runner's compose tasks): run i of n takes the seeds whose
stable hash is i mod n, so n runs, in any order or at the same time, write the questions one
unsharded run writes. Each shard still reads every page (the fact store is global).
"""

from __future__ import annotations

import html
import json
import logging
import queue
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Callable, Sequence, TypeVar

from datagen.compose.backend import TEMPLATE_WORDING, ComposeBackend
from datagen.compose.compare import SHARE, comparisons, side_of
from datagen.compose.compose import Composer, Outcome
from datagen.compose.config import ComposeConfig
from datagen.compose.validate import Validator
from datagen.seeds import FactStore, Page, make_seeds, mine_pages, render_question, trace
from datagen.seeds.chain import Chain
from datagen.seeds.questions import Seed
from warehouse import QuestionRecord, content_id

if TYPE_CHECKING:
    from warehouse import Warehouse

log = logging.getLogger(__name__)
_Item = TypeVar("_Item")
_Result = TypeVar("_Result")


class NoPages(ValueError):
    """The warehouse has no stored pages to compose from."""


@dataclass
class ComposeSummary:
    run_id: str = ""
    backend: str = ""
    pages: int = 0
    pages_without_facts: int = 0
    facts: int = 0
    facts_by_source: dict = field(default_factory=dict)
    seeds_total: int = 0            # seed candidates
    seeds: int = 0                  # valid seeds (rows, new or already stored)
    seeds_new: int = 0
    seeds_rejected: Counter = field(default_factory=Counter)
    composed: int = 0               # composed this run
    composed_existing: int = 0      # seeds already composed by an earlier run (skipped)
    composed_by_hops: Counter = field(default_factory=Counter)
    compared: int = 0               # of the composed, comparisons (compose/compare.py)
    not_composed: Counter = field(default_factory=Counter)
    rejected_steps: Counter = field(default_factory=Counter)
    seeds_done: int = 0
    elapsed_s: float = 0.0
    llm: dict = field(default_factory=dict)      # the model backend's totals, where it has one
    shard: list = field(default_factory=list)    # [i, n] when this run composed shard i of n
    error: str = ""                              # first line of the error that ended the run

    @property
    def questions_per_s(self) -> float:
        return (self.seeds_new + self.composed) / self.elapsed_s if self.elapsed_s else 0.0

    def as_dict(self) -> dict[str, Any]:
        out = {f.name: (dict(v) if isinstance(v := getattr(self, f.name), dict) else v)
               for f in fields(self)}
        out["composed_by_hops"] = {str(k): v for k, v in sorted(self.composed_by_hops.items())}
        out["questions_per_s"] = round(self.questions_per_s, 2)
        return out


def make_backend(cfg: ComposeConfig):
    if cfg.backend == "embedded":
        from datagen.compose.embedded import EmbeddedBackend
        return EmbeddedBackend(cfg.fuzz_rate)
    import importlib  # the model-driven backend is written by the model-access issue
    return importlib.import_module("datagen.compose.llm_backend").make_llm_backend(cfg)


def run_compose(wh: "Warehouse", cfg: ComposeConfig, *, parent_run_id: str = "",
                progress: Callable[[ComposeSummary], None] | None = None,
                backend: ComposeBackend | None = None,
                shard: tuple[int, int] | None = None) -> ComposeSummary:
    """Compose questions from `wh`'s pages (see the module docstring); a `runs` row of kind
    'compose' records the config and the summary. `shard=(i, n)`: only shard i of n of the
    seeds. Raises NoPages on an empty warehouse."""
    _check_shard(cfg, shard)
    backend = backend or make_backend(cfg)
    config = {**cfg.model_dump(), **({"shard": list(shard)} if shard else {})}
    with wh.run("compose", config, parent_run_id=parent_run_id) as run:
        summary = ComposeSummary(run_id=run.run_id, backend=backend.name,
                                 shard=list(shard or []))
        try:
            backend.start(wh, run.run_id)
            _compose(wh, cfg, backend, summary, progress)
        except Exception as exc:
            summary.error = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise
        finally:
            backend.close()
            summary.llm = backend.summary()
            run.summary = summary.as_dict()
    return summary


def _check_shard(cfg: ComposeConfig, shard: tuple[int, int] | None) -> None:
    """A shard is (index, count) with 0 <= index < count; max_questions is a budget over all
    seeds, which no shard can keep alone."""
    if shard is None:
        return
    i, n = shard
    if not 0 <= i < n:
        raise ValueError(f"shard {tuple(shard)}: give (index, count) with 0 <= index < count")
    if cfg.max_questions is not None:
        raise ValueError("max_questions is a budget over all seeds: compose it unsharded")


def in_shard(seed: Seed, cfg_seed: int, shard: tuple[int, int] | None) -> bool:
    """Is `seed` in `shard`? A stable hash of what the seed asks (not of its position), so
    every seed falls in exactly one shard of n, whatever the run order."""
    if shard is None:
        return True
    f = seed.fact
    key = content_id(cfg_seed, f.subject, f.relation, f.value, seed.chain.ask.relation, "shard")
    return int(key, 16) % shard[1] == shard[0]


def _in_shard_id(question_id: str, shard: tuple[int, int] | None) -> bool:
    """Is a question made from several seeds (a comparison) this shard's to write?"""
    return shard is None or int(content_id(question_id, "shard"), 16) % shard[1] == shard[0]


def load_pages(wh: "Warehouse") -> list[Page]:
    rows = wh.sql("SELECT url, arg_max(title, fetched_at) AS title, arg_max(text, fetched_at) "
                  "AS text, arg_max(html, fetched_at) AS html, arg_max(links, fetched_at) AS "
                  "links FROM pages GROUP BY url ORDER BY url").to_pylist()
    return [Page(r["url"], html.unescape(r["title"] or ""), r["text"] or "", r["html"] or "",
                 tuple((l["url"], l["anchor"] or "") for l in r["links"] or []))
            for r in rows if r["text"]]


def _compose(wh, cfg: ComposeConfig, backend: ComposeBackend, summary: ComposeSummary, progress) -> None:
    t0 = time.perf_counter()
    pages = load_pages(wh)
    if not pages:
        raise NoPages(f"warehouse {wh.root} has no stored pages; crawl some first "
                      "(datagen crawl --demo, or datagen crawl URL_OR_FOLDER)")
    counts: Counter = Counter()
    facts = mine_pages(pages, counts)
    summary.pages, summary.pages_without_facts = len(pages), counts["page_without_facts"]
    summary.facts = len(facts)
    summary.facts_by_source = dict(Counter(f.source for f in facts))
    store = FactStore(facts, {p.url: p.title for p in pages})
    from datagen.tools import PageTools
    search = PageTools.open(wh)   # the agent's index: shortcuts, and uniqueness on real text
    validator = Validator(store, {p.url: " ".join(p.text.split()) for p in pages},
                          search if _search_uniqueness(cfg, store, pages) else None, search)
    shard = tuple(summary.shard) or None
    every = make_seeds(store, cfg.seed)
    seeds = [s for s in every if in_shard(s, cfg.seed, shard)]
    summary.seeds_total = len(seeds)
    existing, composed_parents = _existing(wh, backend.name)
    composer = Composer(store, validator, backend, (cfg.hops_min, cfg.hops_max), cfg.max_steps,
                        bridges_per_seed=cfg.bridges_per_seed)
    if _reached(cfg, summary, composed_parents):  # an earlier run already composed enough
        summary.composed_existing = len(composed_parents)
    start, kept = 0, []
    while start < len(seeds) and not _reached(cfg, summary, composed_parents):
        batch = seeds[start:start + _batch_size(cfg, backend, summary, composed_parents)]
        start += len(batch)
        records = _batch(batch, cfg, backend, validator, composer, summary, existing,
                         composed_parents, kept)
        if records and shard:  # another shard may have committed the same question since
            records = _not_stored(wh, records, existing)
        if records:
            wh.append(records, run_id=summary.run_id)  # lineage: the run that made each row
        existing.update(r.question_id for r in records)
        summary.seeds_done += len(batch)
        summary.elapsed_s = time.perf_counter() - t0
        if progress:
            progress(summary)
    if shard and start >= len(seeds):   # comparisons pair questions of every shard
        for seed in every:
            if not in_shard(seed, cfg.seed, shard):
                kept += _one_seed(seed, cfg, backend, validator, composer, set()).chains
    if start >= len(seeds) or cfg.max_questions is not None:
        _compare(wh, cfg, backend, composer, summary, existing, kept, shard)
    summary.elapsed_s = time.perf_counter() - t0


def _compare(wh, cfg: ComposeConfig, backend: ComposeBackend, composer: Composer, summary,
             existing, kept: list[Chain], shard: tuple[int, int] | None) -> None:
    """The comparisons of every kept question (this run's, an earlier run's, other shards'),
    in one commit: at most `compare.SHARE` of all multi-page questions, within max_questions;
    a shard writes those whose id falls in it, so n shards write what one run writes."""
    limit = int(sum(1 for c in kept if c.hops >= 2) * SHARE / (1 - SHARE))
    if cfg.max_questions is not None:
        limit = min(limit, max(0, cfg.max_questions - summary.composed))
    sides = [x for x in (side_of(c, composer.store.noun(c.root.url)) for c in kept) if x]
    records = [r for r in comparisons(sides, composer.validator, f"compose:{backend.name}",
                                      backend.name, cfg.seed, limit,
                                      (cfg.hops_min, cfg.hops_max))
               if r.question_id not in existing and _in_shard_id(r.question_id, shard)]
    if records:
        wh.append(records, run_id=summary.run_id)
        existing.update(r.question_id for r in records)
    summary.composed += len(records)
    summary.compared = len(records)
    for r in records:
        summary.composed_by_hops[r.hops] += 1


def _search_uniqueness(cfg: ComposeConfig, store: FactStore, pages: list[Page]) -> bool:
    """Whether descriptions are judged unique by search: some page is not fully known to the
    fact store (real text)."""
    return cfg.search_uniqueness and not all(p.url in store.structured for p in pages
                                             if p.url in store.by_subject)


def _existing(wh, backend_name: str) -> tuple[set[str], set[str]]:
    ids = {r["question_id"] for r in wh.sql("SELECT question_id FROM questions").to_pylist()}
    parents = {r["parent_id"] for r in wh.sql(
        "SELECT DISTINCT parent_id FROM questions WHERE composer = ? AND parent_id IS NOT NULL",
        [f"compose:{backend_name}"]).to_pylist()}
    return ids, parents


def _not_stored(wh, records: list[QuestionRecord], existing: set[str]) -> list[QuestionRecord]:
    """`records` less those whose id is in the warehouse now (a shard's `existing` is read once,
    at its start; two seeds of different shards can compose the same question)."""
    ids = [r.question_id for r in records]
    stored = {r["question_id"] for r in wh.sql(
        "SELECT question_id FROM questions WHERE question_id IN (SELECT unnest(?))",
        [ids]).to_pylist()}
    existing.update(stored)
    return [r for r in records if r.question_id not in stored]


def _batch_size(cfg: ComposeConfig, backend: ComposeBackend, summary: ComposeSummary, parents: set[str]) -> int:
    """Seeds in the next batch. A backend that composes on threads is a model's, whose calls
    cost: under max_questions its batch is no larger than the questions still wanted (at
    least one per thread), so a budget of 30 does not word 200 seeds first."""
    workers = backend.max_concurrency
    if cfg.max_questions is None or workers <= 1:
        return cfg.batch_size
    wanted = cfg.max_questions - summary.composed - len(parents)
    return max(1, min(cfg.batch_size, max(wanted, workers)))


def _reached(cfg: ComposeConfig, summary: ComposeSummary, parents: set[str]) -> bool:
    return cfg.max_questions is not None and summary.composed + len(parents) >= cfg.max_questions


@dataclass
class _SeedResult:
    seed_rec: QuestionRecord | None = None
    seed_reason: str = ""
    composed: list[QuestionRecord] = field(default_factory=list)
    skipped: bool = False           # composed by an earlier run
    outcomes: list[Outcome] = field(default_factory=list)
    chains: list[Chain] = field(default_factory=list)   # the seed's and its composed ones


def _batch(batch: list[Seed], cfg, backend, validator, composer, summary, existing,
           composed_parents, kept: list[Chain]) -> list[QuestionRecord]:
    """Rows of one batch: each valid seed, and its composed question (in seed order, also
    when a backend with max_concurrency > 1 composes the seeds on threads)."""
    budget = None if cfg.max_questions is None else max(
        0, cfg.max_questions - summary.composed - len(composed_parents))

    def one(seed: Seed) -> _SeedResult:
        return _one_seed(seed, cfg, backend, validator, composer, composed_parents)
    workers = backend.max_concurrency
    results = on_threads(one, batch, workers) if workers > 1 else [one(seed) for seed in batch]
    records = []
    for res in results:
        if res.seed_rec is None:
            summary.seeds_rejected[res.seed_reason] += 1
            continue
        summary.seeds += 1
        kept.extend(res.chains)
        if res.seed_rec.question_id not in existing:
            records.append(res.seed_rec)
            summary.seeds_new += 1
        summary.composed_existing += res.skipped
        for outcome in res.outcomes:
            summary.rejected_steps.update(outcome.rejected)
            if outcome.chain is None:
                summary.not_composed[outcome.reason] += 1
        for rec in res.composed:
            if rec.question_id not in existing and (budget is None or budget > 0):
                records.append(rec)
                existing.add(rec.question_id)   # two bridges may word the same question
                summary.composed += 1
                summary.composed_by_hops[rec.hops] += 1
                budget = None if budget is None else budget - 1
    return records


def on_threads(fn: Callable[[_Item], _Result], items: Sequence[_Item],
               workers: int) -> list[_Result]:
    """`[fn(x) for x in items]` on `workers` daemon threads, in item order; the first
    failure (by item) is raised once the threads stop. A stop in the main thread (Ctrl-C,
    SIGTERM) raises at once: items not started are dropped, and the process may exit while
    a model call is in flight (a thread pool's workers are joined at exit, so one stop left
    the process waiting on calls whose client was already closed)."""
    todo: queue.SimpleQueue[int] = queue.SimpleQueue()
    for i in range(len(items)):
        todo.put(i)
    results: dict[int, _Result] = {}
    errors: dict[int, BaseException] = {}
    stop = threading.Event()

    def work() -> None:
        while not stop.is_set():
            try:
                i = todo.get_nowait()
            except queue.Empty:
                return
            try:
                results[i] = fn(items[i])
            except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread
                errors[i] = exc
                stop.set()

    threads = [threading.Thread(target=work, name=f"compose-{n}", daemon=True)
               for n in range(min(workers, len(items)))]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        stop.set()
    if errors:
        raise errors[min(errors)]
    return [results[i] for i in range(len(items))]


def _one_seed(seed: Seed, cfg, backend: ComposeBackend, validator, composer, composed_parents) -> _SeedResult:
    """Validate one seed (worded by the backend's `write_seed`, else by its templates) and
    compose it. The seed row's `backend` is what worded it: the backend's name, or
    "embedded" for the template wording (also when the backend's wording failed)."""
    chain = seed.chain
    rng = random.Random(content_id(cfg.seed, seed.fact.subject, seed.fact.relation,
                                   seed.fact.value, chain.ask.relation, "compose"))
    chain.question = render_question(chain) or ""
    worded = backend.write_seed(chain, rng)
    chain.question = worded or chain.question
    reason = validator.check(chain)
    if reason:
        return _SeedResult(seed_reason=reason)
    seed_rec = to_record(chain, f"seed:{seed.source}",
                         backend.name if worded else TEMPLATE_WORDING, cfg.seed)
    outcomes = composer.compose_all(chain, rng)   # also when stored: comparisons pair them
    made = [o.chain for o in outcomes if o.chain]
    if seed_rec.question_id in composed_parents:
        return _SeedResult(seed_rec, skipped=True, chains=[chain] + made)
    composed = [to_record(c, f"compose:{backend.name}", backend.name, cfg.seed,
                          parent_id=seed_rec.question_id) for c in made]
    return _SeedResult(seed_rec, composed=composed, outcomes=outcomes, chains=[chain] + made)


def question_id(question: str, answer: str) -> str:
    """Content id of the normalised question and answer (never of URLs: ports change)."""
    return content_id(" ".join(question.lower().split()), " ".join(answer.lower().split()))


def to_record(chain: Chain, composer: str, backend: str, seed: int,
              parent_id: str | None = None) -> QuestionRecord:
    evidence = chain.evidence()
    urls = list(dict.fromkeys(e.url for e in evidence))
    actions = tuple(s["action"] for s in chain.steps if s.get("ok"))
    return QuestionRecord(
        question_id=question_id(chain.question, chain.ask.answer), question=chain.question,
        answer=chain.ask.answer, answer_aliases=tuple(chain.ask.aliases), hops=chain.hops,
        steps=chain.fact_count, hop_kind=chain.hop_kind, actions=actions,
        evidence=tuple(evidence), source_urls=tuple(urls), parent_id=parent_id,
        composer=composer, backend=backend,
        trace=json.dumps(trace(chain, backend, seed), ensure_ascii=False, default=str),
        answer_type=chain.ask.answer_type)
