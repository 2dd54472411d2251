"""Worker for the two-process ZeRO-2 test, run by the `deepspeed` launcher (not a test)."""

import json
import sys
from pathlib import Path

import torch


def main(model_dir: str, out: str) -> None:
    from tests.training.engine_helpers import ds_config, fixed_batch, nll_loss
    from training.engines.deepspeed_engine import DeepSpeedTrainEngine

    engine = DeepSpeedTrainEngine(model_dir, ds_config(zero_stage=2))
    batch = fixed_batch(n=5)
    loss_before = engine.train_batch(batch, nll_loss)["loss"]
    loss_after = float(nll_loss(engine.forward_logprobs(batch), batch)[0])
    total = sum(float(p.double().sum()) for p in engine.module.parameters())
    sums = [None] * engine.world
    torch.distributed.all_gather_object(sums, total)
    engine.export_weights(Path(out) / "export")
    if engine.rank == 0:
        (Path(out) / "result.json").write_text(json.dumps({
            "world": engine.world, "ranks_agree": len(set(sums)) == 1,
            "loss_before": loss_before, "loss_after": loss_after}))


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--local_rank")]  # added by launcher
    main(args[0], args[1])
