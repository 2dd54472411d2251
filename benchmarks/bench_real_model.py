"""The real model (SmolLM2-135M-Instruct, `datagen model pull smollm2-135m-instruct`) in the
data stages (benchmarks/real_model_stages.py): the LLM composer on a demo world (yield by
hops, rejections by reason, calls per question, the endpoint's saturation, right and unique
by the ground truth), the LLM solver with the search tool beside the embedded solver (band x
hops, calls, time), the no-tool check; and as the LLM judge: agreement with human labels on
NQ301 and EVOUNA-NQ, the model alone and behind the rule judge (the model decides only where
no rule fired, as `verifiers.reward` does), beside the rule judge alone.

    python benchmarks/bench_real_model.py --quick   # 60 entities, 8 questions, 200 NQ301 pairs
    python benchmarks/bench_real_model.py           # 200 entities, 40 questions, all pairs
    python benchmarks/bench_real_model.py --endpoint http://127.0.0.1:8000/v1   # a running server
    python benchmarks/bench_real_model.py --parts stages --examples out.json  # no judge

Without --endpoint it pulls the model if needed and serves it with vLLM for the run (the
stages' `served_endpoint`). Data: ../shared/data/answer_equivalence (see SOURCES.md).
Ends with one line: RESULT real_model ...
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from verifiers.agreement import LabelledPair, load_evouna, load_nq301  # noqa: E402

NAME = "smollm2-135m-instruct"
DATA = Path(os.environ.get("HARDQA_SHARED_DATA", REPO.parent / "shared" / "data"))


def sample(pairs: list[LabelledPair], n: int | None, seed: int = 0) -> list[LabelledPair]:
    """A fixed random subset (all pairs when n is None or larger)."""
    if n is None or n >= len(pairs):
        return pairs
    return random.Random(seed).sample(pairs, n)


def judge_all(judge, pairs: list[LabelledPair], workers: int) -> list[bool | None]:
    """The model's verdict per pair; None where the call failed or the reply was unusable."""
    from verifiers import JudgeError

    def one(p: LabelledPair) -> bool | None:
        try:
            return judge.equivalent(p.question, p.gold, p.aliases, p.prediction)
        except JudgeError:
            return None
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(one, pairs))


def score(pairs: list[LabelledPair], model: list[bool | None]) -> dict[str, float]:
    """Agreement with the human label: rules alone, model alone (a failed verdict counts as
    a disagreement), and rules first with the model where no rule fired."""
    from verifiers.equivalence import score_answer
    rules = [score_answer(p.prediction, p.gold, p.aliases, p.question) for p in pairs]
    combined = [m if r.rule == "no_match" else r.equivalent for r, m in zip(rules, model)]
    agree = lambda verdicts: sum(v == p.label for v, p in zip(verdicts, pairs)) / len(pairs)  # noqa: E731
    return {"n": len(pairs), "rules": agree([r.equivalent for r in rules]),
            "model": agree(model), "combined": agree(combined),
            "model_failed": sum(m is None for m in model),
            "model_says_yes": sum(m is True for m in model) / len(pairs),
            "no_rule_fired": sum(r.rule == "no_match" for r in rules)}


