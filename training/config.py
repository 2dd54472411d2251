"""The one typed config of `datagen train`: defaults here, a YAML file only overrides.

Light to import (pydantic only), so `datagen --help` stays instant.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelConfig(_Strict):
    path: Optional[str] = Field(None, description="HF model dir; None builds the tiny model")
    tiny_hidden: int = Field(128, ge=32, multiple_of=32, description="width of the tiny model; its heads are "
                             "32 wide (hidden/32 heads, half as many KV heads, MLP 2 x hidden)")
    tiny_layers: int = 2
    tiny_vocab_size: int = 512
    tiny_tokenizer: Literal["bpe", "pages", "pages_bpe"] = Field(
        "bpe", description="bpe: byte-level BPE on synthetic text (tiny_vocab_size); pages: "
        "word-level on the warehouse's page store (names and numbers one token each); "
        "pages_bpe: byte-level BPE of tiny_vocab_size on the page store, numbers cut into "
        "tiny_digit_group digits (a rare name or a number is spelled in frequent pieces)")
    tiny_digit_group: int = Field(1, ge=1, le=4, description="pages_bpe: at most this many "
                                  "digits per token (1: one per digit; 2: '1912' is '19' '12')")
    tiny_tag_tokens: bool = Field(False, description="pages_bpe: the agent's tool-call tags "
                                  "(<search>, </answer>, ...) one token each, not ~6 pieces")
    tiny_tied_embeddings: bool = Field(
        False, description="share input and output embeddings, so the model can copy out of "
        "a search result a word it never wrote (a held-out answer); the search agent's lever")
    name: Optional[str] = Field(None, description="a registry model (`datagen model list`), "
                                "pulled with `datagen model pull NAME`; sets path to its folder")

    @model_validator(mode="after")
    def _named(self):
        if self.name is None:
            return self
        from datagen.models import resolve_model  # light: no torch
        folder = resolve_model(self.name)
        if self.path is not None and self.path != folder:
            raise ValueError(f"model: give name or path, not both (name {self.name} is {folder})")
        self.path = folder
        return self


class DataConfig(_Strict):
    warehouse: Optional[str] = Field(None, description="default: $DATAGEN_WAREHOUSE or the "
                                     "per-user folder; --warehouse overrides")
    task: Optional[Literal["fact_copy"]] = Field(
        None, description="load this built-in task into the warehouse before training")
    task_size: int = Field(400, ge=1)
    band_weights: dict[str, float] = Field(
        default_factory=lambda: {"easy": 1.0, "medium": 1.0, "hard": 1.0})
    eval_size: int = Field(64, ge=1, description="evaluation questions used (at most)")
    eval_fraction: float = Field(
        0.05, gt=0, lt=1, description="share of train_ready held out for evaluation, chosen "
        "by a hash of the question id (stable as questions are added)")
    eval_where: Optional[str] = Field(None, description="SQL condition over train_ready "
                                      "selecting the evaluation questions (instead of "
                                      "eval_fraction)")
    eval_file: Optional[str] = Field(None, description="JSONL of evaluation questions "
                                     "({question, answers: [gold, aliases...]}); training "
                                     "skips warehouse questions with the same text")
    train_where: Optional[str] = Field(None, description="SQL condition over train_ready "
                                       "restricting the training questions (streamed and "
                                       "cold-started), e.g. 'hops = 1'; the evaluation split "
                                       "is held out either way")

    @model_validator(mode="after")
    def _one_eval_split(self):
        chosen = [k for k in ("eval_fraction", "eval_where", "eval_file")
                  if k in self.model_fields_set and getattr(self, k) is not None]
        if len(chosen) > 1:
            raise ValueError(f"data: set one of eval_fraction, eval_where, eval_file (got "
                             f"{', '.join(chosen)})")
        return self


class RolloutConfig(_Strict):
    inference: Literal["hf", "vllm", "remote"] = Field(
        "hf", description="hf: in-process transformers; vllm: in-process vLLM; remote: the "
        "vLLM servers listed in `servers` (python -m training.engines.vllm_server)")
    servers: list[str] = Field(default_factory=list, description="base URLs of the vLLM "
                               "servers for inference: remote (requests go to the least busy)")
    batch_size: int = Field(64, ge=1, description="trajectories per training step")
    group_size: int = Field(8, ge=2, description="samples per question (GRPO group)")
    max_in_flight: int = Field(64, ge=1, description="episodes generating at once")
    max_staleness: int = Field(1, ge=0, description="η; 0 = synchronous RL")
    late_groups: Literal["wait", "drop"] = Field(
        "wait", description="a group that would be trained more than η versions late: wait "
        "for it (no bias against slow episodes) or drop it (the trainer never waits)")
    dynamic_sampling: bool = Field(
        True, description="drop groups whose rewards are all equal (no learning signal; past "
        "8 batches' worth of them in a step, they fill the batch: training/controller.py); "
        "false keeps them: their advantages are 0, so they train nothing, but the data path runs")
    predictable_versions: int = Field(
        0, ge=0, description="W: a question whose group had all-equal rewards (always or "
        "never solved) is skipped, not generated, when the stream serves it again within W "
        "policy versions of that group's start (training/predictable.py); 0 = off")
    max_new_tokens: int = Field(16, ge=1)
    temperature: Union[float, list[float]] = Field(
        1.0, description="sampling temperature of the rollouts; the trainer divides its "
        "logits by it too, so its logprobs are those of the distribution that sampled. A "
        "rising list (workflow qa, dynamic sampling), e.g. [1.3, 2.0, 3.0]: a group whose "
        "episodes all earn nothing is played again at the next temperature, so an answer the "
        "policy gives almost no mass gets sampled (each episode trains at its own)")
    eval_temperature: float = Field(1.0, gt=0)
    reward: Literal["reward", "strict", "judge"] = Field(
        "reward", description="verifiers.score_response mode, for training and evaluation: "
        "reward (equivalents pay, lists of candidates and padding earn 0), strict (exact "
        "match with the gold or an alias), judge (lenient, as human raters judge)")
    workflow: str = Field(
        "qa", description="qa: single-turn answers; search: the multi-turn search agent "
        "(training/agent.py) with search/open over the warehouse's pages, see `agent:`; "
        "'package.module:function' or 'path/to/file.py:function': your own async agent "
        "(question, openai_client, tools), trained through the trainer's OpenAI-compatible "
        "endpoint (training/user_agent.py)")
    tool_latency_median_s: float = Field(0.0, ge=0, description="simulated tool latency, "
                                         "lognormal: per episode (qa), per tool call (search)")
    tool_latency_sigma: float = Field(1.2, ge=0)
    vllm_kwargs: dict[str, Any] = Field(default_factory=dict, description="inference: vllm: "
                                        "extra vllm.AsyncEngineArgs (e.g. max_model_len)")

    @model_validator(mode="before")
    @classmethod
    def _renamed_keys(cls, data: Any) -> Any:
        if isinstance(data, dict) and "strict_reward" in data:
            raise ValueError("rollout.strict_reward was replaced by rollout.reward: write "
                             "`reward: strict` for true, or remove the key for the default "
                             "`reward: reward`")
        return data

    @field_validator("workflow")
    @classmethod
    def _known_workflow(cls, value: str) -> str:
        if value not in ("qa", "search"):
            if ":" not in value:
                raise ValueError(f"rollout.workflow {value!r}: use qa, search, or your agent "
                                 "as 'package.module:function'")
            from training.user_agent import load_entrypoint
            load_entrypoint(value)      # a wrong name fails here, not at the first episode
        return value

    @property
    def temperatures(self) -> tuple[float, ...]:
        """The sampling temperature first, then the hotter replays' (training/controller.py)."""
        t = self.temperature
        return tuple(t) if isinstance(t, list) else (t,)

    @field_validator("temperature")
    @classmethod
    def _rising(cls, value: "float | list[float]") -> "float | list[float]":
        ladder = value if isinstance(value, list) else [value]
        if not ladder or min(ladder) <= 0 or ladder != sorted(set(ladder)):
            raise ValueError(f"rollout.temperature {value!r}: a number > 0, or a list of them "
                             "rising (the replays of all-wrong groups play hotter)")
        return value

    @model_validator(mode="after")
    def _groups_fit(self):
        if len(self.temperatures) > 1 and (self.workflow != "qa" or not self.dynamic_sampling):
            raise ValueError("rollout.temperature as a list replays all-wrong groups of the qa "
                             "workflow with dynamic_sampling on; give one number here")
        if self.inference == "remote" and not self.servers:
            raise ValueError("rollout.inference: remote needs rollout.servers (base URLs of "
                             "vLLM servers started with python -m training.engines.vllm_server)")
        if self.servers and self.inference != "remote":
            raise ValueError(f"rollout.servers is only used with inference: remote (it is "
                             f"{self.inference!r})")
        if self.batch_size % self.group_size:
            raise ValueError(f"rollout.batch_size {self.batch_size} must be a multiple of "
                             f"rollout.group_size {self.group_size}")
        return self


