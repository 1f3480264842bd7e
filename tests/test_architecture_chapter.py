"""Claims of the Transformer-architecture chapter, checked against PyTorch and the formulas."""

import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.testing import assert_close

from attn import masks
from attn.blocks import EncoderLayer, FeedForward, Transformer

D, H, FF = 32, 4, 64


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_is_the_post_ln_or_pre_ln_formula(norm_first):
    layer = EncoderLayer(D, H, FF, dropout=0.0, norm_first=norm_first)
    x = torch.randn(2, 6, D)
    sa = lambda h: layer.self_attn(h)[0]  # noqa: E731
    with torch.no_grad():
        if norm_first:  # x + Sublayer(LN(x))
            h = x + sa(layer.norm1(x))
            expected = h + layer.ff(layer.norm2(h))
        else:  # LN(x + Sublayer(x))
            h = layer.norm1(x + sa(x))
            expected = layer.norm2(h + layer.ff(h))
        assert_close(layer(x), expected)


def test_feed_forward_is_position_wise_and_matches_the_formula():
    ffn = FeedForward(D, FF)
    x = torch.randn(3, 5, D)
    with torch.no_grad():
        formula = F.relu(x @ ffn.linear1.weight.T + ffn.linear1.bias) @ ffn.linear2.weight.T + ffn.linear2.bias
        per_position = torch.stack([ffn(x[:, i]) for i in range(5)], dim=1)
        assert_close(ffn(x), formula)
        assert_close(ffn(x), per_position)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_and_decoder_stacks_equal_pytorch_in_float64(norm_first):
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nested-tensor notice with norm_first
        ref = nn.Transformer(D, H, num_encoder_layers=2, num_decoder_layers=3, dim_feedforward=FF,
                             dropout=0.0, batch_first=True, norm_first=norm_first)
    ours = Transformer.from_torch(ref)
    ref.double().train()
    ours.double().train()
    src, tgt = torch.randn(3, 7, D, dtype=torch.float64), torch.randn(3, 5, D, dtype=torch.float64)
    src_keys, tgt_keys = masks.padding([7, 5, 3])[:, 0], masks.padding([5, 5, 2])[:, 0]
    causal = masks.causal(5)
    tight = dict(atol=1e-12, rtol=1e-12)
    with torch.no_grad():
        memory = ours.encoder(src, key_mask=src_keys)
        assert_close(memory, ref.encoder(src, src_key_padding_mask=~src_keys), **tight)
        assert_close(
            ours.decoder(tgt, memory, key_mask=tgt_keys, memory_key_mask=src_keys),
            ref.decoder(tgt, memory, tgt_mask=~causal, tgt_key_padding_mask=~tgt_keys,
                        memory_key_padding_mask=~src_keys),
            **tight,
        )


def test_passing_the_attn_mask_to_pytorch_without_inverting_it_changes_the_output():
    torch.manual_seed(0)
    ref = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True).train()
    ours = EncoderLayer.from_torch(ref).train()
    x = torch.randn(3, 7, D)
    keys = masks.padding([7, 5, 3])[:, 0]
    with torch.no_grad():
        good, bad, mine = ref(x, src_key_padding_mask=~keys), ref(x, src_key_padding_mask=keys), ours(x, key_mask=keys)
    assert_close(mine, good, atol=1e-5, rtol=1e-5)
    assert (mine - bad)[keys].abs().max() > 0.1


def test_base_parameter_count_on_the_meta_device_equals_nn_transformer():
    with torch.device("meta"):
        ours, ref = Transformer(), nn.Transformer(batch_first=True)
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in ref.parameters()) == 44_140_544


def test_exercise_4_attention_and_ffn_parameters_balance_near_d_ff_1537():
    D = 512
    assert abs(D * (6 * D + 5) / (2 * D + 1) - 1537) < 0.01
    with torch.device("meta"):
        t = Transformer(d_ff=1537)
    attention = sum(p.numel() for n, p in t.named_parameters() if "attn" in n)
    ffn = sum(p.numel() for n, p in t.named_parameters() if ".ff." in n)
    assert (attention, ffn) == (18_911_232, 18_911_244)


def test_exercise_5_decoder_only_parameter_count_is_the_formula():
    from attn.models import TokenModel

    V, D, d_ff, layers = 37000, 512, 2048, 12
    with torch.device("meta"):
        model = TokenModel(V, D, 8, layers, d_ff, is_causal=True)
    formula = V * D + layers * (4 * D * D + 9 * D + 2 * D * d_ff + d_ff) + 2 * D + D * V + V
    assert sum(p.numel() for p in model.parameters()) == formula == 75_754_632


