"""CLI command `datagen eval` (kept light to import; the logic is in training/evaluate.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from datagen.cli_common import UserError, WarehouseOpt, add_command, open_warehouse, user_errors

SCORES = ("reward", "judge", "em", "f1")


def register(app: typer.Typer) -> None:
    add_command(app, "eval", eval_cmd)


@user_errors
def eval_cmd(
    policy: Annotated[str, typer.Option(
        "--policy", help="checkpoint:PATH (HF model dir), endpoint (--endpoint/--model), "
                         "oracle (reads supporting page titles) or random.")],
    questions: Annotated[Optional[Path], typer.Option(
        "--questions", help="JSONL with question and answers (shared/data/qa_benchmarks "
                            "layout; optional band, hops, support_titles).")] = None,
    where: Annotated[Optional[str], typer.Option(
        "--where", help="SQL condition over train_ready (instead of --questions).")] = None,
    warehouse: WarehouseOpt = None,
    k: Annotated[int, typer.Option("-k", min=1, help="Samples per question (avg@k, pass@k).")] = 1,
    limit: Annotated[Optional[int], typer.Option("--limit", min=1, help="First N questions.")] = None,
    no_tools: Annotated[bool, typer.Option(
        "--no-tools", help="checkpoint/endpoint: the single-turn baseline without tools.")] = False,
    max_turns: Annotated[Optional[int], typer.Option(
        "--max-turns", min=1, help="Default: the checkpoint's run config, else 4.")] = None,
    endpoint: Annotated[Optional[str], typer.Option("--endpoint", help="OpenAI-compatible URL.")] = None,
    model: Annotated[Optional[str], typer.Option("--model", help="Model name at --endpoint.")] = None,
    temperature: Annotated[float, typer.Option("--temperature")] = 1.0,
    out: Annotated[Optional[Path], typer.Option(
        "--out", help="Folder for trajectories.jsonl and summary.json (default runs/eval).")] = None,
    fmt: Annotated[str, typer.Option("--format", help="table or json (the summary).")] = "table",
    seed: Annotated[int, typer.Option("--seed")] = 0,
) -> None:
    """Run a policy over a question set: EM, F1, verifiers accuracy (judge and reward modes),
    avg@k and pass@k, turns and tool calls, by band and hops; trajectories as JSONL.

    Pages for search/open come from --warehouse.
    """
    import asyncio

    from training.evaluate import run_eval, summarize, write_trajectories

    if (questions is None) == (where is None):
        raise UserError("give one of --questions FILE.jsonl or --where SQL")
    if fmt not in ("table", "json"):
        raise UserError(f"--format must be table or json (got {fmt!r})")
    wh = open_warehouse(warehouse, create=False, read_only=True)
    try:
        qs = _questions(wh, questions, where, limit)
        if not qs:
            raise UserError("no questions selected")
        pol, close = _policy(policy, wh, no_tools, max_turns, endpoint, model, temperature, seed)
        try:
            rows = asyncio.run(run_eval(qs, pol, k))
        finally:
            close()
    finally:
        wh.close()
    summary = {"policy": policy, "no_tools": no_tools, "k": k, **summarize(rows, k)}
    folder = out or Path("runs") / "eval"
    folder.mkdir(parents=True, exist_ok=True)
    write_trajectories(rows, folder / "trajectories.jsonl")
    (folder / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary) if fmt == "json" else _table(summary, k))
    print(f"trajectories: {folder / 'trajectories.jsonl'}", file=sys.stderr)


def _questions(wh, questions: Optional[Path], where: Optional[str], limit: Optional[int]):
    from training.evaluate import load_questions_jsonl, load_questions_warehouse

    if questions is not None:
        if not questions.is_file():
            raise UserError(f"--questions {questions}: no such file")
        return load_questions_jsonl(questions)[:limit]
    return load_questions_warehouse(wh, where, limit)


def _policy(spec: str, wh, no_tools: bool, max_turns: Optional[int], endpoint, model, temperature, seed):
    """(policy, close) for the --policy spec."""
    from datagen.tools import PageTools
    from training import evaluate as ev

    tools = PageTools.open(wh)
    if spec == "oracle":
        return ev.OraclePolicy(tools), lambda: None
    if spec == "random":
        return ev.RandomPolicy(tools, max_turns or 4, seed), lambda: None
    if spec == "endpoint":
        if not (endpoint and model):
            raise UserError("--policy endpoint needs --endpoint URL and --model NAME")
        from datagen.llm import ChatClient, EndpointConfig

        client = ChatClient(EndpointConfig(base_url=endpoint, model=model))
        return (ev.EndpointPolicy(client, tools, not no_tools, max_turns or 4,
                                  temperature=temperature), client.close)
    if spec.startswith("checkpoint:"):
        from datagen.models import resolve_model  # a pulled registry name names its folder
        return _checkpoint(Path(resolve_model(spec.split(":", 1)[1])), tools, no_tools, max_turns,
                           temperature, seed)
    raise UserError(f"--policy {spec!r}: use checkpoint:PATH, endpoint, oracle or random")


def run_agent_settings(checkpoint: Path) -> dict:
    """The agent settings a checkpoint was trained with (search results shown, snippet form,
    budgets, reward mode), from its run's config.yaml (RUN/final or RUN/weights/vN), so it is
    evaluated in the environment it learned; {} for a model folder outside a run."""
    from training.agent import agent_settings
    from training.config import load_config

    here = checkpoint.resolve()
    found = [d / "config.yaml" for d in (here.parent, here.parent.parent)
             if (d / "config.yaml").is_file() and (d / "metrics.jsonl").exists()]
    if not found:
        return {}
    config = found[0]
    try:
        return agent_settings(load_config(config))
    except (ValueError, OSError) as exc:
        raise UserError(f"--policy checkpoint:{checkpoint}: its run config {config} does not "
                        f"load: {exc}") from exc


def _checkpoint(path: Path, tools, no_tools: bool, max_turns: Optional[int], temperature: float,
                seed: int):
    import random

    from training.agent import SearchAgentWorkflow
    from training.engines.hf_engine import HFInferenceEngine
    from training.evaluate import CheckpointPolicy
    from training.models import load_tokenizer

    if not (path / "config.json").is_file():
        raise UserError(f"--policy checkpoint:{path}: not an HF model dir (no config.json)")
    settings = run_agent_settings(path)
    print(f"agent settings from the run config: {settings}" if settings else
          "agent settings: the defaults (no run config.yaml and metrics.jsonl beside or above "
          f"{path}; a run's own settings apply to RUN/final, RUN/warm_start, RUN/weights/vN)",
          file=sys.stderr)
    settings["max_turns"] = max_turns or settings.get("max_turns", 4)
    engine = HFInferenceEngine(path)
    agent = SearchAgentWorkflow(load_tokenizer(path), tools, use_tools=not no_tools,
                                temperature=temperature, _seed=random.Random(seed), **settings)
    return CheckpointPolicy(agent, engine), engine.close


def _table(summary: dict, k: int) -> str:
    cols = [f"{s}_avg@{k}" for s in SCORES] + [f"reward_pass@{k}", "turns", "tool_calls"]
    lines = ["\t".join(["group", "questions", *cols])]
    groups = [("all", summary["all"])] + [
        (f"{key[3:]}={g}", b) for key in ("by_band", "by_hops", "by_kind", "by_answer_in_support")
        for g, b in summary.get(key, {}).items()]
    for name, b in groups:
        lines.append("\t".join([name, str(b["questions"]), *(f"{b[c]:.3f}" for c in cols)]))
    return "\n".join(lines)
