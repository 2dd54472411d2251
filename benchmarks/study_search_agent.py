"""The search-agent study of issue 43 (item 4): five arms of one recipe, resumable.

Every arm is evaluated on the 367 people's `eval`-split HotpotQA questions over the corpus
site's pages:

    a  nothing: the base model, zero-shot, with tools
    b  trained on the demo build (the fictional world)
    c  trained on the corpus site's build, one-page questions only (the recipe's train_where
       and hops = 1)
    d  trained on the corpus site's build, all of it (the recipe's own train_where)
    e  trained on the 318 human-written `train`-split questions, imported into a copy of the
       corpus warehouse, verified and banded like d

Every trained arm: examples/search_agent_cpu.yaml (cold start, then RL), same seed, same
cold-start size, equal RL steps (`--steps N` sets them for all arms); evaluated after the
cold start (RUN/warm_start) and after RL (RUN/final) with `-w` the corpus warehouse, so the
search tool searches the corpus pages for every arm, b included.

Each step is one `datagen` command (or a file copy) and runs once: STUDY/state.json records
its command line, wall time and whether it finished, so a rerun skips finished steps and
reruns a killed one: a site, eval or copy half written is removed first; a build, import,
verify or band continues from what the warehouse holds (they resume); a training run
continues from its last complete checkpoint (`datagen train --resume`), else starts over.
Logs: STUDY/logs/STEP.log. At the end (or with --report-only): STUDY/table.md, STUDY/curves.png
and one RESULT line per arm.

    python benchmarks/study_search_agent.py runs/study                  # the full study
    python benchmarks/study_search_agent.py runs/study --steps 10       # fewer RL steps, all arms
    python benchmarks/study_search_agent.py runs/study --arms a,d       # a subset
    python benchmarks/study_search_agent.py runs/study --report-only
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import yaml

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
RECIPE = ROOT / "examples" / "search_agent_cpu.yaml"
MODEL = "smollm2-135m-instruct"
DATAGEN = (sys.executable, "-m", "datagen")
ARMS = {"a": "zero-shot", "b": "demo build", "c": "corpus, one-page",
        "d": "corpus, all", "e": "human questions"}
# `datagen band --where` as datagen/README.md's 'Importing questions' writes it
HUMAN_BAND = "question_id in (select question_id from questions where composer = 'human')"
# data.train_where is evaluated in the reader's own DuckDB connection, where the lake is
# attached as `lake` and a bare `questions` is a Catalog Error: the subquery names it.
HUMAN_TRAIN = "question_id in (select question_id from lake.questions where composer = 'human')"
STAGES = (("zero", "zero-shot"), ("warm", "cold start"), ("final", "RL"))


@dataclass(frozen=True)
class Step:
    """One step of the study: a command and the folder it writes (`out`). `partial` says what
    a rerun does with an `out` a killed attempt left: remove it, keep it (the command
    resumes), or resume (a training run: `--resume` when it holds a complete checkpoint).
    `inputs` are files written just before it runs; `action`, when set, is run in-process
    instead of `cmd` (a copy), and `cmd` only describes it."""

    name: str
    cmd: tuple[str, ...]
    out: Path | None = None
    partial: str = "remove"
    inputs: tuple[tuple[Path, str], ...] = ()
    action: Callable[[], None] | None = None


@dataclass(frozen=True)
class Study:
    """Where everything of one study lives, and what it was asked to run."""

    root: Path
    corpus: Path = DATA / "corpus" / "hotpotqa_dev685"
    benchmarks: Path = DATA / "qa_benchmarks"
    steps: int | None = None

    @property
    def questions(self) -> Path:
        return self.corpus / "questions.jsonl"

    def wh(self, name: str) -> Path:
        return self.root / f"wh_{name}"

    def run_dir(self, arm: str) -> Path:
        return self.root / "arms" / arm / "run"

    def eval_dir(self, arm: str, stage: str) -> Path:
        return self.root / "arms" / arm / f"eval_{stage}"


def recipe() -> dict:
    return yaml.safe_load(RECIPE.read_text())


def datagen(*args: object) -> tuple[str, ...]:
    return (*DATAGEN, *(str(a) for a in args))


# ---- the plan ------------------------------------------------------------------------------

def setup_steps(s: Study, arms: list[str]) -> list[Step]:
    """What the arms need before training: the model, the corpus site, the decontamination
    folder, the corpus build; the demo build for b; the human copy for e."""
    build = {"seed": 0, "seeds": [str(s.root / "site")], "compose": {"bridges_per_seed": 8},
             "verify": {"decontamination": str(s.root / "decon")}}
    steps = [Step("model", datagen("model", "pull", MODEL), partial="keep"),
             Step("site", datagen("site", s.corpus, s.root / "site"), s.root / "site"),
             Step("decon", ("write", str(s.root / "decon")), s.root / "decon",
                  action=lambda: write_decon(s)),
             Step("build_corpus", datagen("build", "--config", s.root / "build_corpus.yaml",
                                          "-w", s.wh("corpus")), s.wh("corpus"), "keep",
                  ((s.root / "build_corpus.yaml", yaml.safe_dump(build)),))]
    if "b" in arms:
        steps.append(Step("build_demo", datagen("build", "-w", s.wh("demo")), s.wh("demo"),
                          "keep"))
    return steps + (human_steps(s) if "e" in arms else [])


def human_steps(s: Study) -> list[Step]:
    """Arm e's warehouse: a copy of the corpus warehouse with the train-split questions
    imported, verified (the same decontamination) and banded (datagen/README.md)."""
    wh = s.wh("human")
    return [Step("human_copy", ("copy", str(s.wh("corpus")), str(wh)), wh,
                 action=lambda: copy_folder(s.wh("corpus"), wh)),
            Step("human_import", datagen("import-questions", s.questions, "--split", "train",
                                         "-w", wh), wh, "keep"),
            Step("human_verify", datagen("verify", "--where", "composer = 'human'",
                                         "--decontamination", s.root / "decon", "-w", wh),
                 wh, "keep"),
            Step("human_band", datagen("band", "--where", HUMAN_BAND, "-w", wh), wh, "keep")]


def arm_config(s: Study, arm: str) -> dict:
    """The recipe with the arm's training stream; the seed explicit; `--steps` for all."""
    cfg = recipe()
    cfg["seed"] = 0
    if s.steps:
        cfg["steps"] = s.steps
        cfg["eval_every"] = min(cfg["eval_every"], s.steps)
        cfg["checkpoint_every"] = min(cfg["checkpoint_every"], s.steps)
    base = cfg["data"]["train_where"]
    cfg["data"]["train_where"] = {"b": base, "c": f"({base}) and hops = 1", "d": base,
                                  "e": f"({base}) and {HUMAN_TRAIN}"}[arm]
    return cfg


