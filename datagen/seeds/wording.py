"""Question wordings of what a question asks (>= 3 phrasings per relation).

Placeholders: {e} the entity asked about (a name or a description), {an} the answer's noun
("city", "university"), {verb} a prose relation's verb ("founded", "opened"), {q} the question
phrase of a cloze. A template that needs a placeholder the question cannot fill is skipped.
"""

from __future__ import annotations

ASKS: dict[str, list[str]] = {
    "capital": ["What is the capital of {e}?", "Which city serves as the capital of {e}?",
                "From which city is {e} governed?", "{e} is governed from which city?"],
    "located_in": ["Where is {e} located?", "In which {an} is {e} located?",
                   "{e} lies in which {an}?", "In what {an} can {e} be found?"],
    "born_in": ["Where was {e} born?", "In which {an} was {e} born?",
                "What is the birthplace of {e}?", "{e} was a native of which {an}?"],
    "born_on": ["When was {e} born?", "On what date was {e} born?",
                "What is the date of birth of {e}?", "{e} was born on which date?"],
    "member_of": ["Which {an} was {e} a member of?", "To which {an} did {e} belong?",
                  "{e} joined which {an}?", "Of what {an} was {e} a member?"],
    "educated_at": ["Where did {e} study?", "At which {an} was {e} educated?",
                    "Which {an} did {e} attend?", "{e} is an alumnus of which {an}?"],
    "founded_by": ["Who founded {e}?", "Who established {e}?", "Who was the founder of {e}?",
                   "{e} was founded by whom?"],
    "directed_by": ["Who directed {e}?", "Who was the director of {e}?",
                    "{e} was directed by whom?", "Which filmmaker directed {e}?"],
    "written_by": ["Who wrote {e}?", "Who is the author of {e}?", "{e} was written by whom?",
                   "Which writer wrote {e}?"],
    "produced_by": ["Who produced {e}?", "Who was the producer of {e}?",
                    "{e} was produced by whom?"],
    "created_by": ["Who created {e}?", "Who was the creator of {e}?", "{e} was created by whom?"],
    "composed_by": ["Who composed {e}?", "Who was the composer of {e}?",
                    "{e} was composed by whom?"],
    "developed_by": ["Who developed {e}?", "Which {an} developed {e}?",
                     "{e} was developed by which {an}?"],
    "published_by": ["Who published {e}?", "Which {an} published {e}?",
                     "{e} was published by which {an}?"],
    "designed_by": ["Who designed {e}?", "Who was the designer of {e}?",
                    "{e} was designed by whom?"],
    "organised_by": ["Who organised {e}?", "Which {an} organised {e}?",
                     "{e} was organised by which {an}?", "Which {an} was behind {e}?"],
    "founded_year": ["In what year was {e} founded?", "When was {e} established?",
                     "What is the founding year of {e}?", "{e} was founded in which year?"],
    "released_year": ["In which year was {e} released?", "When did {e} first appear?",
                      "{e} came out in what year?", "What year was {e} released in?"],
    "held_on": ["On what date did {e} take place?", "When was {e} held?",
                "What was the date of {e}?", "{e} began on which date?"],
    "population": ["What is the population of {e}?", "How many people live in {e}?",
                   "How many inhabitants does {e} have?", "{e} has how many residents?"],
    "employees": ["How many people does {e} employ?", "What is the staff size of {e}?",
                  "How many employees does {e} have?", "{e} has a staff of how many?"],
    "attendance": ["How many people attended {e}?", "What was the attendance at {e}?",
                   "How large was the crowd at {e}?", "{e} drew an attendance of how many?"],
    "area_km2": ["What is the area of {e} in square kilometres?",
                 "How many square kilometres does {e} cover?",
                 "How large is {e} in km²?", "{e} spans how many square kilometres?"],
    "runtime_minutes": ["How long is {e} in minutes?", "What is the running time of {e}?",
                        "For how many minutes does {e} run?", "{e} runs for how many minutes?"],
    "pages": ["How many pages does {e} have?", "How long is {e} in pages?",
              "What is the page count of {e}?", "{e} runs to how many pages?"],
    "currency": ["What is the currency of {e}?", "Which currency is used in {e}?",
                 "What do people in {e} pay with?", "{e} uses which currency?"],
    "genre": ["What genre is {e}?", "In which genre is {e} classified?",
              "To what genre does {e} belong?", "{e} belongs to which genre?"],
    # prose relations (real pages)
    "died_on": ["When did {e} die?", "On what date did {e} die?", "What is the date of death of {e}?"],
    "died_year": ["In what year did {e} die?", "When did {e} die?", "{e} died in which year?"],
    "nationality": ["What is the nationality of {e}?", "Of which nationality is {e}?",
                    "{e} is of what nationality?"],
    "year_verb": ["In what year was {e} {verb}?", "When was {e} {verb}?",
                  "{e} was {verb} in which year?", "What year was {e} {verb} in?"],
    # the entity itself ('self'): {e} is a description of the answer
    "self": ["What is the name of {e}?", "Name {e}.", "{e} goes by what name?",
             "What is {e} called?"],
    # a cloze of a sentence naming another page: {q} stands where the answer was
    "link": ["{cloze_which}?", "{cloze_wh}?", "Which {an} completes this: \"{cloze_blank}\"?"],
}

# prose year relations share the `year_verb` wordings
YEAR_VERB_RELATIONS = {"founded_year": "founded", "released_year": "released",
                       "published_year": "published", "opened_year": "opened",
                       "built_year": "built", "completed_year": "completed",
                       "launched_year": "launched", "born_year": "born", "died_year": "died"}

# relations never asked: the noun of a described node would give their value away
NOT_ASKED = {"occupation", "org_type", "work_type", "event_type", "is_a"}


