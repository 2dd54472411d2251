"""The trainer's OpenAI-compatible endpoint (training/proxy.py) against calling its engine
directly (issue 34): what a user's agent pays per call for writing plain `openai` code.

    python benchmarks/bench_proxy.py [--quick] [--model smollm2-135m-instruct]

Both paths play the same two-turn episodes, one call at a time, greedy, on one in-process
vLLM engine over the pulled model: directly, the chat template's ids (the second turn
continues the first's ids) go to `engine.agenerate`; through the endpoint, an
`openai.AsyncOpenAI` client posts the messages over loopback HTTP with the episode's id.
The two alternate episode by episode so load hits both alike, and greedy decoding makes
them generate the same tokens (counted: `same`). A first pass, over an engine that answers
at once (no model), gives the endpoint's own cost per call, HTTP, JSON and template
included.

Ends with `RESULT proxy ratio=... overhead_ms=... direct_ms=... proxy_ms=...
bare_overhead_ms=... same=k/n` (ratio = direct time over endpoint time for the same
episodes, goal >= 0.9; the *_ms figures are medians per call).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

NAMES = ["Varo", "Kest", "Ulmen", "Thaxburg", "Grimhaven", "Orlo", "Pell", "Sarn", "Tove",
         "Brisk", "Caddon", "Elm", "Fenwick", "Harl", "Iver", "Jory"]
SYSTEM = ("Answer the question. Write <search>query</search> to search, "
          "<answer>text</answer> to answer.")


def episodes(n: int) -> list[tuple[str, str]]:
    """(question, the tool result the second turn shows), n of them."""
    out = []
    for i in range(n):
        name = f"{NAMES[i % len(NAMES)]} {NAMES[(i * 7 + 3) % len(NAMES)].lower()}"
        year = 1800 + (i * 37) % 200
        out.append((f"When was the {name} bridge built?",
                    f"[1] {name} bridge: The {name} bridge was built in {year} over the river."))
    return out


def _turns(question: str, reply: str | None, result: str) -> list[tuple[str, str]]:
    msgs = [("system", SYSTEM), ("user", question)]
    return msgs if reply is None else msgs + [("assistant", reply), ("user", result)]


class InstantEngine:
    """Answers every request at once with a fixed reply closed by the end-of-turn token."""

    def __init__(self, tok):
        from training.search_env.chat import end_of_turn_ids
        self.reply = tok.encode("<search>bridge</search>", add_special_tokens=False)
        self.reply.append(end_of_turn_ids(tok)[0])

    async def agenerate(self, request):
        from training.api import GenerationResult
        ids = self.reply[:request.max_new_tokens]
        return GenerationResult(request.prompt_ids, ids, [0.0] * len(ids), [0] * len(ids),
                                "stop")


async def direct_episode(engine, tok, question, result, max_new):
    """Two calls straight to the engine; seconds per call and the generated ids."""
    from training.api import GenerationRequest
    from training.search_env.chat import continue_ids, end_of_turn_ids, render_ids
    stop = end_of_turn_ids(tok)
    times, outs = [], []
    first_msgs = _turns(question, None, result)
    prompt = render_ids(tok, first_msgs)
    for turn in range(2):
        t = time.perf_counter()
        if turn:
            msgs = _turns(question, reply, result)
            prompt = continue_ids(tok, first_msgs, prompt, outs[-1], reply, msgs)
        res = await engine.agenerate(GenerationRequest(prompt_ids=prompt, temperature=0.0,
                                                       max_new_tokens=max_new,
                                                       stop_token_ids=stop))
        reply = tok.decode(res.output_ids, skip_special_tokens=True)
        times.append(time.perf_counter() - t)
        outs.append(list(res.output_ids))
    return times, outs


async def proxy_episode(proxy, client, engine, question, result):
    """The same two calls through the endpoint with the openai client."""
    episode = proxy.open_episode(engine, temperature=0.0)
    headers = {"X-Episode-Id": episode}
    times, reply = [], None
    for turn in range(2):
        msgs = [{"role": r, "content": c} for r, c in _turns(question, reply, result)]
        t = time.perf_counter()
        out = await client.chat.completions.create(model="policy", messages=msgs,
                                                   extra_headers=headers)
        times.append(time.perf_counter() - t)
        reply = out.choices[0].message.content
    recorded = proxy.close_episode(episode)
    return times, [list(c.result.output_ids) for c in recorded.calls]


async def compare(engine, tok, n: int, max_new: int) -> dict:
    """Alternate direct and endpoint episodes; medians per call and how many matched."""
    import openai

    from training.proxy import ChatProxy
    proxy = ChatProxy(tok, max_new_tokens=max_new, context_tokens=1024, temperature=0.0)
    await proxy.start()
    client = openai.AsyncOpenAI(base_url=proxy.url, api_key="unused", max_retries=0)
    direct, via, same = [], [], 0
    try:
        for question, result in episodes(n):
            d_times, d_ids = await direct_episode(engine, tok, question, result, max_new)
            p_times, p_ids = await proxy_episode(proxy, client, engine, question, result)
            direct += d_times
            via += p_times
            same += d_ids == p_ids
    finally:
        await client.close()
        await proxy.close()
    return {"direct": direct, "proxy": via, "same": same, "n": n}


def _ms(xs) -> float:
    return 1000 * statistics.median(xs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="20 episodes instead of 100")
    ap.add_argument("--model", default="smollm2-135m-instruct",
                    help="a pulled model's name or a local folder (default %(default)s)")
    ap.add_argument("--max-new-tokens", type=int, default=32)
    args = ap.parse_args(argv)
    from datagen.models.resolve import resolve_model
    from training.models import load_tokenizer
    try:
        path = resolve_model(args.model)
    except (ValueError, FileNotFoundError) as exc:
        print(f"bench_proxy: {exc}", file=sys.stderr)
        return 2
    n = 20 if args.quick else 100
    tok = load_tokenizer(path)
    bare = asyncio.run(compare(InstantEngine(tok), tok, n, args.max_new_tokens))
    print(f"instant engine: direct {_ms(bare['direct']):.2f} ms, endpoint "
          f"{_ms(bare['proxy']):.2f} ms per call")
    from training.engines.vllm_engine import VLLMInferenceEngine
    engine = VLLMInferenceEngine(path, max_model_len=1024)
    try:
        asyncio.run(compare(engine, tok, 2, args.max_new_tokens))   # warm-up
        real = asyncio.run(compare(engine, tok, n, args.max_new_tokens))
    finally:
        engine.close()
    d, p = sum(real["direct"]), sum(real["proxy"])
    print(f"vLLM {args.model}: {2 * n} calls each way, direct {d:.1f} s, endpoint {p:.1f} s")
    print(f"RESULT proxy ratio={d / p:.3f} overhead_ms={_ms(real['proxy']) - _ms(real['direct']):.1f} "
          f"direct_ms={_ms(real['direct']):.1f} proxy_ms={_ms(real['proxy']):.1f} "
          f"bare_overhead_ms={_ms(bare['proxy']) - _ms(bare['direct']):.2f} "
          f"same={real['same']}/{real['n']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
