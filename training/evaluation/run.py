"""`datagen eval` as one library call: `evaluate(EvalConfig) -> EvalReport`.

    questions (JSONL, its --split rows, or train_ready --where SQL)   questions.py
        └─► policy.attempt(question) k times ─► Attempt                policies.py
              └─► scores: EM, F1, verifiers judge and reward modes      scoring.py
                    └─► summary: avg@k, pass@k, turns, tool calls, searches, pages seen;
                        by band, hops, type (bridge, comparison, yes/no apart);
                        trajectories.jsonl and summary.json in `out`
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from training.evaluation.policies import Policy, PolicyError
from training.evaluation.questions import EvalQuestion, type_group
from training.evaluation.scoring import Attempt, chose_an_option, score_attempt, summarize

if TYPE_CHECKING:
    from datagen.tools import PageTools
    from warehouse import Warehouse


@dataclass(frozen=True)
class EvalConfig:
    """One evaluation: a policy spec (checkpoint:PATH | endpoint | oracle | random), one
    question set (`questions` JSONL, its rows of `split` only when given, or `where` over
    train_ready), pages from `warehouse`."""

    policy: str
    warehouse: Path | None = None
    questions: Path | None = None
    where: str | None = None
    k: int = 1
    limit: int | None = None
    use_tools: bool = True
    max_turns: int | None = None
    endpoint: str | None = None
    model: str | None = None
    temperature: float = 1.0
    seed: int = 0
    out: Path = Path("runs") / "eval"
    split: str | None = None

    def __post_init__(self):
        if (self.questions is None) == (self.where is None):
            raise ValueError("give one of --questions FILE.jsonl or --where SQL")
        if self.split is not None and self.questions is None:
            raise ValueError("--split selects rows of a --questions file: give one, or "
                             "leave --split out")
        if self.questions is not None and not self.questions.is_file():
            raise ValueError(f"--questions {self.questions}: no such file")


@dataclass(frozen=True)
class EvalReport:
    summary: dict
    trajectories: Path


def evaluate(cfg: EvalConfig, note: Callable[[str], None] = lambda line: None,
             advance: Callable[[int, int], None] = lambda done, total: None) -> EvalReport:
    """Run `cfg.policy` over the question set `k` times, score, write trajectories and the
    summary into `cfg.out`; `note` hears where a checkpoint's agent settings came from,
    `advance(done, total)` the episodes finished (every twentieth of them)."""
    import warehouse
    from datagen.tools import PageTools
    from warehouse.runs import sigterm_interrupts

    wh = warehouse.open(cfg.warehouse, create=False, read_only=True)
    try:
        questions = select_questions(wh, cfg)
        policy, close = build_policy(cfg, PageTools.open(wh), note)
        try:   # a SIGTERM too ends in close(): vLLM's engine processes go with the eval
            with sigterm_interrupts():
                rows = _play(questions, policy, cfg.k, advance)
        finally:
            close()
    finally:
        wh.close()
    summary = {"policy": cfg.policy, "no_tools": not cfg.use_tools, "k": cfg.k,
               **summarize(rows, cfg.k)}
    cfg.out.mkdir(parents=True, exist_ok=True)
    (cfg.out / "summary.json").write_text(json.dumps(summary, indent=1))
    return EvalReport(summary, write_trajectories(rows, cfg.out / "trajectories.jsonl"))


class EvalFailed(RuntimeError):
    """The policy cannot play on (its inference engine unreachable or dead, its endpoint given
    up on): every episode would fail alike. The message is one line saying which."""


def _play(questions: list[EvalQuestion], policy: Policy, k: int,
          advance: Callable[[int, int], None]) -> list[dict]:
    """`run_eval`, a systematic failure raised as `EvalFailed` rather than a traceback."""
    try:
        return asyncio.run(run_eval(questions, policy, k, advance=advance))
    except Exception as exc:
        if (line := systematic(exc)) is None:
            raise
        raise EvalFailed(line) from exc


def systematic(exc: BaseException) -> str | None:
    """The one line of a failure every episode would meet (an endpoint its client gave up
    on, an inference engine unreachable or dead), or None: one episode's own error."""
    from datagen.llm import LLMStop
    from training.failures import describe, engine_unreachable, unreachable_message

    if isinstance(exc, LLMStop):   # its message is the line; an empty one gets its type
        text = str(exc).strip()
        return text.splitlines()[0] if text else describe(exc)
    return unreachable_message(exc) if engine_unreachable(exc) else None


