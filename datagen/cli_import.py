"""CLI command `datagen import-questions` (kept light to import): people's questions of a
JSONL file, read as `datagen eval` reads them, into the warehouse as composer `human`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from datagen.cli_common import SplitOpt, WarehouseOpt, add_command, open_warehouse, user_errors
from datagen.config_io import validate


def register(app: typer.Typer) -> None:
    add_command(app, "import-questions", import_questions_cmd)


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
    typer.echo(summary_line(summary.as_dict()))


def summary_line(s: dict) -> str:
    """What the command prints: imported, already stored, skipped by reason, hops and kind."""
    skipped = ", ".join(f"{k} {v}" for k, v in sorted(s["skipped"].items())) or "none"
    hops = ", ".join(f"{k}: {v}" for k, v in s["by_hops"].items())
    kinds = ", ".join(f"{k}: {v}" for k, v in sorted(s["by_kind"].items()))
    return (f"read {s['questions']} questions: imported {s['imported']}, already stored "
            f"{s['existing']}, skipped {skipped}; hops {{{hops}}}; kind {{{kinds}}} "
            f"(run {s['run_id']})")
