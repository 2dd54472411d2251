"""The LLM composer: a chat model decides each step and words each question.

It implements the composer's backend interface (datagen/compose/backend.py) over the one
model client (datagen.llm): four prompts, each answered as JSON validated against a schema
by the client (response_format json_schema, or prompt + parse + validate if the server
refuses it):

- seed:       word a one-fact seed question from the page's quote (`write_seed`);
- step:       pick the next INJECT or FUZZ among the loop's valid options, or EXIT;
- word:       word the composed chain (n samples; the first that keeps every constraint and
              does not name the answer is taken);
- self-check: the model re-reads its question against the facts and the answer.

With `compose.llm_role: word` the engine picks every step (the embedded composer's policy)
and the model only words the chains that span two pages or more: seeds keep their template.

Nothing the model says is trusted: the loop's own validator still checks every step (quotes
verbatim, answer unchanged and unique, not leaked, every constraint worded). A failed call
costs the seed it was for (the step EXITs or the wording is rejected); `LLMStop` (dead
endpoint, spent budget) ends the stage.
"""

from __future__ import annotations

import logging
import random
import re
from collections import Counter
from typing import TYPE_CHECKING, Any, Sequence

from datagen.compose.backend import ComposeBackend, StepOption
from datagen.compose.embedded import EmbeddedBackend
from datagen.compose.wording import required, wording_problem
from datagen.llm import ChatClient, ChatRequest, ChatResult, EndpointConfig
from datagen.seeds.chain import Chain, render_question, render_value

if TYPE_CHECKING:
    from warehouse import Warehouse

log = logging.getLogger(__name__)

MAX_OPTIONS = 8
QUOTE_CHARS = 160
SHORT_REPLY_TOKENS = 64  # a step or a self-check is one small JSON object: its timeout is short


def step_schema(n_options: int) -> dict:
    """The step reply's schema for `n_options` shown: the server then only lets the model
    name one of them (SmolLM2 named option 1 of a one-option list: 25 of 121 steps)."""
    return {"type": "object", "required": ["action", "option"], "properties": {
        "action": {"type": "string", "enum": ["INJECT", "FUZZ", "EXIT"]},
        "option": {"type": "integer", "minimum": -1, "maximum": n_options - 1}}}


QUESTION_SCHEMA = {"type": "object", "required": ["question"], "properties": {
    "question": {"type": "string", "minLength": 8, "maxLength": 400}}}
CHECK_SCHEMA = {"type": "object", "required": ["names_answer", "states_all_facts", "one_answer"],
                "properties": {"names_answer": {"type": "boolean"},
                               "states_all_facts": {"type": "boolean"},
                               "one_answer": {"type": "boolean"}}}

# The wording prompts do not show the answer: a small model copies what it is shown
# (SmolLM2 wrote it in 43 of 169 wording calls when the prompt said "must not appear: X").
SEED_PROMPT = """Rewrite the draft as one natural trivia question with the same meaning.
Draft: {draft}
It asks for: {ask}
Keep these words exactly: {required}
Add no name, number or fact that is not in the draft.
Write one question ending with a question mark. Reply with JSON: {{"question": "..."}}"""

# A verdict of the self-check that an exact check can refute (`names_answer`) calibrates it:
# past CHECK_CALIBRATION verdicts, a model wrong on more than half stops being asked.
CHECK_CALIBRATION = 8
_LABEL = re.compile(r"^(?:draft|question|rewritten question|answer)\s*:\s*", re.I)

STEP_PROMPT = """You make a trivia question harder, one step at a time.
Question now: {question}
Answer (never reveal it): {answer}
Hops now: {hops}; target: {target}.
Options:
{options}
INJECT replaces a named entity by a description (from another page: one more hop; from a
page already used: no hop); FUZZ blurs an exact value; EXIT stops when the question is hard
enough.
Reply with JSON: {{"action": "INJECT" | "FUZZ" | "EXIT", "option": <number, -1 for EXIT>}}"""

# No page quotes and no exact values either: SmolLM2 copied the quoted sentences, which
# hold the hidden entity's name and the fuzzed values, into its wordings (word calls refused
# names_forbidden: 13 of 119 with them, 0 of 91 without).
WORD_PROMPT = """Rewrite the draft as one natural trivia question with the same meaning.
Draft: {draft}
Keep these words exactly: {required}
Add no name, number or fact that is not in the draft.
Write one question ending with a question mark. Reply with JSON: {{"question": "..."}}"""

CHECK_PROMPT = """Check a trivia question against its facts.
Question: {question}
Intended answer: {answer}
Facts:
{facts}
Reply with JSON: {{"names_answer": <does the question contain the answer?>,
"states_all_facts": <does it state every fact?>, "one_answer": <is the intended answer the only one?>}}"""