class LossConfig(_Strict):
    eps_low: float = 0.2
    eps_high: float = 0.28
    behav_cap: Optional[float] = Field(5.0, description="a token whose behaviour weight "
                                       "π_prox/π_behav exceeds it is masked out of the loss")
    ppo_minibatches: int = Field(1, ge=1, description="optimizer steps per batch (rows split "
                                 "into this many minibatches; π_prox stays the pre-batch policy)")
    prox_logp: Literal["recompute", "loglinear"] = Field(
        "recompute", description="log π_prox: recompute (a forward pass of the batch before "
        "the update) or loglinear (AReaL's approximation, no forward pass: interpolated "
        "between the behaviour and the training forward's log-probs by version distance; "
        "exact on the first minibatch, training/loss.py)")


class WarmStartConfig(_Strict):
    steps: int = Field(0, ge=0, description="supervised steps before RL, on training-split "
                       "questions (kept as RUN/warm_start)")
    batch_size: int = 32
    lr: Optional[float] = None
    answers: Literal["random", "true"] = Field(
        "random", description="random: the format only (RL must learn the task; a "
        "random-init model's lever); true: supervised on the task itself (the search agent's "
        "cold start: scripted search/open/answer trajectories with the gold answer)")
    search_scripts: bool = Field(
        False, description="a user agent (rollout.workflow 'module:function') is warm-started "
        "only with this on, and then on the search agent's scripted episodes in the search "
        "agent's prompt and tags (fits an agent that speaks them, as "
        "examples/search_agent_openai.py does)")


