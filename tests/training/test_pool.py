"""EnginePool: requests spread over several real (transformers) engines; updates reach all;
`inference: remote` in the config builds a pool of server clients."""

import asyncio

import pytest

from training.api import GenerationRequest
from training.config import load_config
from training.engines.hf_engine import HFInferenceEngine
from training.engines.pool import EnginePool


@pytest.fixture
def pool(tiny_model_dir):
    p = EnginePool([HFInferenceEngine(tiny_model_dir), HFInferenceEngine(tiny_model_dir)])
    yield p
    p.close()


def test_requests_spread_and_updates_reach_every_engine(pool, tiny_model_dir):
    requests = [GenerationRequest([1, 2, 3], max_new_tokens=4, seed=i) for i in range(8)]

    async def main():
        results = await asyncio.gather(*(pool.agenerate(r) for r in requests))
        await pool.update_weights(1, str(tiny_model_dir))
        after = await pool.agenerate(requests[0])
        return results, after

    results, after = asyncio.run(main())
    assert all(len(r.output_ids) == 4 for r in results)
    assert pool.requests_served[0] > 0 and pool.requests_served[1] > 0
    assert sum(pool.requests_served) == 9 and pool.in_flight == [0, 0]
    assert [e.version for e in pool.engines] == [1, 1] and pool.version == 1
    assert set(after.output_versions) == {1}


def test_pool_version_is_the_oldest_engine(pool, tiny_model_dir):
    asyncio.run(pool.engines[0].update_weights(3, str(tiny_model_dir)))
    assert pool.version == 0
    with pytest.raises(ValueError, match="at least one"):
        EnginePool([])


def test_remote_inference_config(tmp_path):
    from training.engines.pool import EnginePool as Pool
    from training.setup import make_inference_engine

    with pytest.raises(ValueError, match="rollout.servers"):
        load_config(overrides={"rollout": {"inference": "remote"}})
    with pytest.raises(ValueError, match="only used with inference: remote"):
        load_config(overrides={"rollout": {"servers": ["http://127.0.0.1:8000"]}})
    cfg = load_config(overrides={"rollout": {"inference": "remote", "servers": [
        "http://127.0.0.1:8001", "http://127.0.0.1:8002/"]}})
    engine = make_inference_engine(cfg, tmp_path, version=2)   # clients connect lazily
    try:
        assert isinstance(engine, Pool)
        assert [e.base_url for e in engine.engines] == ["http://127.0.0.1:8001",
                                                        "http://127.0.0.1:8002"]
        assert engine.version == 2
    finally:
        engine.close()


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.vllm
def test_train_against_two_vllm_servers(vllm_servers, tiny_model_dir, tmp_path):
    """`datagen train` with `inference: remote` and two servers (the session's, shared):
    episodes go to both, every weight update reaches both, and the run trains to the end."""
    import json

    import yaml

    from datagen.cli import main
    from tests.training.test_trainer import SMALL

    servers = vllm_servers.get(2)
    # the servers' logs so far belong to other tests: count only what this run adds
    offsets = [s.log.stat().st_size for s in servers]
    # dynamic_sampling off: a random tiny policy rarely gives a group with a signal, so a
    # step could wait minutes for one (this test took 300 s with it on)
    cfg = {**SMALL, "steps": 3, "eval_every": 3, "checkpoint_every": 3,
           "model": {"path": str(tiny_model_dir)}, "warm_start": {"steps": 1, "batch_size": 8},
           "rollout": {**SMALL["rollout"], "inference": "remote", "dynamic_sampling": False,
                       "servers": [s.url for s in servers]}}
    (tmp_path / "train.yaml").write_text(yaml.safe_dump(cfg))
    assert main(["train", "--config", str(tmp_path / "train.yaml"), "--run-dir",
                 str(tmp_path / "run"), "--warehouse", str(tmp_path / "wh")]) == 0

    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2, 3] and rows[-1]["policy_version"] == 3
    completions, updates = [], []
    for server, offset in zip(servers, offsets):
        with open(server.log, "rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
        completions.append(text.count('"POST /v1/completions HTTP'))
        updates.append(text.count('"POST /update_weight_version HTTP'))
    assert min(completions) > 0, completions          # both servers generated episodes
    assert updates[0] == updates[1] >= 3, updates      # every update reached both
