"""Benchmark the verifiers: agreement with human labels, speed, decontamination, near-duplicates.

    python benchmarks/bench_verifiers.py [--quick] [--shared-data DIR]

Measured against named baselines in the same run, on the same data:
- agreement: SQuAD exact match and "gold contained in prediction" (the usual
  lexical baselines) vs ``is_equivalent``, per set and per answering system;
- the reward mode vs the judging mode: agreement with the human labels on all pairs
  and on one fixed subset (predictions of at most 10 words with no list separator,
  ``candidates.short_single_answer``), and the share of the generated adversarial set
  (verifiers/attacks.py, every form of every gold, the lists of golds of other types
  among them) that each mode pays for;
- speed: ``is_equivalent`` calls/s vs SQuAD exact match calls/s;
- near-duplicates over N questions (100,000; --quick 10,000): embedding time vs
  search time with blocked matrix products, and the same search done one query
  at a time (row-by-row numpy, timed on a slice and scaled to N²).
The last line is ``RESULT verifiers ...``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from verifiers.agreement import agreement, load_evouna, load_nq301, rules_judge  # noqa: E402
from verifiers.normalize import squad_normalize  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def em_judge(p) -> bool:
    return any(squad_normalize(p.prediction) == squad_normalize(g) for g in (p.gold, *p.aliases))


def contains_judge(p) -> bool:
    pred = f" {squad_normalize(p.prediction)} "
    return any(f" {squad_normalize(g)} " in pred for g in (p.gold, *p.aliases) if squad_normalize(g))


def bench_agreement(data: Path) -> dict[str, dict]:
    folder = data / "answer_equivalence"
    sets = {"evouna_nq": load_evouna(folder / "evouna_nq.json"),
            "nq301": load_nq301(folder / "nq301_human_judgments.jsonl")}
    out = {}
    print(f"\n{'set':<10} {'system':<9} {'n':>6} {'squad_em':>9} {'contains':>9} {'rules':>7}")
    for name, pairs in sets.items():
        scores = {j: agreement(pairs, f) for j, f in
                  (("em", em_judge), ("contains", contains_judge), ("rules", rules_judge))}
        for system in scores["rules"]:
            n = sum(1 for p in pairs if system == "all" or p.system == system)
            print(f"{name:<10} {system:<9} {n:>6} {scores['em'][system]:>9.3f} "
                  f"{scores['contains'][system]:>9.3f} {scores['rules'][system]:>7.3f}")
        out[name] = scores
    return out


def bench_reward_modes(data: Path) -> dict[str, float]:
    """Reward mode (score_response) vs judging mode (is_equivalent) against human labels."""
    from verifiers.candidates import short_single_answer
    from verifiers.reward import score_response
    folder = data / "answer_equivalence"
    sets = {"evouna_nq": load_evouna(folder / "evouna_nq.json"),
            "nq301": load_nq301(folder / "nq301_human_judgments.jsonl")}
    from verifiers.mathcheck import MathTimeout
    out, timeouts = {}, []
    print(f"\n{'set':<10} {'pairs':<14} {'n':>6} {'judge':>7} {'reward':>7} {'strict':>7}")
    for name, pairs in sets.items():
        def mode(m):
            def judge(p):
                try:
                    return score_response(p.prediction, p.gold, p.aliases, p.question,
                                          mode=m).reward > 0
                except MathTimeout:  # counted and printed below, scored as not paid
                    timeouts.append((name, m, p.prediction[:60], p.gold))
                    return False
            return judge
        subset = [p for p in pairs if short_single_answer(p.prediction)]
        for label, rows in (("all", pairs), ("fixed subset", subset)):
            judge = agreement(rows, rules_judge)["all"]
            reward = agreement(rows, mode("reward"))["all"]
            strict = agreement(rows, mode("strict"))["all"]
            print(f"{name:<10} {label:<14} {len(rows):>6} {judge:>7.4f} {reward:>7.4f} {strict:>7.4f}")
            if label != "all":
                out[f"reward_agreement_{name}"], out[f"judge_agreement_{name}"] = reward, judge
            else:
                out[f"reward_all_{name}"] = reward
    print(f"math-verify timeouts (scored as not paid): {len(timeouts)} {timeouts[:5]}")
    return out


def bench_attacks(data: Path) -> dict[str, float]:
    """Share of the generated adversarial set each mode pays for, per form."""
    from verifiers import is_equivalent
    from verifiers.attacks import attack_rates, build_attacks
    from verifiers.reward import score_response
    folder = data / "answer_equivalence"
    rows = load_evouna(folder / "evouna_nq.json") + load_nq301(folder / "nq301_human_judgments.jsonl")
    attacks = build_attacks(rows, seed=0)
    reward = attack_rates(attacks, lambda a: score_response(
        a.prediction, a.gold, a.aliases, a.question).reward > 0)
    judge = attack_rates(attacks, lambda a: is_equivalent(a.prediction, a.gold, a.aliases, a.question))
    print(f"\nadversarial set: {len(attacks):,} predictions\n{'form':<15} {'n':>6} {'judge pays':>11} "
          f"{'reward pays':>12}")
    for form in sorted(reward, key=lambda f: (f in ("all", "list", "mixed", "pad"), f)):
        (rp, n), (jp, _) = reward[form], judge[form]
        print(f"{form:<15} {n:>6} {jp / n:>11.2%} {rp / n:>12.2%}")
    share = {k: p / n for k, (p, n) in reward.items()}
    return {"reward_list_accept": share["list"], "reward_mixed_list_accept": share["mixed"],
            "reward_pad_accept": share["pad"],
            "reward_attack_n": len(attacks), "reward_attack_accept": share["all"],
            "reward_attack_worst_form": max(v for k, v in share.items()
                                            if k not in ("all", "list", "mixed", "pad"))}


def bench_speed(data: Path, n: int) -> tuple[float, float]:
    from verifiers import is_equivalent
    from verifiers.normalize import canonical_tokens
    pairs = load_evouna(data / "answer_equivalence" / "evouna_nq.json")[:n]
    canonical_tokens.cache_clear()
    t = time.perf_counter()
    for p in pairs:
        is_equivalent(p.prediction, p.gold, p.aliases, p.question)
    rules = len(pairs) / (time.perf_counter() - t)
    t = time.perf_counter()
    for p in pairs:
        em_judge(p)
    em = len(pairs) / (time.perf_counter() - t)
    print(f"\nis_equivalent: {rules:,.0f} calls/s   (baseline SQuAD EM: {em:,.0f} calls/s), "
          f"{len(pairs)} EVOUNA pairs, cold cache")
    return rules, em


def bench_math(data: Path) -> tuple[float, float]:
    from verifiers.extract import boxed_contents
    from verifiers.mathcheck import math_equivalent
    from verifiers.reward import reward
    folder = data / "answer_equivalence"
    rows = [json.loads(line) for f in ("math_verify_cases", "hendrycks_is_equiv_cases")
            for line in open(folder / f"{f}.jsonl")]
    math = sum(int(math_equivalent(r["pred"], r["gold"], r["options"])) == r["expected"]
               for r in rows) / len(rows)
    areal_rows = [json.loads(line) for line in open(folder / "areal_math_reward_cases.jsonl")]
    areal = sum(reward(r["generated"], (boxed_contents(r["solutions"][0]) or r["solutions"])[0])
                == float(r["expected"]) for r in areal_rows) / len(areal_rows)
    print(f"\nmath agreement (Math-Verify + Hendrycks cases, n={len(rows)}): {math:.4f}")
    print(f"same reward as AReaL's checker (n={len(areal_rows)}): {areal:.4f}")
    return math, areal


def bench_decontamination(data: Path) -> dict:
    from verifiers.contamination_set import build_labelled_set, precision_recall
    from verifiers.decontam import ContaminationIndex
    sets, rows = build_labelled_set(data / "qa_benchmarks", seed=0)
    scores = precision_recall(ContaminationIndex(sets), rows)
    print(f"\ndecontamination on {scores['n']} labelled questions: precision "
          f"{scores['precision']:.3f} recall {scores['recall']:.3f}")
    print("  flagged share by kind: " + ", ".join(
        f"{k[8:]}={v:.2f}" for k, v in scores.items() if k.startswith("flagged_")))
    return scores


TEMPLATES = ["When was {} founded?", "Who directed {}?", "Where was {} born?",
             "What is {} best known for?", "Who owns {}?", "In which country is {}?",
             "What award did {} win first?", "Who wrote {}?", "How old was {} in 1990?",
             "Which city is home to {}?", "Who succeeded {}?", "What language did {} speak?",
             "When did {} die?", "What is the capital associated with {}?", "Who founded {}?",
             "Which team did {} play for?", "What genre is {}?", "Who married {}?",
             "What was the first job of {}?", "Which university did {} attend?"]


def synthetic_questions(data: Path, n: int, seed: int = 0) -> list[str]:
    """N questions: real benchmark questions, template questions about their entities,
    and ~2% re-phrased copies so that there are duplicates to find."""
    import re
    from verifiers.decontam import load_folder
    real = sorted({q for qs in load_folder(data / "qa_benchmarks").values() for q in qs})
    names = sorted({m for q in real for m in re.findall(r"(?<!^)\b[A-Z][a-z]+(?: [A-Z][a-z]+)+", q)})
    rng = random.Random(seed)
    out = list(real[: n // 4])
    while len(out) < n * 0.98:
        out.append(rng.choice(TEMPLATES).format(rng.choice(names)))
    while len(out) < n:
        q = rng.choice(out)
        out.append(q.lower().rstrip("?") if rng.random() < 0.5 else "Tell me: " + q)
    rng.shuffle(out)
    return out


def bench_dedup(data: Path, n: int) -> tuple[float, float, float]:
    import numpy as np
    from verifiers.dedup import DEFAULT_THRESHOLD, SentenceEmbedder, cluster
    texts = synthetic_questions(data, n)
    embedder = SentenceEmbedder(batch_size=256)
    t = time.perf_counter()
    emb = embedder.encode(texts)
    embed_s = time.perf_counter() - t
    block = max(64, int(2e8 // (4 * len(emb))))
    t = time.perf_counter()
    roots, how = cluster(texts, emb, DEFAULT_THRESHOLD)
    search_s = time.perf_counter() - t
    # Baseline: the same search one query at a time (timed on a slice, scaled to n²/2).
    k = min(500, n)
    t = time.perf_counter()
    for i in range(k):
        sims = emb[i + 1:] @ emb[i]
        np.nonzero(sims >= DEFAULT_THRESHOLD)
    per_row = (time.perf_counter() - t) / sum(n - 1 - i for i in range(k))
    naive_s = per_row * n * (n - 1) / 2
    kept = sum(1 for i, r in enumerate(roots) if r == i)
    print(f"\nnear-duplicates over {n:,} questions (threshold {DEFAULT_THRESHOLD}, block {block}):")
    print(f"  embedding {embed_s:.1f}s ({n / embed_s:,.0f} q/s), search {search_s:.1f}s "
          f"(baseline one-query-at-a-time ≈ {naive_s:.1f}s), kept {kept:,} of {n:,} "
          f"({len(how):,} duplicates)")
    return embed_s, search_s, naive_s


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10,000 questions for dedup")
    parser.add_argument("--shared-data", type=Path, default=Path(os.environ.get(
        "HARDQA_SHARED_DATA", REPO.parent / "shared" / "data")))
    args = parser.parse_args(argv)
    data = args.shared_data
    if not data.is_dir():
        print(f"shared data not found at {data}; pass --shared-data DIR", file=sys.stderr)
        return 2
    scores = bench_agreement(data)
    modes = bench_reward_modes(data)
    attacks = bench_attacks(data)
    speed, em_speed = bench_speed(data, 3000)
    math, areal = bench_math(data)
    decon = bench_decontamination(data)
    embed_s, search_s, naive_s = bench_dedup(data, 10_000 if args.quick else 100_000)
    ev, nq = scores["evouna_nq"]["rules"], scores["nq301"]["rules"]
    print(f"RESULT verifiers nq301={nq['all']:.4f} evouna_nq={ev['all']:.4f} math={math:.4f} "
          f"areal_same_reward={areal:.4f} decon_precision={decon['precision']:.4f} "
          f"decon_recall={decon['recall']:.4f} equiv_calls_per_s={speed:.0f} "
          f"em_calls_per_s={em_speed:.0f} dedup_embed_s={embed_s:.2f} "
          f"dedup_search_s={search_s:.2f} dedup_naive_search_s={naive_s:.2f} "
          f"reward_list_accept={attacks['reward_list_accept']:.4f} "
          f"reward_mixed_list_accept={attacks['reward_mixed_list_accept']:.4f} "
          f"reward_pad_accept={attacks['reward_pad_accept']:.4f} "
          f"reward_attack_n={attacks['reward_attack_n']} "
          f"reward_attack_worst_form={attacks['reward_attack_worst_form']:.4f} "
          f"reward_agreement_nq301={modes['reward_agreement_nq301']:.4f} "
          f"reward_agreement_evouna_nq={modes['reward_agreement_evouna_nq']:.4f} "
          f"judge_agreement_nq301={modes['judge_agreement_nq301']:.4f} "
          f"judge_agreement_evouna_nq={modes['judge_agreement_evouna_nq']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