class AgentConfig(_Strict):
    """The search agent (rollout.workflow: search); rollout.max_new_tokens is per turn."""

    max_turns: int = Field(4, ge=1, description="model generations per episode")
    context_tokens: Optional[int] = Field(None, ge=32, description="prompt + all turns + "
                                          "tool output; default: the model's context length")
    max_observation_tokens: int = Field(160, ge=1, description="a tool result is cut here")
    search_k: int = Field(3, ge=1, description="search results shown")
    snippet_chars: int = Field(160, ge=1, description="characters of each search snippet")
    snippet: Literal["window", "sentence"] = Field(
        "window", description="window: the index's snippet; sentence: the page's sentences, "
        "those sharing most words with the query first")
    format_reward: float = Field(0.0, ge=0, le=0.1, description="added when an answer "
                                 "is given (logged apart from the task reward)")
    evidence_reward: float = Field(
        0.0, ge=0, le=0.5, description="training only: an answer that earns less than full "
        "task reward earns this much more times (1 - task reward) times the share of the "
        "question's evidence pages whose text the episode was shown, so a group that answers "
        "wrong but reads more or less of the chain still has a signal (logged apart; the "
        "held-out agent and `datagen eval` score the answer alone)")


class RebandConfig(_Strict):
    """Re-banding during training (training/reband.py): what training sees re-bands what it
    streams next."""

    reband_every: int = Field(0, ge=0, description="re-band the questions this run rolled out "
                              "from their rollouts every K steps (difficulty rows with source "
                              "'training'); 0 = off, and then nothing below applies")
    explore_share: float = Field(0.1, ge=0, lt=1, description="ε: share of draws from the "
                                 "bands data.band_weights excludes (e.g. too_easy, too_hard), so "
                                 "a question there can come back when the policy changes")
    retry_after_versions: int = Field(0, ge=0, description="M: a question re-banded into "
                                      "an excluded band is served again once M policy versions "
                                      "passed since its last rollout (0 = off)")


