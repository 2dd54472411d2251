"""RL steps of the search-agent recipe's shape through the project's own engines, on a
SmolLM2-shaped model built on the spot with random weights (the real weights are over the
64 MiB a device run can carry), to put tokens/s of generation and training on a GPU beside
this 2-core machine's.

    python benchmarks/gpu_rl_steps.py [--quick] [--steps 3] [--out DIR]

A step is what the recipe's trainer does with one batch, synchronously (eta = 0):
generation of `groups` x `group_size` completions by the in-process transformers engine
(hf_engine.py; vLLM is not on the GPU image), seeded random 0/1 rewards (a random model
solves nothing) turned into GRPO advantages, the π_prox forward pass and one decoupled-PPO
optimizer step by the DeepSpeed engine (training/loss.py), then the weight update: export
and reload into the inference engine. bf16 on a GPU; on a CPU the engine's own choice
(autocast where the CPU has bf16, else fp32). `--quick` is a tiny shape for checking the
script on a CPU in seconds. Ends with `RESULT gpu_rl_steps key=value ...`; `--out DIR`
also writes gpu_rl_steps.json there.

On the GPU machine (the `device` tool), after benchmarks/gpu_check.sh, which installs the
wheels of .whl/ (deepspeed, pydantic) into /tmp/site: carry [".whl"] and run
    PYTHONPATH=/tmp/site:$PWD timeout 200 python3 benchmarks/gpu_rl_steps.py --out $OUT
(3 steps of 2 groups of 8, 256 + 128 tokens, stopping after --max-seconds of steps).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@dataclass(frozen=True)
class Shape:
    """The model and batch of a run: SmolLM2-135M's layout by default."""

    hidden: int = 576
    layers: int = 30
    heads: int = 9
    kv_heads: int = 3
    head_dim: int = 64
    intermediate: int = 1536
    vocab: int = 49152
    tokenizer_vocab: int = 4096
    groups: int = 2
    group_size: int = 8
    prompt_tokens: int = 256
    new_tokens: int = 128


QUICK = Shape(hidden=64, layers=2, heads=2, kv_heads=1, head_dim=32, intermediate=128,
              vocab=512, tokenizer_vocab=512, groups=1, group_size=4, prompt_tokens=32,
              new_tokens=16)


@dataclass(frozen=True)
class StepTimes:
    """One RL step's seconds and token counts."""

    gen_s: float
    gen_tokens: int
    prox_s: float
    train_s: float
    train_tokens: int
    update_s: float
    loss: float
    prox_behav_gap: float   # mean |logp_prox - logp_behav| over completion tokens

    @property
    def step_s(self) -> float:
        return self.gen_s + self.prox_s + self.train_s + self.update_s


