"""The search agent written as users write agents: a plain async function with the `openai`
client and the page tools. `datagen train` trains it unchanged through the trainer's
OpenAI-compatible endpoint (`rollout.workflow: examples/search_agent_openai.py:agent`).

It plays the in-process agent's recipe (training/search_env/agent.py: the same system prompt, tags and
tool text), so the two can be compared step for step; nothing in it depends on the trainer
but the two formatting helpers, which a user would copy or replace.

Run against any OpenAI-compatible server (`datagen serve-model NAME`), outside training::

    python examples/search_agent_openai.py --base-url http://127.0.0.1:8000/v1 \\
        --model NAME "When was the Varo bridge built?"
"""

from __future__ import annotations

import re

SYSTEM = ("Answer the question. You may search the pages: write <search>words</search> or "
          "<open>url</open>, and read the result. End with <answer>short answer</answer>.")
TAG = re.compile(r"<(search|open|answer)>(.*?)</\1>", re.S)
MAX_TURNS = 8
MAX_TOKENS = 48
SEARCH_K = 2          # the recipe's agent settings (examples/search_agent_cpu.yaml)
SNIPPET_CHARS = 160
MODEL = "policy"     # the trainer's endpoint serves the policy under any name


async def agent(question: str, client, tools) -> str | None:
    """Search and read until an <answer> tag; the answer's text, or None after MAX_TURNS."""
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
    for _ in range(MAX_TURNS):
        reply = await client.chat.completions.create(
            model=MODEL, messages=messages, max_tokens=MAX_TOKENS)
        text = reply.choices[0].message.content or ""
        messages.append({"role": "assistant", "content": text})
        found = TAG.search(text)
        if found and found.group(1) == "answer":
            return found.group(2).strip()
        messages.append({"role": "tool", "content": observe(found, tools)})
    return None


def observe(found: re.Match | None, tools) -> str:
    """What the agent reads after a turn: search hits, a page, or what was wrong."""
    from training.search_env.observations import format_page, format_search
    if found is None:
        return "error: malformed: no <search>, <open> or <answer> tag"
    kind, arg = found.group(1), found.group(2).strip()
    try:
        if kind == "search":
            return format_search(sentence_hits(tools, arg), SNIPPET_CHARS, url_last=True)
        url, _, offset = arg.partition("#")
        return format_page(tools.open(url.strip(), int(offset) if offset.strip() else 0))
    except (KeyError, ValueError) as exc:
        return f"error: not_found: {exc}"


def sentence_hits(tools, query: str) -> list:
    """The top hits, each snippet the page's sentences richest in the query's words first."""
    from dataclasses import replace

    from training.search_env.observations import best_sentences
    return [replace(h, snippet=best_sentences(tools.page(h.url)[1], query))
            for h in tools.search(query, SEARCH_K)]


def main(argv: list[str] | None = None) -> int:
    """Play one question against an OpenAI-compatible server over the default warehouse."""
    import argparse
    import asyncio

    import openai

    import warehouse
    from datagen.tools import PageTools
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("question")
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    args = parser.parse_args(argv)
    global MODEL
    MODEL = args.model
    wh = warehouse.open()
    client = openai.AsyncOpenAI(base_url=args.base_url, api_key="local")
    print(asyncio.run(agent(args.question, client, PageTools.open(wh))))
    wh.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
