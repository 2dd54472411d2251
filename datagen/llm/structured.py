"""Structured (JSON) output: how a schema is asked for, and how a sample is parsed and checked.

The server path sends `response_format={"type": "json_schema", ...}` (vLLM's and SGLang's
OpenAI servers enforce it). The prompt path appends the schema to the last user message and
relies on parse + validate. Either way every sample is parsed and validated here: a server
that claims to enforce a schema is not trusted blindly.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from datagen.llm.types import Sample

FALLBACK_INSTRUCTION = ("\n\nReply with one JSON object only (no prose, no code fence) that "
                        "matches this JSON schema:\n{schema}")
REPAIR_INSTRUCTION = ("Your reply could not be used: {error}. Reply again with one JSON object "
                      "only that matches this JSON schema:\n{schema}")
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def response_format(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}


def with_schema_prompt(messages: list[dict[str, str]], schema: dict[str, Any]) -> list[dict[str, str]]:
    """The prompt path: the schema spelled out at the end of the last user message."""
    out = [dict(m) for m in messages]
    last = max(i for i, m in enumerate(out) if m.get("role") == "user") if any(
        m.get("role") == "user" for m in out) else len(out) - 1
    out[last]["content"] = out[last]["content"] + FALLBACK_INSTRUCTION.format(
        schema=json.dumps(schema, sort_keys=True))
    return out


def repair_messages(messages: list[dict[str, str]], bad: Sample,
                    schema: dict[str, Any]) -> list[dict[str, str]]:
    """A re-ask: the conversation, the unusable reply, and what was wrong with it."""
    return [*messages, {"role": "assistant", "content": bad.text},
            {"role": "user", "content": REPAIR_INSTRUCTION.format(
                error=bad.error, schema=json.dumps(schema, sort_keys=True))}]


def extract_json(text: str) -> Any:
    """The JSON value in a reply: the whole text, else a fenced block, else the outermost
    {...}; trailing commas (a common slip) are dropped. Raises ValueError."""
    candidates = [text.strip()]
    candidates += [m.strip() for m in _FENCE.findall(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start:end + 1])
    for cand in candidates:
        for variant in (cand, re.sub(r",\s*([}\]])", r"\1", cand)):
            try:
                return json.loads(variant)
            except json.JSONDecodeError:
                continue
    raise ValueError(f"not JSON: {text[:120]!r}")


def check_sample(sample: Sample, schema: dict[str, Any] | None) -> Sample:
    """The sample with its parsed data, or with an `invalid_json`/`schema_invalid` error."""
    if sample.error or schema is None:
        return sample
    try:
        data = extract_json(sample.text)
    except ValueError as exc:
        return Sample(sample.text, sample.finish_reason, None, f"invalid_json: {exc}")
    problem = schema_problem(data, schema)
    if problem:
        return Sample(sample.text, sample.finish_reason, data, f"schema_invalid: {problem}")
    return Sample(sample.text, sample.finish_reason, data, "")


def schema_problem(data: Any, schema: dict[str, Any]) -> str:
    """Why `data` does not satisfy `schema` (empty when it does)."""
    import jsonschema
    validator = _validator(json.dumps(schema, sort_keys=True))
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is None:
        return ""
    where = "/".join(str(p) for p in error.absolute_path) or "(root)"
    return f"{where}: {error.message}"[:200]


@functools.lru_cache(maxsize=64)
def _validator(schema_json: str):
    """One compiled validator per schema (building one per sample cost more than the call)."""
    import jsonschema
    return jsonschema.Draft202012Validator(json.loads(schema_json))


def needs_repair(sample: Sample) -> bool:
    """Broken or off-schema JSON is worth a re-ask; a truncated sample is not (it would be
    truncated again at the same budget)."""
    return sample.error.startswith(("invalid_json", "schema_invalid"))