def evaluate_quietly(cfg: EvalConfig) -> EvalReport:
    """`evaluate` with the libraries' output (vLLM's engine, transformers, DeepSpeed) in
    OUT/eval.log (`datagen --verbose`: on the terminal), its progress lines on the console."""
    from datagen.console import counted, quiet_run, verbose_requested
    with quiet_run(Path(cfg.out) / "eval.log", verbose=verbose_requested()) as console, \
            counted(console, "eval", "episodes") as advance:
        return evaluate(cfg, note=console.line, advance=advance)


def select_questions(wh: "Warehouse", cfg: EvalConfig) -> list[EvalQuestion]:
    """The config's question set (a file's `split` rows), its first `limit`; none is a
    user error."""
    from training.evaluation.questions import load_questions_jsonl, load_questions_warehouse

    if cfg.questions is not None:
        found = load_questions_jsonl(cfg.questions, cfg.split)[:cfg.limit]
    else:
        found = load_questions_warehouse(wh, cfg.where, cfg.limit)
    if not found:
        raise ValueError("no questions selected")
    return found


def build_policy(cfg: EvalConfig, tools: "PageTools", note: Callable[[str], None]
                 ) -> tuple[Policy, Callable[[], None]]:
    """(policy, close) for the --policy spec."""
    from training.evaluation import policies as pol

    if cfg.policy == "oracle":
        return pol.OraclePolicy(tools), lambda: None
    if cfg.policy == "random":
        random_cfg = {"max_turns": cfg.max_turns} if cfg.max_turns else {}
        return pol.RandomPolicy(tools, seed=cfg.seed, **random_cfg), lambda: None
    if cfg.policy == "endpoint":
        return pol.endpoint_policy(tools, cfg.endpoint, cfg.model, use_tools=cfg.use_tools,
                                   max_turns=cfg.max_turns, temperature=cfg.temperature)
    if not cfg.policy.startswith("checkpoint:"):
        raise PolicyError(f"--policy {cfg.policy!r}: use checkpoint:PATH, endpoint, oracle "
                          "or random")
    from datagen.models import resolve_model  # a pulled registry name names its folder

    path = Path(resolve_model(cfg.policy.split(":", 1)[1]))
    settings = pol.run_settings(path)
    note(settings.note(path))
    return pol.checkpoint_policy(path, tools, settings, use_tools=cfg.use_tools,
                                 max_turns=cfg.max_turns, temperature=cfg.temperature,
                                 seed=cfg.seed)


async def run_eval(questions: list[EvalQuestion], policy: Policy, k: int = 1,
                   concurrency: int = 16,
                   advance: Callable[[int, int], None] = lambda done, total: None) -> list[dict]:
    """One trajectory row per (question, sample): the attempt and its scores. Episodes run
    `concurrency` at a time: vLLM batches them (decoding a small model on a CPU reads every
    weight per step, so 16 at once cost little more than 8; 16 of 2,048 tokens fit the CPU
    KV cache)."""
    gate, total, done = asyncio.Semaphore(concurrency), len(questions) * k, [0]
    every = max(1, total // 20)

    async def one(q: EvalQuestion, i: int) -> dict:
        async with gate:
            a = await _attempt(policy, q, i)
        done[0] += 1
        if done[0] % every == 0 or done[0] == total:
            advance(done[0], total)
        return {"question_id": q.question_id, "sample": i, "band": q.band, "hops": q.hops,
                "kind": q.kind, "type": type_group(q), "answer_in_support": q.answer_in_support,
                "option": chose_an_option(a, q), **asdict(a),
                **score_attempt(a, q, policy.reward_mode)}

    return list(await asyncio.gather(*(one(q, i) for q in questions for i in range(k))))


async def _attempt(policy: Policy, q: EvalQuestion, sample: int) -> Attempt:
    """The policy's attempt; one that raises an error of its own is kept as a failed attempt
    (no answer, scored 0, its error named) and the eval goes on. A systematic failure
    (`systematic`) is raised: every episode would meet it."""
    from training.failures import describe

    try:
        return await policy.attempt(q, sample)
    except Exception as exc:
        if systematic(exc) is not None:
            raise
        return Attempt(None, error=describe(exc))


def write_trajectories(rows: list[dict], path: str | Path) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return Path(path)

