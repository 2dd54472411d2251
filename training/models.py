"""Tiny models built locally (nothing can be downloaded here), and loading of real ones.

`build_tiny_model(out_dir)` trains a byte-level BPE tokenizer on text generated on the fly,
wraps it as a `PreTrainedTokenizerFast` with a ChatML chat template, builds a small
Qwen2-style causal LM that vLLM can load (head_dim >= 32, untied embeddings) and saves
both in HF format. A user's real model directory is loaded by `load_tokenizer` /
`load_causal_lm`, the same code the engines use for the tiny one.
"""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path

logger = logging.getLogger(__name__)

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
_MARKER = "tiny_model.json"

_WORDS = (
    "the a of in on river city museum founded year bridge built century who what which "
    "when where how many capital country author book wrote painted born died mountain "
    "answer question search open page link fact president team won cup island north "
    "south east west old new first last largest smallest number 1 2 3 4 5 6 7 8 9 0"
).split()


def synthetic_corpus(n_lines: int = 2000, seed: int = 0) -> list[str]:
    """Deterministic pseudo-text with questions, numbers and chat markup for BPE training."""
    rng = random.Random(seed)
    lines = []
    for _ in range(n_lines):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(4, 16))]
        sentence = " ".join(words).capitalize()
        lines.append(sentence + rng.choice([".", "?", "!", ", 19" + str(rng.randint(10, 99)) + "."]))
    return lines


def train_tokenizer(vocab_size: int = 512, texts: list[str] | None = None,
                    digit_group: int = 0, tags: tuple[str, ...] = ()):
    """A byte-level BPE tokenizer with ChatML special tokens, as a PreTrainedTokenizerFast.
    `digit_group` N > 0 cuts digit runs into pieces of at most N digits first (N = 1: one token
    per digit, as Llama does; 2: "1912" is "19" "12"), so a number is spelled in a few
    well-trained tokens and copying it out of a text is copying a short sequence. `tags` (the
    agent's `AGENT_TAGS`) become one token each, kept when decoding, instead of ~6 pieces."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    if digit_group:
        digits = pre_tokenizers.Split(Regex(rf"\d{{1,{digit_group}}}"), behavior="isolated")
        tok.pre_tokenizer = pre_tokenizers.Sequence([digits, tok.pre_tokenizer])
    if digit_group > 1:   # every piece of N digits a token, however rare in the texts
        pieces = "".join(f"{i:0{digit_group}d}" for i in range(10 ** digit_group))
        texts = [*(texts or synthetic_corpus()), *[pieces] * 4096]
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    tok.train_from_iterator(texts or synthetic_corpus(), trainer=trainer)
    tok.add_tokens(list(tags))
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        bos_token=None, unk_token=None, additional_special_tokens=SPECIAL_TOKENS[1:],
    )
    fast.chat_template = CHATML_TEMPLATE
    return fast


# The agent's tool-call tags (training/agent.py), single tokens with `tiny_tag_tokens`.
AGENT_TAGS = ("<search>", "</search>", "<open>", "</open>", "<answer>", "</answer>")
# Tags, numbers with their separators, words, single punctuation: one token each.
_WORD_PIECES = r"</?[a-z]+>|\d[\d,.]*\d|\w+|[^\w\s]"
# Text every agent prompt holds besides the pages: chat roles, tool tags, instructions.
# Questions' own words besides ("How many ...?"): questions are not in the page store.
_PROMPT_TEXT = ("system user assistant tool error malformed timeout not_found "
                + " ".join(AGENT_TAGS) + " | # "
                "Answer the question. You may search the pages: write words or url, and read "
                "the result. End with short answer. with "
                "How What Which When Where Who Whom Whose Why In On At By For Of The A An "
                "how what which when where who whom whose why many much long large old tall "
                "big high deep wide far year years date day number people did does do was were "
                "is are has had have name named called in on at by for of the a an to from and "
                "or as it its that this ? , . : ; ' \" ( ) http https www html")


def train_word_tokenizer(texts: list[str], vocab_size: int = 32000):
    """A word-level tokenizer over `texts` (the page store): names, numbers and tool tags are
    one token each, so copying an answer out of a search result is one choice, not a spelling.
    Decoding joins tokens with spaces; words it never saw map to `<unk>`."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(),
        pre_tokenizers.Split(Regex(_WORD_PIECES), behavior="isolated")])
    trainer = trainers.WordLevelTrainer(vocab_size=vocab_size, min_frequency=1,
                                        special_tokens=SPECIAL_TOKENS + ["<unk>"])
    tok.train_from_iterator(list(texts) + [_PROMPT_TEXT], trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        unk_token="<unk>", bos_token=None, additional_special_tokens=SPECIAL_TOKENS[1:])
    fast.chat_template = CHATML_TEMPLATE
    return fast