TINY_LR = 1e-3   # the tiny random-init models' learning rate (a real model's is ~50x smaller)


class EngineConfig(_Strict):
    """The DeepSpeed train engine (training/engines/deepspeed_engine.py). Its logits are
    divided by rollout.temperature, the one sampling temperature."""

    zero_stage: Literal[0, 1, 2, 3] = 0
    precision: Literal["fp32", "bf16"] = Field("fp32", description="training precision (the "
                                               "weights for inference are exported in fp32)")
    micro_batch_size: int = Field(8, ge=1, description="sequences per forward/backward")
    lr: float = Field(TINY_LR, gt=0, description="AdamW learning rate, constant; gradients "
                      "are clipped at norm 1. Unset, it fits the model: 1e-3 for the tiny "
                      "random-init model the run builds, the registry's for model.name "
                      "(smollm2-135m-instruct: 2e-5); with model.path it must be set")


# Keys that were tried and dropped, with what to write instead: one line, not a traceback.
_DROPPED = {
    "loss.kl_coef": "the trainer keeps no reference model: remove it",
    "loss.entropy_coef": "the entropy bonus was tried and dropped: remove it",
    "loss.all_wrong_advantage": "negative-sample reinforcement was tried and dropped: remove it",
    "loss.baseline": "the advantage baseline is the group's (GRPO): remove it",
    "loss.cap_mode": "tokens over behav_cap are masked: remove it",
    "loss.recompute_prox": "write loss.prox_logp: recompute (or loglinear)",
    "loss.scale_adv_by_std": "advantages are always scaled by the group's std: remove it",
    "engine.temperature": "use rollout.temperature (the trainer divides its logits by it)",
    "engine.export_dtype": "weights are exported in float32: remove it",
    "engine.gradient_checkpointing": "was never used: remove it",
    "engine.ds_overrides": "set the engine's typed fields: remove it",
    "engine.weight_decay": "AdamW runs without weight decay: remove it",
    "engine.betas": "AdamW runs with its default betas: remove it",
    "engine.eps": "AdamW runs with its default eps: remove it",
    "engine.grad_clip": "gradients are clipped at norm 1.0: remove it",
    "engine.warmup_steps": "the learning rate is constant (no warm-up): remove it",
    "engine.build_shm_op": "DeepSpeed's CPU comm op is never built (no run needed it): remove it",
    "reband.rollout_window": "a question's band comes from its rollouts in the last "
                             "policy version: remove it",
    "rollout.top_p": "sampling is plain temperature sampling: remove it",
    "rollout.max_failed_fraction": "the run stops when over half a step's episodes raise: "
                                   "remove it",
    "model.seed": "use the top-level seed",
    "data.seed": "use the top-level seed",
    "model.tiny_heads": "heads are 32 wide: set tiny_hidden only",
    "model.tiny_kv_heads": "heads are 32 wide: set tiny_hidden only",
    "model.tiny_intermediate": "the MLP is 2 x tiny_hidden: remove it",
    "agent.tool_timeout_s": "tools time out after 10 s: remove it",
    "warm_start.questions": "the warm start scripts up to 4096 questions: remove it",
}


