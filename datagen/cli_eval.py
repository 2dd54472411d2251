"""CLI command `datagen eval` (kept light to import): policies come from training/policies.py,
running and scoring them from training/evaluate.py."""

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

    Pages for search/open come from --warehouse. `--policy endpoint --model NAME` without
    --endpoint serves the model with vLLM for the run.
    """
    params = dict(locals())
    from datagen.cli_model import wants_local_endpoint, with_local_endpoint
    if policy == "endpoint" and wants_local_endpoint(model, endpoint, None):
        return with_local_endpoint(eval_cmd, params)
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
    """(policy, close) for the --policy spec (built by training/policies.py)."""
    from datagen.tools import PageTools
    from training.policies import checkpoint_policy, eval_policy, run_agent_settings, settings_note

    tools = PageTools.open(wh)
    if not spec.startswith("checkpoint:"):
        return eval_policy(spec, tools, use_tools=not no_tools, max_turns=max_turns,
                           endpoint=endpoint, model=model, temperature=temperature, seed=seed)
    from datagen.models import resolve_model  # a pulled registry name names its folder
    path = Path(resolve_model(spec.split(":", 1)[1]))
    settings = run_agent_settings(path)
    print(settings_note(settings, path), file=sys.stderr)
    return checkpoint_policy(path, tools, settings, use_tools=not no_tools, max_turns=max_turns,
                             temperature=temperature, seed=seed)


def _table(summary: dict, k: int) -> str:
    cols = [f"{s}_avg@{k}" for s in SCORES] + [f"reward_pass@{k}", "turns", "tool_calls"]
    lines = ["\t".join(["group", "questions", *cols])]
    groups = [("all", summary["all"])] + [
        (f"{key[3:]}={g}", b) for key in ("by_band", "by_hops", "by_kind", "by_answer_in_support")
        for g, b in summary.get(key, {}).items()]
    for name, b in groups:
        lines.append("\t".join([name, str(b["questions"]), *(f"{b[c]:.3f}" for c in cols)]))
    return "\n".join(lines)
