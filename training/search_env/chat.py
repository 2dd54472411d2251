"""Chat-template rendering, token in / token out across turns.

A multi-turn episode must train on the very ids the policy saw and produced. Rendering the
whole conversation again at every turn re-tokenises the model's earlier replies, and BPE may
cut the same text differently (verl's and AReaL's issues about tokens lost at chat-template
boundaries). So a later turn continues the earlier ids: `continue_ids` renders the
conversation as text, checks that it starts with the earlier rendering and the reply as the
model generated it, and tokenises only the added text, which starts right after a special
token (the end of a turn), where a cut cannot move. Nothing here names a model: the
end-of-turn token is read from the template itself.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

__all__ = ["continue_ids", "end_of_turn_ids", "render_ids", "render_text"]

Message = tuple[str, str]   # (role, text)

_PROBE = "\u2063probe\u2063"


def render_text(tokenizer, messages: Sequence[Message], generation_prompt: bool = True) -> str:
    """The chat template's text for `messages` (and the assistant header if asked)."""
    return tokenizer.apply_chat_template(_dicts(messages), tokenize=False,
                                         add_generation_prompt=generation_prompt)


def render_ids(tokenizer, messages: Sequence[Message]) -> list[int]:
    """The template's ids for `messages` and the assistant header: a conversation's start."""
    ids = tokenizer.apply_chat_template(_dicts(messages), tokenize=True,
                                        add_generation_prompt=True)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


def continue_ids(tokenizer, messages: Sequence[Message], prompt_ids: Sequence[int],
                 output_ids: Sequence[int], reply: str,
                 new_messages: Sequence[Message]) -> list[int] | None:
    """`prompt_ids + output_ids` and the ids of the turns `new_messages` adds after
    `messages` and the assistant's `reply`; None when `new_messages` does not repeat them
    (the caller edited or dropped a turn) or the template does not reproduce the reply as
    generated (a template that strips or rewrites earlier replies)."""
    history = tuple(messages) + (("assistant", reply),)
    if len(new_messages) <= len(history) or tuple(new_messages[:len(history)]) != history:
        return None
    base = render_text(tokenizer, messages)
    full = render_text(tokenizer, new_messages)
    generated = tokenizer.decode(list(output_ids), skip_special_tokens=False)
    if not full.startswith(base) or not full[len(base):].startswith(generated):
        return None
    added = full[len(base) + len(generated):]
    return list(prompt_ids) + list(output_ids) + list(
        tokenizer.encode(added, add_special_tokens=False))


def end_of_turn_ids(tokenizer) -> tuple[int, ...]:
    """The special token the template closes an assistant turn with, and the EOS token:
    generation stops at either."""
    return _end_of_turn(tokenizer)


@lru_cache(maxsize=8)
def _end_of_turn(tokenizer) -> tuple[int, ...]:
    text = render_text(tokenizer, [("user", "hi"), ("assistant", _PROBE)], False)
    tail = text[text.index(_PROBE) + len(_PROBE):]
    specials = set(tokenizer.all_special_ids)
    ends = {next((i for i in tokenizer.encode(tail, add_special_tokens=False)
                  if i in specials), None), tokenizer.eos_token_id}
    return tuple(sorted(i for i in ends if i is not None))


def _dicts(messages: Sequence[Message]) -> list[dict[str, str]]:
    """OpenAI's `developer` role is the templates' `system`."""
    return [{"role": "system" if role == "developer" else role, "content": text}
            for role, text in messages]
