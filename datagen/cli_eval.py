"""CLI command `datagen eval` (kept light to import): it builds an EvalConfig and calls
`training.evaluation.evaluate`, which runs and scores the policy."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from datagen.cli_common import (EndpointOpt, ModelOpt, SplitOpt, UserError, WarehouseOpt,
                                add_command, user_errors)
from datagen.cli_model import wants_local_endpoint, with_local_endpoint


def register(app: typer.Typer) -> None:
    add_command(app, "eval", eval_cmd)


PolicyOpt = Annotated[str, typer.Option(
    "--policy", help="checkpoint:PATH (HF model dir), endpoint (--endpoint/--model), "
                     "oracle (reads supporting page titles) or random.")]
QuestionsOpt = Annotated[Optional[Path], typer.Option(
    "--questions", help="JSONL with question and answers (shared/data/qa_benchmarks layout; "
                        "optional band, hops, support_titles, type, split; gold_pids name "
                        "support titles through a corpus.jsonl beside the file).")]
WhereOpt = Annotated[Optional[str], typer.Option(
    "--where", help="SQL condition over train_ready (instead of --questions).")]
KOpt = Annotated[int, typer.Option("-k", min=1, help="Samples per question (avg@k, pass@k).")]
LimitOpt = Annotated[Optional[int], typer.Option("--limit", min=1, help="First N questions.")]
NoToolsOpt = Annotated[bool, typer.Option(
    "--no-tools", help="checkpoint/endpoint: the single-turn baseline without tools.")]
MaxTurnsOpt = Annotated[Optional[int], typer.Option(
    "--max-turns", min=1, help="Default: the checkpoint's run config, else 4.")]
TemperatureOpt = Annotated[float, typer.Option("--temperature")]
OutOpt = Annotated[Optional[Path], typer.Option(
    "--out", help="Folder for trajectories.jsonl and summary.json (default runs/eval).")]
FormatOpt = Annotated[str, typer.Option("--format", help="table or json (the summary).")]
SeedOpt = Annotated[int, typer.Option("--seed")]


@user_errors
def eval_cmd(policy: PolicyOpt, questions: QuestionsOpt = None, split: SplitOpt = None,
             where: WhereOpt = None, warehouse: WarehouseOpt = None, k: KOpt = 1,
             limit: LimitOpt = None, no_tools: NoToolsOpt = False, max_turns: MaxTurnsOpt = None,
             endpoint: EndpointOpt = None, model: ModelOpt = None,
             temperature: TemperatureOpt = 1.0, out: OutOpt = None, fmt: FormatOpt = "table",
             seed: SeedOpt = 0) -> None:
    """Run a policy over a question set: EM, F1, verifiers accuracy (judge and reward modes),
    avg@k and pass@k, turns, tool calls, searches and pages seen per episode, by band, hops
    and type; trajectories as JSONL.

    Type is the file's `type`, else derived: a comparison when the answer is
    yes/no, or when both gold titles are named in the question and it has a
    comparing word (or, both, common, share, same) or the answer names one of
    them; else a bridge. Yes/no answers are reported apart (type=yes/no).

    Pages for search/open come from --warehouse. `--policy endpoint --model
    NAME` without --endpoint serves the model with vLLM for the run.
    """
    params = dict(locals())
    if policy == "endpoint" and wants_local_endpoint(model, endpoint, None):
        return with_local_endpoint(eval_cmd, params)
    from training.evaluation import EvalConfig
    from training.evaluation.run import evaluate_quietly
    from training.evaluation.scoring import summary_table
    if fmt not in ("table", "json"):
        raise UserError(f"--format must be table or json (got {fmt!r})")
    cfg = EvalConfig(policy, warehouse, questions, where, k, limit, not no_tools, max_turns,
                     endpoint, model, temperature, seed, out or Path("runs") / "eval", split)
    report = evaluate_quietly(cfg)
    print(json.dumps(report.summary) if fmt == "json" else summary_table(report.summary, k))
    print(f"trajectories: {report.trajectories}", file=sys.stderr)