def eval_step(s: Study, arm: str, stage: str, policy: str, *extra: object) -> Step:
    """`datagen eval` of one policy on the eval-split questions over the corpus pages, at the
    recipe's evaluation temperature."""
    out = s.eval_dir(arm, stage)
    temperature = recipe()["rollout"]["eval_temperature"]
    return Step(f"eval_{arm}_{stage}", datagen(
        "eval", "--policy", policy, "--questions", s.questions, "--split", "eval",
        "-w", s.wh("corpus"), "--temperature", temperature, "--seed", 0, "--out", out,
        "--format", "json", *extra), out)


def arm_steps(s: Study, arm: str) -> list[Step]:
    """a: one zero-shot eval (the recipe's turns); b-e: train, eval RL (warm_step: the cold
    start's eval)."""
    if arm == "a":
        run = s.run_dir("a")
        return [Step("base_a", ("base", str(run)), run, action=lambda: base_run(s, run)),
                eval_step(s, "a", "zero", f"checkpoint:{run / 'base'}")]
    run, config = s.run_dir(arm), s.root / "arms" / arm / "config.yaml"
    wh = s.wh({"b": "demo", "e": "human"}.get(arm, "corpus"))
    train = Step(f"train_{arm}", datagen("train", "--config", config, "--run-dir", run,
                                         "-w", wh), run, "resume",
                 ((config, yaml.safe_dump(arm_config(s, arm), sort_keys=False)),))
    final = [eval_step(s, arm, "final", f"checkpoint:{run / 'final'}")]
    return [train, *final, *([heldout_step(s, run)] if arm == "d" else [])]