# --- the chapter's helpers: attn.book.transformer_architecture


def test_deep_encoder_layers_start_from_different_weights_and_xavier_changes_them():
    from attn.book import transformer_architecture as chapter

    torch.manual_seed(0)
    enc = chapter.deep_encoder(False, 3, d_model=16)
    w = [layer.ff.linear1.weight for layer in enc.layers]
    assert not torch.equal(w[0], w[1]) and enc.norm is None
    assert chapter.deep_encoder(True, 2, d_model=16).norm is not None  # pre-LN's final LayerNorm
    torch.manual_seed(0)
    xavier = chapter.deep_encoder(False, 3, d_model=16, init="xavier")
    bound = (6 / (16 + 64)) ** 0.5  # Xavier-uniform for a (64, 16) matrix
    assert xavier.layers[0].ff.linear1.weight.abs().max() <= bound
    assert xavier.layers[0].ff.linear1.weight.abs().max() > 0.9 * bound
    with pytest.raises(ValueError, match="init"):
        chapter.deep_encoder(False, 2, init="kaiming")


def test_layer_grad_norms_are_the_gradient_norm_of_each_layer():
    from attn.book import transformer_architecture as chapter

    norms, branch = chapter.layer_grad_norms(True, "default", n_layers=3, seed=0, d_model=16)
    # the same computation written out: seed, stack, read-out, batch, loss, backward
    torch.manual_seed(0)
    enc = chapter.deep_encoder(True, 3, 16)
    head = nn.Linear(16, 32)
    g = torch.Generator().manual_seed(1000)
    x, y = torch.randn(8, 32, 16, generator=g), torch.randint(0, 32, (8, 32), generator=g)
    F.cross_entropy(head(enc(x)).flatten(0, 1), y.flatten()).backward()
    expected = [torch.cat([p.grad.flatten() for p in layer.parameters()]).norm().item() for layer in enc.layers]
    assert_close(torch.tensor(norms), torch.tensor(expected))
    assert len(norms) == 3 and 0 < branch < 10


@pytest.mark.parametrize("kind", ["EncoderLayer", "DecoderLayer", "Encoder", "Decoder", "Transformer"])
def test_max_diff_from_torch_is_rounding_error_and_detects_a_change(kind):
    from attn.book import transformer_architecture as chapter

    assert chapter.max_diff_from_torch(kind, True, torch.float64) < 1e-12
    assert chapter.max_diff_from_torch(kind, False, torch.float32) < 1e-5
    ref, ours = chapter.torch_pair(kind, False)
    with torch.no_grad():
        next(ours.parameters()).add_(0.1)  # attn's copy no longer equals PyTorch's module
    assert chapter.max_diff_from_torch(kind, False, pair=(ref, ours)) > 1e-3


def test_torch_pair_rejects_an_unknown_kind():
    from attn.book import transformer_architecture as chapter

    with pytest.raises(ValueError, match="kind must be one of"):
        chapter.torch_pair("Block", False)


def test_shape_trace_records_every_submodule_in_order_and_removes_its_hooks():
    from attn.book import transformer_architecture as chapter

    model = Transformer(32, 4, 1, 1, 64, dropout=0.0).eval()
    src, tgt = torch.randn(2, 6, 32), torch.randn(2, 5, 32)
    trace = chapter.shape_trace(model, src, tgt)
    assert trace["encoder.layers.0.ff.linear1"] == (2, 6, 64)
    assert trace["decoder.layers.0.cross_attn"] == (2, 5, 32)
    assert list(trace)[0].startswith("encoder") and not any("dropout" in n for n in trace)
    assert all(not m._forward_hooks for m in model.modules())


def test_pencil_layernorm_of_1_2_3_6_is_nn_layernorm_without_gain_and_bias():
    x = torch.tensor([1.0, 2.0, 3.0, 6.0])
    mu, var = x.mean(), ((x - x.mean()) ** 2).mean()
    assert mu == 3 and var == 3.5  # the chapter's step-by-step numbers
    by_hand = (x - mu) / torch.sqrt(var + 1e-5)
    torch.testing.assert_close(torch.nn.LayerNorm(4, elementwise_affine=False)(x), by_hand)
    torch.testing.assert_close(by_hand, torch.tensor([-2.0, -1.0, 0.0, 3.0]) / 3.5**0.5, atol=1e-5, rtol=0)
