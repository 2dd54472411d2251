"""The policies `datagen eval` runs, and the checkpoint loaders it shares with `datagen band
--solver policy:`. Every policy answers `attempt(question, sample) -> Attempt`:

- `CheckpointPolicy`: a model folder (a run's checkpoint or any HF model dir) through the
  in-process inference engine and the training agent (`training.search_env`), in the
  environment its run trained it in (`run_settings`); `use_tools=False` is the single-turn
  baseline;
- `EndpointPolicy`: an OpenAI-compatible server through `datagen.llm.ChatClient`, the same
  agent loop (`SearchAgentWorkflow.run_chat`: tool results come back as user messages);
- `RandomPolicy`: random searches (words of the question), random opens, a random word;
- `OraclePolicy`: scripted; reads the question's supporting page *titles*, finds each page
  with `search` (a lookup: its pages seen are the pages it opened), reads it with `open`,
  and answers with the shortest span of the text it
  opened that passes a membership probe. The probe says yes/no for a span and is the only
  thing the oracle learns about the answer (it never sees the gold string); so the oracle
  measures whether the tools surface the answer, not whether a model can find it.

Checkpoints load through `load_policy`: the checkpoint's own tokenizer
(`training.models.load_tokenizer`, which keeps a page BPE's digit groups and a word-level
tokenizer that AutoTokenizer would replace). User mistakes raise `PolicyError` (a
ValueError: one line in the CLI).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Protocol

from training.config import AgentConfig, RolloutConfig
from training.evaluation.questions import EvalQuestion
from training.evaluation.scoring import Attempt

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from datagen.llm import ChatClient
    from datagen.tools import PageTools
    from difficulty.solvers.policy import PolicySolver
    from training.api import InferenceEngine
    from training.engines.hf_engine import HFInferenceEngine
    from training.search_env import SearchAgentWorkflow

# What `datagen eval` always gave a model outside a run, and an endpoint, per turn: not the
# rollout default (16), which is the tiny models' training budget.
OUTSIDE_RUN_MAX_NEW_TOKENS = 32
ENDPOINT_MAX_NEW_TOKENS = 256
ENDPOINT_SNIPPET_CHARS = 240   # an endpoint's context holds longer snippets
_WORD = re.compile(r"\d[\d,.]*\d(?![\w'’-])|[\w'’.-]+")   # "6,960" one word; "19th" too


class PolicyError(ValueError):
    """A policy the user named cannot be built (not a model folder, a broken run config)."""


class Policy(Protocol):
    """What `run_eval` runs: `attempt(question, sample)`, scored in `reward_mode`."""

    reward_mode: str

    async def attempt(self, q: EvalQuestion, sample: int) -> Attempt: ...


# ---- the policies ---------------------------------------------------------------------------

def find_page(tools: "PageTools", title: str) -> str | None:
    """The URL of the stored page titled `title`, found with `search` (then by title)."""
    for hit in tools.search(title, 10):
        if hit.title.strip() == title.strip():
            return hit.url
    return next((u for u in tools.urls if tools.page(u)[0].strip() == title.strip()), None)


def make_probe(answers: tuple[str, ...]) -> Callable[[str], bool]:
    """A yes/no membership test for a span's normalised key (SQuAD-normalised gold)."""
    from verifiers import squad_normalize

    keys = {squad_normalize(a) for a in answers}
    return keys.__contains__


def word_spans(text: str, max_words: int = 12) -> Iterable[tuple[str, str]]:
    """(span, SQuAD-normalised key) of `text`'s word spans, shortest first (so the oracle
    answers as briefly as it can); words are normalised once, not once per span."""
    from verifiers import squad_normalize

    words = _WORD.findall(text)
    norm = [squad_normalize(w) for w in words]
    for n in range(1, max_words + 1):
        for i in range(len(words) - n + 1):
            yield " ".join(words[i:i + n]).rstrip(".,"), " ".join(w for w in norm[i:i + n] if w)


@dataclass
class OraclePolicy:
    tools: "PageTools"
    reward_mode: str = "reward"

    async def attempt(self, q: EvalQuestion, sample: int) -> Attempt:
        probe, a, texts, opened = make_probe(q.answers), Attempt(None), [], set()
        for title in q.support_titles:
            url = find_page(self.tools, title)
            a.tool_calls += 1   # the search
            a.searches += 1
            offset: int | None = 0
            while url and offset is not None:
                view = self.tools.open(url, offset)
                a.tool_calls += 1
                opened.add(view.url)
                texts.append(view.text)
                a.transcript += f"<open>{url}#{offset}</open>\n"
                offset = view.next_offset
        a.turns, a.pages_seen = a.tool_calls + 1, len(opened)
        a.answer = next((s for t in texts for s, key in word_spans(t) if probe(key)), None)
        return a


