"""The page-store tokenizers of the search agent (`model.tiny_tokenizer: pages | pages_bpe`)."""

from training.search_env.agent import parse_action
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


def test_question_words_are_known_though_no_page_holds_them():
    tok = train_word_tokenizer(PAGES)
    pieces = tok.convert_ids_to_tokens(tok.encode("How many people were at the Sismouth "
                                                  "Marathon?", add_special_tokens=False))
    assert "<unk>" not in pieces and pieces[-1] == "?"


def test_tied_embeddings_share_one_matrix_through_save_and_load(tmp_path):
    """With tied embeddings a word's output row is its input row, also after a reload and a
    gradient step (so copying a never-written word out of the context is one mechanism)."""
    import torch

    from training.models import load_causal_lm

    path = build_tiny_model(tmp_path / "m", hidden=64, heads=2, kv_heads=1, layers=1,
                            word_texts=PAGES, tied=True)
    model = load_causal_lm(path)
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    loss = model(torch.tensor([[5, 6, 7]]), labels=torch.tensor([[5, 6, 7]])).loss
    loss.backward()
    torch.optim.SGD(model.parameters(), lr=0.1).step()
    assert torch.equal(model.lm_head.weight, model.model.embed_tokens.weight)
    untied = load_causal_lm(build_tiny_model(tmp_path / "u", hidden=64, heads=2, kv_heads=1,
                                             layers=1, word_texts=PAGES))
    assert untied.lm_head.weight.data_ptr() != untied.model.embed_tokens.weight.data_ptr()


def test_page_bpe_spells_numbers_in_digits_and_round_trips(tmp_path):
    """`tiny_tokenizer: pages_bpe`: a BPE on the pages, each digit one token, so a number
    never seen is still ten known tokens; an answer decodes back to the same action."""
    path = build_tiny_model(tmp_path / "m", vocab_size=400, hidden=64, heads=2, kv_heads=1,
                            layers=1, bpe_texts=PAGES * 20)
    tok = load_tokenizer(path)
    ids = tok.encode("<answer>98,761</answer>", add_special_tokens=False)
    digits = [p for p in tok.convert_ids_to_tokens(ids) if any(c.isdigit() for c in p)]
    assert digits == list("98761")
    action = parse_action(tok.decode(ids + [tok.eos_token_id], skip_special_tokens=True))
    assert (action.kind, action.arg) == ("answer", "98,761")
    assert len(tok.encode(" Sismouth", add_special_tokens=False)) == 1   # a page word, merged


def test_page_bpe_digit_pairs_are_one_token_each_even_when_unseen(tmp_path):
    """`tiny_digit_group: 2`: a year is two tokens ("19" "91"), all 100 pairs being tokens,
    though the pages hold only a few of them."""
    path = build_tiny_model(tmp_path / "m", vocab_size=500, hidden=64, heads=2, kv_heads=1,
                            layers=1, bpe_texts=PAGES * 20, digit_group=2)
    tok = load_tokenizer(path)
    pieces = tok.convert_ids_to_tokens(tok.encode("1991 and 2,077", add_special_tokens=False))
    assert [p for p in pieces if p.strip("Ġ").isdigit()] == ["19", "91", "2", "07", "7"]
    assert all(len(tok.encode(f"{i:02d}", add_special_tokens=False)) == 1 for i in range(100))


def test_page_bpe_tag_tokens_make_each_tool_tag_one_token_kept_when_decoding(tmp_path):
    """`tiny_tag_tokens`: `<search>` is one token, not a spelling of six, and a decoded turn
    still parses as the same action; without the option the tags stay in pieces."""
    turn = "<search>Sismouth museum</search>"
    lengths = {}
    for tags in (False, True):
        path = build_tiny_model(tmp_path / f"m{tags}", vocab_size=400, hidden=64, heads=2,
                                kv_heads=1, layers=1, bpe_texts=PAGES * 20, tag_tokens=tags)
        tok = load_tokenizer(path)
        ids = tok.encode(turn, add_special_tokens=False)
        lengths[tags] = len(ids)
        action = parse_action(tok.decode(ids + [tok.eos_token_id], skip_special_tokens=True))
        assert (action.kind, action.arg) == ("search", "Sismouth museum")
    inner = tok.encode("Sismouth museum", add_special_tokens=False)
    assert tok.convert_ids_to_tokens(ids) == ["<search>", *tok.convert_ids_to_tokens(inner),
                                              "</search>"]
    assert lengths[False] > lengths[True] + 2   # each tag was more than one piece


def test_a_run_config_builds_its_base_model_on_the_warehouse_pages(tmp_path):
    """`model.tiny_tokenizer: pages_bpe` with `tiny_digit_group: 2` and `tiny_tag_tokens`, as
    the spike's config has them: the run's base model reads the pages of its warehouse."""
    import datetime as dt

    import warehouse
    from training.config import TrainConfig
    from training.setup import _model_path
    from warehouse import PageRecord

    cfg = TrainConfig.model_validate({"model": {
        "tiny_tokenizer": "pages_bpe", "tiny_vocab_size": 500, "tiny_digit_group": 2,
        "tiny_tag_tokens": True, "tiny_hidden": 64, "tiny_layers": 1}})
    now = dt.datetime.now(dt.timezone.utc)
    with warehouse.open(tmp_path / "wh") as wh:
        wh.append([PageRecord(url=f"http://x/{i}", title=f"P{i}", text=text * 20,
                              content_hash=str(i), fetched_at=now)
                   for i, text in enumerate(PAGES)])
        tok = load_tokenizer(_model_path(cfg, tmp_path / "run", wh))
    pieces = tok.convert_ids_to_tokens(tok.encode("<answer>1906</answer>",
                                                  add_special_tokens=False))
    assert pieces == ["<answer>", "19", "06", "</answer>"]
    assert len(tok.encode(" Sismouth", add_special_tokens=False)) == 1   # learned on the pages