def warm_step(s: Study, arm: str) -> list[Step]:
    """The cold start's eval of a trained arm: run after every arm's RL and its eval, so a
    session that runs short has the figures the study compares arms by."""
    if arm == "a":
        return []
    return [eval_step(s, arm, "warm", f"checkpoint:{s.run_dir(arm) / 'warm_start'}")]


def heldout_step(s: Study, run: Path) -> Step:
    """Arm d's final policy on the corpus build's own held-out questions (the recipe's
    eval_where), by hops: do searches and pages seen rise with the pages a question needs?"""
    out = s.root / "arms" / "d" / "eval_heldout"
    # all its multi-page questions, a quarter of its one-page ones (by another part of the
    # hash than the held-out fraction's): 85 episodes, not 280
    where = (f"({recipe()['data']['eval_where']}) and "
             "(hops >= 2 or substr(md5(question_id), 9, 2) < '40')")
    return Step("eval_d_heldout", datagen(
        "eval", "--policy", f"checkpoint:{run / 'final'}", "--where", where, "-w",
        s.wh("corpus"), "--temperature", recipe()["rollout"]["eval_temperature"], "--seed", 0,
        "--out", out, "--format", "json"), out)


def plan(s: Study, arms: list[str]) -> list[Step]:
    return (setup_steps(s, arms) + [st for arm in arms for st in arm_steps(s, arm)]
            + [st for arm in arms for st in warm_step(s, arm)])


# ---- in-process steps ----------------------------------------------------------------------

def write_decon(s: Study) -> None:
    """The decontamination folder `verify` reads (every *.jsonl in it): the eval-split
    questions of the corpus file, beside links to the shared benchmark sets."""
    tmp = s.root / "decon.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    rows = [ln for ln in s.questions.read_text().splitlines()
            if ln.strip() and json.loads(ln).get("split") == "eval"]
    (tmp / f"{s.corpus.name}_eval.jsonl").write_text("\n".join(rows) + "\n")
    for bench in sorted(s.benchmarks.glob("*.jsonl")):
        (tmp / bench.name).symlink_to(bench.resolve())
    tmp.rename(s.root / "decon")


