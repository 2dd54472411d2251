"""The reward mode refuses a list of candidates of any types (issue 29), and still pays
the qualifiers a single right answer carries. The judging mode is unchanged."""

import pytest

from verifiers import reward, score_response

WHERE = "Where was she born?"


@pytest.mark.parametrize("response,gold,question", [
    # the attacks the issue found paid: the gold beside golds of other types
    ("Answer: Ravi Shastri\n- South Carolina\n- January 2017", "Ravi Shastri", None),
    ("Answer: April 7, 2016 and Geoffrey Dyson Palmer, OBE and Wilt Chamberlain",
     "April 7, 2016", None),
    ("Answer: a breaded chicken patty & Iran", "Iran", None),
    ("Answer: - Iran\n- May 7, 2018", "Iran", None),  # the list starts on the answer line
    ("Answer: Andrew Gold\nSeptember 27, 2017\n20%", "Andrew Gold", None),
    ("Paris, 1889", "Paris", None),
    ("1889, Paris", "1889", None),
    # a qualifier joined as an alternative is a second candidate
    ("Paris or France", "Paris", WHERE),  # "France" alone pays for a where-question
    ("Monday or April 7, 2016", "April 7, 2016", None),
    ("Alex Ferguson or manager", "Alex Ferguson", None),
])
def test_lists_of_any_types_are_refused(response, gold, question):
    result = score_response(response, gold, (), question)
    assert (result.reward, result.rule) == (0.0, "refused_list"), result
    assert reward(response, gold, question=question, mode="judge") == 1.0


@pytest.mark.parametrize("response,gold,question", [
    ("Paris, France", "Paris", WHERE),  # a place with the region or country containing it
    ("Answer: Toronto, Ontario, Canada", "Toronto", "Which city hosted it?"),
    ("Monday, April 7, 2016", "April 7, 2016", None),  # a date with its weekday
    ("April 7, 2016 (a Thursday)", "April 7, 2016", None),
    ("Geoffrey Dyson Palmer, OBE", "Geoffrey Dyson Palmer", None),  # a name with a title
    ("Tim Cook, the chief executive", "Tim Cook", "Who is the chief executive of Apple?"),
    ("Tim Cook, CEO of Apple", "Tim Cook", "Who runs Apple?"),
    ("42 (km)", "42 km", None),  # a number with its unit
    ("330 m (1,083 ft)", "330 m", None),
    ("Well, it is Paris", "Paris", "What is the capital of France?"),  # a frame
    ("Paris, the capital of France", "Paris", "What is the capital of France?"),  # restated
    ("Lyon and Paris", "Paris and Lyon", None),  # the gold is itself a list
    ("Simon & Garfunkel", "Simon & Garfunkel", None),
    ("Answer: **Paris**", "Paris", None),
])
def test_a_single_answer_with_its_qualifiers_still_pays(response, gold, question):
    result = score_response(response, gold, (), question)
    assert result.reward == 1.0, result
