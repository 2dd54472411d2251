"""LLMSolver: k samples per question in one call (n = k) through `datagen.llm.ChatClient`.

With `use_tools`, the question goes with the top search snippets from the stored pages
(retrieval in the prompt, one search per question); without, the model answers from what
it knows (the no-tool check). Each call carries the seed of its first attempt and the
round's first attempt index, so the client's cache separates rounds and a rerun replays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from difficulty.records import SolverAttempt, Solver, SolverQuestion
from difficulty.solvers.base import attempt_seed

if TYPE_CHECKING:
    from warehouse import Warehouse
    from datagen.endpoint import EndpointSpec


SYSTEM = ("Answer the question. Think briefly if needed, then end with one line "
          "'Answer: <the answer>' giving a single answer, as short as possible.")


class LLMSolver(Solver):
    """`questions, k -> attempts` through a chat client (see the module docstring)."""

    def __init__(self, client: Any, model: str, *, tools: Any = None, temperature: float = 1.0,
                 max_tokens: int = 512, snippets: int = 5):
        self.client, self.tools = client, tools
        self.name = f"llm:{model}" + ("" if tools is not None else "+notools")
        self.temperature, self.max_tokens, self.snippets = temperature, max_tokens, snippets

    def solve(self, questions: Sequence[SolverQuestion], k: int) -> list[list[SolverAttempt]]:
        from datagen.llm import ChatRequest
        reqs = [ChatRequest(messages=self.messages(q.question), n=k,
                            temperature=self.temperature, max_tokens=self.max_tokens,
                            seed=attempt_seed(q.question_id, q.run_seed, q.first_attempt),
                            purpose="band/solve", item_id=q.question_id, round=q.first_attempt)
                for q in questions]
        return [self._attempts(q, k, r) for q, r in zip(questions, self.client.chat_many(reqs))]

    def messages(self, question: str) -> tuple[dict[str, str], ...]:
        user = question
        if self.tools is not None:
            hits = self.tools.search(question, k=self.snippets)
            context = "\n".join(f"[{h.title}] {h.snippet}" for h in hits)
            user = f"Search results:\n{context}\n\nQuestion: {question}"
        return ({"role": "system", "content": SYSTEM}, {"role": "user", "content": user})

    def _attempts(self, q: SolverQuestion, k: int, result) -> list[SolverAttempt]:
        calls = (f"search({q.question!r})",) if self.tools is not None else ()
        samples = list(result.samples) if result.ok else []
        out = []
        for j in range(k):
            i = q.first_attempt + j
            seed = attempt_seed(q.question_id, q.run_seed, i)
            if j < len(samples) and samples[j].ok:
                out.append(SolverAttempt(q.question_id, i, seed, samples[j].text, "", calls))
            else:
                why = samples[j].error if j < len(samples) else (result.error or "no_sample")
                out.append(SolverAttempt(q.question_id, i, seed, "", "", calls,
                                   why.split(":", 1)[0] or "llm_failed"))
        return out

    def bind_run(self, run_id: str) -> None:
        """Account the calls that follow (`llm_calls.run_id`) to this band run."""
        self.client.log.run_id = run_id

    def close(self) -> None:
        self.client.close()


def make_llm_solver(wh: "Warehouse", cfg: "EndpointSpec", *, run_id: str = "",
                    use_tools: bool = True) -> LLMSolver:
    """An LLMSolver on `cfg.endpoint` / `cfg.model`, its calls accounted in `wh`."""
    if not cfg.has_endpoint():
        raise ValueError("--solver llm needs --endpoint URL and --model NAME "
                         "(e.g. --endpoint http://127.0.0.1:8000/v1 --model my-model)")
    from datagen.endpoint import client_config
    from datagen.llm import ChatClient
    client = ChatClient(client_config(cfg), wh=wh, run_id=run_id)
    tools = None
    if use_tools:
        from datagen.tools import PageTools
        tools = PageTools.open(wh)
    return LLMSolver(client, cfg.model, tools=tools)
