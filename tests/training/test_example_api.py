"""examples/search_agent_api.py, the map of a search-agent run through the library's API,
runs: two RL steps of the search agent on a tiny model over a small warehouse."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def _example():
    path = REPO / "examples" / "search_agent_api.py"
    spec = importlib.util.spec_from_file_location("search_agent_api", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_api_example_trains_the_search_agent(tmp_path):
    import warehouse
    from tests.training.test_cold_start import _warehouse
    from training.models import build_tiny_model

    t0 = time.monotonic()
    with warehouse.open(tmp_path / "wh") as wh:
        _warehouse(wh)
    model = build_tiny_model(tmp_path / "model", hidden=64, heads=2, kv_heads=1,
                             intermediate=128, layers=1)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "steps": 2, "model": {"path": str(model)},
        "data": {"band_weights": {"medium": 1.0}, "eval_size": 4},
        "rollout": {"workflow": "search", "inference": "hf", "batch_size": 4,
                    "group_size": 2, "max_in_flight": 4, "max_new_tokens": 8,
                    "dynamic_sampling": False},
        "agent": {"max_turns": 2, "search_k": 1, "snippet_chars": 40},
        "engine": {"micro_batch_size": 4, "lr": 1e-3}}))
    assert _example().main([str(config), str(tmp_path / "wh"), str(tmp_path / "run")]) == 0
    assert (tmp_path / "run" / "weights" / "v2" / "config.json").is_file()
    assert time.monotonic() - t0 < 60
