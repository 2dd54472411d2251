"""benchmarks/study_search_agent.py's orchestration, not its training: the step runner is
replaced by a fake that writes what the real step writes (a run's metrics.jsonl, checkpoints
and models, an eval's summary.json), so what is tested is the plan, the skip and resume
logic of state.json, and the table, curves and RESULT lines written from those outputs."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "study_search_agent.py"


@pytest.fixture(scope="module")
def study():
    spec = importlib.util.spec_from_file_location("study_search_agent", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def data(tmp_path):
    """A corpus folder (two eval rows, one train row) and one benchmark set."""
    corpus, bench = tmp_path / "corpus", tmp_path / "bench"
    corpus.mkdir(), bench.mkdir()
    rows = [{"id": str(i), "question": f"Q{i}?", "answers": ["x"], "split": split}
            for i, split in enumerate(["eval", "train", "eval"])]
    (corpus / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (bench / "set.jsonl").write_text('{"question": "B?", "answers": ["y"]}\n')
    return corpus, bench


def block(reward: float) -> dict:
    return {"questions": 3, "reward_avg@1": reward, "em_avg@1": reward / 2,
            "judge_avg@1": reward, "searches": 1.5, "pages_seen": 2.25}


class Fake:
    """Writes each step's outputs; `kill` names a step that dies after writing part of them."""

    def __init__(self, kill: str | None = None):
        self.kill, self.calls = kill, []

    def __call__(self, step, log: Path) -> None:
        self.calls.append(step)
        if step.name == "base_a":   # the base model's run folder: no model pulled here
            (step.out / "base").mkdir(parents=True)
        elif step.action is not None:
            step.action()
        elif step.name.startswith("train_"):
            self.train(step.out, step.name == self.kill)
        elif step.name.startswith("eval_"):
            step.out.mkdir(parents=True)
            good = {"q1"} | ({"q0"} if step.name.startswith("eval_d_") else set())
            (step.out / "trajectories.jsonl").write_text("".join(
                json.dumps({"question_id": q, "reward": float(q in good)}) + "\n"
                for q in ("q0", "q1", "q2")))
            if step.name != self.kill:
                summ = {"k": 1, "all": block(0.4), "by_type": {"bridge": block(0.3),
                                                               "yes/no": block(0.5)}}
                (step.out / "summary.json").write_text(json.dumps(summ))
        elif step.out is not None:
            step.out.mkdir(parents=True, exist_ok=True)
        if step.name == self.kill:
            raise KeyboardInterrupt(step.name)

    @staticmethod
    def train(run: Path, killed: bool) -> None:
        (run / "checkpoints" / "step_2").mkdir(parents=True, exist_ok=True)
        (run / "checkpoints" / "step_2" / "DONE").touch()
        if killed:
            return
        rows = [{"step": 0, "reward_mean": None}] + [
            {"step": i, "reward_mean": 0.1 * i, "step_s": 10.0 * i,
             "episodes_generated": 20 * i, "episodes_with_gradient": 16 * i,
             "gradient_share": 0.8, "groups_dropped_no_signal": i} for i in (1, 2, 3)]
        (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (run / "warm_start").mkdir()
        (run / "final").mkdir()


def run(study, root, data, runner, *extra):
    corpus, bench = data
    return study.main([str(root), "--corpus", str(corpus), "--benchmarks", str(bench),
                       *extra], runner=runner)


def test_every_step_runs_once_then_a_rerun_skips_them_all(study, data, tmp_path, capsys):
    root, fake = tmp_path / "study", Fake()
    run(study, root, data, fake, "--steps", "3")
    names = [s.name for s in fake.calls]
    assert names[:4] == ["model", "site", "decon", "build_corpus"]
    assert {"build_demo", "human_copy", "human_import", "human_verify", "human_band",
            "eval_a_zero", "train_e", "eval_e_warm", "eval_e_final"} <= set(names)
    assert names.index("human_band") < names.index("train_e") < names.index("eval_e_final")
    decon = root / "decon" / "corpus_eval.jsonl"
    assert [json.loads(x)["id"] for x in decon.read_text().splitlines()] == ["0", "2"]
    assert (root / "decon" / "set.jsonl").is_symlink()
    state = json.loads((root / "state.json").read_text())
    assert all(r["done"] and "wall_s" in r["attempts"][0] for r in state["steps"].values())
    assert all(" cores, " in r["attempts"][0]["machine"] for r in state["steps"].values())
    assert f"| {study.machine()} | `" in (root / "table.md").read_text()
    assert "datagen train --config" in state["steps"]["train_d"]["attempts"][0]["cmd"]
    out = capsys.readouterr().out
    assert sum(line.startswith("RESULT study_search_agent arm=") for line in
               out.splitlines()) == 5
    assert "arm=d reward_warm=0.400 em_warm=0.200" in out and "reward_zero=0.400" in out
    assert "contrast=d-c diff=+0.333" in out and "contrast=d-a diff=+0.333" in out
    assert "| d − e | +0.333 |" in (root / "table.md").read_text()

    again = Fake()
    run(study, root, data, again, "--steps", "3")
    assert again.calls == [] and "skip train_d: done" in capsys.readouterr().out


def test_a_killed_eval_reruns_from_scratch_and_only_it(study, data, tmp_path):
    root = tmp_path / "study"
    with pytest.raises(KeyboardInterrupt):
        run(study, root, data, Fake(kill="eval_d_warm"), "--arms", "a,d", "--steps", "3")
    state = json.loads((root / "state.json").read_text())
    assert state["steps"]["train_d"]["done"] and not state["steps"]["eval_d_warm"]["done"]
    assert (root / "arms/d/eval_warm/trajectories.jsonl").exists()   # what it left

    fake = Fake()
    run(study, root, data, fake, "--arms", "a,d", "--steps", "3")
    assert [s.name for s in fake.calls] == ["eval_d_warm"]
    assert (root / "arms/d/eval_warm/summary.json").exists()
    assert len(json.loads((root / "state.json").read_text())
               ["steps"]["eval_d_warm"]["attempts"]) == 2


def test_a_killed_training_resumes_from_its_checkpoint(study, data, tmp_path):
    root = tmp_path / "study"
    with pytest.raises(KeyboardInterrupt):
        run(study, root, data, Fake(kill="train_c"), "--arms", "c", "--steps", "3")
    fake = Fake()
    run(study, root, data, fake, "--arms", "c", "--steps", "3")
    assert fake.calls[0].name == "train_c" and fake.calls[0].cmd[-1] == "--resume"


def test_a_training_killed_before_any_checkpoint_starts_over(study, data, tmp_path):
    root = tmp_path / "study"
    left = root / "arms/c/run/train.log"
    left.parent.mkdir(parents=True)
    left.write_text("half a run")
    run(study, root, data, Fake(), "--arms", "c", "--steps", "3")
    assert not left.exists()
    cmd = json.loads((root / "state.json").read_text())["steps"]["train_c"]["attempts"][0]["cmd"]
    assert "--resume" not in cmd


def test_arm_configs_differ_only_in_their_stream_and_load(study, data, tmp_path):
    from training.config import load_config

    root = tmp_path / "study"
    run(study, root, data, Fake(), "--arms", "b,c,d,e", "--steps", "4")
    cfgs = {a: load_config(root / "arms" / a / "config.yaml") for a in "bcde"}
    assert {c.steps for c in cfgs.values()} == {4} and {c.seed for c in cfgs.values()} == {0}
    recipe = load_config(SCRIPT.parents[1] / "examples" / "search_agent_cpu.yaml")
    assert {c.warm_start.steps for c in cfgs.values()} == {recipe.warm_start.steps}
    where = {a: c.data.train_where for a, c in cfgs.items()}
    base = recipe.data.train_where
    assert where["b"] == where["d"] == base and where["c"] == f"({base}) and hops = 1"
    assert "lake.questions where composer = 'human'" in where["e"] and base in where["e"]


def test_a_rerun_with_other_rl_steps_is_refused(study, data, tmp_path):
    root = tmp_path / "study"
    run(study, root, data, Fake(), "--arms", "a", "--steps", "3")
    with pytest.raises(SystemExit, match="started with 3 RL steps"):
        run(study, root, data, Fake(), "--arms", "a", "--steps", "5")


def test_report_only_writes_the_table_and_curves_of_what_ran(study, data, tmp_path, capsys):
    root = tmp_path / "study"
    run(study, root, data, Fake(), "--arms", "a,d", "--steps", "3")
    (root / "table.md").unlink()
    calls = Fake()
    run(study, root, data, calls, "--arms", "a,b,d", "--report-only")
    assert calls.calls == []
    md = (root / "table.md").read_text()
    row = "| d (corpus, all) | RL | 0.400 | 0.200 | 0.400 | 1.50 | 2.25 | 0.300 / 0.150 (n=3) | — |"
    assert row in md   # bridge figures, no comparison question
    assert "| b (demo build) | cold start | not run" in md and "| a (zero-shot) | zero-shot |" in md
    assert "| d (corpus, all) | 3 | 20 | 60 | 60 | 48 | 0.80 | 3 |" in md
    assert (root / "curves.png").read_bytes()[:4] == b"\x89PNG"
    steps, rewards = study.reward_curve(root / "arms/d/run")
    assert steps == [1, 2, 3] and rewards == pytest.approx([0.1, 0.2, 0.3])


def test_the_human_filter_is_a_train_where_the_trainer_accepts(study, wh):
    """The subquery form arm e trains with, against the real split and reader (the
    fact_copy task's composer standing in for 'human')."""
    from training.config import DataConfig
    from training.split import resolve_split
    from training.tasks import load_task
    from warehouse.reader import StreamReader

    load_task(wh, "fact_copy", 40, seed=3)
    where = study.HUMAN_TRAIN.replace("'human'", "'task:fact_copy'")
    split = resolve_split(DataConfig(eval_size=2, train_where=where), wh)
    reader = StreamReader(wh, {"medium": 1.0}, seed=0, where=split.train_where, max_epochs=1)
    assert len(list(reader)) > 30