def base_run(s: Study, run: Path) -> None:
    """Arm a's run folder: the base model as RUN/base beside the recipe's config, so that
    `datagen eval` plays it with the recipe's agent settings, as it plays the trained arms'
    checkpoints (a model folder outside a run gets eval's defaults). Files are hard links."""
    from datagen.models.resolve import resolve_model
    tmp = run.with_name(run.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(resolve_model(MODEL), tmp / "base", copy_function=os.link)
    (tmp / "config.yaml").write_text(yaml.safe_dump(arm_config(s, "d"), sort_keys=False))
    (tmp / "metrics.jsonl").write_text("")
    tmp.rename(run)


def copy_folder(src: Path, dst: Path) -> None:
    """`cp -r` through a temporary name, so a killed copy never looks finished (a copied
    warehouse reads and writes the folder it is in: warehouse/location.py)."""
    tmp = dst.with_name(dst.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp, symlinks=True)
    tmp.rename(dst)


# ---- running -------------------------------------------------------------------------------

def load_state(root: Path) -> dict:
    path = root / "state.json"
    return json.loads(path.read_text()) if path.exists() else {"settings": {}, "steps": {}}


def save_state(root: Path, state: dict) -> None:
    """Atomically: a study killed while saving keeps the previous state."""
    tmp = root / "state.json.tmp"
    tmp.write_text(json.dumps(state, indent=1))
    os.replace(tmp, root / "state.json")


def check_settings(s: Study, state: dict) -> None:
    """A study keeps the RL steps it started with: the arms must stay comparable."""
    steps = s.steps or recipe()["steps"]
    before = state["settings"].get("steps")
    if before is not None and before != steps:
        raise SystemExit(f"{s.root} was started with {before} RL steps, not {steps}: rerun "
                         f"with --steps {before}, or use another study folder")
    state["settings"]["steps"] = steps


def prepared(step: Step) -> Step:
    """The step as this attempt runs it, after what a killed attempt left is dealt with."""
    out = step.out
    if step.partial == "resume" and out is not None and any(
            (c / "DONE").exists() for c in (out / "checkpoints").glob("*")):
        return Step(step.name, (*step.cmd, "--resume"), out, step.partial, step.inputs,
                    step.action)
    if step.partial != "keep" and out is not None and out.exists():
        shutil.rmtree(out)
    return step


def run_command(step: Step, log: Path) -> None:
    """The real runner: the in-process action, or the command with its output in `log`."""
    if step.action is not None:
        step.action()
        return
    with open(log, "a") as f:
        f.write(f"$ {shlex.join(step.cmd)}\n")
        f.flush()
        subprocess.run(step.cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, check=True)


def run_steps(s: Study, steps: list[Step], state: dict,
              runner: Callable[[Step, Path], None] = run_command) -> None:
    """Each step not finished yet, in order; its attempt recorded before it runs (a killed
    one shows as unfinished) and its wall time after."""
    (s.root / "logs").mkdir(parents=True, exist_ok=True)
    for step in steps:
        rec = state["steps"].setdefault(step.name, {"done": False, "attempts": []})
        if rec["done"]:
            print(f"skip {step.name}: done", flush=True)
            continue
        step = prepared(step)
        for path, text in step.inputs:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        attempt = {"cmd": shlex.join(step.cmd), "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
                   "machine": machine()}
        rec["attempts"].append(attempt)
        save_state(s.root, state)
        print(f"run {step.name}: {attempt['cmd']}", flush=True)
        t0 = time.monotonic()
        try:
            runner(step, s.root / "logs" / f"{step.name}.log")
            rec["done"] = True
        finally:   # a failed attempt keeps its wall time too; its error goes on up
            attempt["wall_s"] = round(time.monotonic() - t0, 1)
            save_state(s.root, state)


def machine() -> str:
    """This machine's CPU in a few words (model, cores, native bf16 and through what), kept
    with each attempt: a study spans sessions, and machines differ 2-3x in step time (an
    RL step of arm d: 51 s on an AMX Xeon, ~150 s on an AVX-512 BF16 EPYC)."""
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    flags = set(_field(lines, "flags").split())
    bf16 = ("AMX bf16" if "amx_bf16" in flags else "AVX-512 BF16" if "avx512_bf16" in flags
            else "no native bf16")
    return f"{_field(lines, 'model name') or 'unknown CPU'}, {os.cpu_count()} cores, {bf16}"


def _field(cpuinfo: list[str], key: str) -> str:
    """The value of /proc/cpuinfo's first `key` line ('' when it has none)."""
    return next((x.split(":", 1)[1].strip() for x in cpuinfo if x.startswith(key)), "")


# ---- the report ----------------------------------------------------------------------------

TYPES = ("bridge", "comparison", "yes/no")
COLUMNS = ("reward", "EM", "judge", "searches", "pages seen",
           *(f"{t} reward / EM" for t in TYPES), "questions", "comparisons: a candidate")


def summary(s: Study, arm: str, stage: str) -> dict | None:
    """What `datagen eval` wrote to the stage's summary.json; None before it ran."""
    path = s.eval_dir(arm, stage) / "summary.json"
    return json.loads(path.read_text()) if path.exists() else None


def cells(summ: dict) -> list[str]:
    """One table row's figures from an eval summary: avg@k overall, per episode, by type."""
    k, every = summ["k"], summ["all"]
    by_type = summ.get("by_type", {})
    row = [f"{every[f'{m}_avg@{k}']:.3f}" for m in ("reward", "em", "judge")]
    row += [f"{every['searches']:.2f}", f"{every['pages_seen']:.2f}"]
    for t in TYPES:
        b = by_type.get(t)
        row.append(f"{b[f'reward_avg@{k}']:.3f} / {b[f'em_avg@{k}']:.3f} (n={b['questions']})"
                   if b else "—")
    return row + [str(every["questions"])]


def heldout_lines(s: Study) -> list[str]:
    """Arm d's final policy on the corpus build's held-out questions, by hops (pages)."""
    path = s.root / "arms" / "d" / "eval_heldout" / "summary.json"
    if not path.exists():
        return []
    by_hops = json.loads(path.read_text()).get("by_hops", {})
    out = ["", "Arm d after RL on the corpus build's held-out questions (the recipe's "
           "eval_where), by hops:", "", "| hops | questions | reward | searches | pages seen |",
           "|---|---|---|---|---|"]
    for hops, b in by_hops.items():
        out.append(f"| {hops} | {b['questions']} | {b['reward_avg@1']:.3f} | "
                   f"{b['searches']:.2f} | {b['pages_seen']:.2f} |")
    return out


def option_rate(s: Study, arm: str, stage: str) -> str:
    """Of the comparisons that name their two candidates, the share answered with one of them,
    from the eval's trajectories (evals older than the summary's option_rate have it too)."""
    from training.evaluation.questions import load_questions_jsonl
    from training.evaluation.scoring import Attempt, chose_an_option

    path = s.eval_dir(arm, stage) / "trajectories.jsonl"
    qs = {q.question_id: q for q in load_questions_jsonl(s.questions, "eval")}
    rows = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    chosen = [c for r in rows if r["question_id"] in qs
              and (c := chose_an_option(Attempt(r["answer"]), qs[r["question_id"]])) is not None]
    return f"{sum(chosen) / len(chosen):.2f} (n={len(chosen)})" if chosen else "—"


def question_rewards(s: Study, arm: str, stage: str) -> dict[str, float]:
    """question_id -> reward (mean over its samples) of one eval's trajectories."""
    path = s.eval_dir(arm, stage) / "trajectories.jsonl"
    if not path.exists():
        return {}
    sums: dict[str, list[float]] = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        sums.setdefault(row["question_id"], []).append(float(row["reward"]))
    return {q: sum(r) / len(r) for q, r in sums.items()}


def paired_bootstrap(x: dict[str, float], y: dict[str, float], n: int = 10_000,
                     seed: int = 0) -> tuple[float, float, float, int]:
    """(mean of x - y, 2.5 %, 97.5 % of the bootstrap over the questions both have, count):
    resampling questions, not episodes, so the interval is about the question set."""
    import numpy as np

    common = sorted(set(x) & set(y))
    diff = np.array([x[q] - y[q] for q in common])
    idx = np.random.default_rng(seed).integers(0, len(diff), (n, len(diff)))
    means = diff[idx].mean(axis=1)
    return float(diff.mean()), float(np.quantile(means, 0.025)), \
        float(np.quantile(means, 0.975)), len(common)


def contrasts(s: Study, arms: list[str]) -> list[tuple[str, str, tuple]]:
    """Arm d after RL against every other evaluated arm (a: zero-shot; the rest after RL)."""
    if "d" not in arms:
        return []
    d = question_rewards(s, "d", "final")
    out = []
    for arm in (a for a in arms if a != "d"):
        other = question_rewards(s, arm, "zero" if arm == "a" else "final")
        if d and other:
            out.append(("d", arm, paired_bootstrap(d, other)))
    return out


def contrast_lines(s: Study, arms: list[str]) -> list[str]:
    """The paired-bootstrap table of d's reward against each other arm's."""
    rows = contrasts(s, arms)
    if not rows:
        return []
    out = ["", "Arm d after RL against each other arm (reward, paired over the eval questions, "
           "10,000 bootstrap resamples of the questions):", "",
           "| contrast | difference | 95 % interval | questions |", "|---|---|---|---|"]
    for a, b, (mean, lo, hi, n) in rows:
        out.append(f"| {a} − {b} | {mean:+.3f} | [{lo:+.3f}, {hi:+.3f}] | {n} |")
    return out


def table(s: Study, arms: list[str], state: dict) -> str:
    """table.md: per arm and stage the eval figures; then every step's command and time."""
    lines = [f"# Search-agent study: {s.root}", "",
             f"RL steps per trained arm: {state['settings'].get('steps', '?')}; eval: the "
             f"`eval`-split questions of {s.questions}, pages of {s.wh('corpus')}.", "",
             "| arm | stage | " + " | ".join(COLUMNS) + " |",
             "|" + "---|" * (len(COLUMNS) + 2)]
    for arm in arms:
        for stage, label in STAGES:
            if (stage == "zero") != (arm == "a"):
                continue
            summ = summary(s, arm, stage)
            figures = cells(summ) + [option_rate(s, arm, stage)] if summ else \
                ["not run"] + [""] * (len(COLUMNS) - 1)
            lines.append(f"| {arm} ({ARMS[arm]}) | {label} | " + " | ".join(figures) + " |")
    lines += contrast_lines(s, arms) + heldout_lines(s) + rl_lines(s, arms)
    lines += ["", "Arm a is the base model in a run folder beside the recipe's config, so every "
              "arm is played with the recipe's agent settings.", "",
              "| step | wall s | machine (last attempt) | command |", "|---|---|---|---|"]
    for name, rec in state["steps"].items():
        wall = sum(a.get("wall_s", 0.0) for a in rec["attempts"])
        last = rec["attempts"][-1] if rec["attempts"] else {}
        flag = "" if rec["done"] else " (unfinished)"
        lines.append(f"| {name}{flag} | {wall:.0f} | {last.get('machine', '?')} | "
                     f"`{last.get('cmd', '')}` |")
    return "\n".join(lines) + "\n"


def rl_lines(s: Study, arms: list[str]) -> list[str]:
    """Per trained arm, from its metrics.jsonl: RL steps, median step time, RL wall time and
    the run-long share of generated episodes that carried a gradient."""
    import statistics

    out = ["", "RL of each trained arm (metrics.jsonl):", "",
           "| arm | RL steps | median step s | RL wall s | episodes generated | with a gradient |"
           " gradient share | groups dropped, no signal |", "|---|---|---|---|---|---|---|---|"]
    for arm in (a for a in arms if a != "a"):
        rows = [r for r in metric_rows(s.run_dir(arm)) if "step_s" in r]
        if rows:
            last, times = rows[-1], [r["step_s"] for r in rows]
            out.append(f"| {arm} ({ARMS[arm]}) | {last['step']} | {statistics.median(times):.0f} "
                       f"| {sum(times):.0f} | {last['episodes_generated']} | "
                       f"{last['episodes_with_gradient']} | {last['gradient_share']:.2f} | "
                       f"{last['groups_dropped_no_signal']} |")
    return out if len(out) > 5 else []


def metric_rows(run: Path) -> list[dict]:
    """The RL steps' rows of a run's metrics.jsonl (none when it has none; no step-0 row)."""
    path = run / "metrics.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()] \
        if path.exists() else []
    return [r for r in rows if r.get("step", 0) > 0]


def reward_curve(run: Path) -> tuple[list[int], list[float]]:
    """(steps, training reward) of a run's metrics.jsonl; the step-0 row has none."""
    rows = [r for r in metric_rows(run) if r.get("reward_mean") is not None]
    return [r["step"] for r in rows], [r["reward_mean"] for r in rows]


def write_curves(s: Study, arms: list[str], path: Path) -> None:
    """Each trained arm's training reward over RL steps, one line per arm."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for arm in arms:
        steps, rewards = reward_curve(s.run_dir(arm))
        if steps:
            ax.plot(steps, rewards, marker=".", label=f"{arm}: {ARMS[arm]}")
    ax.set_xlabel("RL step")
    ax.set_ylabel("training reward (batch mean)")
    ax.set_title("search agent: training reward by arm")
    if ax.lines:
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def result_line(s: Study, arm: str) -> str:
    """RESULT study_search_agent arm=X with reward, EM, judge, searches, pages per stage."""
    parts = [f"RESULT study_search_agent arm={arm}"]
    for stage, _ in STAGES:
        summ = summary(s, arm, stage)
        if summ:
            k, every = summ["k"], summ["all"]
            parts += [f"reward_{stage}={every[f'reward_avg@{k}']:.3f}",
                      f"em_{stage}={every[f'em_avg@{k}']:.3f}",
                      f"judge_{stage}={every[f'judge_avg@{k}']:.3f}",
                      f"searches_{stage}={every['searches']:.2f}",
                      f"pages_{stage}={every['pages_seen']:.2f}"]
    return " ".join(parts)


def report(s: Study, arms: list[str], state: dict) -> None:
    """table.md, curves.png, and a RESULT line per arm."""
    (s.root / "table.md").write_text(table(s, arms, state))
    write_curves(s, [a for a in arms if a != "a"], s.root / "curves.png")
    print(f"wrote {s.root / 'table.md'} and {s.root / 'curves.png'}")
    for arm in arms:
        print(result_line(s, arm))
    for a, b, (mean, lo, hi, n) in contrasts(s, arms):
        print(f"RESULT study_search_agent contrast={a}-{b} diff={mean:+.3f} "
              f"ci95=[{lo:+.3f},{hi:+.3f}] questions={n}")


def parse_arms(text: str) -> list[str]:
    arms = [a.strip() for a in text.split(",") if a.strip()]
    unknown = [a for a in arms if a not in ARMS]
    if unknown or not arms:
        raise SystemExit(f"--arms {text!r}: name arms among {','.join(ARMS)} (e.g. a,d)")
    return list(dict.fromkeys(arms))   # in the order given: the first runs first


def main(argv: list[str] | None = None,
         runner: Callable[[Step, Path], None] = run_command) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("study", type=Path, help="the study folder (e.g. runs/study)")
    ap.add_argument("--arms", default=",".join(ARMS), help="a subset, in the order to run, e.g. d,c,a")
    ap.add_argument("--steps", type=int, default=None,
                    help="RL steps of every trained arm (default: the recipe's)")
    ap.add_argument("--corpus", type=Path, default=Study.corpus,
                    help="the corpus folder (corpus.jsonl, questions.jsonl)")
    ap.add_argument("--benchmarks", type=Path, default=Study.benchmarks,
                    help="benchmark JSONL sets the builds are decontaminated against too")
    ap.add_argument("--report-only", action="store_true",
                    help="write the table and the curves from what has run")
    args = ap.parse_args(argv)
    if args.steps is not None and args.steps < 1:
        raise SystemExit("--steps: at least 1")
    s = Study(args.study.resolve(), args.corpus.resolve(), args.benchmarks.resolve(),
              args.steps)
    arms = parse_arms(args.arms)
    s.root.mkdir(parents=True, exist_ok=True)
    state = load_state(s.root)
    if not args.report_only:
        check_settings(s, state)
        run_steps(s, plan(s, arms), state, runner)
    report(s, arms, state)
    return 0


if __name__ == "__main__":
    sys.exit(main())
