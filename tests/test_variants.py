"""attn.variants against Hugging Face transformers: BERT, GPT-2, T5, BART and ViT built from small random
configurations (offline, no download) and compared in float32, eval mode, to 1e-5."""

import os
import re
import subprocess
import sys

import pytest
import torch

import attn
from attn import variants
from attn.book import model_variants
from attn.variants import BART, BERT, GPT, T5, ViT


class _Transformers:
    """``transformers``, imported on first use: only the tests that compare with Hugging Face are
    skipped where it is missing (the others, e.g. "attn imports without transformers", still run)."""

    def __getattr__(self, name):
        return getattr(pytest.importorskip("transformers"), name)


transformers = _Transformers()


@pytest.fixture(autouse=True, scope="module")
def _offline_hugging_face():
    """Offline and quiet for this module's tests only, undone afterwards."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("TRANSFORMERS_VERBOSITY", "error")
        yield

TOL = dict(atol=1e-5, rtol=1e-5)
V = 97


def _seeded(cls, config):
    torch.manual_seed(0)
    return cls(config).eval()


def bert_config(**kw):
    base = dict(vocab_size=V, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=48,
                max_position_embeddings=40, type_vocab_size=2)
    return transformers.BertConfig(**{**base, **kw})


def gpt2_config(**kw):
    base = dict(vocab_size=V, n_embd=32, n_layer=2, n_head=4, n_positions=40, pad_token_id=0)
    return transformers.GPT2Config(**{**base, **kw})


def t5_config(**kw):
    base = dict(vocab_size=V, d_model=32, d_kv=8, d_ff=48, num_layers=2, num_decoder_layers=2, num_heads=4,
                relative_attention_num_buckets=8, relative_attention_max_distance=20, decoder_start_token_id=0)
    return transformers.T5Config(**{**base, **kw})


def vit_config(**kw):
    base = dict(image_size=8, patch_size=2, num_channels=1, hidden_size=32, num_hidden_layers=2,
                num_attention_heads=4, intermediate_size=48, num_labels=10)
    return transformers.ViTConfig(**{**base, **kw})


def _padded_batch(lengths, L, generator):
    tokens = torch.randint(2, V, (len(lengths), L), generator=generator)
    real = torch.arange(L)[None, :] < torch.tensor(lengths)[:, None]  # (B, L) True = real token
    return tokens.masked_fill(~real, 0), real


# --- BERT ---------------------------------------------------------------------------------------


def test_bert_masked_lm_logits_match_hugging_face_with_padding_and_segments():
    hf = _seeded(transformers.BertForMaskedLM, bert_config())
    ours = BERT.from_hf(hf)
    g = torch.Generator().manual_seed(1)
    tokens, real = _padded_batch([12, 7, 3], 12, g)
    segments = (torch.arange(12) >= 5).long().expand(3, -1)
    want = hf(input_ids=tokens, attention_mask=real.long(), token_type_ids=segments).logits
    got = ours(tokens, segments=segments, key_mask=real)
    torch.testing.assert_close(got[real], want[real], **TOL)


def test_bert_model_hidden_states_and_pooler_match_hugging_face():
    hf = _seeded(transformers.BertModel, bert_config())
    ours = BERT.from_hf(hf)
    g = torch.Generator().manual_seed(2)
    tokens, real = _padded_batch([10, 6], 10, g)
    out = hf(input_ids=tokens, attention_mask=real.long())
    hidden = ours.encode(tokens, key_mask=real)
    torch.testing.assert_close(hidden[real], out.last_hidden_state[real], **TOL)
    torch.testing.assert_close(ours.pool(hidden), out.pooler_output, **TOL)


def test_bert_round_trip_through_save_pretrained_and_from_pretrained(tmp_path):
    _seeded(transformers.BertForMaskedLM, bert_config()).save_pretrained(tmp_path)
    hf = transformers.BertForMaskedLM.from_pretrained(tmp_path, local_files_only=True).eval()
    ours = BERT.from_hf(hf)
    tokens = torch.randint(2, V, (2, 9), generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(ours(tokens), hf(input_ids=tokens).logits, **TOL)


# --- GPT ----------------------------------------------------------------------------------------


def test_gpt_logits_match_gpt2_with_right_padding():
    hf = _seeded(transformers.GPT2LMHeadModel, gpt2_config())
    ours = GPT.from_hf(hf)
    tokens, real = _padded_batch([11, 5], 11, torch.Generator().manual_seed(4))
    want = hf(input_ids=tokens, attention_mask=real.long()).logits
    got = ours(tokens, key_mask=real)
    torch.testing.assert_close(got[real], want[real], **TOL)


def test_gpt_cached_logits_match_full_forward_and_gpt2_greedy_generation():
    hf = _seeded(transformers.GPT2LMHeadModel, gpt2_config())
    ours = GPT.from_hf(hf)
    tokens = torch.randint(1, V, (2, 10), generator=torch.Generator().manual_seed(5))
    full = ours(tokens)
    caches = ours.new_caches()
    steps = [ours(tokens[:, :4], caches=caches)] + [ours(tokens[:, t : t + 1], caches=caches) for t in range(4, 10)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, **TOL)
    prompt = tokens[:, :4]
    cached = ours.generate(prompt, 12, temperature=0)
    uncached = ours.generate(prompt, 12, temperature=0, use_cache=False)
    assert torch.equal(cached, uncached)
    want = hf.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=12, min_new_tokens=12,
                       do_sample=False)
    assert torch.equal(cached, want)


def test_gpt_sampling_is_seeded_and_top_k_stays_in_the_top_k():
    ours = GPT.from_hf(_seeded(transformers.GPT2LMHeadModel, gpt2_config()))
    prompt = torch.tensor([[5, 6, 7]])
    a = ours.generate(prompt, 10, temperature=1.5, generator=torch.Generator().manual_seed(0))
    b = ours.generate(prompt, 10, temperature=1.5, generator=torch.Generator().manual_seed(0), use_cache=False)
    assert torch.equal(a, b)
    out = ours.generate(prompt, 1, temperature=5.0, top_k=3, generator=torch.Generator().manual_seed(1))
    top3 = ours(prompt)[0, -1].topk(3).indices
    assert out[0, -1] in top3


# --- T5 -----------------------------------------------------------------------------------------


def test_t5_logits_match_hugging_face_with_source_padding():
    hf = _seeded(transformers.T5ForConditionalGeneration, t5_config(num_decoder_layers=3))
    ours = T5.from_hf(hf)
    g = torch.Generator().manual_seed(6)
    src, real = _padded_batch([9, 4], 9, g)
    tgt = torch.randint(2, V, (2, 7), generator=g)
    tgt[:, 0] = 0
    want = hf(input_ids=src, attention_mask=real.long(), decoder_input_ids=tgt).logits
    got = ours(src, tgt, real)
    torch.testing.assert_close(got, want, **TOL)
    torch.testing.assert_close(ours.encode(src, real)[real],
                               hf.encoder(input_ids=src, attention_mask=real.long()).last_hidden_state[real], **TOL)


def test_t5_cached_decoding_matches_uncached_and_hugging_face_generate():
    hf = _seeded(transformers.T5ForConditionalGeneration, t5_config())
    ours = T5.from_hf(hf)
    g = torch.Generator().manual_seed(7)
    src, real = _padded_batch([8, 5], 8, g)
    tgt = torch.randint(2, V, (2, 6), generator=g)
    memory = ours.encode(src, real)
    full = ours.decode(tgt, memory, real)
    caches = ours.new_caches()
    steps = [ours.decode(tgt[:, t : t + 1], memory, real, caches=caches) for t in range(6)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, **TOL)
    cached = ours.generate(src, 10, src_key_mask=real)
    assert torch.equal(cached, ours.generate(src, 10, src_key_mask=real, use_cache=False))
    want = hf.generate(src, attention_mask=real.long(), max_new_tokens=10, do_sample=False)
    assert torch.equal(cached, want)


def test_t5_round_trip_through_save_pretrained_and_from_pretrained(tmp_path):
    _seeded(transformers.T5ForConditionalGeneration, t5_config()).save_pretrained(tmp_path)
    hf = transformers.T5ForConditionalGeneration.from_pretrained(tmp_path, local_files_only=True).eval()
    ours = T5.from_hf(hf)
    g = torch.Generator().manual_seed(8)
    src, tgt = torch.randint(2, V, (2, 6), generator=g), torch.randint(2, V, (2, 5), generator=g)
    torch.testing.assert_close(ours(src, tgt), hf(input_ids=src, decoder_input_ids=tgt).logits, **TOL)


def test_t5_layers_share_one_relative_position_bias_per_stack():
    ours = T5(V, 32, 4, 2)
    assert all(layer.self_attn.positional is ours.enc_bias for layer in ours.encoder)
    assert all(layer.self_attn.positional is ours.dec_bias for layer in ours.decoder)
    assert ours.enc_bias is not ours.dec_bias and ours.enc_bias.bidirectional and not ours.dec_bias.bidirectional


# --- BART ---------------------------------------------------------------------------------------


def bart_config(**kw):
    base = dict(vocab_size=V, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                decoder_attention_heads=4, encoder_ffn_dim=48, decoder_ffn_dim=48, max_position_embeddings=40,
                dropout=0.1, attention_dropout=0.1, activation_dropout=0.1, init_std=0.5,
                forced_eos_token_id=None)  # greedy decoding as attn's: no forced last token
    return transformers.BartConfig(**{**base, **kw})


def _bart(**kw):
    """A random BART whose output bias is not zero and whose decoder positions matter."""
    hf = _seeded(transformers.BartForConditionalGeneration, bart_config(**kw))
    with torch.no_grad():
        hf.final_logits_bias.normal_(generator=torch.Generator().manual_seed(1))
        hf.model.decoder.embed_positions.weight.mul_(10)
    return hf


def _bart_source(lengths, L, generator):
    src, real = _padded_batch(lengths, L, generator)
    return src.masked_fill(~real, 1), real  # BART pads with id 1


def test_bart_logits_match_hugging_face_with_source_padding():
    hf = _bart(decoder_layers=3)
    ours = BART.from_hf(hf)
    g = torch.Generator().manual_seed(6)
    src, real = _bart_source([9, 4], 9, g)
    tgt = torch.randint(3, V, (2, 7), generator=g)
    tgt[:, 0] = 2  # BART's decoder starts from </s>
    want = hf(input_ids=src, attention_mask=real.long(), decoder_input_ids=tgt).logits
    torch.testing.assert_close(ours(src, tgt, real), want, **TOL)
    torch.testing.assert_close(ours.encode(src, real)[real],
                               hf.model.encoder(input_ids=src, attention_mask=real.long()).last_hidden_state[real],
                               **TOL)


def test_bart_position_tables_drop_the_two_offset_rows_of_hugging_face():
    hf = _bart()
    ours = BART.from_hf(hf)
    for mine, theirs in ((ours.enc_pos, hf.model.encoder.embed_positions),
                         (ours.dec_pos, hf.model.decoder.embed_positions)):
        assert theirs.weight.shape[0] == mine.max_len + 2
        assert torch.equal(mine.embedding.weight, theirs.weight[2:])  # position p: HF's row p + 2


def test_bart_cached_decoding_matches_uncached_and_hugging_face_generate():
    hf = _bart()
    ours = BART.from_hf(hf)
    g = torch.Generator().manual_seed(7)
    src, real = _bart_source([8, 5], 8, g)
    tgt = torch.randint(3, V, (2, 6), generator=g)
    memory = ours.encode(src, real)
    full = ours.decode(tgt, memory, real)
    caches = ours.new_caches()
    steps = [ours.decode(tgt[:, t : t + 1], memory, real, caches=caches) for t in range(6)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, **TOL)  # positions continue after the cache
    cached = ours.generate(src, 10, src_key_mask=real)
    assert cached[:, 0].eq(2).all() and len(set(cached[0, 1:].tolist())) > 1
    assert torch.equal(cached, ours.generate(src, 10, src_key_mask=real, use_cache=False))
    want = hf.generate(src, attention_mask=real.long(), max_new_tokens=10, do_sample=False)
    assert torch.equal(cached, want)


def test_bart_round_trip_through_save_pretrained_and_from_pretrained(tmp_path):
    _bart().save_pretrained(tmp_path)
    hf = transformers.BartForConditionalGeneration.from_pretrained(tmp_path, local_files_only=True).eval()
    ours = BART.from_hf(hf)
    g = torch.Generator().manual_seed(8)
    src, tgt = torch.randint(3, V, (2, 6), generator=g), torch.randint(3, V, (2, 5), generator=g)
    torch.testing.assert_close(ours(src, tgt), hf(input_ids=src, decoder_input_ids=tgt).logits, **TOL)
    assert ours.logits_bias.abs().sum() > 0  # the output bias travelled too


def test_bart_stacks_the_blocks_post_ln_layers_and_ties_its_output_to_the_embedding():
    ours = BART(V, 32, 4, 2, 3)
    assert all(type(layer) is attn.blocks.EncoderLayer and not layer.norm_first for layer in ours.encoder)
    assert all(type(layer) is attn.blocks.DecoderLayer and not layer.norm_first for layer in ours.decoder)
    assert len(ours.decoder) == 3 and ours.head.weight is ours.embed.weight
    assert not ours.logits_bias.requires_grad  # a buffer: loaded, never trained


# --- ViT ----------------------------------------------------------------------------------------


def test_vit_classifier_logits_match_hugging_face():
    hf = _seeded(transformers.ViTForImageClassification, vit_config())
    ours = ViT.from_hf(hf)
    images = torch.randn(3, 1, 8, 8, generator=torch.Generator().manual_seed(9))
    torch.testing.assert_close(ours(images), hf(pixel_values=images).logits, **TOL)


def test_vit_model_hidden_states_and_pooler_match_hugging_face():
    hf = _seeded(transformers.ViTModel, vit_config(num_channels=3, image_size=12, patch_size=4))
    ours = ViT.from_hf(hf)
    images = torch.randn(2, 3, 12, 12, generator=torch.Generator().manual_seed(10))
    out = hf(pixel_values=images)
    hidden = ours.encode(images)
    torch.testing.assert_close(hidden, out.last_hidden_state, **TOL)
    torch.testing.assert_close(ours.pool(hidden), out.pooler_output, **TOL)


def test_vit_with_2d_sincos_positions_adds_the_fixed_table_to_the_patches_and_none_to_cls():
    """What the blocks receive: [CLS] as it is, then each patch's embedding plus its row of the
    fixed 2-D sin-cos table (no learned position parameters)."""
    torch.manual_seed(0)
    vit = ViT(8, 2, 10, 32, positions="sincos2d").eval()
    assert list(vit.pos.parameters()) == []
    images = torch.randn(2, 1, 8, 8)
    seen = []
    vit.layers[0].register_forward_pre_hook(lambda _module, args: seen.append(args[0]))
    assert vit.encode(images).shape == (2, 17, 32)
    patches = vit.patch(images).flatten(2).transpose(1, 2)  # (2, 16, 32)
    table = attn.positional.Sinusoidal2DPositionalEncoding(32, 4, 4).table()  # (16, 32)
    torch.testing.assert_close(seen[0][:, 0], vit.cls[0].expand(2, -1), atol=0, rtol=0)
    torch.testing.assert_close(seen[0][:, 1:], patches + table, atol=1e-6, rtol=1e-6)
    with pytest.raises(ValueError, match="positions"):
        ViT(8, 2, 10, 32, positions="rope")


# --- bad input ----------------------------------------------------------------------------------


def test_from_hf_rejects_a_model_of_another_family():
    gpt2 = _seeded(transformers.GPT2LMHeadModel, gpt2_config())
    with pytest.raises(TypeError, match="BERT.from_hf expects one of BertModel, BertForMaskedLM; got GPT2LMHeadModel"):
        BERT.from_hf(gpt2)
    with pytest.raises(TypeError, match="got GPT2LMHeadModel"):
        T5.from_hf(gpt2)


@pytest.mark.parametrize("make, build, option", [
    ("BertModel", lambda: bert_config(hidden_act="silu"), "hidden_act='silu'"),
    ("GPT2LMHeadModel", lambda: gpt2_config(activation_function="relu6"), None),
    ("GPT2LMHeadModel", lambda: gpt2_config(scale_attn_by_inverse_layer_idx=True),
     "scale_attn_by_inverse_layer_idx=True"),
    ("T5ForConditionalGeneration", lambda: t5_config(feed_forward_proj="gated-gelu"), "is_gated_act=True"),
    ("T5ForConditionalGeneration", lambda: t5_config(d_kv=4), "d_kv \\* num_heads"),
    ("ViTModel", lambda: vit_config(qkv_bias=False), "qkv_bias=False"),
    ("BartForConditionalGeneration", lambda: bart_config(decoder_attention_heads=2), "encoder_attention_heads=4"),
    ("BartForConditionalGeneration", lambda: bart_config(attention_dropout=0.0), "attention_dropout=0.0"),
    ("BartForConditionalGeneration", lambda: bart_config(activation_function="silu"), "activation_function='silu'"),
])
def test_from_hf_rejects_unsupported_options_by_name(make, build, option):
    model = _seeded(getattr(transformers, make), build())  # by name: collecting imports no model
    family = {"Bert": BERT, "GPT2": GPT, "T5": T5, "Bart": BART, "ViT": ViT}
    cls = next(v for k, v in family.items() if type(model).__name__.startswith(k))
    with pytest.raises(ValueError, match="unsupported configuration: " + (option or "")):
        cls.from_hf(model)


def test_attn_imports_without_transformers_and_from_hf_says_what_to_install():
    code = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "transformers" or name.startswith("transformers."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
import attn
from attn.variants import GPT
assert "transformers" not in sys.modules
model = GPT(11, 8, 2, 1)
assert model(__import__("torch").tensor([[1, 2]])).shape == (1, 2, 11)
try:
    GPT.from_hf(object())
except ModuleNotFoundError as e:
    print(e)
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "pip install transformers" in out.stdout


# --- the comparison table -----------------------------------------------------------------------


def test_comparison_table_is_read_from_the_five_classes():
    rows = variants.comparison()
    assert [r["model"] for r in rows] == ["BERT", "GPT", "T5", "BART", "ViT"]
    assert rows[1]["attention"] == GPT.CARD["attention"] == "causal self"
    table = model_variants.comparison_markdown()
    assert table.count("\n") == 6 and "pre-RMSNorm" in table and "lewis2020bart" not in table
    with open(os.path.join(os.path.dirname(__file__), "..", "references.bib"), encoding="utf-8") as f:
        bib = f.read()
    for cls in (BERT, GPT, T5, BART, ViT):
        assert "{" + cls.CARD["paper"] + "," in bib


# --- the chapter's objectives, baselines and checkpoints (attn.book.pretraining) ---------------------

from attn.book import pretraining  # noqa: E402


def test_mlm_mask_chooses_15_percent_and_splits_them_80_10_10():
    x = torch.randint(3, 40, (200, 500), generator=torch.Generator().manual_seed(0))
    inputs, targets = pretraining.mlm_mask(x, 40, 40, generator=torch.Generator().manual_seed(1))
    chosen = targets != -100
    assert abs(chosen.float().mean().item() - 0.15) < 0.005
    assert torch.equal(targets[chosen], x[chosen]) and torch.equal(inputs[~chosen], x[~chosen])
    masked = (inputs[chosen] == 40).float().mean().item()
    kept = (inputs[chosen] == x[chosen]).float().mean().item()  # 10% kept, plus random draws that hit x
    assert abs(masked - 0.8) < 0.01
    assert abs(kept - (0.1 + 0.1 / 37)) < 0.01
    assert inputs.min() >= 3


def test_char_baselines_are_the_smoothed_unigram_and_bigram_cross_entropies():
    got = pretraining.char_baselines(torch.tensor([0, 1, 0, 1]), torch.tensor([0, 1]), 2)
    assert got["unigram"] == pytest.approx(torch.log(torch.tensor(2.0)).item())  # counts 2+1, 2+1
    assert got["bigram"] == pytest.approx(-torch.log(torch.tensor(0.75)).item())  # row 0: (1 + 0, 1 + 2) / 4


def test_date_batch_shifts_the_target_by_one_and_ignores_padding():
    vocab = pretraining.date_vocab()
    src, tin, tout = pretraining.date_batch([("1 May 2000", "2000-05-01"), ("29 November 2026", "2026-11-29")], vocab)
    assert tin[:, 0].eq(vocab.BOS).all()
    assert torch.equal(tin[:, 1:], tout[:, :-1])
    assert vocab.decode(tout[0]) == "2000-05-01" and vocab.decode(src[1]) == "29 November 2026"
    assert src[0, -1] == vocab.PAD


def test_noise_spans_hide_the_rate_in_poisson_spans_that_merge():
    hidden = pretraining.noise_spans((400, 64), 0.3, generator=torch.Generator().manual_seed(0))
    per_row = hidden.sum(1)
    assert per_row.min() >= round(0.3 * 64) and abs(hidden.float().mean().item() - 0.3) < 0.03
    runs = [e - s for row in hidden for s, e in pretraining._runs(row)]
    assert 3 <= sum(runs) / len(runs) < 6  # Poisson(3) draws, longer where spans touch and merge


def test_text_infilling_turns_each_span_into_one_mask_and_targets_the_whole_text():
    vocab = pretraining.CharVocab("abcdefgh")
    x = torch.tensor([vocab.encode("abcdefgh")])
    hidden = torch.tensor([[False, True, True, True, False, False, True, False]])
    src, tin, tout, _ = pretraining.text_infilling(x, 99, hidden=hidden)
    assert src[0].tolist() == vocab.encode("a") + [99] + vocab.encode("ef") + [99] + vocab.encode("h", eos=True)
    assert torch.equal(tout[0, :-1], x[0]) and tout[0, -1] == vocab.EOS
    assert tin[0, 0] == vocab.BOS and torch.equal(tin[0, 1:], x[0])


def test_span_corruption_puts_one_sentinel_per_span_and_targets_only_the_spans():
    vocab = pretraining.CharVocab("abcdefgh")
    x = torch.tensor([vocab.encode("abcdefgh"), vocab.encode("hgfedcba")])
    hidden = torch.tensor([[False, True, True, True, False, False, True, False],
                           [True] + [False] * 7])
    src, tin, tout, scored = pretraining.span_corruption(x, 50, hidden=hidden)
    assert src[0, :7].tolist() == vocab.encode("a") + [50] + vocab.encode("ef") + [51] + vocab.encode("h", eos=True)
    assert src[0, 7:].eq(vocab.PAD).all() and src[1].tolist() == [50, *vocab.encode("gfedcba", eos=True)]
    assert tout[0].tolist() == [50, *vocab.encode("bcd"), 51, *vocab.encode("g", eos=True)]
    assert tout[1].tolist() == [50, *vocab.encode("h", eos=True)] + [-100] * 4
    assert torch.equal(x[hidden], torch.cat([tout[0][scored[0]], tout[1][scored[1]]]))
    assert tin[0, 0] == vocab.BOS and torch.equal(tin[0, 1:], tout[0, :-1]) and tin[1, 4:].eq(vocab.PAD).all()


def test_marked_and_bracketed_show_the_pencil_example_of_the_chapter():
    vocab = pretraining.CharVocab("the cat sa")
    x = torch.tensor(vocab.encode("the cat sat"))
    hidden = torch.tensor([False, True, True, False, True] + [False] * 6)
    assert pretraining.bracketed(vocab, x, hidden) == "t[he] [c]at sat"
    src, _, tout, _ = pretraining.span_corruption(x[None], 20, hidden=hidden[None])
    assert pretraining.marked(vocab, src[0], 20, sentinels=True) == "t<X> <Y>at sat</s>"
    assert pretraining.marked(vocab, tout[0], 20, sentinels=True) == "<X>he<Y>c</s>"
    src, tin, _, _ = pretraining.text_infilling(x[None], 20, hidden=hidden[None])
    assert pretraining.marked(vocab, src[0], 20) == "t_ _at sat</s>"
    assert pretraining.marked(vocab, tin[0], 20) == "<s>the cat sat"


@pytest.mark.parametrize("name", sorted(pretraining.RECIPES))
def test_committed_checkpoints_load_into_their_recipes_with_their_logs(name):
    model, log = pretraining.load(name)
    assert log["parameters"] == sum(p.numel() for p in model.parameters())
    assert log["recipe"]["steps"] == len(log["losses"]) == pretraining.RECIPES[name].steps
    assert sum(log["losses"][-50:]) < 0.8 * sum(log["losses"][:50])  # it learned something
    assert not model.training


# --- the chapter --------------------------------------------------------------------------------


def test_chapter_glues_every_value_its_prose_uses_and_guards_the_pretrained_cell():
    import json
    import re

    path = os.path.join(os.path.dirname(__file__), "..", "book", "model_variants.ipynb")
    with open(path, encoding="utf-8") as f:
        cells = json.load(f)["cells"]
    prose = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    used = set(re.findall(r"\{glue:text\}`(\w+)`", prose))
    from scripts import zh

    with open(path, encoding="utf-8") as f:
        glued = zh.glued_keys(json.load(f))  # what the stored outputs glue
    assert used and used <= glued, f"prose uses values no cell glues: {sorted(used - glued)}"
    online = [c for c in cells if "from_pretrained(\"gpt2\")" in "".join(c["source"])]
    assert len(online) == 1
    assert "LOAD_PRETRAINED = False" in "".join(online[0]["source"])
    assert "nbval-skip" not in online[0]["metadata"].get("tags", [])  # run by nbval: offline it does nothing


def test_chapter_solutions_one_and_two_run_and_show_their_answer_and_the_masks_come_from_attn_masks():
    import json

    path = os.path.join(os.path.dirname(__file__), "..", "book", "model_variants.ipynb")
    with open(path, encoding="utf-8") as f:
        cells = {c["id"]: c for c in json.load(f)["cells"]}
    for cid in ("4f9a0c2e", "e19b7c46"):  # solutions 1 and 2: code cells, folded, with a shown result
        cell = cells[cid]
        assert cell["cell_type"] == "code" and "hide-cell" in cell["metadata"]["tags"]
        assert any(o["output_type"] == "execute_result" for o in cell["outputs"])
    prose = "".join("".join(c["source"]) for c in cells.values() if c["cell_type"] == "markdown")
    assert "```python" not in prose.split("## Exercises")[1]  # no solution code left unrun
    assert "token,learned" not in prose
    pencil = "".join(cells["8b1f6d3a"]["source"]) + "".join(cells["0f6b2d95"]["source"])
    assert "attn.masks.causal" in pencil and "attn.masks.cross_padding" in pencil


@pytest.mark.parametrize("option,value", [("image_size", (12, 8)), ("patch_size", (4, 2))])
def test_vit_from_hf_names_a_non_square_size(option, value):
    hf = _seeded(transformers.ViTModel, vit_config(**{option: value}))
    with pytest.raises(ValueError, match=rf"unsupported configuration: {option}={re.escape(repr(value))}; .*square"):
        ViT.from_hf(hf)


def test_vit_from_hf_takes_a_square_size_given_as_a_pair():
    ref = _seeded(transformers.ViTModel, vit_config(image_size=12, patch_size=4))
    pair = _seeded(transformers.ViTModel, vit_config(image_size=(12, 12), patch_size=[4, 4]))
    images = torch.randn(2, vit_config().num_channels, 12, 12)
    torch.testing.assert_close(ViT.from_hf(pair).encode(images), ViT.from_hf(ref).encode(images), atol=0, rtol=0)


def test_t5_stacks_the_blocks_layers_built_with_rms_norm_and_no_biases():
    """T5's layers are attn.blocks' EncoderLayer and DecoderLayer, chosen through their
    constructors (pre-RMSNorm, bias=False), not a copy of them."""
    from torch import nn

    from attn.blocks import DecoderLayer, EncoderLayer

    ours = T5(V, 32, 4, 2)
    assert all(type(layer) is EncoderLayer for layer in ours.encoder)
    assert all(type(layer) is DecoderLayer for layer in ours.decoder)
    layer = ours.decoder[0]
    assert layer.norm_first and all(isinstance(n, nn.RMSNorm) for n in (layer.norm1, layer.norm2, layer.norm3))
    assert not any(name.endswith("bias") for name, _ in layer.named_parameters() if "positional" not in name)


def test_smooth_is_a_trailing_mean_with_a_short_start():
    from attn.book import train

    assert train.smooth([1, 3, 5, 7], k=2) == [1.0, 2.0, 4.0, 6.0]
    assert train.smooth([2.0] * 30) == [2.0] * 30
    with pytest.raises(ValueError, match="k must be a positive integer"):
        train.smooth([1.0], k=0)


# --- bad input gets the package's named errors, as TokenModel's always did -----------------------------

BAD_INPUT = [
    ("GPT: a token id past the vocabulary", lambda: GPT(11, 8, 2, 1, max_len=6)(torch.full((1, 3), 11)),
     ValueError, r"tokens must lie in \[0, vocab_size=11\), got ids from 11 to 11"),
    ("GPT.generate: a prompt id past the vocabulary", lambda: GPT(11, 8, 2, 1, max_len=6).generate(torch.full((1, 2), 11), 2),
     ValueError, r"prompt must lie in \[0, vocab_size=11\), got ids from 11 to 11"),
    ("GPT.generate: longer than the table", lambda: GPT(11, 8, 2, 1, max_len=6).generate(torch.zeros(1, 4, dtype=torch.long), 3),
     ValueError, r"prompt length 4 \+ max_new_tokens 3 = 7 exceeds the 6 positions of GPT \(max_len\)"),
    ("GPT: float tokens", lambda: GPT(11, 8, 2, 1)(torch.zeros(1, 3)),
     TypeError, r"tokens must hold integer token ids, got dtype torch.float32"),
    ("BERT: a negative id", lambda: BERT(11, 8, 2, 1)(torch.full((1, 3), -1)),
     ValueError, r"tokens must lie in \[0, vocab_size=11\), got ids from -1 to -1"),
    ("BERT: a segment past type_vocab_size", lambda: BERT(11, 8, 2, 1)(torch.zeros(1, 3, dtype=torch.long),
                                                                       segments=torch.full((1, 3), 2)),
     ValueError, r"segments must lie in \[0, type_vocab_size=2\), got ids from 2 to 2"),
    ("T5: a source id past the vocabulary", lambda: T5(11, 8, 2, 1)(torch.full((1, 3), 11), torch.zeros(1, 2, dtype=torch.long)),
     ValueError, r"src must lie in \[0, vocab_size=11\), got ids from 11 to 11"),
    ("T5: a target id past the vocabulary", lambda: T5(11, 8, 2, 1)(torch.zeros(1, 3, dtype=torch.long), torch.full((1, 2), 12)),
     ValueError, r"tgt_in must lie in \[0, vocab_size=11\), got ids from 12 to 12"),
    ("T5.generate: start_id past the vocabulary", lambda: T5(11, 8, 2, 1).generate(torch.zeros(1, 3, dtype=torch.long), 2,
                                                                                 start_id=11),
     ValueError, r"start_id must lie in \[0, vocab_size=11\), got 11"),
    ("ViT: images without a channel dimension", lambda: ViT(8, 2, 3, 8, 2, 1)(torch.randn(1, 8, 8)),
     ValueError, r"images must have shape \(B, 1, 8, 8\), got \(1, 8, 8\)"),
    ("Seq2Seq.generate: use_cache a string", lambda: attn.models.Seq2Seq(10, 10, 16, 2, 1, 1).generate(
        torch.tensor([[1, 2]]), 3, start_id=1, use_cache="none"),
     ValueError, r"use_cache must be True or False, got 'none'"),
    ("Seq2Seq.generate: cross_cache a string", lambda: attn.models.Seq2Seq(10, 10, 16, 2, 1, 1).generate(
        torch.tensor([[1, 2]]), 3, start_id=1, cross_cache="no"),
     ValueError, r"cross_cache must be True or False, got 'no'"),
    ("TokenModel.generate: use_cache 1", lambda: attn.models.TokenModel(10, 8, 2, 1, is_causal=True).generate(
        torch.tensor([[1, 2]]), 3, use_cache=1),
     ValueError, r"use_cache must be True or False, got 1"),
    ("GPT.generate: use_cache a string", lambda: GPT(11, 8, 2, 1).generate(torch.tensor([[1, 2]]), 3, use_cache="no"),
     ValueError, r"use_cache must be True or False, got 'no'"),
    ("T5.generate: use_cache None", lambda: T5(11, 8, 2, 1).generate(torch.tensor([[1, 2]]), 3, use_cache=None),
     ValueError, r"use_cache must be True or False, got None"),
    ("BART: a source id past the vocabulary", lambda: BART(11, 8, 2, 1)(torch.full((1, 3), 11), torch.zeros(1, 2, dtype=torch.long)),
     ValueError, r"src must lie in \[0, vocab_size=11\), got ids from 11 to 11"),
    ("BART.generate: longer than the table", lambda: BART(11, 8, 2, 1, max_len=6).generate(torch.zeros(1, 3, dtype=torch.long), 6),
     ValueError, r"the start token \+ max_new_tokens 6 = 7 exceeds the 6 positions of BART \(max_len\)"),
    ("BART: a source longer than the table", lambda: BART(11, 8, 2, 1, max_len=4)(torch.zeros(1, 5, dtype=torch.long), torch.zeros(1, 2, dtype=torch.long)),
     ValueError, r"max_len=4"),
    ("GPT.generate: an encoder-decoder's argument", lambda: GPT(11, 8, 2, 1).generate(torch.tensor([[1, 2]]), 3, start_id=1),
     TypeError, r"GPT is a decoder-only model: start_id applies to encoder-decoder models only"),
]


@pytest.mark.parametrize("case, call, error, message", BAD_INPUT, ids=[c[0] for c in BAD_INPUT])
def test_bad_input_to_a_variant_gets_a_named_error(case, call, error, message):  # noqa: ARG001  (case: the id)
    torch.manual_seed(0)
    with pytest.raises(error, match=message):
        call()


def test_vit_without_positions_gives_the_same_logits_for_any_order_of_the_patches():
    """positions="none" has no position parameters, and shuffling the 2x2 patches of an image
    (the same permutation for every image) leaves the [CLS] readout unchanged; a learned table
    makes it change."""

    def shuffle_patches(images, perm, p=2):  # (B, 1, 8, 8) -> the same patches in the order perm
        B, C, S, _ = images.shape
        g = S // p
        patches = images.reshape(B, C, g, p, g, p).permute(0, 2, 4, 1, 3, 5).reshape(B, g * g, C, p, p)
        patches = patches[:, perm].reshape(B, g, g, C, p, p)
        return patches.permute(0, 3, 1, 4, 2, 5).reshape(B, C, S, S)

    torch.manual_seed(0)
    images = torch.randn(3, 1, 8, 8)
    perm = torch.randperm(16, generator=torch.Generator().manual_seed(1))
    shuffled = shuffle_patches(images, perm)
    assert not torch.equal(shuffled, images)
    none = ViT(8, 2, 10, 32, positions="none").eval()
    assert none.positions == "none" and list(none.pos.parameters()) == []
    with torch.no_grad():
        torch.testing.assert_close(none(shuffled), none(images), atol=1e-5, rtol=1e-5)
        learned = ViT(8, 2, 10, 32, positions="learned").eval()
        assert (learned(shuffled) - learned(images)).abs().max() > 1e-3
    with pytest.raises(ValueError, match="'learned', 'sincos2d' or 'none'"):
        ViT(8, 2, 10, 32, positions="rope")
