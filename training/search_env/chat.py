"""Chat-template rendering, token in / token out across turns: one render, one continuation,
one end-of-turn helper, used by the in-process agent (turns.py), the OpenAI-compatible proxy
(training/proxy.py), the user-agent workflow and the single-turn policies.

A multi-turn episode must train on the very ids the policy saw and produced. Rendering the
whole conversation again at every turn re-tokenises the model's earlier replies, and BPE may
cut the same text differently (verl's and AReaL's issues about tokens lost at chat-template
boundaries). So a later turn continues the earlier ids: `continuation` renders the
conversation as text, checks that it starts with the earlier rendering and the reply as the
model generated it, and returns only the added text, which starts right after a special
token (the end of a turn), where a cut cannot move. Nothing here names a model: the
end-of-turn token is read from the template itself.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

from training.api import Message

__all__ = ["continuation", "continue_ids", "end_of_turn_ids", "prompt_ids", "render_ids",
           "render_text", "tool_role"]


_PROBE = "\u2063probe\u2063"
_TOOL_PROBE = "\u2063tool probe\u2063"


def render_text(tokenizer, messages: Sequence[Message], generation_prompt: bool = True) -> str:
    """The chat template's text for `messages` (and the assistant header if asked)."""
    return tokenizer.apply_chat_template(_dicts(messages), tokenize=False,
                                         add_generation_prompt=generation_prompt)


def render_ids(tokenizer, messages: Sequence[Message]) -> list[int]:
    """The template's ids for `messages` and the assistant header: a conversation's start."""
    encoded = tokenizer.apply_chat_template(_dicts(messages), tokenize=True,
                                            add_generation_prompt=True, return_dict=True)
    return list(encoded["input_ids"])


def prompt_ids(tokenizer, question: str, system: str | None = None) -> list[int]:
    """One user turn (after a system turn when given) and the assistant header: the prompt of
    the single-turn policies (the qa workflow, `datagen band --solver policy:`) and of the
    search agent."""
    return render_ids(tokenizer, [("system", system)] * bool(system) + [("user", question)])


def continuation(tokenizer, messages: Sequence[Message], generated: str,
                 new_messages: Sequence[Message]) -> str | None:
    """The text the template adds after `messages` and the assistant's `generated` text to
    render `new_messages`; None when its rendering does not start with them (a template that
    strips or rewrites earlier replies)."""
    base = render_text(tokenizer, messages)
    full = render_text(tokenizer, new_messages)
    if not full.startswith(base) or not full[len(base):].startswith(generated):
        return None
    return full[len(base) + len(generated):]


def continue_ids(tokenizer, messages: Sequence[Message], prompt_ids: Sequence[int],
                 output_ids: Sequence[int], reply: str,
                 new_messages: Sequence[Message]) -> list[int] | None:
    """`prompt_ids + output_ids` and the ids of the turns `new_messages` adds after
    `messages` and the assistant's `reply`; None when `new_messages` does not repeat them
    (the caller edited or dropped a turn) or the template does not reproduce the reply as
    generated."""
    history = tuple(messages) + (("assistant", reply),)
    if len(new_messages) <= len(history) or tuple(new_messages[:len(history)]) != history:
        return None
    generated = tokenizer.decode(list(output_ids), skip_special_tokens=False)
    added = continuation(tokenizer, messages, generated, new_messages)
    if added is None:
        return None
    return list(prompt_ids) + list(output_ids) + list(
        tokenizer.encode(added, add_special_tokens=False))


@lru_cache(maxsize=8)
def end_of_turn_ids(tokenizer) -> tuple[int, ...]:
    """The special token the template closes an assistant turn with (ChatML: <|im_end|>),
    then the EOS token when it is another: generation stops at either; the agent's turns end
    at the first."""
    text = render_text(tokenizer, [("user", "hi"), ("assistant", _PROBE)], False)
    tail = text[text.index(_PROBE) + len(_PROBE):]
    specials = set(tokenizer.all_special_ids)
    closing = next((i for i in tokenizer.encode(tail, add_special_tokens=False)
                    if i in specials), None)
    ends = (closing, tokenizer.eos_token_id)
    return tuple(dict.fromkeys(i for i in ends if i is not None))


@lru_cache(maxsize=8)
def tool_role(tokenizer) -> str:
    """`tool` when the chat template renders a tool message with its text after an assistant
    turn, else `user` (a template that refuses the role, or drops its content)."""
    turns = [("system", "s"), ("user", "q"), ("assistant", "a"), ("tool", _TOOL_PROBE)]
    try:
        text = render_text(tokenizer, turns)
    except Exception:   # jinja's TemplateError, or a template's raise_exception
        return "user"
    return "tool" if _TOOL_PROBE in text else "user"


def _dicts(messages: Sequence[Message]) -> list[dict[str, str]]:
    """OpenAI's `developer` role is the templates' `system`."""
    return [{"role": "system" if role == "developer" else role, "content": text}
            for role, text in messages]