@dataclass
class RandomPolicy:
    tools: "PageTools"
    max_turns: int = field(default_factory=lambda: AgentConfig().max_turns)
    seed: int = 0
    reward_mode: str = "reward"

    async def attempt(self, q: EvalQuestion, sample: int) -> Attempt:
        rng = random.Random(f"{self.seed}/{q.question_id}/{sample}")
        words, urls, a = _WORD.findall(q.question) or ["x"], [], Attempt(None)
        seen, pages = list(words), set()
        for _ in range(self.max_turns - 1):
            a.turns += 1
            a.tool_calls += 1
            if urls and rng.random() < 0.5:
                view = self.tools.open(rng.choice(urls))
                text, shown = view.text, [view.url]
            else:
                a.searches += 1
                hits = self.tools.search(" ".join(rng.sample(words, min(3, len(words)))), 3)
                urls += [h.url for h in hits]
                text, shown = " ".join(h.snippet for h in hits), [h.url for h in hits]
            seen += _WORD.findall(text)
            pages.update(shown)
        a.turns, a.pages_seen = a.turns + 1, len(pages)
        a.answer = rng.choice(seen)
        return a


@dataclass
class CheckpointPolicy:
    """A model dir through the inference engine and the training agent (or its no-tool form)."""

    agent: "SearchAgentWorkflow"
    engine: "InferenceEngine"

    @property
    def reward_mode(self) -> str:
        return self.agent.reward_mode

    async def attempt(self, q: EvalQuestion, sample: int) -> Attempt:
        from warehouse.reader import TrainItem

        item = TrainItem(q.question_id, q.question, q.answers[0], q.answers[1:], q.band, None)
        t = await self.agent.run_episode(self.engine, item)
        a = t.info.agent
        return Attempt(a.answer, t.n_turns, a.n_tool_calls, dict(a.tool_errors), t.text,
                       t.info.finish_reason == "stop", a.n_search, a.n_pages_seen)


@dataclass
class EndpointPolicy:
    """An OpenAI-compatible model (a datagen.llm.ChatClient) in the training agent's loop."""

    client: "ChatClient"
    agent: "SearchAgentWorkflow"

    @property
    def reward_mode(self) -> str:
        return self.agent.reward_mode

    async def attempt(self, q: EvalQuestion, sample: int) -> Attempt:
        ep = await self.agent.run_chat(self.client, q.question, q.question_id, sample)
        return Attempt(ep.answer, ep.turns, sum(ep.calls.values()), dict(ep.errors),
                       json.dumps(ep.messages[2:], ensure_ascii=False), ep.finished,
                       ep.calls["search"], len(ep.seen))


# ---- building them --------------------------------------------------------------------------

@dataclass
class LoadedPolicy:
    """A model folder's tokenizer and in-process inference engine."""

    folder: Path
    tokenizer: "PreTrainedTokenizerBase"
    engine: "InferenceEngine"

    def close(self) -> None:
        self.engine.close()


def load_policy(folder: str | Path, what: str = "policy",
                rollout: RolloutConfig | None = None) -> LoadedPolicy:
    """The checkpoint at `folder` with its own tokenizer; `what` names the option in errors.
    Served as its run served it (`rollout`): in-process vLLM, batching the eval's concurrent
    episodes, for a run that rolled out with vLLM; else HF generate, one sequence at a time."""
    from training.models import load_tokenizer

    folder = Path(folder)
    if not (folder / "config.json").is_file():
        raise PolicyError(f"{what}: {folder} is not a model folder (no config.json); give a "
                          "run's final/ or weights/vN folder, or an HF model dir")
    if rollout is not None and rollout.inference == "vllm":
        from training.engines.vllm_engine import VLLMInferenceEngine
        engine = VLLMInferenceEngine(folder, **rollout.vllm_kwargs)
    else:
        from training.engines.hf_engine import HFInferenceEngine
        engine = HFInferenceEngine(folder)
    return LoadedPolicy(folder, load_tokenizer(folder), engine)


@dataclass(frozen=True)
class RunSettings:
    """The environment a checkpoint is evaluated in: its run's `agent:` section, per-turn
    token budget and reward mode; `config` is the run config read (None: the defaults)."""

    agent: AgentConfig
    max_new_tokens: int
    reward_mode: str
    config: Path | None = None
    rollout: RolloutConfig | None = None   # the run's engine (vLLM and its kwargs, or HF)

    def note(self, path: Path) -> str:
        """One line saying where the settings came from (for the CLI to print)."""
        shown = {**self.agent.model_dump(), "max_new_tokens": self.max_new_tokens,
                 "reward_mode": self.reward_mode}
        if self.config is not None:
            return f"agent settings from the run config {self.config}: {shown}"
        return (f"agent settings: the defaults {shown} (no run config.yaml and metrics.jsonl "
                f"beside or above {path}; a run's own settings apply to RUN/final, "
                "RUN/warm_start, RUN/weights/vN)")