class LLMBackend(ComposeBackend):
    """Decides and words through a chat model; see the module docstring."""

    name = "llm"

    def __init__(self, endpoint: EndpointConfig, *, n_wordings: int = 2, temperature: float = 0.7,
                 self_check: bool = True, max_tokens: int = 160,
                 engine: EmbeddedBackend | None = None):
        self.endpoint = endpoint
        self.engine = engine   # set: the engine picks steps; the model words multi-page chains
        self.max_concurrency = endpoint.max_concurrency
        self.n_wordings, self.temperature = n_wordings, temperature
        self.self_check, self.max_tokens = self_check, max_tokens
        self.rejections: Counter = Counter()  # the backend's own refusals, by reason
        self.client: ChatClient | None = None
        self._check_verdicts = Counter()  # names_answer verdicts: "right" / "wrong"
        self.drafts_kept: set[str] = set()  # questions worded by the draft, not the model

    # ---- lifecycle (hooks of the interface) ------------------------------------------

    def start(self, wh: "Warehouse", run_id: str) -> None:
        """One client per run: its llm_calls rows carry the compose run's id."""
        self.client = ChatClient(self.endpoint, wh=wh, run_id=run_id)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()

    def summary(self) -> dict[str, Any]:
        totals = self.client.totals() if self.client is not None else {}
        return {**totals, "backend_rejections": dict(self.rejections)}

    def _client(self) -> ChatClient:
        if self.client is None:  # used outside run_compose: no warehouse, no accounting rows
            self.client = ChatClient(self.endpoint)
        return self.client

    # ---- the interface -------------------------------------------------------------

    def next_step(self, chain: Chain, options: Sequence[StepOption], target_hops: int,
                  rng: random.Random) -> StepOption | None:
        """The model's pick among the first MAX_OPTIONS options; EXIT on a failed call or a
        pick that is not one of them."""
        if self.engine is not None:
            return self.engine.next_step(chain, options, target_hops, rng)
        shown = list(options)[:MAX_OPTIONS]
        if not shown:
            return None
        prompt = STEP_PROMPT.format(question=chain.question or render_question(chain),
                                    answer=chain.ask.answer, hops=chain.hops,
                                    target=target_hops, options=describe_options(shown))
        data = self._ask(prompt, step_schema(len(shown)), "compose/step", chain, n=1,
                         temperature=0.0, max_tokens=SHORT_REPLY_TOKENS)
        if data is None or data["action"] == "EXIT":
            return None
        pick = data["option"]
        if not 0 <= pick < len(shown):
            self.rejections["step_not_an_option"] += 1
            return None
        if shown[pick].action != data["action"]:  # the number is the choice; the label a slip
            self.rejections["step_action_mismatch_taken"] += 1
        return shown[pick]

    def word(self, chain: Chain, rng: random.Random) -> str | None:
        """A wording that keeps every constraint and hides the answer, checked by the model;
        the draft (the embedded wording) when no sample of the model's passes."""
        draft = render_question(chain) or ""
        if self.engine is not None and chain.hops < 2:
            return draft or None   # wording only what the engine built across pages
        prompt = WORD_PROMPT.format(required=quoted(required(chain)), draft=draft)
        worded = self._wording(prompt, chain, "compose/word", draft + facts_block(chain))
        if worded is None and draft:
            self.rejections["word_kept_the_draft"] += 1
            self.drafts_kept.add(draft)
        return worded or draft or None

    def write_seed(self, chain: Chain, rng: random.Random) -> str | None:
        """The wording of a one-fact seed, written from the page's quote (the template's
        when the model only words the engine's chains)."""
        if self.engine is not None:
            return None
        ask, draft = chain.ask, render_question(chain) or ""
        prompt = SEED_PROMPT.format(
            ask=f"the {ask.relation.replace('_', ' ')} of {chain.root.name}",
            required=quoted(required(chain)), draft=draft)
        return self._wording(prompt, chain, "compose/seed",
                             " ".join((draft, ask.evidence.quote, chain.root.name)))

    # ---- helpers -------------------------------------------------------------------

    def _wording(self, prompt: str, chain: Chain, purpose: str, known: str) -> str | None:
        """The first of the model's n wordings that passes the local checks and the
        self-check; `known`: the text its names and numbers may come from."""
        result = self._call(prompt, QUESTION_SCHEMA, purpose, chain, n=self.n_wordings,
                            temperature=self.temperature)
        texts = [tidy(s.data["question"]) for s in (result.good if result.ok else [])]
        draft = render_question(chain) or ""
        problems = [wording_problem(t, chain, known, draft) for t in texts]
        keep = next((t for t, p in zip(texts, problems) if not p), None)
        for t, p in zip(texts, problems):
            log.debug("%s sample %s: %r (draft %r)", purpose, p or "passed", t, draft)
        if keep is None:
            self.rejections[f"{purpose.split('/')[1]}_{problems[0] if problems else 'call_failed'}"] += 1
            return None
        if self.self_check and not self._checked(keep, chain):
            return None
        return keep

    def _checked(self, question: str, chain: Chain) -> bool:
        """The model's verdict on its question, while its verdicts are worth a call: its
        `names_answer` is checked against the text (the local check passed: the answer is not
        in it); a model wrong on most of them is not asked again (`self_check_unreliable`)."""
        if self._check_unreliable():
            return True
        prompt = CHECK_PROMPT.format(question=question, answer=chain.ask.answer,
                                     facts=facts_block(chain))
        data = self._ask(prompt, CHECK_SCHEMA, "compose/self_check", chain, n=1, temperature=0.0,
                         max_tokens=SHORT_REPLY_TOKENS)
        if data is None:
            return False
        self._check_verdicts["wrong" if data["names_answer"] else "right"] += 1
        if self._check_unreliable():
            return True
        for key, bad in (("names_answer", True), ("states_all_facts", False), ("one_answer", False)):
            if data[key] is bad:
                self.rejections[f"self_check_{key}_{str(bad).lower()}"] += 1
                return False
        return True

    def _check_unreliable(self) -> bool:
        v = self._check_verdicts
        if v["off"]:
            return True
        if v["right"] + v["wrong"] >= CHECK_CALIBRATION and v["wrong"] > v["right"]:
            v["off"] = 1
            self.rejections["self_check_unreliable"] = v["wrong"]
            log.warning("the model's self-check said %d of %d answer-free questions name the "
                        "answer; not asking it again this run", v["wrong"], v["wrong"] + v["right"])
            return True
        return False

    def _ask(self, prompt: str, schema: dict, purpose: str, chain: Chain, **params) -> Any:
        result = self._call(prompt, schema, purpose, chain, **params)
        if not result.ok:
            self.rejections[f"{purpose.split('/')[1]}_{result.error_code}"] += 1
            return None
        return result.good[0].data

    def _call(self, prompt: str, schema: dict, purpose: str, chain: Chain, **params) -> ChatResult:
        params.setdefault("max_tokens", self.max_tokens)
        return self._client().chat(ChatRequest(
            ({"role": "user", "content": prompt},), schema=schema, purpose=purpose,
            item_id=item_id(chain), **params))