class TrainConfig(_Strict):
    steps: int = Field(100, ge=1)
    eval_every: int = Field(10, ge=1)
    checkpoint_every: int = Field(10, ge=1)
    keep_checkpoints: int = Field(2, ge=1)
    seed: int = 0
    model: ModelConfig = Field(default_factory=ModelConfig)
    data: DataConfig = Field(default_factory=DataConfig)
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    loss: LossConfig = Field(default_factory=LossConfig)
    warm_start: WarmStartConfig = Field(default_factory=WarmStartConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    reband: RebandConfig = Field(default_factory=RebandConfig)
    engine: EngineConfig = Field(default_factory=EngineConfig)

    @model_validator(mode="before")
    @classmethod
    def _dropped_keys(cls, data: Any) -> Any:
        """A dropped key gets its own line saying what to do instead."""
        if not isinstance(data, dict):
            return data
        if "loop" in data:
            raise ValueError("loop: the section is now reband: (it re-bands questions during "
                             "training): rename it, its keys are the same")
        found = [f"{section}.{key}: {why}" for section, key, why in
                 (k.split(".") + [v] for k, v in _DROPPED.items())
                 if isinstance(data.get(section), dict) and key in data[section]]
        if found:
            raise ValueError("; ".join(found))
        return data

    @model_validator(mode="after")
    def _split_survives_rebanding(self) -> "TrainConfig":
        """Re-bands move questions between bands, and their ε share trains questions
        of excluded bands: a split that names `band` would take in a question trained as
        too_easy once it is re-banded easy (seen: one of the held-out 100 in a reband run)."""
        where = self.data.eval_where or ""
        if self.reband.reband_every and re.search(r"\bband\b", where, re.IGNORECASE):
            raise ValueError(f"data.eval_where {where!r} names band, which reband.reband_every "
                             "changes during the run: hold out by question_id and fixed "
                             "columns (hops), and pick bands when evaluating (datagen eval "
                             "--where)")
        return self

    @model_validator(mode="after")
    def _lr_fits_the_model(self) -> "TrainConfig":
        """engine.lr unset: the model family's (a real model trained at the tiny models'
        1e-3 unlearns what it knew within a few steps)."""
        if "lr" not in self.engine.model_fields_set:
            self.engine.lr = family_lr(self.model)
        return self

    @model_validator(mode="after")
    def _user_agent_warm_start(self) -> "TrainConfig":
        """The warm start's scripts are the search agent's: a user agent opts in."""
        user_agent = self.rollout.workflow not in ("qa", "search")
        if self.warm_start.search_scripts and not user_agent:
            raise ValueError("warm_start.search_scripts is for a user agent (rollout.workflow "
                             "'module:function'): remove it")
        if user_agent and self.warm_start.steps and not self.warm_start.search_scripts:
            raise ValueError(f"warm_start.steps with the user agent {self.rollout.workflow} "
                             "would train the search agent's scripted episodes, not your "
                             "agent's: set warm_start.search_scripts: true if your agent speaks "
                             "the search agent's tags, or warm_start.steps: 0")
        return self


def family_lr(model: ModelConfig) -> float:
    """The learning rate of the model's family: the tiny model's, or the registry's for a
    named model; a model folder's cannot be told, so it is asked for."""
    if model.name is not None:
        from datagen.models.pull import get_spec  # light: no torch
        return get_spec(model.name).train_lr
    if model.path is not None:
        raise ValueError(f"engine.lr: model.path {model.path} is a model this config cannot "
                         "size: set engine.lr (1e-3 suits the tiny random-init models, 2e-5 a "
                         "pretrained ~100M model such as smollm2-135m-instruct)")
    return TINY_LR


def load_config(path: str | Path | None = None,
                overrides: dict[str, Any] | None = None) -> TrainConfig:
    """Defaults, then the YAML file, then `overrides` (nested dicts merged). A mistake is
    one `datagen.config_io.ConfigError` line naming the file and each key."""
    from datagen.config_io import read_config_file, validate

    data = read_config_file(path, "TrainConfig") if path is not None else {}
    return validate(TrainConfig, _merge(data, overrides or {}), str(path or "config"))


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in extra.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out