def run_settings(checkpoint: Path) -> RunSettings:
    """The settings a checkpoint was trained with, from its run's config.yaml (RUN/final or
    RUN/weights/vN), so it is evaluated in the environment it learned; the defaults for a
    model folder outside a run."""
    from training.config import load_config

    here = checkpoint.resolve()
    found = [d / "config.yaml" for d in (here.parent, here.parent.parent)
             if (d / "config.yaml").is_file() and (d / "metrics.jsonl").exists()]
    if not found:
        return RunSettings(AgentConfig(), OUTSIDE_RUN_MAX_NEW_TOKENS, RolloutConfig().reward)
    try:
        cfg = load_config(found[0])
    except (ValueError, OSError) as exc:
        raise PolicyError(f"checkpoint {checkpoint}: its run config {found[0]} does not load: "
                          f"{exc}") from exc
    return RunSettings(cfg.agent, cfg.rollout.max_new_tokens, cfg.rollout.reward, found[0],
                       cfg.rollout)


def checkpoint_policy(path: Path, tools: "PageTools", settings: RunSettings, *,
                      use_tools: bool = True, max_turns: int | None = None,
                      temperature: float = 1.0, seed: int = 0
                      ) -> tuple[Policy, Callable[[], None]]:
    """(policy, close): the training agent in the environment `settings` over a checkpoint."""
    from training.search_env import SearchAgentWorkflow, SearchEnv

    loaded = load_policy(path, "--policy checkpoint:", settings.rollout)
    env = SearchEnv(_with_turns(settings.agent, max_turns), tools, use_tools=use_tools)
    agent = SearchAgentWorkflow(loaded.tokenizer, env, settings.max_new_tokens, temperature,
                                settings.reward_mode, random.Random(seed))
    return CheckpointPolicy(agent, loaded.engine), loaded.close


def endpoint_policy(tools: "PageTools", endpoint: str | None, model: str | None, *,
                    use_tools: bool = True, max_turns: int | None = None,
                    temperature: float = 1.0) -> tuple[Policy, Callable[[], None]]:
    """(policy, close): the training agent's loop against an OpenAI-compatible server; no
    token budget (the endpoint holds its own context)."""
    if not (endpoint and model):
        raise PolicyError("--policy endpoint needs --endpoint URL and --model NAME")
    from datagen.llm import ChatClient, EndpointConfig
    from training.search_env import SearchAgentWorkflow, SearchEnv

    client = ChatClient(EndpointConfig(base_url=endpoint, model=model))
    agent_cfg = _with_turns(AgentConfig(snippet_chars=ENDPOINT_SNIPPET_CHARS), max_turns)
    agent = SearchAgentWorkflow(None, SearchEnv(agent_cfg, tools, use_tools=use_tools),
                                ENDPOINT_MAX_NEW_TOKENS, temperature, RolloutConfig().reward,
                                random.Random(0))
    return EndpointPolicy(client, agent), client.close


def _with_turns(agent: AgentConfig, max_turns: int | None) -> AgentConfig:
    """`agent` with `--max-turns` when given."""
    return agent if max_turns is None else agent.model_copy(update={"max_turns": max_turns})


def policy_name(folder: Path) -> str:
    """policy:<run>@v<N> for <run>/weights/vN, policy:<run>@final for <run>/final."""
    folder = folder.resolve()
    if folder.parent.name == "weights" and folder.name.startswith("v"):
        return f"policy:{folder.parent.parent.name}@{folder.name}"
    return f"policy:{folder.parent.name}@{folder.name}"


def policy_solver(folder: str | Path, max_new_tokens: int = 256,
                  temperature: float = 1.0) -> "PolicySolver":
    """A difficulty PolicySolver over a checkpoint (difficulty never imports training: the
    CLI builds it here and hands it to the band run). Its `close` stops the engine."""
    from difficulty.solvers.policy import PolicySolver
    from training.api import GenerationRequest
    from training.search_env.chat import prompt_ids

    loaded = load_policy(folder, f"--solver policy:{folder}")
    tok = loaded.tokenizer

    def generate(prompts: list[str], n: int, seeds: list[list[int]]) -> list[list[str]]:
        reqs = [GenerationRequest(prompt_ids(tok, prompt), max_new_tokens, temperature,
                                  seed=s) for prompt, row in zip(prompts, seeds) for s in row]
        texts = [tok.decode(r.output_ids, skip_special_tokens=True)
                 for r in loaded.engine.generate(reqs)]
        return [texts[i * n:(i + 1) * n] for i in range(len(prompts))]

    return PolicySolver(generate, policy_name(loaded.folder), loaded.close)
