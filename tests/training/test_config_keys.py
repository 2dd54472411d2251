"""Every key of `datagen train`'s config is read by the code it configures and named by a
test; every example config validates against its entry point's config."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

from training.config import TrainConfig, load_config

REPO = Path(__file__).resolve().parents[2]
MAX_KEYS = 65   # issue 31: 86 before; every key added needs a reader and a test (issue 41:
#                 warm_start.search_scripts, a user agent's opt-in to the search scripts;
#                 issue 43: data.train_where, the one-page-only study arm's stream;
#                 rollout.predictable_versions and loss.prox_logp, item 5's throughput;
#                 agent.evidence_reward, the gradient share of multi-page groups)


def config_keys(model: type[BaseModel] = TrainConfig, prefix: str = "") -> list[str]:
    """Dotted leaf keys of a config model, sections walked."""
    out = []
    for name, field in model.model_fields.items():
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            out += config_keys(ann, f"{prefix}{name}.")
        else:
            out.append(prefix + name)
    return out


def _sources(folder: str, skip: tuple[str, ...] = ()) -> str:
    return "\n".join(p.read_text() for p in sorted((REPO / folder).rglob("*.py"))
                     if p.name not in skip)


def test_every_key_is_read_by_the_code_it_configures():
    """`.key` (an attribute read) somewhere in training/ outside the config module."""
    code = _sources("training", skip=("config.py",))
    unread = [k for k in config_keys()
              if not re.search(rf"\.{k.rsplit('.', 1)[-1]}\b", code)]
    assert not unread, f"config keys no code reads: {unread}"


def test_every_key_is_named_by_a_test():
    tests = "\n".join(p.read_text() for p in sorted((REPO / "tests").rglob("test_*.py"))
                      if p.name != Path(__file__).name)
    untested = [k for k in config_keys() if not re.search(rf"\b{k.rsplit('.', 1)[-1]}\b", tests)]
    assert not untested, f"config keys no test names: {untested}"
    assert len(config_keys()) <= MAX_KEYS


@pytest.mark.parametrize("path", sorted((REPO / "examples").glob("*.yaml")), ids=lambda p: p.name)
def test_every_example_validates(path, tmp_path, monkeypatch):
    """Registry models (`model.name`) resolve to a pulled folder when the config is read:
    here a folder marked pulled stands in, so the check needs no download."""
    from datagen.models import REGISTRY
    from datagen.models.pull import MODEL_MARKER
    for name in REGISTRY:
        (tmp_path / name).mkdir()
        (tmp_path / name / MODEL_MARKER).write_text("{}")
    monkeypatch.setenv("DATAGEN_MODELS", str(tmp_path))
    data = yaml.safe_load(path.read_text())
    if "rollout" in data or "warm_start" in data:
        cfg = load_config(path)
        assert cfg.model_fields_set
        return
    from flows.config import load_build_config

    load_build_config(path)


def test_a_dropped_key_says_what_to_write_instead():
    with pytest.raises(ValueError, match="^config: engine.temperature: use rollout.temperature"):
        load_config(overrides={"engine": {"temperature": 0.7}})
    with pytest.raises(ValueError, match="loss.entropy_coef: .*tried and dropped"):
        load_config(overrides={"loss": {"entropy_coef": 0.1}})
    with pytest.raises(ValueError, match="engine.build_shm_op: .*never built"):
        load_config(overrides={"engine": {"build_shm_op": False}})


def test_engine_has_one_default_per_setting():
    """The config's engine section is the DeepSpeed engine's own config (lr 1e-3, no shm JIT)."""
    from training.engines.deepspeed_engine import DeepSpeedEngineConfig

    assert DeepSpeedEngineConfig is type(TrainConfig().engine)
    assert DeepSpeedEngineConfig().lr == TrainConfig().engine.lr == 1e-3
    assert load_config(overrides={"engine": {"lr": 5e-4}}).engine.lr == 5e-4
    with pytest.raises(ValueError, match="engine.zero_stage"):
        load_config(overrides={"engine": {"zero_stage": 4}})


def test_a_temperature_ladder_rises_and_is_for_the_qa_workflow():
    cfg = load_config(overrides={"rollout": {"temperature": [1.3, 2.0, 3.0]}})
    assert cfg.rollout.temperatures == (1.3, 2.0, 3.0)
    assert load_config(overrides={"rollout": {"temperature": 0.7}}).rollout.temperatures == (0.7,)
    for bad in ([2.0, 1.3], [1.3, 1.3], [], [0.0, 1.0]):
        with pytest.raises(ValueError, match="rollout.temperature .*rising"):
            load_config(overrides={"rollout": {"temperature": bad}})
    with pytest.raises(ValueError, match="qa workflow with dynamic_sampling on"):
        load_config(overrides={"rollout": {"temperature": [1.0, 2.0], "workflow": "search"}})
    with pytest.raises(ValueError, match="qa workflow with dynamic_sampling on"):
        load_config(overrides={"rollout": {"temperature": [1.0, 2.0],
                                           "dynamic_sampling": False}})


def test_a_split_by_band_is_refused_when_training_rebands():
    """With re-banding on, a question of an excluded band trained through the ε share and then
    re-banded into a held-out band would join the split: refused, saying what to do."""
    where = "substr(md5(question_id), 1, 8) < '0ccccccc' and band in ('easy', 'medium')"
    with pytest.raises(ValueError, match="names band, which reband.reband_every changes"):
        load_config(overrides={"data": {"eval_where": where}, "reband": {"reband_every": 2}})
    assert load_config(overrides={"data": {"eval_where": where}}).reband.reband_every == 0
    fixed = "substr(md5(question_id), 1, 8) < '0ccccccc' and hops <= 2"
    assert load_config(overrides={"data": {"eval_where": fixed},
                                  "reband": {"reband_every": 2}}).data.eval_where == fixed


def test_the_old_loop_section_says_to_rename_it():
    with pytest.raises(ValueError, match="loop: the section is now reband:"):
        load_config(overrides={"loop": {"reband_every": 2}})


def test_the_learning_rate_fits_the_model(tmp_path, monkeypatch):
    """engine.lr unset: the tiny model's 1e-3, a registry model's own (smollm2: 2e-5, its
    recipe's); a model folder of unknown scale must say it; a set lr always wins."""
    from datagen.models import REGISTRY

    assert TrainConfig().engine.lr == 1e-3
    folder = tmp_path / "smollm2-135m-instruct"
    folder.mkdir()
    (folder / "MODEL.json").write_text("{}")        # pulled, as resolve_model checks
    monkeypatch.setenv("DATAGEN_MODELS", str(tmp_path))
    named = load_config(overrides={"model": {"name": "smollm2-135m-instruct"}})
    assert named.engine.lr == REGISTRY["smollm2-135m-instruct"].train_lr == 2e-5
    with pytest.raises(ValueError, match="engine.lr: model.path .* set engine.lr"):
        load_config(overrides={"model": {"path": str(folder)}})
    assert load_config(overrides={"model": {"path": str(folder)},
                                  "engine": {"lr": 1e-4}}).engine.lr == 1e-4
    assert load_config(overrides={"model": {"name": "smollm2-135m-instruct"},
                                  "engine": {"lr": 1e-3}}).engine.lr == 1e-3


def test_a_user_agent_is_warm_started_only_when_configured():
    """The warm start's scripts are the search agent's: a user agent asks for them."""
    agent = "examples/search_agent_openai.py:agent"
    with pytest.raises(ValueError, match="warm_start.search_scripts: true"):
        load_config(overrides={"rollout": {"workflow": agent}, "warm_start": {"steps": 2}})
    cfg = load_config(overrides={"rollout": {"workflow": agent},
                                 "warm_start": {"steps": 2, "search_scripts": True}})
    assert cfg.warm_start.search_scripts
    with pytest.raises(ValueError, match="search_scripts is for a user agent"):
        load_config(overrides={"rollout": {"workflow": "search"},
                               "warm_start": {"search_scripts": True}})


def test_a_runs_resolved_config_loads_again_whichever_split_it_chose(tmp_path):
    """`datagen eval --policy checkpoint:RUN/...` reads RUN/config.yaml: with eval_where it
    held eval_fraction's default too, and the two are exclusive (the eval stopped there)."""
    from training.setup import write_resolved_config

    for data in ({"eval_where": "hops = 1"}, {"eval_fraction": 0.1}, {}):
        cfg = load_config(overrides={"data": data})
        again = load_config(write_resolved_config(cfg, tmp_path))
        assert again.data == cfg.data