def build_model(out_dir: Path, shape: Shape, seed: int = 0) -> Path:
    """A random Llama of `shape` (untied embeddings, as the recipe converts SmolLM2) and a
    small BPE tokenizer trained here (training/models.py's), saved as an HF folder."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    from training.models import train_tokenizer

    tokenizer = train_tokenizer(shape.tokenizer_vocab)
    config = LlamaConfig(
        vocab_size=max(shape.vocab, len(tokenizer)), hidden_size=shape.hidden,
        intermediate_size=shape.intermediate, num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads, num_key_value_heads=shape.kv_heads,
        head_dim=shape.head_dim, max_position_embeddings=8192, rope_theta=100000.0,
        rms_norm_eps=1e-5, tie_word_embeddings=False, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id, bos_token_id=None)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).to(torch.float32)
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id,
                                               pad_token_id=tokenizer.pad_token_id)
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    return out_dir


def make_prompts(tokenizer, shape: Shape) -> list[list[int]]:
    """One ChatML prompt of exactly `prompt_tokens` tokens per group, from synthetic text."""
    from training.models import synthetic_corpus

    head = tokenizer.encode("<|im_start|>user\n", add_special_tokens=False)
    tail = tokenizer.encode("<|im_end|>\n<|im_start|>assistant\n", add_special_tokens=False)
    body_len = shape.prompt_tokens - len(head) - len(tail)
    prompts = []
    for g in range(shape.groups):
        text = " ".join(synthetic_corpus(400, seed=100 + g))
        body = tokenizer.encode(text, add_special_tokens=False)[:body_len]
        prompts.append(head + body + tail)
    return prompts


def generate(engine, prompts: list[list[int]], shape: Shape, step: int):
    """Each prompt `group_size` times through the inference engine, all concurrently, each
    to `shape.new_tokens` (a random model's end token would cut them short of the shape)."""
    from training.api import GenerationRequest

    requests = [GenerationRequest(prompt_ids=p, max_new_tokens=shape.new_tokens,
                                  temperature=1.0, seed=1000 * step + i, ignore_eos=True)
                for g, p in enumerate(prompts) for i in range(g * shape.group_size,
                                                              (g + 1) * shape.group_size)]
    return engine.generate(requests)


def make_batch(results, shape: Shape, pad_id: int, step: int):
    """The trainer's batch: behaviour logprobs, GRPO advantages of seeded 0/1 rewards."""
    import torch

    from training.engines.batching import pack_sequences
    from training.loss import grpo_advantages

    g = torch.Generator().manual_seed(step)
    rewards = torch.randint(0, 2, (shape.groups, shape.group_size), generator=g).float()
    adv = grpo_advantages(rewards).reshape(-1)
    batch = pack_sequences([r.prompt_ids for r in results], [r.output_ids for r in results],
                           pad_id=pad_id,
                           token_values={"behav_logprobs": [r.output_logprobs for r in results]},
                           seq_values={"advantages": adv.tolist()})
    n_completion = float(batch["loss_mask"].sum())
    batch["denominator"] = torch.full((len(results),), n_completion)
    return batch


def _sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _timed(fn):
    """(result, seconds) of `fn()`, the GPU's queue drained on both sides."""
    _sync()
    t = time.perf_counter()
    out = fn()
    _sync()
    return out, time.perf_counter() - t


def rl_step(train, infer, prompts, shape: Shape, step: int, export_dir: Path) -> StepTimes:
    """Generate, π_prox forward, one PPO step, weight update; each part timed."""
    from training.loss import make_ppo_loss_fn, masked_mean

    results, gen_s = _timed(lambda: generate(infer, prompts, shape, step))
    batch = make_batch(results, shape, train.tokenizer.pad_token_id, step)
    prox, prox_s = _timed(lambda: train.forward_logprobs(batch))
    batch["prox_logprobs"] = prox
    gap = float(masked_mean((prox - batch["behav_logprobs"]).abs(), batch["loss_mask"]))
    stats, train_s = _timed(lambda: train.train_batch(batch, make_ppo_loss_fn()))

    def update():
        train.export_weights(export_dir)
        infer.run_sync(infer.update_weights(step + 1, str(export_dir)))

    _, update_s = _timed(update)
    return StepTimes(gen_s=gen_s, gen_tokens=sum(len(r.output_ids) for r in results),
                     prox_s=prox_s, train_s=train_s,
                     train_tokens=int(batch["attention_mask"].sum()), update_s=update_s,
                     loss=float(stats["loss"]), prox_behav_gap=gap)


def batched_generate_reference(infer, prompts, shape: Shape) -> float:
    """Tokens/s of transformers' batched `generate` on the same model and batch: what a
    batching engine could reach, beside the project engine's one-sequence-at-a-time decode."""
    import torch

    ids = torch.tensor([p for p in prompts for _ in range(shape.group_size)],
                       device=infer.model.device)

    def run():
        with torch.inference_mode():
            return infer.model.generate(ids, attention_mask=torch.ones_like(ids),
                                        do_sample=True, max_new_tokens=shape.new_tokens,
                                        min_new_tokens=shape.new_tokens)

    out, seconds = _timed(run)
    return (out.shape[0] * (out.shape[1] - ids.shape[1])) / seconds


def environment() -> dict[str, str]:
    """Versions and the device, for the note."""
    import deepspeed
    import torch
    import transformers

    from training.engines.deepspeed_engine import cpu_bf16_supported

    device = (torch.cuda.get_device_name(0) if torch.cuda.is_available()
              else f"cpu ({torch.get_num_threads()} threads, bf16 {cpu_bf16_supported()})")
    return {"device": device, "torch": torch.__version__, "deepspeed": deepspeed.__version__,
            "transformers": transformers.__version__}


def summarize(steps: list[StepTimes], reference_tps: float | None) -> dict[str, float]:
    """Medians over the steps after the first (CUDA and allocator warm-up), or the one step."""
    timed = steps[1:] or steps

    def med(fn):
        return statistics.median(fn(s) for s in timed)

    summary = {
        "steps": len(steps),
        "gen_tps": med(lambda s: s.gen_tokens / s.gen_s),
        "train_tps": med(lambda s: s.train_tokens / s.train_s),
        "train_prox_tps": med(lambda s: s.train_tokens / (s.train_s + s.prox_s)),
        "prox_s": med(lambda s: s.prox_s), "train_s": med(lambda s: s.train_s),
        "gen_s": med(lambda s: s.gen_s), "update_s": med(lambda s: s.update_s),
        "step_s": med(lambda s: s.step_s),
        "prox_behav_gap": med(lambda s: s.prox_behav_gap),
    }
    if reference_tps is not None:
        summary["gen_batched_tps"] = reference_tps
    return summary


TABLE_HEADER = (f"{'step':>4} {'gen s':>7} {'gen tok/s':>9} {'prox s':>7} {'train s':>7} "
                f"{'train tok/s':>11} {'update s':>8} {'step s':>7} {'loss':>8} "
                f"{'|prox-behav|':>12}")


def table_row(i: int, s: StepTimes) -> str:
    """One step as a row under TABLE_HEADER, printed as it finishes."""
    return (f"{i:>4} {s.gen_s:>7.2f} {s.gen_tokens / s.gen_s:>9.1f} {s.prox_s:>7.2f} "
            f"{s.train_s:>7.2f} {s.train_tokens / s.train_s:>11.1f} {s.update_s:>8.2f} "
            f"{s.step_s:>7.2f} {s.loss:>8.4f} {s.prox_behav_gap:>12.4f}")


def make_engines(model_dir: Path, micro_batch: int):
    """The DeepSpeed train engine (bf16) and the transformers inference engine beside it."""
    import torch

    from training.config import EngineConfig
    from training.engines.deepspeed_engine import DeepSpeedTrainEngine, cpu_bf16_supported
    from training.engines.hf_engine import HFInferenceEngine

    cuda = torch.cuda.is_available()
    train = DeepSpeedTrainEngine(model_dir, EngineConfig(
        precision="bf16", micro_batch_size=micro_batch, lr=2e-5))
    dtype = "bfloat16" if cuda or cpu_bf16_supported() else "float32"
    # The engine's one decode thread (its default): more made a busy CPU 20x slower.
    infer = HFInferenceEngine(model_dir, dtype=dtype, device="cuda" if cuda else "cpu")
    return train, infer


def run(shape: Shape, n_steps: int, micro_batch: int, max_seconds: float,
        reference: bool) -> tuple[list[StepTimes], float | None]:
    """Build the model, then RL steps until `n_steps` or `max_seconds` (at least one)."""
    with tempfile.TemporaryDirectory(prefix="gpu_rl_steps_") as tmp:
        model_dir = build_model(Path(tmp) / "model", shape)
        train, infer = make_engines(model_dir, micro_batch)
        try:
            prompts = make_prompts(train.tokenizer, shape)
            start, steps = time.perf_counter(), []
            print(TABLE_HEADER, flush=True)
            while len(steps) < n_steps and (not steps or time.perf_counter() - start
                                            < max_seconds):
                steps.append(rl_step(train, infer, prompts, shape, len(steps),
                                     Path(tmp) / "export"))
                print(table_row(len(steps) - 1, steps[-1]), flush=True)
            ref = batched_generate_reference(infer, prompts, shape) if reference else None
        finally:
            infer.close()
    return steps, ref


def main(argv: list[str] | None = None) -> dict[str, float]:
    import torch

    from training.engines.deepspeed_engine import lone_process_env

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="tiny shape, for a CPU check")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--max-seconds", type=float, default=240.0,
                   help="start no step after this many seconds of steps")
    p.add_argument("--groups", type=int, help="groups per batch (default: the shape's)")
    p.add_argument("--new-tokens", type=int, help="tokens per completion (default: the shape's)")
    p.add_argument("--micro-batch", type=int,
                   help="sequences per forward/backward (default: 16 on a GPU, 4 on a CPU)")
    p.add_argument("--no-reference", action="store_true",
                   help="skip transformers' batched generate on the same batch")
    p.add_argument("--out", type=Path, help="folder for gpu_rl_steps.json")
    args = p.parse_args(argv)
    os.environ.update(lone_process_env())   # an entry point: DeepSpeed's one-rank world
    shape = QUICK if args.quick else Shape()
    overrides = {"groups": args.groups, "new_tokens": args.new_tokens}
    shape = Shape(**{**asdict(shape), **{k: v for k, v in overrides.items() if v}})
    micro = args.micro_batch or (16 if torch.cuda.is_available() else 4)
    env = environment()
    print(json.dumps({**env, "shape": asdict(shape), "micro_batch": micro}))
    steps, ref = run(shape, args.steps, micro, args.max_seconds, not args.no_reference)
    summary = summarize(steps, ref)
    print("RESULT gpu_rl_steps " + " ".join(
        f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in summary.items()))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "gpu_rl_steps.json").write_text(json.dumps(
            {"env": env, "shape": asdict(shape), "micro_batch": micro, "summary": summary,
             "steps": [asdict(s) for s in steps]}, indent=2))
    return summary


if __name__ == "__main__":
    main()
