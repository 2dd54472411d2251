"""The trainer's thin API layer (AReaL-lite style): records and engine protocols, no logic.

Engines implement these protocols; algorithms pass their loss into `TrainEngine.train_batch`,
so the engine never knows the algorithm.

Tensor alignment convention used everywhere in `training/`:
a batch is a dict of tensors of shape [B, T] over the full sequence (prompt + completion,
right-padded). `loss_mask[b, t] = 1` where `input_ids[b, t]` is a completion token.
`logprobs[b, t] = log p(input_ids[b, t] | input_ids[b, :t])` (position 0 holds 0), so
per-token logprobs of completion tokens line up with `loss_mask` directly.
Required keys: `input_ids`, `attention_mask`, `loss_mask` (long [B, T]); anything else the
loss needs (behaviour logprobs, advantages...) rides along in the same dict, aligned the
same way (`training.engines.batching.pack_sequences` builds such a batch).

Logprobs are those of the *sampling* distribution: inference engines report the logprob of
each sampled token after the temperature (plain temperature sampling), and
`TrainEngine.forward_logprobs` divides the logits by the configured temperature, or by a
batch's per-sequence `temperature` [B] (the one that sampled each row), so both sides agree
at the same weights.

`train_batch(batch, loss_fn)`: every rank gets the same global batch; the engine takes its
rows and splits them into micro-batches. `loss_fn(logprobs, micro_batch)` returns the
token-level *mean* over that micro-batch's `loss_mask` tokens; the engine weights each
micro-batch by its share of the global completion tokens, so the step optimises the mean
over all completion tokens of the batch. Stats are token-weighted the same way.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

TensorBatch = Mapping[str, Any]  # str -> torch.Tensor [B, T] (or [B] for per-sequence values)
# loss_fn(logprobs [B, T] with grad, batch) -> (scalar loss, stats dict of floats).
LossFn = Callable[[Any, TensorBatch], "tuple[Any, dict[str, float]]"]
Message = tuple[str, str]  # one chat message: (role, text)


@dataclass(frozen=True)
class GenerationRequest:
    prompt_ids: list[int]
    max_new_tokens: int
    temperature: float = 1.0
    stop_token_ids: tuple[int, ...] = ()
    seed: int | None = None
    # Generate past the model's end token (then only stop_token_ids and the budget end it):
    # fixed-length generations, for measuring throughput and for tests that need a long one.
    ignore_eos: bool = False


@dataclass(frozen=True)
class GenerationResult:
    """Token-level output. `output_versions[i]` is the policy version that produced token i."""

    prompt_ids: list[int]
    output_ids: list[int]
    output_logprobs: list[float]
    output_versions: list[int]
    finish_reason: str  # "stop" | "length"
    n_interruptions: int = 0


@dataclass(frozen=True)
class AgentInfo:
    """What a search-agent episode (training/agent.py) did beside its tokens."""

    answer: str | None = None
    overflow: bool = False           # the context ran out before an answer
    n_search: int = 0
    n_open: int = 0
    n_pages_seen: int = 0            # distinct pages whose text it saw (hits shown, pages opened)
    tool_errors: dict[str, int] = field(default_factory=dict)   # by reason
    reward_task: float = 0.0
    reward_format: float = 0.0
    reward_evidence: float = 0.0     # agent.evidence_reward's share (training episodes only)

    @property
    def answered(self) -> bool:
        return self.answer is not None

    @property
    def n_tool_calls(self) -> int:
        return self.n_search + self.n_open


@dataclass(frozen=True)
class EpisodeInfo:
    """What every episode reports beside its tokens: the reward rule that paid it (training
    metrics count them), how generation ended, its wall time; `agent` for an agent episode."""

    reward_rule: str = ""
    finish_reason: str = "stop"      # of the answer's turn: "stop" | "length"
    episode_s: float = 0.0
    n_interruptions: int = 0
    agent: AgentInfo | None = None   # None: a single-turn episode


@dataclass
class Trajectory:
    """One finished episode, ready to be trained on (or rejected by the controller)."""

    question_id: str
    prompt_ids: list[int]
    output_ids: list[int]
    output_logprobs: list[float]     # behaviour-policy logprobs, one per output token
    output_versions: list[int]       # policy version per output token
    reward: float
    start_version: int = -1          # policy version when its group was admitted: set once,
                                     # by the RolloutController (-1: not admitted by one)
    group_id: str = ""
    n_turns: int = 1
    text: str = ""
    info: EpisodeInfo = field(default_factory=EpisodeInfo)
    episode_id: str = field(default_factory=lambda: uuid.uuid4().hex)   # random, unique
    loss_mask: list[int] | None = None   # per output token: 1 = the model's own token, 0 = tool
                                         # output (multi-turn agent); None = every token
    temperature: float | None = None     # what sampled it, when the workflow says (a hotter
                                         # replay trains at its own); None = the run's


@runtime_checkable
class InferenceEngine(Protocol):
    """Async token-level generation with weight updates that interrupt generation in flight.
    `max_model_len`: the longest sequence it serves (vLLM's), None when it sets no bound of
    its own (the agent then keeps to the model's context)."""

    max_model_len: int | None
    tokens_generated: int   # counted as tokens arrive (progress, throughput)

    @property
    def version(self) -> int: ...

    async def agenerate(self, request: GenerationRequest) -> GenerationResult: ...

    async def update_weights(self, version: int, path: str) -> None:
        """Load the HF safetensors dir at `path` (from `TrainEngine.export_weights`) as
        policy `version`. Generations in flight are interrupted and continue under the new
        weights; tokens keep the version that produced them."""


    async def pause(self) -> None: ...

    async def resume(self) -> None: ...

    def close(self) -> None: ...


class EpisodeItem(Protocol):
    """The question a workflow plays an episode on (warehouse.reader.TrainItem is one)."""

    @property
    def question_id(self) -> str: ...

    @property
    def question(self) -> str: ...

    @property
    def answer(self) -> str: ...

    @property
    def answer_aliases(self) -> Sequence[str]: ...


class ItemSource(Protocol):
    """Where the rollout controller takes its questions (the warehouse's stream)."""

    def next_item(self) -> EpisodeItem | None: ...      # None = no more items (for now)


@dataclass
class RolloutBatch:
    """What the trainer gets: n·k trajectories in groups of n, and their staleness."""

    groups: list[list[Trajectory]]
    items: list[EpisodeItem]
    version: int
    staleness: list[int]

    @property
    def trajectories(self) -> list[Trajectory]:
        return [t for g in self.groups for t in g]


class Workflow(Protocol):
    """An episode on one question through an inference engine (None rejects it), and the
    prompt ids it starts from (the supervised warm start trains on them)."""

    def prompt_ids(self, question: str) -> list[int]: ...

    async def run_episode(self, engine: InferenceEngine,
                          item: EpisodeItem) -> Trajectory | None: ...


@runtime_checkable
class TrainEngine(Protocol):
    """A training backend (DeepSpeed). Knows models and optimizers, not algorithms."""

    def forward_logprobs(self, batch: TensorBatch) -> Any:
        """float32 [B, T] logprobs of the whole batch on CPU, no grad (the π_prox pass)."""

    def train_batch(self, batch: TensorBatch, loss_fn: LossFn) -> dict[str, float]:
        """One optimizer step on the global batch; token-weighted stats (+ lr, grad_norm)."""

    def export_weights(self, path: str) -> None:
        """An HF model dir (safetensors, config, tokenizer) that inference engines load."""

    def save(self, path: str, trainer_state: dict[str, Any]) -> None:
        """Model, optimizer, scheduler, RNG and the opaque `trainer_state` (JSON-able)."""

    def load(self, path: str) -> dict[str, Any]:
        """Restore what `save` wrote; returns its `trainer_state`."""

    def set_lr(self, lr: float | None) -> None:
        """Use `lr` for the following steps (None: the schedule's again; the warm start)."""


class TrainingFailed(RuntimeError):
    """Training stopped on a systematic failure (the inference engine unreachable, too many
    failed episodes in a step); the message is one line saying which. The run is `failed`."""
