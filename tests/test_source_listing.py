"""The source document's listing (attn.book.source_listing): equal to attn once its mask convention is
flipped, and different exactly where the debugging chapter says: a fully masked row, and float16."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

import attn
from attn.book import source_listing as sl
from attn.book.examples import worked_example


def _layer(d_model=8, d_k=4, d_v=6, seed=0):
    torch.manual_seed(seed)
    layer = sl.SimpleSelfAttention(d_model, d_k, d_v)
    for p in layer.parameters():  # nn.Linear starts its biases small; make them count
        torch.nn.init.normal_(p)
    return layer


def _blocked(B=2, L=5):
    causal = torch.triu(torch.ones(L, L), diagonal=1)  # the listing's causal mask: 1 = blocked
    pad = torch.zeros(B, L, L)
    pad[1, :, 3:] = 1  # the second sequence has 3 real tokens
    return ((causal + pad) > 0).int()  # (B, L, L), 0/1 as the listing writes it


def test_listing_follows_the_formula_with_the_listings_mask_and_fill():
    layer = _layer()
    x, blocked = torch.randn(2, 5, 8), _blocked()
    out, w = layer(x, blocked)
    q, k, v = layer.W_q(x), layer.W_k(x), layer.W_v(x)
    scores = (q @ k.transpose(-2, -1) / math.sqrt(4)).masked_fill(blocked.bool(), -1e9)
    assert_close(w, torch.softmax(scores, -1))
    assert_close(out, layer.W_o(torch.softmax(scores, -1) @ v))
    assert (w[blocked.bool()] == 0).all()  # exp(-1e9 - max) underflows to exactly 0 in float32


def test_listing_equals_attn_once_the_mask_is_flipped_outputs_and_weights():
    layer = _layer()
    x, blocked = torch.randn(2, 5, 8), _blocked()
    out, w = layer(x, blocked)
    ours, ours_w = sl.to_attn(layer)(x, mask=sl.allowed(blocked), need_weights=True)
    assert_close(ours, out, rtol=1e-5, atol=1e-6)
    assert_close(ours_w, w, rtol=1e-5, atol=1e-6)
    # the oracle: PyTorch's SDPA on the same projections, with the same flipped mask
    q, k, v = layer.W_q(x), layer.W_k(x), layer.W_v(x)
    z = F.scaled_dot_product_attention(q, k, v, attn_mask=sl.allowed(blocked))
    assert_close(layer.W_o(z), out, rtol=1e-5, atol=1e-6)


def test_passing_the_listings_mask_unflipped_to_attn_gives_another_result():
    layer = _layer()
    x, blocked = torch.randn(2, 5, 8), _blocked()
    out, _ = layer(x, blocked)
    wrong, _ = sl.to_attn(layer)(x, mask=blocked.bool())  # 1 read as "may attend": the classic mix-up
    assert (wrong - out).abs().max() > 0.1


def test_listing_on_the_worked_example_gives_the_books_numbers():
    ex = worked_example()
    layer = sl.SimpleSelfAttention.from_matrices(ex["W_Q"], ex["W_K"], ex["W_V"])
    blocked = torch.triu(torch.ones(3, 3), diagonal=1)  # causal, 1 = blocked
    out, w = layer(ex["X"][None], blocked)
    Q, K, V = ex["X"] @ ex["W_Q"], ex["X"] @ ex["W_K"], ex["X"] @ ex["W_V"]
    ref, ref_w = attn.functional.scaled_dot_product_attention(Q, K, V, is_causal=True, return_weights=True)
    assert_close(out[0], ref)
    assert_close(w[0], ref_w)
    assert_close(w[0, 0], torch.tensor([1.0, 0.0, 0.0]))  # the first token sees only itself


def test_fully_masked_row_listing_gives_uniform_weights_attn_gives_zeros():
    layer = _layer()
    x = torch.randn(1, 4, 8)
    blocked = torch.zeros(1, 4, 4, dtype=torch.int64)
    blocked[0, 2] = 1  # query 2 may see no key
    out, w = layer(x, blocked)
    assert_close(w[0, 2], torch.full((4,), 0.25))  # softmax of four equal -1e9: uniform
    assert_close(out[0, 2], layer.W_o(layer.W_v(x[0]).mean(0)))  # the mean of the values, projected
    ours, ours_w = sl.to_attn(layer)(x, mask=sl.allowed(blocked), need_weights=True)
    assert (ours_w[0, 2] == 0).all()
    assert_close(ours[0, 2], layer.W_o.bias)  # zero context: only W_o's bias is left
    keep = torch.tensor([0, 1, 3])
    assert_close(ours[0, keep], out[0, keep], rtol=1e-5, atol=1e-6)  # every other row agrees


def test_minus_1e9_is_minus_inf_in_float16_and_finite_in_bfloat16():
    assert torch.tensor(sl.FILL).half().item() == -math.inf
    assert torch.finfo(torch.float16).max == 65504
    assert math.isfinite(torch.tensor(sl.FILL).bfloat16().item())


def test_listing_in_float16_with_a_mask_raises_the_overflow_error():
    layer = _layer().half()
    x = torch.randn(2, 5, 8).half()
    with pytest.raises(RuntimeError, match="overflow"):
        layer(x, _blocked())
    out, _ = layer(x)  # without a mask there is nothing to fill: it runs
    assert_close(out.float(), _layer()(x.float())[0], rtol=1e-2, atol=1e-2)


def test_fill_rounded_to_float16_gives_nan_on_a_fully_masked_row_and_attn_gives_zeros():
    blocked = _blocked()
    blocked[0, 2] = 1  # one query of the first sequence sees nothing
    x = torch.randn(2, 5, 8)
    layer = _layer()
    layer.fill = torch.tensor(sl.FILL).half().item()  # what -1e9 becomes in float16: -inf
    half = layer.half()
    out, w = half(x.half(), blocked)
    assert torch.isnan(w[0, 2]).all() and torch.isnan(out[0, 2]).all()
    assert not torch.isnan(w[0, [0, 1, 3, 4]]).any() and not torch.isnan(w[1]).any()
    ours, ours_w = sl.to_attn(half)(x.half(), mask=sl.allowed(blocked), need_weights=True)
    assert ours.dtype == torch.float16 and not torch.isnan(ours).any()
    assert (ours_w[0, 2] == 0).all()
    sees_a_key = sl.allowed(blocked).any(-1)  # (B, L)
    assert_close(ours[sees_a_key], out[sees_a_key], rtol=1e-2, atol=1e-2)


def test_listing_in_bfloat16_keeps_the_uniform_row():
    blocked = _blocked()
    blocked[0, 2] = 1
    out, w = _layer().bfloat16()(torch.randn(2, 5, 8).bfloat16(), blocked)
    assert not torch.isnan(out).any()
    assert_close(w[0, 2].float(), torch.full((5,), 0.2), rtol=0, atol=1e-2)


def test_positional_encoding_equals_the_books_sinusoidal_table():
    pe = sl.PositionalEncoding(16, max_len=64)
    assert pe.pe.shape == (1, 64, 16) and "pe" in pe.state_dict()  # a buffer, saved, not trained
    assert_close(pe.pe[0], attn.positional.sinusoidal_table(64, 16), rtol=0, atol=1e-5)
    x = torch.randn(2, 10, 16)
    assert_close(pe(x), attn.SinusoidalPositionalEncoding(16)(x), rtol=0, atol=1e-5)


def test_from_matrices_checks_shapes():
    ex = worked_example()
    with pytest.raises(ValueError, match=r"W_K \(4, 3\)"):
        sl.SimpleSelfAttention.from_matrices(ex["W_Q"], ex["W_K"][:, :3], ex["W_V"])
    with pytest.raises(ValueError, match="W_O must be"):
        sl.SimpleSelfAttention.from_matrices(ex["W_Q"], ex["W_K"], ex["W_V"], torch.eye(3))


def test_source_listing_loads_on_first_use():
    assert "source_listing" in attn.book.MODULES and attn.book.source_listing is sl
