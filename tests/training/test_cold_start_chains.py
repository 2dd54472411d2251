"""The cold start follows each training question's own evidence chain from the warehouse: a
two-page bridge question's script searches, opens the page naming the bridge entity, searches
that entity, opens its page, and answers the gold; a comparison's opens both compared pages.
`data.train_where` narrows the training stream, and so the questions the cold start scripts."""

from __future__ import annotations

import re

import pytest

from datagen.tools import PageTools
from tests.training.agent_helpers import make_agent
from training.config import DataConfig
from training.search_env.warm import warm_start_sequences
from training.split import resolve_split
from warehouse.reader import StreamReader

FILLER = " ".join(f"It has a market on day {d}." for d in range(10))
PAGES = {   # url: (title, text)
    "http://w/lake": ("Lake Kesto", f"Lake Kesto is deep. {FILLER} Lake Kesto lies north of Varo."),
    "http://w/varo": ("Varo", f"Varo is a town. {FILLER} The Varo bridge was built in 1934."),
    "http://w/ila": ("Ila Mott", f"Ila Mott is a painter. {FILLER} Ila Mott was born in 1901."),
    "http://w/oren": ("Oren Hale", f"Oren Hale is a poet. {FILLER} Oren Hale was born in 1899."),
    **{f"http://w/town{i}": (f"Town{i}", f"The Town{i} mill was built in {1700 + i}. {FILLER}")
       for i in range(8)},
}
BRIDGE = ("bridge", "When was the bridge built of the town Lake Kesto lies north of?", "1934",
          ["http://w/lake", "http://w/varo"])
COMPARED = ("compared", "Who was born first, Ila Mott or Oren Hale?", "Oren Hale",
            ["http://w/ila", "http://w/oren"])
ONE_PAGE = [(f"town{i}", f"When was the Town{i} mill built?", str(1700 + i), [f"http://w/town{i}"])
            for i in range(8)]


def _quote(url: str) -> str:
    return PAGES[url][1].rsplit(". ", 1)[-1] if "town" not in url else PAGES[url][1].split(". ")[0]


def _fill(wh) -> None:
    """The pages, the questions (hops = their pages), all passed into the medium band."""
    import datetime as dt

    from warehouse import Evidence, PageRecord, QuestionRecord
    from warehouse.admit import admit

    now = dt.datetime.now(dt.timezone.utc)
    rows = [BRIDGE, COMPARED, *ONE_PAGE]
    with wh.transaction() as tx:
        tx.append([PageRecord(url=u, title=t, text=x, content_hash=u, fetched_at=now)
                   for u, (t, x) in PAGES.items()])
        tx.append([QuestionRecord(
            question_id=qid, question=q, answer=a, hops=len(urls), source_urls=tuple(urls),
            hop_kind="" if len(urls) == 1 else ("comparison" if qid == "compared" else "bridge"),
            evidence=tuple(Evidence(u, _quote(u)) for u in urls)) for qid, q, a, urls in rows])
        admit(tx, [r[0] for r in rows], check="test", solver="test", band="medium")


@pytest.fixture
def scripts(wh, tiny_model_dir):
    """question id -> (its cold-start trajectory, the tool calls of its model turns)."""
    from training.models import load_tokenizer

    _fill(wh)
    tok = load_tokenizer(tiny_model_dir)
    agent = make_agent(tok, PageTools.open(wh), search_k=1, snippet_chars=40, max_turns=8,
                       max_observation_tokens=400, context_tokens=1024)
    split = resolve_split(DataConfig(eval_where="question_id = 'town0'"), wh)
    out = {}
    for t in warm_start_sequences(agent, wh, split.train_where, 4096, true_answers=True):
        said = tok.decode([i for i, m in zip(t.output_ids, t.loss_mask) if m])
        out[t.question_id] = t, re.findall(r"<(search|open|answer)>(.*?)</\1>", said)
    return out


def test_a_bridge_script_follows_its_chain_and_answers_the_gold(scripts):
    traj, calls = scripts["bridge"]
    assert [kind for kind, _ in calls] == ["search", "open", "search", "open", "answer"]
    assert calls[0][1] == BRIDGE[1] and calls[2][1] == "Varo"   # the entity the lake names
    assert calls[1][1].startswith("http://w/lake#") and calls[3][1].startswith("http://w/varo#")
    assert calls[-1][1] == "1934" and traj.reward == 1.0
    assert traj.info.agent.n_pages_seen >= 2 and "town0" not in scripts


def test_a_comparison_script_opens_both_compared_pages(scripts):
    traj, calls = scripts["compared"]
    opened = [arg.split("#")[0] for kind, arg in calls if kind == "open"]
    assert opened == ["http://w/ila", "http://w/oren"]
    assert calls[-1] == ("answer", "Oren Hale") and traj.reward == 1.0


def test_a_one_page_script_opens_only_when_the_results_lack_the_gold(scripts):
    """The snippet (40 characters of the mill's first sentence) shows the year: no open."""
    _, calls = scripts["town3"]
    assert calls == [("search", "When was the Town3 mill built?"), ("answer", "1703")]


def test_train_where_narrows_the_stream_and_the_cold_start(wh, tiny_model_dir):
    from training.models import load_tokenizer

    _fill(wh)
    every = resolve_split(DataConfig(eval_where="question_id = 'town0'"), wh)
    one_page = resolve_split(DataConfig(eval_where="question_id = 'town0'",
                                        train_where="hops = 1"), wh)
    streamed = {i.question_id for i in StreamReader(wh, {"medium": 1.0}, seed=0,
                                                       where=every.train_where, max_epochs=1)}
    narrowed = {i.question_id for i in StreamReader(wh, {"medium": 1.0}, seed=0,
                                                       where=one_page.train_where, max_epochs=1)}
    assert {"bridge", "compared"} <= streamed and "town0" not in streamed
    assert narrowed == {f"town{i}" for i in range(1, 8)}
    tok = load_tokenizer(tiny_model_dir)
    agent = make_agent(tok, PageTools.open(wh), search_k=1, max_turns=8)
    trajs = warm_start_sequences(agent, wh, one_page.train_where, 4096, true_answers=True)
    assert {t.question_id for t in trajs} == narrowed
    with pytest.raises(ValueError, match="data.train_where 'no_such_column = 1' is not a valid"):
        resolve_split(DataConfig(train_where="no_such_column = 1"), wh)


def test_evidence_pages_are_each_train_ready_questions_chain(wh):
    """agent.evidence_reward's denominators: every train_ready question's distinct pages."""
    from training.search_env.warm import evidence_pages

    _fill(wh)
    pages = evidence_pages(wh)
    assert pages["bridge"] == frozenset({"http://w/lake", "http://w/varo"})
    assert pages["town3"] == frozenset({"http://w/town3"}) and len(pages) == 10