def templates_for(relation: str, prose: bool = False) -> list[str]:
    """Ask templates of a relation ([] when it is not asked)."""
    if relation in NOT_ASKED:
        return []
    if prose and relation in YEAR_VERB_RELATIONS and relation not in ASKS:
        return ASKS["year_verb"]   # 'was died' does not read: died_year has its own
    return ASKS.get(relation) or (ASKS["year_verb"] if relation in YEAR_VERB_RELATIONS else [])


def fill(template: str, **slots: str) -> str | None:
    """The template with its slots filled and its first letter capitalised; None when a slot
    it needs is missing."""
    try:
        text = template.format(**slots)
    except KeyError:
        return None
    text = " ".join(text.split())
    return text[0].upper() + text[1:] if text else None


# How a clause describes a node, per (relation, direction); {v} is the value's rendering
# (a name, a description, or a literal with its preposition: "in 1204", "on 3 May 1923").
CLAUSES: dict[tuple[str, str], list[str]] = {
    ("capital", "out"): ["whose capital is {v}", "governed from {v}", "with {v} as its capital"],
    ("capital", "in"): ["that is the capital of {v}", "which serves as the capital of {v}",
                        "from which {v} is governed"],
    ("located_in", "out"): ["located in {v}", "that lies in {v}", "situated in {v}"],
    ("located_in", "in"): ["where {v} is located", "in which {v} lies", "that is home to {v}"],
    ("born_in", "out"): ["born in {v}", "who was born in {v}", "whose birthplace is {v}"],
    ("born_in", "in"): ["where {v} was born", "that is the birthplace of {v}",
                        "in which {v} was born"],
    ("member_of", "out"): ["who was a member of {v}", "who belonged to {v}", "who joined {v}"],
    ("member_of", "in"): ["that {v} was a member of", "to which {v} belonged", "that {v} joined"],
    ("educated_at", "out"): ["who studied at {v}", "educated at {v}",
                             "who is an alumnus of {v}"],
    ("educated_at", "in"): ["where {v} studied", "at which {v} was educated",
                            "that {v} attended"],
    ("founded_by", "out"): ["founded by {v}", "that {v} established", "whose founder was {v}"],
    ("founded_by", "in"): ["who founded {v}", "who established {v}", "behind the founding of {v}"],
    ("directed_by", "out"): ["directed by {v}", "that {v} directed", "whose director was {v}"],
    ("directed_by", "in"): ["who directed {v}", "who was the director of {v}",
                            "credited as director of {v}"],
    ("written_by", "out"): ["written by {v}", "that {v} wrote", "whose author is {v}"],
    ("written_by", "in"): ["who wrote {v}", "who was the author of {v}",
                           "credited with writing {v}"],
    ("produced_by", "in"): ["who produced {v}", "who was the producer of {v}",
                            "credited as producer of {v}"],
    ("created_by", "in"): ["who created {v}", "who was the creator of {v}", "behind {v}"],
    ("composed_by", "in"): ["who composed {v}", "who was the composer of {v}",
                            "credited with the music of {v}"],
    ("developed_by", "in"): ["that developed {v}", "which was the developer of {v}",
                             "behind the development of {v}"],
    ("published_by", "in"): ["that published {v}", "which was the publisher of {v}",
                             "that brought out {v}"],
    ("designed_by", "in"): ["who designed {v}", "who was the designer of {v}",
                            "credited with the design of {v}"],
    ("organised_by", "out"): ["organised by {v}", "that {v} organised", "run by {v}"],
    ("organised_by", "in"): ["that organised {v}", "which ran {v}",
                             "responsible for organising {v}"],
    ("founded_year", "out"): ["founded {v}", "established {v}", "which was founded {v}"],
    ("released_year", "out"): ["released {v}", "that came out {v}", "which first appeared {v}"],
    ("born_on", "out"): ["born {v}", "who was born {v}", "whose birth came {v}"],
    ("died_on", "out"): ["who died {v}", "whose death came {v}", "who passed away {v}"],
    ("held_on", "out"): ["held {v}", "that took place {v}", "which began {v}"],
    ("population", "out"): ["with a population of {v}", "home to {v} people",
                            "whose population is {v}"],
    ("employees", "out"): ["with a staff of {v}", "that employs {v} people",
                           "with {v} employees"],
    ("attendance", "out"): ["that drew {v} visitors", "attended by {v} people",
                            "with an attendance of {v}"],
    ("area_km2", "out"): ["covering {v} square kilometres", "with an area of {v} km²",
                          "spanning {v} square kilometres"],
    ("runtime_minutes", "out"): ["that runs for {v} minutes", "with a running time of {v} minutes",
                                 "lasting {v} minutes"],
    ("pages", "out"): ["that runs to {v} pages", "with {v} pages", "spanning {v} pages"],
    ("currency", "out"): ["whose currency is the {v}", "where people pay with the {v}",
                          "that uses the {v}"],
    ("born_year", "out"): ["born {v}", "who was born {v}", "whose birth came {v}"],
    ("died_year", "out"): ["who died {v}", "whose death came {v}", "who passed away {v}"],
    ("year_verb", "out"): ["{verb} {v}", "which was {verb} {v}", "first {verb} {v}"],
}


def clause_templates(relation: str, direction: str) -> list[str]:
    """Clause wordings of a relation (prose year relations share one set; [] if none)."""
    if (relation, direction) in CLAUSES:
        return CLAUSES[(relation, direction)]
    if relation in YEAR_VERB_RELATIONS and direction == "out":
        verb = YEAR_VERB_RELATIONS[relation]
        return [t.replace("{verb}", verb) for t in CLAUSES[("year_verb", "out")]]
    return []
