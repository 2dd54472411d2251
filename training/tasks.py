"""Built-in toy tasks a tiny model can learn on a CPU, and loading them into the warehouse.

`fact_copy`: a demo-world style fact is given in the prompt and asked back —
"How many bridges does Varno have? Fact: Varno has bridges: 7" → "7".
A randomly initialised tiny model first gets a short supervised warm start on the output
format only (one digit token then EOS, with a *random* digit, so it does not learn the
task), then RL must learn to read the digit from the prompt. Chance level is 1/10.

`load_task(wh, task, ...)` writes the questions with passing verdicts and a difficulty band
through the warehouse API, so they appear in `train_ready` like any generated question.
Held-out evaluation questions use entity names never used in training.
"""

from __future__ import annotations

import random

from warehouse.reader import TrainItem

_SYLLABLES = ("va", "ro", "ne", "ka", "li", "do", "mi", "tu", "sa", "be", "fo", "ga",
              "ri", "lo", "pe", "zu")
_ATTRIBUTES = (("bridges", "How many bridges does {e} have?"),
               ("towers", "How many towers does {e} have?"),
               ("gates", "How many gates does {e} have?"),
               ("museums", "How many museums does {e} have?"))
TASKS = ("fact_copy",)


def _names(split: str) -> list[str]:
    names = sorted({(a + b).capitalize() for a in _SYLLABLES for b in _SYLLABLES})
    # Fixed split of the 256 names: the eval names never appear in training prompts.
    return names[::8] if split == "eval" else [n for i, n in enumerate(names) if i % 8]


def fact_copy_questions(n: int, split: str = "train", seed: int = 0) -> list[TrainItem]:
    """n distinct questions (split "train" or "eval").

    >>> qs = fact_copy_questions(3, seed=1)
    >>> all(q.answer in q.question for q in qs) and len({q.question_id for q in qs}) == 3
    True
    """
    from warehouse.schema import content_id

    rng = random.Random(f"{split}-{seed}")
    names = _names(split)
    seen, out = set(), []
    limit = len(names) * len(_ATTRIBUTES) * 10
    if n > limit:
        raise ValueError(f"fact_copy has only {limit} distinct {split} questions; asked {n}")
    while len(out) < n:
        name, (attr, ask), digit = rng.choice(names), rng.choice(_ATTRIBUTES), rng.randrange(10)
        if (name, attr, digit) in seen:
            continue
        seen.add((name, attr, digit))
        # The fact comes last, so its digit sits at a fixed distance from the answer whatever
        # the name's length: a tiny model then learns to read it much faster.
        text = f"{ask.format(e=name)} Fact: {name} has {attr}: {digit}"
        out.append(TrainItem(content_id("fact_copy", text), text, str(digit)))
    return out


def task_questions(task: str, n: int, split: str, seed: int = 0) -> list[TrainItem]:
    if task != "fact_copy":
        raise ValueError(f"unknown task {task!r}; known: {', '.join(TASKS)}")
    return fact_copy_questions(n, split, seed)


def format_answer(answer: str) -> str:
    """The output format the warm start teaches: the bare answer (one digit token, then EOS).

    A prefix such as "Answer: " made RL fail on the tiny model: the format tokens carry no
    signal, yet Adam turns their noisy zero-mean gradients into full-size steps, and the
    format drifted apart (completion lengths fell from 5 to 3 tokens) before the digit was
    learned."""
    return answer


def warm_start_pairs(questions: list[TrainItem], seed: int = 0,
                     true_answers: bool = False) -> list[tuple[str, str]]:
    """(question, completion) pairs. With a random digit (the default) they teach the format,
    not the task; with `true_answers` they teach the task too (a supervised head start).

    The random digits are balanced within each gold digit (every digit as often, in random
    order), so they carry no information about the fact, not even by chance: drawn
    independently, the 104 questions whose fact is 3 got the digit "3" 3 times (10 expected),
    and RL then never learned to answer 3."""
    if true_answers:
        return [(q.question, format_answer(q.answer)) for q in questions]
    rng = random.Random(seed)
    guess: dict[int, str] = {}
    for gold in sorted({q.answer for q in questions}):
        idx = [i for i, q in enumerate(questions) if q.answer == gold]
        start = rng.randrange(10)   # which digits get the one extra when 10 does not divide
        digits = [str((start + k) % 10) for k in range(len(idx))]
        rng.shuffle(digits)
        guess.update(zip(idx, digits))
    return [(q.question, format_answer(guess[i])) for i, q in enumerate(questions)]


def load_task(wh, task: str, n: int, seed: int = 0, band: str = "medium",
              run_id: str = "") -> int:
    """Write `n` training questions of `task` with passing verdicts and a band; returns n.

    Idempotent: questions already in the warehouse (same id) are not written again.
    """
    from warehouse.admit import admit
    from warehouse.schema import QuestionRecord

    questions = task_questions(task, n, "train", seed)
    have = {r["question_id"] for r in wh.sql("select question_id from questions").to_pylist()}
    new = [q for q in questions if q.question_id not in have]
    if new:
        with wh.transaction() as tx:
            tx.append([QuestionRecord(question_id=q.question_id, question=q.question,
                                      answer=q.answer, answer_aliases=q.answer_aliases,
                                      composer=f"task:{task}", backend="builtin",
                                      run_id=run_id) for q in new])
            admit(tx, [q.question_id for q in new], check="builtin_task", solver="builtin",
                  band=band, pass_rate=0.1, reason="generated by a built-in task",
                  run_id=run_id)
    return len(questions)
