"""CLI commands over people's questions (kept light to import): `datagen eval` builds an
EvalConfig and calls `training.evaluation`, which runs and scores the policy;
`datagen import-questions` stores a questions file as composer `human` (datagen.human)."""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from datagen.cli_common import (EndpointOpt, ModelOpt, SplitOpt, WarehouseOpt, add_command,
                                error_exit, open_warehouse, user_errors)
from datagen.config_io import validate
from datagen.cli_model import wants_local_endpoint, with_local_endpoint


def register(app: typer.Typer) -> None:
    add_command(app, "import-questions", import_questions_cmd)
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
Format = Enum("Format", {v: v for v in ("table", "json")}, type=str)   # Typer checks it
FormatOpt = Annotated[Format, typer.Option("--format", help="table or json (the summary).")]
SeedOpt = Annotated[int, typer.Option("--seed")]


@user_errors
def eval_cmd(policy: PolicyOpt, questions: QuestionsOpt = None, split: SplitOpt = None,
             where: WhereOpt = None, warehouse: WarehouseOpt = None, k: KOpt = 1,
             limit: LimitOpt = None, no_tools: NoToolsOpt = False, max_turns: MaxTurnsOpt = None,
             endpoint: EndpointOpt = None, model: ModelOpt = None,
             temperature: TemperatureOpt = 1.0, out: OutOpt = None,
             fmt: FormatOpt = Format.table, seed: SeedOpt = 0) -> None:
    """Run a policy over a question set: EM, F1, verifiers accuracy (judge and reward modes),
    avg@k and pass@k, turns, tool calls, searches and pages seen per episode, by band, hops
    and type (the file's, else derived from the question and its gold titles; yes/no
    apart); trajectories as JSONL.

    Pages for search/open come from --warehouse. `--policy endpoint --model
    NAME` without --endpoint serves the model with vLLM for the run.
    """
    params = dict(locals())
    if policy == "endpoint" and wants_local_endpoint(model, endpoint, None):
        return with_local_endpoint(eval_cmd, params)
    from training.evaluation import EvalConfig
    from training.evaluation.run import EvalFailed, evaluate_quietly
    from training.evaluation.scoring import summary_table
    cfg = EvalConfig(policy, warehouse, questions, where, k, limit, not no_tools, max_turns,
                     endpoint, model, temperature, seed, out or Path("runs") / "eval", split)
    try:
        report = evaluate_quietly(cfg)
    except EvalFailed as exc:  # systematic: say why, and where the engine's own output went
        raise error_exit(f"{exc} (library output: {cfg.out / 'eval.log'})", 1) from None
    print(json.dumps(report.summary) if fmt is Format.json else summary_table(report.summary, k))
    if failed := report.summary["all"]["episodes_failed"]:
        print(f"{failed} episodes failed (scored 0): their rows' error says why", file=sys.stderr)
    print(f"trajectories: {report.trajectories}", file=sys.stderr)


FileArg = Annotated[Path, typer.Argument(
    help="JSONL of id, question, answers, gold_pids (titles through the corpus.jsonl beside "
         "it) or support_titles, optional type and split (hotpotqa_dev685's layout).")]


@user_errors
def import_questions_cmd(file: FileArg, split: SplitOpt = None,
                         warehouse: WarehouseOpt = None) -> None:
    """Import people's questions as questions of composer `human`, evidence quoted from their
    gold pages, to verify and band like the engine's.

    Type (bridge or comparison) and aliases as `datagen eval` reads them; hops = the gold
    pages found. A question whose gold pages are not all in the warehouse is skipped and
    counted by reason; importing again adds nothing. Then, for these questions only:
    `datagen verify --where "composer = 'human'"` and `datagen band --where "question_id in
    (select question_id from questions where composer = 'human')"`.
    """
    from datagen.human import ImportConfig, import_questions
    from training.evaluation.questions import load_questions_jsonl
    cfg = validate(ImportConfig, {"questions": file, "split": split}, "import-questions")
    questions = load_questions_jsonl(cfg.questions, cfg.split)   # bad rows: ValueError
    with open_warehouse(warehouse, create=False) as wh:
        summary = import_questions(wh, questions, cfg)
    typer.echo(summary.line())
