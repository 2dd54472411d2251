"""Engines benchmark: DeepSpeed train step vs a plain PyTorch loop, weight-update latency
(export + reload into vLLM) for the tiny model and a ~0.5B random model, and vLLM
generation vs transformers `generate` on the same batch.

    python benchmarks/bench_engines.py [--quick]

Ends with `RESULT engines ds_ratio=... update_s=... update_s_05b=... vllm_gen_ratio=...`
(ds_ratio = DeepSpeed tokens/s over plain tokens/s, goal >= 0.8; vllm_gen_ratio = vLLM
tokens/s over transformers tokens/s, goal >= 1).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path

from training.engines.deepspeed_engine import lone_process_env

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# A script is an entry point: it sets DeepSpeed's one-process rendezvous (the engine does not).
os.environ.update(lone_process_env())
log = logging.getLogger("bench_engines")


def _batch(n: int, length: int, vocab: int, seed: int = 0):
    import torch

    from training.engines.batching import pack_sequences

    g = torch.Generator().manual_seed(seed)
    prompts = [torch.randint(3, vocab, (length // 4,), generator=g).tolist() for _ in range(n)]
    outputs = [torch.randint(3, vocab, (length - length // 4,), generator=g).tolist()
               for _ in range(n)]
    return pack_sequences(prompts, outputs, pad_id=0)


def _nll(logprobs, batch):
    mask = batch["loss_mask"].float()
    return -(logprobs * mask).sum() / mask.sum(), {}


def _interleaved(a, b, steps: int) -> tuple[float, float]:
    """Median seconds of `a` and of `b`, alternating calls so load spikes hit both alike."""
    a(), b()
    ta, tb = [], []
    for _ in range(steps):
        for fn, times in ((a, ta), (b, tb)):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
    return statistics.median(ta), statistics.median(tb)


def bench_train(model_dir: Path, n: int, length: int, steps: int) -> tuple[float, float]:
    """tokens/s of DeepSpeedTrainEngine.train_batch and of a plain loop (same everything)."""
    import torch

    from training.engines.deepspeed_engine import (DeepSpeedEngineConfig,
                                                   DeepSpeedTrainEngine, token_logprobs)
    from training.models import load_causal_lm

    batch = _batch(n, length, 500)
    tokens = int(batch["attention_mask"].sum())
    cfg = DeepSpeedEngineConfig(micro_batch_size=n, lr=1e-5)   # clips at norm 1.0
    ds = DeepSpeedTrainEngine(model_dir, cfg)
    model = load_causal_lm(model_dir).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)

    def plain_step():
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                    use_cache=False)
        loss, _ = _nll(token_logprobs(out.logits, batch["input_ids"]), batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    ds_s, plain_s = _interleaved(lambda: ds.train_batch(batch, _nll), plain_step, steps)
    return tokens / ds_s, tokens / plain_s


def bench_update(model_dir: Path, export_roots: list[Path], reps: int) -> list[float]:
    """Median seconds of export_weights + VLLMInferenceEngine.update_weights, per export root
    (a disk folder, and tmpfs where a single machine can use it); exports are deleted after."""
    import shutil

    from training.engines.deepspeed_engine import DeepSpeedEngineConfig, DeepSpeedTrainEngine
    from training.engines.vllm_engine import VLLMInferenceEngine

    trainer = DeepSpeedTrainEngine(model_dir, DeepSpeedEngineConfig())
    engine = VLLMInferenceEngine(model_dir, max_model_len=256)
    medians, version = [], 0
    try:
        for root in export_roots:
            times = []
            for _ in range(reps):
                version += 1
                out = root / f"bench_engines_v{version}"
                t = time.perf_counter()
                trainer.export_weights(out)
                asyncio.run(engine.update_weights(version, str(out)))
                times.append(time.perf_counter() - t)
                shutil.rmtree(out)
            medians.append(statistics.median(times))
    finally:
        engine.close()
    return medians


def bench_generation(model_dir: Path, n: int, new_tokens: int, reps: int) -> tuple[float, float]:
    """Generated tokens/s of the vLLM engine and of transformers `generate`, same prompts,
    runs alternated so that load from other jobs on the machine hits both alike."""
    import torch

    from training.api import GenerationRequest
    from training.engines.vllm_engine import VLLMInferenceEngine
    from training.models import load_causal_lm

    prompts = [[1, 40 + i % 50, 60 + i % 30, 70] for i in range(n)]
    reqs = [GenerationRequest(prompt_ids=p, max_new_tokens=new_tokens, seed=i)
            for i, p in enumerate(prompts)]
    model = load_causal_lm(model_dir).eval()
    ids = torch.tensor(prompts)
    eos = model.generation_config.eos_token_id
    engine = VLLMInferenceEngine(model_dir, max_model_len=512)
    counts: dict[str, list[int]] = {"vllm": [], "hf": []}

    def vllm_generate():
        counts["vllm"].append(sum(len(r.output_ids) for r in engine.generate(reqs)))

    def hf_generate():
        with torch.no_grad():
            out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=True,
                                 max_new_tokens=new_tokens, pad_token_id=0)
        # tokens up to and including the first eos, as vLLM counts them
        counts["hf"].append(sum(int((row == eos).nonzero()[0, 0]) + 1 if (row == eos).any()
                                else len(row) for row in out[:, ids.shape[1]:]))

    try:
        vllm_s, hf_s = _interleaved(vllm_generate, hf_generate, reps)
    finally:
        engine.close()
    return (statistics.median(counts["vllm"]) / vllm_s, statistics.median(counts["hf"]) / hf_s)


def build_05b(out: Path) -> Path:
    """A random Qwen2 of ~0.5B parameters (untied; Qwen2.5-0.5B's body, a 64k vocab)."""
    from training.models import build_tiny_model

    return build_tiny_model(out, vocab_size=512, hidden=896, layers=24, heads=14, kv_heads=2,
                            intermediate=4864, model_vocab_size=64000)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, same code path")
    parser.add_argument("--work", type=Path, default=None, help="scratch dir (default: temp)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s bench: %(message)s")
    import torch

    from training.models import build_tiny_model

    work = args.work or Path(tempfile.mkdtemp(prefix="bench_engines_"))
    q = args.quick
    tiny = build_tiny_model(work / "tiny")
    small = build_tiny_model(work / "small", hidden=256, layers=4, heads=8, kv_heads=2,
                             intermediate=688)
    # One intra-op thread for both sides: on this shared 2-core machine two OpenMP threads
    # spin against other jobs and make any step 5-20x slower at random.
    torch.set_num_threads(1)
    ds_tps, plain_tps = bench_train(small, n=8, length=128 if q else 256, steps=5 if q else 10)
    log.warning("train: deepspeed %.0f tok/s, plain %.0f tok/s", ds_tps, plain_tps)
    (update_s,) = bench_update(tiny, [work], reps=3)
    log.warning("weight update (tiny): %.3f s", update_s)
    shm = [Path("/dev/shm")] if Path("/dev/shm").is_dir() else []
    update_05b, *update_05b_shm = bench_update(build_05b(work / "m05b"), [work, *shm],
                                               reps=1 if q else 3)
    log.warning("weight update (~0.5B): %.3f s (tmpfs: %s)", update_05b, update_05b_shm)
    # Rollout-shaped load: many concurrent sequences on the small model.
    vllm_tps, hf_tps = bench_generation(small, n=128, new_tokens=128 if q else 256,
                                        reps=3 if q else 5)
    log.warning("generation: vllm %.0f tok/s, transformers %.0f tok/s", vllm_tps, hf_tps)

    rows = [("DeepSpeed train step", f"{ds_tps:,.0f} tok/s", "plain PyTorch", f"{plain_tps:,.0f} tok/s"),
            ("weight update, tiny", f"{update_s:.2f} s", "", ""),
            ("weight update, ~0.5B", f"{update_05b:.2f} s", "same, export to tmpfs",
             f"{update_05b_shm[0]:.2f} s" if update_05b_shm else "n/a"),
            ("vLLM generation", f"{vllm_tps:,.0f} tok/s", "transformers generate", f"{hf_tps:,.0f} tok/s")]
    for row in rows:
        print(f"{row[0]:<24}{row[1]:>16}   {row[2]:<24}{row[3]:>16}")
    print(f"RESULT engines ds_ratio={ds_tps / plain_tps:.3f} update_s={update_s:.3f} "
          f"update_s_05b={update_05b:.3f} vllm_gen_ratio={vllm_tps / hf_tps:.3f}"
          + (f" update_s_05b_tmpfs={update_05b_shm[0]:.3f}" if update_05b_shm else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
