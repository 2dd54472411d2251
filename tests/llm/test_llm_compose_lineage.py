"""Lineage of the LLM composer's seeds: a seed the model worded (`write_seed`) is stored with
`backend = "llm"`, one left to the templates with "embedded". Every seed said "embedded"
before issue 41: the loop asked the backend for a `seed_backend` no backend had."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import pytest

from datagen.compose import ComposeConfig, run_compose
from datagen.compose.llm_backend import LLMBackend
from tests.conftest import _copy_warehouse
from tests.llm import scripted
from tests.llm.conftest import fast_endpoint
from tests.llm.loopback import LoopbackLLM

pytestmark = pytest.mark.integration
MARK = "So, "


def seed_rewording(body):
    """The scripted model, except that it rewords every other seed recognisably (and refuses
    the rest, which keep their template wording)."""
    prompt = body["messages"][0]["content"]   # a re-ask's first message is the prompt
    if "It asks for:" not in prompt:
        return scripted.respond(body)
    draft = scripted._field(prompt, "Draft:")
    if int(hashlib.sha256(draft.encode()).hexdigest(), 16) % 2 and len(draft) > 1:
        return json.dumps({"question": MARK + draft[0].lower() + draft[1:]})
    return "I do not understand."


def test_seeds_worded_by_the_model_are_stored_as_the_models(demo_crawled, tmp_path):
    wh = _copy_warehouse(demo_crawled, tmp_path / "wh")
    try:
        with LoopbackLLM(seed_rewording) as server:
            backend = LLMBackend(fast_endpoint(server.base_url))
            cfg = ComposeConfig(backend="llm", endpoint=server.base_url, model="loopback",
                                max_questions=6, batch_size=8)
            run_compose(wh, cfg, backend=backend)
        rows = wh.sql("SELECT question, backend FROM questions WHERE composer LIKE 'seed:%'")
        lineage = Counter((r["question"].startswith(MARK), r["backend"]) for r in rows.to_pylist())
    finally:
        wh.close()
    assert lineage[(True, "llm")] > 0, lineage          # the model's wordings say so
    assert lineage[(False, "embedded")] > 0, lineage    # the templates' wordings say so
    assert set(lineage) == {(True, "llm"), (False, "embedded")}, lineage