@contextlib.contextmanager
def endpoint(url: str | None):
    """(base URL, serve start seconds): the given one, or the model served for this run."""
    if url:
        yield url, 0.0
        return
    from datagen.llm.served import served_endpoint
    from datagen.models import pull_model
    pulled = pull_model(NAME, progress=lambda line: print(line, file=sys.stderr))
    print(f"pull: {'cached' if pulled.cached else f'{pulled.seconds:.0f} s'}, "
          f"{pulled.bytes / 1e6:.0f} MB", file=sys.stderr)
    with served_endpoint(NAME) as served:
        yield served.base_url, served.start_s


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="CI-sized: 60 entities, 8 "
                    "questions, k <= 3, 200 NQ301 pairs")
    ap.add_argument("--endpoint", help="a running OpenAI-compatible server of the model")
    ap.add_argument("--model", default=NAME, help="the model name at --endpoint")
    ap.add_argument("--workers", type=int, default=8, help="calls in flight")
    ap.add_argument("--parts", default="stages,judge", help="stages, judge or both")
    ap.add_argument("--entities", type=int, help="demo world size (default 200; --quick 60)")
    ap.add_argument("--max-questions", type=int, help="composed questions (40; --quick 8)")
    ap.add_argument("--hotpotqa", action="store_true", help="the stages on the HotpotQA site "
                    "(shared data) instead of the demo world")
    ap.add_argument("--examples", type=Path, help="write the composed questions here (JSON)")
    ap.add_argument("--samples-log", type=Path, help="log every wording the model wrote, and "
                    "why it was refused, to this file")
    a = ap.parse_args(argv)
    parts = set(a.parts.split(","))
    folder = DATA / "answer_equivalence"
    sets = {"nq301": sample(load_nq301(folder / "nq301_human_judgments.jsonl"),
                            200 if a.quick else None)}
    if not a.quick:
        sets["evouna_nq"] = sample(load_evouna(folder / "evouna_nq.json"), 1000)
    from datagen.llm import ChatClient, EndpointConfig
    from verifiers import LLMJudge
    results, timing, stages = {}, {}, None
    with endpoint(a.endpoint) as (url, start_s):
        model = a.model if a.endpoint else NAME
        if "stages" in parts:
            stages = run_stages_for(a, url, model)
        if "judge" not in parts:
            sets = {}
        # A fixed, generous attempt timeout: this measures the verdicts, not how the client
        # copes with a server starved by other work on the machine.
        ep = EndpointConfig(base_url=url, model=a.model if a.endpoint else NAME, send_seed=False,
                            max_concurrency=a.workers, cache=False, timeout_s=180)
        with ChatClient(ep) as client:
            judge = LLMJudge(client, max_tokens=16)
            for name, pairs in sets.items():
                t0 = time.monotonic()
                verdicts = judge_all(judge, pairs, a.workers)
                timing[name] = time.monotonic() - t0
                results[name] = score(pairs, verdicts)
                r = results[name]
                print(f"{name}: n {r['n']}, rules {r['rules']:.3f}, model {r['model']:.3f}, "
                      f"rules+model {r['combined']:.3f} (model decides {r['no_rule_fired']}), "
                      f"model says yes {r['model_says_yes']:.2f}, failed {r['model_failed']}, "
                      f"{timing[name]:.0f} s ({r['n'] / timing[name]:.1f} pairs/s)")
    fields = [f"serve_start_s={start_s:.0f}"]
    if stages is not None:
        from real_model_stages import result_parts
        fields += result_parts(stages)
    for name, r in results.items():
        fields += [f"judge_{name}_n={r['n']}", f"judge_{name}_rules={r['rules']:.4f}",
                  f"judge_{name}_model={r['model']:.4f}",
                  f"judge_{name}_combined={r['combined']:.4f}",
                  f"judge_{name}_pairs_per_s={r['n'] / timing[name]:.2f}"]
    print("RESULT real_model " + " ".join(fields))
    return 0


def run_stages_for(a: argparse.Namespace, url: str, model: str):
    """The data-stage measurements at `url`, sized by --quick / --entities / --max-questions."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from real_model_stages import run_stages
    if a.samples_log:
        import logging
        handler = logging.FileHandler(a.samples_log)
        handler.setLevel(logging.DEBUG)
        logger = logging.getLogger("datagen.compose.llm_backend")
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    fig = run_stages(url, model, entities=a.entities or (60 if a.quick else 200),
                     max_questions=a.max_questions or (8 if a.quick else 40),
                     workers=a.workers, max_k=3 if a.quick else 6, notool_k=3,
                     hotpotqa=DATA if a.hotpotqa else None)
    if a.examples:
        a.examples.write_text(json.dumps(fig.examples, indent=1, default=str))
    return fig


if __name__ == "__main__":
    raise SystemExit(main())
