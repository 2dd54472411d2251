"""import_questions: people's questions (a JSONL file's split, read as `datagen eval` reads
it) into the warehouse as questions of composer `human`, with their evidence chain quoted
from the gold paragraphs' stored pages, in one commit.

Idempotent: a question's id is the content id of its normalised question and answer (as a
composed question's), so rows already stored are not written again. A question whose gold
pages are not all in the warehouse is skipped and counted by reason (records.py).
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Sequence

from datagen.compose.run import NoPages
from datagen.human.evidence import evidence_chain
from datagen.human.records import (GOLD_PAGE_MISSING, NO_GOLD_PAGES, GoldPage, HumanQuestion,
                                   ImportConfig, ImportSummary)
from warehouse import Evidence, QuestionRecord

if TYPE_CHECKING:
    from warehouse import Warehouse

log = logging.getLogger(__name__)
COMPOSER = "human"


def import_questions(wh: "Warehouse", questions: Sequence[HumanQuestion],
                     cfg: ImportConfig) -> ImportSummary:
    """Store `questions` (see the module docstring) as one `import` run: its config and
    summary in the `runs` row, the new question rows in one commit."""
    with wh.run("import", {**cfg.model_dump(mode="json"), "composer": COMPOSER}) as run:
        summary = ImportSummary(run_id=run.run_id, questions=len(questions))
        records = _records(wh, questions, cfg, summary)
        if records:
            wh.append(records, run_id=run.run_id)
        run.summary = summary.as_dict()
    return summary


def _records(wh: "Warehouse", questions: Sequence[HumanQuestion], cfg: ImportConfig,
             summary: ImportSummary) -> list[QuestionRecord]:
    """The new rows of `questions`; the skipped and the stored ones counted in `summary`."""
    urls = site_urls(wh)
    if not urls:
        raise NoPages(f"warehouse {wh.root} has no stored pages: build the questions' corpus "
                      "site into it first (datagen site CORPUS SITE; datagen build SITE)")
    pages = gold_pages(wh, [urls[t] for q in questions for t in _stems(q) if t in urls])
    stored = _stored_ids(wh)
    records: dict[str, QuestionRecord] = {}
    for q in questions:
        reason, rec = _record(q, urls, pages, cfg)
        if rec is None:
            summary.skipped[reason] += 1
            continue
        if rec.question_id in stored or rec.question_id in records:
            summary.existing += 1
        else:
            records[rec.question_id] = rec
        summary.by_hops[rec.hops] += 1
        summary.by_kind[rec.hop_kind or "one-page"] += 1
    summary.imported = len(records)
    return list(records.values())


def _record(q: HumanQuestion, urls: dict[str, str], pages: dict[str, GoldPage],
            cfg: ImportConfig) -> tuple[str, QuestionRecord | None]:
    """(skip reason, None) or ("", the question's row)."""
    stems = _stems(q)
    if not stems:
        return NO_GOLD_PAGES, None
    if any(s not in urls or urls[s] not in pages for s in stems):
        log.info("question %s: a gold page is not in the warehouse (%s)", q.question_id,
                 ", ".join(t for t, s in zip(q.support_titles, stems) if s not in urls))
        return GOLD_PAGE_MISSING, None
    gold = list({urls[s]: pages[urls[s]] for s in stems}.values())
    return "", human_record(q, evidence_chain(gold, q.question, q.answers), cfg)


def human_record(q: HumanQuestion, evidence: Sequence[Evidence],
              cfg: ImportConfig) -> QuestionRecord:
    """A question row of composer `human`: hops = the distinct pages its evidence quotes."""
    from datagen.compose.run import question_id
    from verifiers import yes_or_no

    source_urls = tuple(dict.fromkeys(e.url for e in evidence))
    hops = len(source_urls)
    trace = {"version": 1, "file": str(cfg.questions), "split": cfg.split,
             "id": q.question_id, "gold_titles": list(q.support_titles), "type": q.kind}
    return QuestionRecord(
        question_id=question_id(q.question, q.answers[0]), question=q.question,
        answer=q.answers[0], answer_aliases=tuple(q.answers[1:]), hops=hops,
        actions=("IMPORT",), evidence=tuple(evidence), source_urls=source_urls,
        composer=COMPOSER, backend=COMPOSER, steps=hops,
        answer_type="yes_no" if yes_or_no(q.answers[0]) else "",
        hop_kind=q.kind if hops > 1 and q.kind in ("bridge", "comparison") else "",
        trace=json.dumps(trace, ensure_ascii=False))


def _stems(q: HumanQuestion) -> list[str]:
    """The site's page names of the question's gold titles (datagen/sites.py's url scheme)."""
    from datagen.sites import page_name

    return [page_name(t) for t in q.support_titles]


def site_urls(wh: "Warehouse") -> dict[str, str]:
    """Page name -> url of every stored page of a site written by datagen/sites.py."""
    from datagen.sites import title_of

    rows = wh.sql("select distinct url from pages where coalesce(text, '') <> ''").to_pylist()
    return {stem: r["url"] for r in rows if (stem := title_of(r["url"]))}


def gold_pages(wh: "Warehouse", urls: list[str]) -> dict[str, GoldPage]:
    """url -> the page's latest stored title, text and links (url -> anchor)."""
    if not urls:
        return {}
    rows = wh.sql("select url, arg_max(title, fetched_at) as title, arg_max(text, fetched_at) "
                  "as text, arg_max(links, fetched_at) as links from pages "
                  "where url in (select unnest(?)) group by url", [sorted(set(urls))])
    return {r["url"]: GoldPage(r["url"], r["title"] or "", r["text"] or "",
                               {l["url"]: l["anchor"] or "" for l in r["links"] or []})
            for r in rows.to_pylist()}


def _stored_ids(wh: "Warehouse") -> set[str]:
    """Every stored question's id (a composed question that asks the same is not written
    twice either)."""
    return {r["question_id"] for r in wh.sql("select question_id from questions").to_pylist()}
