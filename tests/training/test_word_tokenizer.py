"""The page-store tokenizer of the search agent (`model.tiny_tokenizer: pages`)."""

from training.agent import parse_action
from training.models import build_tiny_model, load_tokenizer, train_word_tokenizer

PAGES = ["The 1859 Sismouth Marathon drew a crowd of 32,052 people.",
         "Dreixford Bridge was built in 1906 over the Vend river."]


def test_names_numbers_and_tags_are_one_token_each():
    tok = train_word_tokenizer(PAGES)
    text = "<search>Sismouth Marathon</search> <answer>32,052</answer>"
    pieces = tok.convert_ids_to_tokens(tok.encode(text, add_special_tokens=False))
    assert pieces == ["<search>", "Sismouth", "Marathon", "</search>",
                      "<answer>", "32,052", "</answer>"]
    assert tok.convert_ids_to_tokens(tok.encode("Zzyzx", add_special_tokens=False)) == ["<unk>"]


def test_decoded_output_parses_back_to_the_same_action():
    tok = train_word_tokenizer(PAGES)
    ids = tok.encode("<answer>32,052</answer>", add_special_tokens=False) + [tok.eos_token_id]
    action = parse_action(tok.decode(ids, skip_special_tokens=True))
    assert (action.kind, action.arg) == ("answer", "32,052")


def test_saved_model_loads_the_word_tokenizer_not_qwen2s(tmp_path):
    path = build_tiny_model(tmp_path / "m", hidden=64, heads=2, kv_heads=1, layers=1,
                            word_texts=PAGES)
    tok = load_tokenizer(path)
    assert tok.convert_ids_to_tokens(tok.encode("1906", add_special_tokens=False)) == ["1906"]
    chat = tok.apply_chat_template([{"role": "user", "content": "Vend"}],
                                   add_generation_prompt=True, tokenize=False)
    assert chat.endswith("<|im_start|>assistant\n")


def test_another_page_store_rebuilds_the_model(tmp_path):
    first = build_tiny_model(tmp_path / "m", hidden=64, heads=2, kv_heads=1, layers=1,
                             word_texts=PAGES)
    build_tiny_model(first, hidden=64, heads=2, kv_heads=1, layers=1,
                     word_texts=PAGES + ["Roundmouth"])
    assert load_tokenizer(first).convert_ids_to_tokens(
        load_tokenizer(first).encode("Roundmouth", add_special_tokens=False)) == ["Roundmouth"]