def describe_options(options: Sequence[StepOption]) -> str:
    lines = []
    for i, o in enumerate(options):
        d = o.detail
        if o.action == "INJECT":
            more = " (another page: one more hop)" if o.new_page else ""
            lines.append(f"{i}. INJECT: describe {d.get('entity')} by its "
                         f"{o.relation.replace('_', ' ')}: {d.get('value')}{more}")
        else:
            lines.append(f"{i}. FUZZ: {d.get('value')} -> {o.fuzzed}")
    return "\n".join(lines)


def facts_block(chain: Chain) -> str:
    lines = [f"- {c.template.format(v=render_value(c.value))} "
             f"(page: \"{clip(c.evidence.quote)}\")" for _, c in chain.clauses()]
    return "\n".join(lines) or f"- (page: \"{clip(chain.ask.evidence.quote)}\")"


def tidy(text: str) -> str:
    """A model's question, whitespace collapsed, a copied prompt label dropped, cut after
    its first question mark (small models run on: 'What was the attendance at X? X,').

    >>> tidy(" Who  wrote it?, it was ")
    'Who wrote it?'
    >>> tidy("Draft: Who wrote it?")
    'Who wrote it?'
    """
    text = _LABEL.sub("", " ".join(text.split()))
    return text[:text.index("?") + 1] if "?" in text else text.rstrip(" ,;")


def quoted(items: Sequence[str]) -> str:
    return "; ".join(f'"{x}"' for x in items) or "(none)"


def clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS - 3] + "..."


def item_id(chain: Chain) -> str:
    """The seed a call is for: what it asks about whom (stable across steps)."""
    from warehouse import content_id
    return content_id(chain.ask.relation, chain.ask.answer, chain.ask.evidence.url)


def endpoint_config(cfg: Any) -> EndpointConfig:
    """The client settings from a ComposeConfig (a bare http://host:port gets /v1)."""
    return EndpointConfig(base_url=cfg.endpoint, model=cfg.model, api_key_env=cfg.api_key_env or "",
                          max_concurrency=cfg.max_concurrency, cache=cfg.cache,
                          max_calls=cfg.max_calls, max_tokens=cfg.max_tokens)


def make_llm_backend(cfg: Any) -> LLMBackend:
    """The backend `datagen compose --backend llm` uses (run.make_backend calls this)."""
    engine = EmbeddedBackend(cfg.fuzz_rate) if cfg.llm_role == "word" else None
    return LLMBackend(endpoint_config(cfg), engine=engine)