def tiny_qwen2_config(vocab_size: int, hidden: int = 128, layers: int = 2, heads: int = 4,
                      kv_heads: int = 2, intermediate: int = 256, max_positions: int = 1024,
                      eos_token_id: int = 2, pad_token_id: int = 0, tied: bool = False):
    """A Qwen2 config vLLM accepts: head_dim = hidden / heads >= 32; embeddings untied unless
    `tied` (then a word's output row is its input row, so a model can copy out of its context
    a word it never wrote: a held-out answer's number from a search result)."""
    from transformers import Qwen2Config

    if hidden // heads < 32:
        raise ValueError(f"head_dim {hidden // heads} < 32: vLLM's attention needs >= 32; "
                         "use fewer heads or a larger hidden size")
    return Qwen2Config(
        vocab_size=vocab_size, hidden_size=hidden, intermediate_size=intermediate,
        num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
        max_position_embeddings=max_positions, tie_word_embeddings=tied,
        rope_theta=10000.0, rms_norm_eps=1e-6, eos_token_id=eos_token_id,
        pad_token_id=pad_token_id, bos_token_id=None, torch_dtype="float32",
    )


def build_tiny_model(out_dir: str | Path, *, vocab_size: int = 512, hidden: int = 128,
                     layers: int = 2, heads: int = 4, kv_heads: int = 2,
                     intermediate: int = 256, seed: int = 0, model_vocab_size: int | None = None,
                     overwrite: bool = False, word_texts: list[str] | None = None,
                     bpe_texts: list[str] | None = None, digit_group: int = 1,
                     tag_tokens: bool = False, tied: bool = False,
                     max_positions: int = 1024) -> Path:
    """Build (or reuse) a random tiny Qwen2 + tokenizer in `out_dir`; returns the path.

    Reuse is keyed on the arguments, recorded in `tiny_model.json`, so a cached dir built
    with other sizes is rebuilt rather than silently returned. `model_vocab_size` pads the
    embedding beyond the tokenizer (real models do; benchmarks use it to reach real sizes).
    `word_texts` (the page store) builds a word-level tokenizer on them instead of the BPE one;
    `bpe_texts` (the page store) a BPE one of `vocab_size` on them, numbers cut into pieces of
    at most `digit_group` digits, the agent's tags single tokens with `tag_tokens`.
    `tied` shares the input and output embeddings; `max_positions` is the context length.
    """
    import torch
    from transformers import GenerationConfig, Qwen2ForCausalLM

    out = Path(out_dir)
    spec = dict(vocab_size=vocab_size, hidden=hidden, layers=layers, heads=heads,
                kv_heads=kv_heads, intermediate=intermediate, seed=seed,
                model_vocab_size=model_vocab_size)
    if word_texts:
        spec["words"] = _digest([*word_texts, _PROMPT_TEXT])
    if bpe_texts:
        spec["bpe_pages"] = _digest([*bpe_texts, _PROMPT_TEXT])
        spec["digit_group"] = digit_group
        if tag_tokens:
            spec["tag_tokens"] = True
    if tied:
        spec["tied"] = True
    if max_positions != 1024:
        spec["max_positions"] = max_positions
    marker = out / _MARKER
    if not overwrite and marker.exists() and json.loads(marker.read_text()) == spec:
        return out
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = (train_word_tokenizer(word_texts) if word_texts else
                 train_tokenizer(vocab_size, [*bpe_texts, _PROMPT_TEXT], digit_group,
                                 AGENT_TAGS if tag_tokens else ())
                 if bpe_texts else train_tokenizer(vocab_size))
    torch.manual_seed(seed)
    config = tiny_qwen2_config(
        max(len(tokenizer), model_vocab_size or 0), hidden, layers, heads, kv_heads, intermediate,
        max_positions=max_positions, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id, tied=tied)
    model = Qwen2ForCausalLM(config).to(torch.float32)
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    marker.write_text(json.dumps(spec))
    logger.info("built tiny model (%d params) in %s", model.num_parameters(), out)
    return out


def _digest(texts: list[str]) -> str:
    """A short fingerprint of the tokenizer's corpus, so another page store rebuilds the model."""
    import hashlib

    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode("utf-8", "replace") + b"\0")
    return h.hexdigest()[:16]


def _is_own_tokenizer(model_path: str | Path) -> bool:
    """Whether the folder holds a tokenizer of this module that AutoTokenizer would replace
    with Qwen2's: a word-level one (`train_word_tokenizer`) or a page BPE whose numbers are cut
    into digit groups (`train_tokenizer(digit_group=N)`; Qwen2's pre-tokenizer cuts digits one
    by one and its words otherwise than the BPE learned them)."""
    path = Path(model_path) / "tokenizer.json"
    if not path.exists():
        return False
    spec = json.loads(path.read_text())
    if spec.get("model", {}).get("type") == "WordLevel":
        return True
    first = ((spec.get("pre_tokenizer") or {}).get("pretokenizers") or [{}])[0]
    pattern = (first.get("pattern") or {}).get("Regex", "")
    return first.get("type") == "Split" and pattern.startswith(r"\d{1,")


def load_tokenizer(model_path: str | Path):
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    # AutoTokenizer would give a tiny Qwen2 model Qwen2's byte-level pre-tokenizer back.
    loader = PreTrainedTokenizerFast if _is_own_tokenizer(model_path) else AutoTokenizer
    tok = loader.from_pretrained(str(model_path))
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return tok


def load_causal_lm(model_path: str | Path, dtype: str = "float32"):
    """Load an HF causal LM (tiny or real) in the given dtype, in train mode off."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(model_path), dtype=getattr(torch, dtype))
    return model
