"""verifiers.UniqueAnswer uses the tools' persisted index when the context hands it one."""

from __future__ import annotations

from datagen.tools import PageTools
from verifiers import CheckContext, UniqueAnswer
from warehouse import Evidence, QuestionRecord

VG = ("Vincent van Gogh", "Vincent van Gogh was a Dutch painter born in 1853. "
      "He painted The Starry Night.")
ALT = ("Jan Vermeer the Younger", "Jan Vermeer the Younger, a Dutch painter born in 1853, also "
       "painted a work he called The Starry Night.")


def _question() -> QuestionRecord:
    return QuestionRecord(question_id="q", question="Which Dutch painter born in 1853 painted "
                          "The Starry Night?", answer="Vincent van Gogh",
                          evidence=(Evidence("http://art/vg", "He painted The Starry Night."),))


def test_unique_answer_through_injected_page_index():
    pages = {"http://art/vg": VG, "http://art/other": ("Tulips", "Tulips grow in spring.")}
    tools = PageTools.from_pages(pages)
    [r] = UniqueAnswer().run([_question()], CheckContext(pages=tools))
    assert r.status == "pass", r.reason
    tools = PageTools.from_pages({**pages, "http://art/alt": ALT})
    [r] = UniqueAnswer().run([_question()], CheckContext(pages=tools))
    assert r.status == "fail" and "Jan Vermeer the Younger" in r.reason
