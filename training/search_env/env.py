"""The search environment: the page tools (datagen.tools.PageTools), the actions an agent may
take on them and the text each shows it, with the settings of the `agent:` config section.

Tag format: a turn holds one action, the first complete tag in it counts:
`<search>query</search>`, `<open>url</open>` (or `<open>url#offset</open>` to page on),
`<answer>text</answer>` (ends the episode). A turn without a tag, an unknown or empty tag, a
tool that raises or runs past `TOOL_TIMEOUT_S`: each becomes an observation
`error: <reason>: <detail>` for the model, counted by reason, never a crash.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable

from training.config import AgentConfig
from training.search_env.observations import best_sentences, format_page, format_search

if TYPE_CHECKING:
    from datagen.tools import PageTools, SearchHit

SYSTEM_PROMPT = (
    "Answer the question. You may search the pages: write <search>words</search> or "
    "<open>url</open>, and read the result. End with <answer>short answer</answer>.")
NO_TOOL_PROMPT = "Answer the question with <answer>short answer</answer>."
TOOL_TIMEOUT_S = 10.0   # not a setting: the config refuses agent.tool_timeout_s
_TAG = re.compile(r"<(search|open|answer)>(.*?)</\1>", re.S)
_ANY_TAG = re.compile(r"<([a-z_]+)>")


@dataclass(frozen=True)
class Action:
    """A parsed turn: kind is search | open | answer | malformed; arg its text or the reason."""

    kind: str
    arg: str


def parse_action(text: str) -> Action:
    """The first complete tag of a turn, or why there is none.

    >>> parse_action("I look. <search>river city</search>")
    Action(kind='search', arg='river city')
    >>> parse_action("<answer> 1934 </answer>"), parse_action("<find>x</find>").kind
    (Action(kind='answer', arg='1934'), 'malformed')
    """
    m = _TAG.search(text)
    if m is None:
        other = _ANY_TAG.search(text)
        why = f"unknown tag <{other.group(1)}>" if other else "no <search>, <open> or <answer> tag"
        return Action("malformed", why)
    arg = " ".join(m.group(2).split())
    if not arg and m.group(1) != "answer":
        return Action("malformed", f"empty <{m.group(1)}>")
    return Action(m.group(1), arg)


@dataclass
class SearchEnv:
    """The tools an episode may call, as the `agent:` section sets them up (results shown,
    snippet form and length, turn and token budgets). `use_tools` False is the single-turn
    baseline (`datagen eval --no-tools`); `tool_latency` a sampled wait before each call (a
    remote search API's latency, rollout.tool_latency_*)."""

    settings: AgentConfig
    tools: "PageTools"
    use_tools: bool = True
    tool_latency: Callable[[], float] | None = None
    tool_timeout_s: float = TOOL_TIMEOUT_S

    def system(self) -> str:
        """The system prompt: the tags, or the answer tag alone without tools."""
        return SYSTEM_PROMPT if self.use_tools else NO_TOOL_PROMPT

    async def observe(self, action: Action, calls: Counter, errors: Counter,
                      seen: set[str] | None = None) -> str:
        """The tool's result as text, or `error: reason: detail` (counted by reason); the
        urls of the pages it shows text of go into `seen` (pages seen per episode)."""
        if action.kind == "malformed":
            errors["malformed"] += 1
            return f"error: malformed: {action.arg}"
        calls[action.kind] += 1
        if self.tool_latency is not None:
            await asyncio.sleep(self.tool_latency())
        try:
            return await asyncio.wait_for(asyncio.to_thread(self.call, action, seen),
                                          self.tool_timeout_s)
        except (asyncio.TimeoutError, TimeoutError):
            errors["timeout"] += 1
            return f"error: timeout: {action.kind} took over {self.tool_timeout_s:g} s"
        except KeyError as exc:
            errors["not_found"] += 1
            return f"error: not_found: {str(exc).strip(chr(39))}"
        except Exception as exc:  # a failing tool is an observation, never a crash
            errors[f"tool_{type(exc).__name__}"] += 1
            return f"error: tool_failed: {type(exc).__name__}: {exc}"

    def search_hits(self, query: str) -> list["SearchHit"]:
        """The hits a search shows, their snippets in this environment's form (not yet cut)."""
        hits = self.tools.search(query, self.settings.search_k)
        if self.settings.snippet == "sentence":
            hits = [replace(h, snippet=best_sentences(self.tools.page(h.url)[1], query))
                    for h in hits]
        return hits

    def call(self, action: Action, seen: set[str] | None = None) -> str:
        """What a search or an open shows the agent (raises as the tool raises); adds to
        `seen` the urls of the hits shown or of the page opened."""
        s, shown = self.settings, set() if seen is None else seen
        if action.kind == "search":
            hits = self.search_hits(action.arg)
            shown.update(h.url for h in hits)
            return format_search(hits, s.snippet_chars, url_last=s.snippet == "sentence")
        url, _, offset = action.arg.partition("#")
        view = self.tools.open(url.strip(), int(offset) if offset.strip() else 0)
        shown.add(view.url)
        return format_page(view)
