"""attn.SelfAttention against the maths, attn.MultiHeadAttention against nn.MultiheadAttention."""

import math
from functools import partial

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from torch.testing import assert_close

import attn
from attn import masks

TOL = dict(atol=1e-5, rtol=1e-5)


def _pair(d_model=16, num_heads=4, bias=True):
    ours = attn.MultiHeadAttention(d_model, num_heads, bias=bias).eval()
    ref = nn.MultiheadAttention(d_model, num_heads, bias=bias, batch_first=True).eval()
    with torch.no_grad():
        ours.in_proj.weight.copy_(ref.in_proj_weight)
        ours.out_proj.weight.copy_(ref.out_proj.weight)
        if bias:
            ours.in_proj.bias.copy_(ref.in_proj_bias)
            ours.out_proj.bias.copy_(ref.out_proj.bias)
    return ours, ref


# --- SelfAttention ----------------------------------------------------------------------------

def test_self_attention_is_the_formula():
    torch.manual_seed(0)
    m = attn.SelfAttention(12, d_k=5, d_v=7)
    x = torch.randn(2, 6, 12)
    q, k, v = x @ m.W_q.weight.T, x @ m.W_k.weight.T, x @ m.W_v.weight.T
    w = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(5), -1)
    out, weights = m(x, need_weights=True)
    assert_close(weights, w, **TOL)
    assert_close(out, (w @ v) @ m.W_o.weight.T, **TOL)
    assert out.shape == (2, 6, 12) and weights.shape == (2, 6, 6)


def test_self_attention_with_bias_adds_a_bias_in_each_of_the_four_projections():
    """bias=True: Q = X W_q + b_q, K = X W_k + b_k, V = X W_v + b_v and the output Z W_o + b_o.
    (b_k alone shifts each row of scores by a constant, which the softmax ignores: it shows in the
    module's parameters, the other three in the output.)"""
    torch.manual_seed(0)
    m = attn.SelfAttention(12, d_k=5, d_v=7, bias=True)
    layers = (m.W_q, m.W_k, m.W_v, m.W_o)
    assert all(layer.bias is not None for layer in layers)
    with torch.no_grad():
        for layer in layers:
            layer.bias.normal_()  # nn.Linear draws small biases: large ones, so that a lost one shows
    x = torch.randn(2, 6, 12)
    q, k, v = (x @ layer.weight.T + layer.bias for layer in (m.W_q, m.W_k, m.W_v))
    w = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(5), -1)
    out, weights = m(x, need_weights=True)
    assert_close(weights, w, **TOL)
    assert_close(out, (w @ v) @ m.W_o.weight.T + m.W_o.bias, **TOL)


def test_self_attention_causal_mask_blocks_the_future():
    m = attn.SelfAttention(8)
    _, w = m(torch.randn(1, 5, 8), is_causal=True, need_weights=True)
    assert (w[0].triu(1) == 0).all()
    _, w2 = m(torch.randn(1, 5, 8), mask=masks.causal(5), need_weights=True)
    assert (w2[0].triu(1) == 0).all()


def _attention_modules():
    """Every attention module of attn, built for D = 8, by name."""
    from attn import efficient as ef

    return {
        "SelfAttention": lambda: attn.SelfAttention(8),
        "MultiHeadAttention": lambda: attn.MultiHeadAttention(8, 2),
        **{f"EfficientSelfAttention({k})": partial(ef.EfficientSelfAttention, 8, 2, k, window=2, rank=4, seq_len=5,
                                                               global_tokens=(0,), stride=2, num_buckets=2, chunk_size=2)
           for k in ef.KINDS},
        "GroupedQueryAttention": lambda: ef.GroupedQueryAttention(8, 4, 2),
    }


@pytest.mark.parametrize("name", list(_attention_modules()))
def test_every_attention_module_returns_output_and_weights_or_none(name):
    """The one return convention (see the package docstring): ``(out, weights or None)``, the
    weights only with ``need_weights=True`` (a kernel that forms none refuses by name)."""
    torch.manual_seed(0)
    m = _attention_modules()[name]().eval()
    x = torch.randn(2, 5, 8)
    result = m(x)
    assert isinstance(result, tuple) and len(result) == 2
    out, w = result
    assert out.shape == (2, 5, 8) and w is None
    try:
        out_w, w = m(x, need_weights=True)
    except ValueError as e:
        assert "computes no attention weights" in str(e)
        return
    assert_close(out_w, out, **TOL)
    assert w.shape == (2, 5, 5)
    assert_close(w.sum(-1), torch.ones(2, 5), **TOL)
    per_head = {} if name == "SelfAttention" else {"average_weights": False}  # one head: nothing to average
    _, w_causal = m(x, is_causal=True, need_weights=True, **per_head)  # (B, H, L, L), one head (B, L, L)
    assert w_causal.dim() == (3 if name == "SelfAttention" else 4) and (w_causal.triu(1) == 0).all()


def test_self_attention_checks_width():
    with pytest.raises(ValueError, match=r"x has last dimension 6 \(shape \(1, 3, 6\)\), expected 8 \(d_model\)"):
        attn.SelfAttention(8)(torch.randn(1, 3, 6))
    with pytest.raises(ValueError, match="d_k must be a positive integer"):
        attn.SelfAttention(8, d_k=0)


# --- MultiHeadAttention vs nn.MultiheadAttention ------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(B=st.integers(1, 3), L=st.integers(1, 7), H=st.sampled_from([1, 2, 4]), E=st.integers(1, 6),
       bias=st.booleans(), seed=st.integers(0, 2**16))
def test_self_attention_matches_nn_multiheadattention(B, L, H, E, bias, seed):
    torch.manual_seed(seed)
    ours, ref = _pair(H * E, H, bias)
    x = torch.randn(B, L, H * E)
    out, w = ours(x, need_weights=True)
    r_out, r_w = ref(x, x, x, need_weights=True)
    assert_close(out, r_out, **TOL)
    assert_close(w, r_w, **TOL)
    assert_close(ours(x)[0], r_out, **TOL)  # the fused (weights-free) path too


def test_cross_attention_matches_nn_multiheadattention():
    ours, ref = _pair(16, 4)
    x, memory = torch.randn(2, 5, 16), torch.randn(2, 9, 16)
    out, w = ours(x, memory, need_weights=True, average_weights=False)
    r_out, r_w = ref(x, memory, memory, need_weights=True, average_attn_weights=False)
    assert_close(out, r_out, **TOL)
    assert_close(w, r_w, **TOL)
    assert w.shape == (2, 4, 5, 9)


def test_separate_key_and_value_tensors_match():
    ours, ref = _pair(16, 2)
    q, k, v = torch.randn(3, 4, 16), torch.randn(3, 6, 16), torch.randn(3, 6, 16)
    assert_close(ours(q, k, v)[0], ref(q, k, v)[0], **TOL)


def test_key_padding_matches_nn_multiheadattention_with_inverted_mask():
    ours, ref = _pair(16, 4)
    x = torch.randn(3, 6, 16)
    key_mask = masks.padding([6, 4, 2])[:, 0]  # (B, S), True = real token
    out, w = ours(x, key_mask=key_mask, need_weights=True)
    r_out, r_w = ref(x, x, x, key_padding_mask=~key_mask)
    assert_close(out, r_out, **TOL)
    assert_close(w, r_w, **TOL)
    assert (w[1, :, 4:] == 0).all()


@pytest.mark.parametrize("average", [True, False])
def test_causal_plus_padding_weights_per_head_and_averaged(average):
    ours, ref = _pair(24, 3)
    x = torch.randn(2, 5, 24)
    key_mask = masks.padding([5, 3])[:, 0]
    out, w = ours(x, mask=masks.causal(5), key_mask=key_mask, need_weights=True, average_weights=average)
    r_out, r_w = ref(x, x, x, attn_mask=~masks.causal(5), key_padding_mask=~key_mask,
                     average_attn_weights=average)
    assert_close(out, r_out, **TOL)
    assert_close(w, r_w, **TOL)
    assert_close(ours(x, is_causal=True, key_mask=key_mask)[0], r_out, **TOL)


def test_per_batch_mask_of_shape_B_L_S_applies_to_every_head():
    ours, ref = _pair(16, 4)
    x = torch.randn(2, 4, 16)
    mask = torch.rand(2, 4, 4) > 0.3
    mask[..., 0] = True
    out = ours(x, mask=mask)[0]
    r_out = ref(x, x, x, attn_mask=(~mask).repeat_interleave(4, dim=0))[0]
    assert_close(out, r_out, **TOL)


def test_fully_masked_query_gives_zeros_before_the_output_projection():
    m = attn.MultiHeadAttention(8, 2, bias=False).eval()
    x = torch.randn(1, 3, 8)
    out, w = m(x, key_mask=torch.zeros(1, 3, dtype=torch.bool), need_weights=True)
    assert not torch.isnan(out).any() and (out == 0).all() and (w == 0).all()


def test_dropout_only_in_training():
    m = attn.MultiHeadAttention(16, 4, dropout=0.5)
    x = torch.randn(2, 8, 16)
    m.eval()
    assert_close(m(x)[0], m(x)[0])
    m.train()
    assert not torch.allclose(m(x)[0], m(x)[0])


def test_weights_returned_in_training_are_the_dropped_out_weights_that_made_the_output():
    """need_weights in training: the weights come back with dropout applied (zeros, and the kept
    entries scaled by 1 / (1 - p)), and they are the weights the output was computed with."""
    torch.manual_seed(0)
    m = attn.MultiHeadAttention(16, 4, dropout=0.5)
    x = torch.randn(2, 8, 16)
    clean = m.eval()(x, need_weights=True, average_weights=False)[1]
    m.train()
    out, w = m(x, need_weights=True, average_weights=False)  # (B, H, L, S)
    dropped = w == 0
    assert dropped.any() and not dropped.all()
    assert_close(w[~dropped], clean[~dropped] / 0.5, **TOL)
    v = (x @ m.in_proj.weight[32:].T + m.in_proj.bias[32:]).view(2, 8, 4, 4).transpose(1, 2)  # (B, H, S, E)
    z = (w @ v).transpose(1, 2).reshape(2, 8, 16)
    assert_close(out, m.out_proj(z), **TOL)


def test_d_model_not_divisible_by_num_heads_is_a_clear_error():
    with pytest.raises(ValueError, match=r"d_model \(10\) must be divisible by num_heads \(3\).*3.33333"):
        attn.MultiHeadAttention(10, 3)


@pytest.mark.parametrize("build", [
    lambda: attn.MultiHeadAttention(10, 3),
    lambda: attn.efficient.EfficientSelfAttention(10, 3),
    lambda: attn.efficient.GroupedQueryAttention(10, 3, 1),
])
def test_every_multi_head_module_refuses_an_indivisible_width_with_one_message(build):
    """One heads rule (attn._checks.heads): the same words from every module that splits d_model."""
    message = ("d_model (10) must be divisible by num_heads (3): each head gets d_model / num_heads = 3.33333 "
               "dimensions, which is not an integer")
    with pytest.raises(ValueError) as e:
        build()
    assert str(e.value) == message


def test_mha_input_errors_name_the_argument():
    m = attn.MultiHeadAttention(16, 4)
    with pytest.raises(ValueError, match=r"key has last dimension 8 \(shape \(2, 3, 8\)\), expected 16"):
        m(torch.randn(2, 5, 16), torch.randn(2, 3, 8))
    with pytest.raises(ValueError, match=r"query must have shape \(B, N, D\), got \(2, 1, 5, 16\)"):
        m(torch.randn(2, 1, 5, 16))
    with pytest.raises(ValueError, match=r"key_mask must have shape \(B, S\) = \(2, 5\), got \(2, 4\)"):
        m(torch.randn(2, 5, 16), key_mask=torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(TypeError, match="key_mask must be bool"):
        m(torch.randn(2, 5, 16), key_mask=torch.ones(2, 5))
    with pytest.raises(ValueError, match=r"mask of shape \(3, 3\) cannot broadcast to the scores' shape \(2, 4, 5, 5\)"):
        m(torch.randn(2, 5, 16), mask=masks.causal(3))
    with pytest.raises(ValueError, match="must share B"):
        m(torch.randn(2, 5, 16), torch.randn(3, 5, 16))


# --- caches -----------------------------------------------------------------------------------

def test_incremental_decoding_with_kv_cache_equals_full_causal_pass():
    m = attn.MultiHeadAttention(16, 4).eval()
    x = torch.randn(2, 9, 16)
    full, _ = m(x, is_causal=True)
    cache = attn.KVCache()
    steps = [m(x[:, :3], is_causal=True, cache=cache)[0]]  # a prompt of 3 tokens, then one at a time
    for t in range(3, 9):
        steps.append(m(x[:, t : t + 1], is_causal=True, cache=cache)[0])
    assert len(cache) == 9
    assert_close(torch.cat(steps, dim=1), full, **TOL)


def test_cached_step_weights_match_the_full_pass_row():
    m = attn.MultiHeadAttention(8, 2).eval()
    x = torch.randn(1, 5, 8)
    _, w_full = m(x, is_causal=True, need_weights=True)
    cache = attn.KVCache()
    m(x[:, :4], is_causal=True, cache=cache)
    _, w_last = m(x[:, 4:], is_causal=True, cache=cache, need_weights=True)
    assert_close(w_last[:, 0], w_full[:, 4], **TOL)


def test_static_cross_attention_cache_projects_memory_once():
    m = attn.MultiHeadAttention(16, 4).eval()
    x, memory = torch.randn(2, 6, 16), torch.randn(2, 11, 16)
    expected, _ = m(x, memory)
    cache = attn.KVCache(static=True)
    first, _ = m(x[:, :2], memory, cache=cache)
    k_id = id(cache.k)
    rest, _ = m(x[:, 2:], memory, cache=cache)
    assert id(cache.k) == k_id, "static cache must not be recomputed"
    assert_close(torch.cat([first, rest], 1), expected, **TOL)


def test_cache_rejects_a_different_batch():
    m = attn.MultiHeadAttention(8, 2).eval()
    cache = attn.KVCache()
    m(torch.randn(2, 3, 8), cache=cache)
    with pytest.raises(ValueError, match=r"do not match the cached \(2, 2, 3, 4\)"):
        m(torch.randn(3, 1, 8), cache=cache)


def test_positional_must_act_inside_attention():
    with pytest.raises(ValueError, match="mode 'scores' or 'qk'"):
        attn.MultiHeadAttention(8, 2, positional=attn.SinusoidalPositionalEncoding(8))


def test_positional_dimensions_are_checked_when_the_layer_is_built():
    with pytest.raises(ValueError, match="RotaryPositionalEncoding has d_head=8, but this attention has d_head=4"):
        attn.MultiHeadAttention(16, 4, positional=attn.RotaryPositionalEncoding(8))
    with pytest.raises(ValueError, match="ALiBi has num_heads=2, but this attention has num_heads=4"):
        attn.MultiHeadAttention(16, 4, positional=attn.ALiBi(2))


# --- gradients through fully masked rows (issue 9, item 1) -------------------------------------

def _causal_left_padded(L=5):
    """Causal attention with left padding: the first query of sequence 1 may attend nothing."""
    key_mask = masks.padding([L, L - 2])[:, 0].flip(-1)  # (B, S): sequence 1 starts with 2 pads
    return key_mask


def test_self_attention_with_an_additive_mask_has_finite_gradients():
    m = attn.SelfAttention(8)
    keep = torch.ones(4, 4, dtype=torch.bool)
    keep[2] = False
    x = torch.randn(2, 4, 8, requires_grad=True)
    out, w = m(x, mask=masks.to_additive(keep), need_weights=True)
    assert (w[:, 2] == 0).all()
    out.pow(2).sum().backward()
    assert torch.isfinite(x.grad).all()
    assert all(torch.isfinite(p.grad).all() for p in m.parameters())


def _score_encodings():
    return {
        "alibi": lambda: attn.ALiBi(4),
        "t5": lambda: attn.T5RelativePositionBias(4, num_buckets=8, max_distance=16),
        "shaw": lambda: attn.positional.ShawRelativePositionalBias(4, num_heads=4, max_distance=3),
        "rope": lambda: attn.RotaryPositionalEncoding(4),
        "none": lambda: None,
    }


@pytest.mark.parametrize("name", sorted(_score_encodings()))
@pytest.mark.parametrize("how", ["need_weights", "record_attention", "fused"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_mha_causal_left_padding_has_finite_gradients(name, how, dtype):
    torch.manual_seed(0)
    m = attn.MultiHeadAttention(16, 4, positional=_score_encodings()[name]()).to(dtype)
    x = torch.randn(2, 5, 16, dtype=dtype, requires_grad=True)
    key_mask = _causal_left_padded()
    if how == "record_attention":
        with attn.record_attention(m) as rec:
            out, _ = m(x, key_mask=key_mask, is_causal=True)
        assert (rec[""][1, :, :2] == 0).all()
    else:
        out, _ = m(x, key_mask=key_mask, is_causal=True, need_weights=how == "need_weights")
    assert torch.isfinite(out).all()
    out.float().pow(2).sum().backward()
    assert torch.isfinite(x.grad).all()
    for pname, p in m.named_parameters():
        assert torch.isfinite(p.grad).all(), f"{pname}.grad has NaN or inf"


# --- one definition of self-attention (issue 9, item 2) ----------------------------------------

@pytest.mark.parametrize("name", sorted(_score_encodings()))
def test_passing_the_query_as_key_and_value_is_self_attention(name):
    torch.manual_seed(0)
    m = attn.MultiHeadAttention(16, 4, positional=_score_encodings()[name]()).eval()
    x = torch.randn(2, 5, 16)
    expected, w = m(x, need_weights=True)
    assert_close(m(x, x, x)[0], expected, **TOL)  # nn.MultiheadAttention's habit
    assert_close(m(x, x)[0], expected, **TOL)
    assert_close(m(x, x, x, need_weights=True)[1], w, **TOL)
    assert_close(m(x, x, x, is_causal=True)[0], m(x, is_causal=True)[0], **TOL)


@pytest.mark.parametrize("name", ["alibi", "t5", "shaw", "rope"])
def test_a_positional_module_refuses_a_separate_key_tensor(name):
    m = attn.MultiHeadAttention(16, 4, positional=_score_encodings()[name]())
    x = torch.randn(2, 5, 16)
    with pytest.raises(ValueError, match=r"positional=.* acts in self-attention only.*key and value must be omitted "
                                         r"or be the query tensor itself"):
        m(x, x.clone(), x.clone())
    with pytest.raises(ValueError, match="self-attention only"):
        m(x, torch.randn(2, 7, 16))


def test_without_positions_an_equal_copy_of_the_query_gives_the_same_result():
    m = attn.MultiHeadAttention(16, 4).eval()
    x = torch.randn(2, 5, 16)
    assert_close(m(x, x.clone(), x.clone())[0], m(x)[0], **TOL)


# --- is_causal: bottom-right, the same rule as attn.scaled_dot_product_attention (item 6) ------

@pytest.mark.parametrize("L, S", [(2, 6), (6, 6)])
def test_mha_is_causal_is_the_functional_rule_bottom_right(L, S):
    m = attn.MultiHeadAttention(16, 4).eval()
    x, memory = torch.randn(2, L, 16), torch.randn(2, S, 16)
    got = m(x, memory, is_causal=True)[0]
    assert_close(got, m(x, memory, mask=masks.causal(L, S, offset=S - L))[0], **TOL)
    if L != S:
        assert not torch.allclose(got, m(x, memory, mask=masks.causal(L, S))[0])


def test_multi_head_attention_takes_a_1d_key_mask_as_its_2d_form():
    """``(S,)`` broadcasts like ``(1, S)`` (issue 18: the fused path raised IndexError)."""
    torch.manual_seed(0)
    mha = attn.MultiHeadAttention(4, 4)
    x = torch.randn(4, 4, 4)
    keep = torch.tensor([True, True, False, False])
    out, _ = mha(x, mask=keep)
    ref, _ = mha(x, mask=keep.reshape(1, 4))
    torch.testing.assert_close(out, ref)
    out_w, w = mha(x, mask=keep, need_weights=True)
    torch.testing.assert_close(out_w, ref)
    assert w[..., 2:].abs().max() == 0


# --- every bad input named in full; defaults, the fused paths and the ablation hooks (mutation testing, make mutate) ---

_MHA = attn.MultiHeadAttention(8, 2)
_X = torch.randn(2, 3, 8)
BAD_INPUTS = [
    ('sa_d_model', lambda: attn.SelfAttention(0), ValueError, 'd_model must be a positive integer, got 0'),
    ('sa_d_v', lambda: attn.SelfAttention(8, d_k=4, d_v=0), ValueError, 'd_v must be a positive integer, got 0'),
    ('sa_x', lambda: attn.SelfAttention(8)([1.0]), TypeError, 'x must be a torch.Tensor, got list'),
    ('sa_x_1d', lambda: attn.SelfAttention(8)(torch.zeros(8)), ValueError, 'x must have at least 2 dimensions, got shape (8)'),
    ('mha_heads', lambda: attn.MultiHeadAttention(8, 0), ValueError, 'num_heads must be a positive integer, got 0'),
    ('mha_d', lambda: attn.MultiHeadAttention(0, 2), ValueError, 'd_model must be a positive integer, got 0'),
    ('mha_pos', lambda: attn.MultiHeadAttention(8, 2, positional=attn.SinusoidalPositionalEncoding(8)), ValueError, "positional must be an encoding that acts inside attention (mode 'scores' or 'qk'); got SinusoidalPositionalEncoding with mode 'input'. Encodings with mode 'input' are added to the token embeddings instead."),
    ('mha_q_list', lambda: _MHA([1.0]), TypeError, 'query must be a torch.Tensor, got list'),
    ('mha_q_2d', lambda: _MHA(torch.zeros(3, 8)), ValueError, 'query must have at least 3 dimensions, got shape (3, 8)'),
    ('mha_q_int', lambda: _MHA(torch.zeros(2, 3, 8, dtype=torch.long)), TypeError, 'query must be a floating-point tensor, got dtype torch.int64'),
    ('mha_key_dim', lambda: _MHA(_X, torch.zeros(2, 3, 6), torch.zeros(2, 3, 8)), ValueError, 'key has last dimension 6 (shape (2, 3, 6)), expected 8 (d_model)'),
    ('mha_value_dim', lambda: _MHA(_X, _X, torch.zeros(2, 3, 6)), ValueError, 'value has last dimension 6 (shape (2, 3, 6)), expected 8 (d_model)'),
    ('mha_q_empty', lambda: _MHA(torch.zeros(2, 0, 8)), ValueError, 'query has an empty query length L dimension (shape (2, 0, 8)); attention over nothing is undefined'),
    ('mha_k_empty', lambda: _MHA(_X, torch.zeros(2, 0, 8), torch.zeros(2, 0, 8)), ValueError, 'key has an empty source length S dimension (shape (2, 0, 8)); attention over nothing is undefined'),
    ('mha_dtype', lambda: _MHA(_X.double()), TypeError, 'query has dtype torch.float64 but the parameters of this MultiHeadAttention are torch.float32: convert one of them (x.to(torch.float32) or module.to(torch.float64))'),
    ('mha_key_mask', lambda: _MHA(_X, key_mask=[True]), TypeError, 'key_mask must be a torch.Tensor, got list'),
    ('mha_pos_cross', lambda: attn.MultiHeadAttention(8, 2, positional=attn.ALiBi(2))(_X, torch.randn(2, 4, 8), torch.randn(2, 4, 8)), ValueError, 'positional=ALiBi acts in self-attention only: key and value must be omitted or be the query tensor itself (got a separate key: a tensor of shape (2, 4, 8))'),
    ('kv_capacity', lambda: attn.KVCache(capacity=0), ValueError, 'capacity must be a positive integer or None, got 0'),
    # a bool is not a count: each of these built a one-head, one-row or one-wide module before (issue 30)
    ('mha_heads_bool', lambda: attn.MultiHeadAttention(8, True), ValueError, 'num_heads must be a positive integer, got True'),
    ('mha_d_bool', lambda: attn.MultiHeadAttention(True, 1), ValueError, 'd_model must be a positive integer, got True'),
    ('sa_d_bool', lambda: attn.SelfAttention(True), ValueError, 'd_model must be a positive integer, got True'),
    ('sa_d_k_bool', lambda: attn.SelfAttention(8, d_k=True), ValueError, 'd_k must be a positive integer, got True'),
    ('kv_capacity_bool', lambda: attn.KVCache(capacity=True), ValueError, 'capacity must be a positive integer or None, got True'),
    ('kv_capacity_float', lambda: attn.KVCache(capacity=64.0), ValueError, 'capacity must be a positive integer or None, got 64.0'),
    ("mha_pos_cross_list", lambda: attn.MultiHeadAttention(8, 2, positional=attn.ALiBi(2))(_X, [1.0], [1.0]), ValueError,
     "positional=ALiBi acts in self-attention only: key and value must be omitted or be the query tensor itself "
     "(got a separate key: list)"),
]


@pytest.mark.parametrize(("call", "error", "message"), [c[1:] for c in BAD_INPUTS], ids=[c[0] for c in BAD_INPUTS])
def test_every_bad_input_is_named_in_full(call, error, message):
    with pytest.raises(error) as e:
        call()
    assert str(e.value) == message


def test_a_cache_of_another_batch_names_both_sizes():
    m, cache = attn.MultiHeadAttention(8, 2).eval(), attn.KVCache()
    m(torch.randn(2, 2, 8), cache=cache)
    with pytest.raises(ValueError) as e:
        m(torch.randn(3, 1, 8), cache=cache)
    assert str(e.value) == "new keys (3, 2, 1, 4) do not match the cached (2, 2, 2, 4) in (B, H)"


def test_defaults_smallest_sizes_and_unbatched_self_attention():
    sa = attn.SelfAttention(8, d_k=4)
    assert sa.W_v.out_features == 4 and sa.W_o.in_features == 4  # d_v defaults to d_k
    assert attn.SelfAttention(8, d_k=4, d_v=6).W_v.out_features == 6
    assert all(layer.bias is None for layer in (sa.W_q, sa.W_k, sa.W_v, sa.W_o))
    assert attn.SelfAttention(1, d_k=1, d_v=1)(torch.randn(2, 3, 1))[0].shape == (2, 3, 1)
    out, _ = attn.SelfAttention(8)(torch.randn(3, 8))  # (L, D): one sequence, no batch
    assert out.shape == (3, 8)
    mha = attn.MultiHeadAttention(8, 2)
    assert mha.in_proj.bias is not None and mha.out_proj.bias is not None  # bias=True by default
    assert mha.record_weights is False and mha.last_weights is None and mha.head_mask is None
    assert attn.MultiHeadAttention(1, 1)(torch.randn(1, 2, 1))[0].shape == (1, 2, 1)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("which", ["key_is_query", "value_is_query", "all_separate"])
def test_every_projection_path_matches_nn_multiheadattention(bias, which):
    """The fused paths: one matmul for self-attention, one for k and v when key is value, three
    otherwise; each with and without biases."""
    torch.manual_seed(0)
    ours, ref = _pair(16, 4, bias=bias)
    if bias:  # nn.MultiheadAttention starts its biases at zero: random ones, so that a lost bias shows
        with torch.no_grad():
            ref.in_proj_bias.normal_()
            ref.out_proj.bias.normal_()
            ours.in_proj.bias.copy_(ref.in_proj_bias)
            ours.out_proj.bias.copy_(ref.out_proj.bias)
    q, other, third = torch.randn(2, 5, 16), torch.randn(2, 5, 16), torch.randn(2, 5, 16)
    key, value = {"key_is_query": (q, other), "value_is_query": (other, q), "all_separate": (other, third)}[which]
    out, w = ours(q, key, value, need_weights=True, average_weights=False)
    ref_out, ref_w = ref(q, key, value, need_weights=True, average_attn_weights=False)
    assert_close(out, ref_out, **TOL)
    assert_close(w, ref_w, **TOL)
    kv_out, _ = ours(q, other, other)  # key is value: the fused k/v projection
    assert_close(kv_out, ref(q, other, other)[0], **TOL)


def test_need_weights_false_returns_no_weights_and_record_attention_restores_the_module():
    mha = attn.MultiHeadAttention(8, 2).eval()
    x = torch.randn(1, 4, 8)
    assert mha(x)[1] is None and mha(x, need_weights=False)[1] is None
    with attn.attention.record_attention(mha):
        assert mha(x)[1] is None  # recorded, not returned: the return convention does not change
        assert mha.last_weights is not None and mha.last_weights.shape == (1, 2, 4, 4)  # per head
    assert mha.record_weights is False and mha.last_weights is None


def test_head_mask_silences_exactly_the_chosen_heads():
    torch.manual_seed(0)
    mha = attn.MultiHeadAttention(8, 2).eval()
    x = torch.randn(2, 3, 8)
    D, E = 8, 4
    q, k, v = (x @ mha.in_proj.weight[i * D:(i + 1) * D].T + mha.in_proj.bias[i * D:(i + 1) * D] for i in range(3))
    heads = [torch.softmax(q[..., h * E:(h + 1) * E] @ k[..., h * E:(h + 1) * E].transpose(1, 2) / 2.0, -1)
             @ v[..., h * E:(h + 1) * E] for h in range(2)]
    for keep in ([1.0, 0.0], [0.0, 1.0], [1.0, 1.0]):
        mha.head_mask = torch.tensor(keep, dtype=torch.float64)  # any dtype: cast to the activations'
        z = torch.cat([heads[h] * keep[h] for h in range(2)], -1)
        out = mha(x)[0]
        assert out.dtype == torch.float32
        assert_close(out, z @ mha.out_proj.weight.T + mha.out_proj.bias, **TOL)


@pytest.mark.parametrize("name", ["rope", "alibi", "t5"])
def test_cached_decoding_with_a_positional_encoding_equals_the_full_pass(name):
    """Each decoded query sits at position past + i: RoPE rotates it there and score biases are
    built for it (the query offset of a step is the number of cached keys)."""
    torch.manual_seed(0)
    pos = {"rope": lambda: attn.RotaryPositionalEncoding(4), "alibi": lambda: attn.ALiBi(2),
           "t5": lambda: attn.T5RelativePositionBias(2, bidirectional=False)}[name]()
    mha = attn.MultiHeadAttention(8, 2, positional=pos).eval()
    x = torch.randn(1, 6, 8)
    full = mha(x, is_causal=True)[0]
    cache = attn.KVCache()
    steps = [mha(x[:, :3], is_causal=True, cache=cache)[0]]
    steps += [mha(x[:, i:i + 1], is_causal=True, cache=cache)[0] for i in range(3, 6)]
    assert_close(torch.cat(steps, 1), full, **TOL)


def test_rope_rotates_the_queries_and_keys_inside_the_layer():
    torch.manual_seed(0)
    rope = attn.RotaryPositionalEncoding(4)
    mha = attn.MultiHeadAttention(8, 2, positional=rope).eval()
    x = torch.randn(1, 5, 8)
    q, k, v = (x @ mha.in_proj.weight[i * 8:(i + 1) * 8].T + mha.in_proj.bias[i * 8:(i + 1) * 8] for i in range(3))
    q, k, v = (t.view(1, 5, 2, 4).transpose(1, 2) for t in (q, k, v))
    z = torch.softmax(rope.rotate(q) @ rope.rotate(k).transpose(-1, -2) / 2.0, -1) @ v
    expected = z.transpose(1, 2).reshape(1, 5, 8) @ mha.out_proj.weight.T + mha.out_proj.bias
    assert_close(mha(x)[0], expected, **TOL)


def test_a_positional_module_without_a_mode_is_named():
    with pytest.raises(ValueError, match=r"positional must be an encoding that acts inside attention .* got Linear with mode None"):
        attn.MultiHeadAttention(8, 2, positional=nn.Linear(2, 2))


def test_a_cache_with_a_capacity_allocates_its_buffer_once():
    """Pre-allocated decoding: the buffer holds exactly `capacity` rows and is never reallocated
    while the cache fills it."""
    cache, k = attn.KVCache(capacity=6), torch.randn(1, 2, 1, 4)
    with torch.no_grad():
        cache.update(k, k)
        first = cache.k.data_ptr()
        for _ in range(5):
            cache.update(k, k)
    assert len(cache) == 6 and cache.k.data_ptr() == first
    assert cache.k.untyped_storage().nbytes() == 6 * 2 * 4 * 4  # (B, H, capacity, E) of float32


def test_a_static_cache_under_a_positional_encoding_is_refused():
    """A static cache keeps the keys of its first call: under RoPE they would be rotated again at every
    reuse. A static cache is cross-attention's, which a positional module refuses, so it is refused."""
    mha = attn.MultiHeadAttention(8, 2, positional=attn.RotaryPositionalEncoding(4)).eval()
    with pytest.raises(ValueError) as e:
        mha(torch.randn(1, 3, 8), cache=attn.KVCache(static=True))
    assert str(e.value).startswith("positional=RotaryPositionalEncoding needs a growing cache: KVCache(static=True)")
    out, _ = mha(torch.randn(1, 3, 8), cache=attn.KVCache())  # a growing cache is accepted
    assert out.shape == (1, 3, 8)


def test_cached_decoding_without_biases_and_a_static_cache_of_another_batch():
    torch.manual_seed(0)
    mha = attn.MultiHeadAttention(8, 2, bias=False).eval()
    x = torch.randn(1, 4, 8)
    cache = attn.KVCache()
    with torch.no_grad():
        steps = [mha(x[:, i:i + 1], is_causal=True, cache=cache)[0] for i in range(4)]
        assert_close(torch.cat(steps, 1), mha(x, is_causal=True)[0], **TOL)
        memory, cross = torch.randn(3, 4, 8), attn.KVCache(static=True)  # B = 3, H = 2: each size its own
        mha(torch.randn(3, 1, 8), memory, memory, cache=cross)
        with pytest.raises(ValueError) as e:
            mha(torch.randn(2, 1, 8), torch.randn(2, 4, 8), torch.randn(2, 4, 8), cache=cross)
        assert str(e.value) == "the cache holds keys for batch size 3, query has B = 2"
        # The memory passed again at a later step is not read (the cache holds its keys and values):
        # the error is the cache's, not a mismatch between the query and that memory.
        with pytest.raises(ValueError) as e:
            mha(torch.randn(2, 1, 8), memory, memory, cache=cross)
    assert str(e.value) == "the cache holds keys for batch size 3, query has B = 2"
    with pytest.raises(ValueError) as e:  # cross-attention names its query too
        mha(torch.zeros(2, 0, 8), memory, memory)
    assert str(e.value).startswith("query has an empty query length L dimension (shape (2, 0, 8))")


@pytest.mark.parametrize("name", ["alibi", "t5"])
def test_a_score_bias_acts_without_any_mask(name):
    """The fast path for calls without masks must still add the positional score bias."""
    torch.manual_seed(0)
    pos = {"alibi": lambda: attn.ALiBi(2), "t5": lambda: attn.T5RelativePositionBias(2)}[name]()
    with_bias = attn.MultiHeadAttention(8, 2, positional=pos).eval()
    plain = attn.MultiHeadAttention(8, 2).eval()
    plain.load_state_dict(with_bias.state_dict(), strict=False)
    x = torch.randn(1, 5, 8)
    q, k, v = (t.view(1, 5, 2, 4).transpose(1, 2) for t in with_bias.in_proj(x).chunk(3, -1))
    z = torch.softmax(q @ k.transpose(-1, -2) / 2.0 + pos.score_bias(q, 0, 5), -1) @ v
    expected = with_bias.out_proj(z.transpose(1, 2).reshape(1, 5, 8))
    assert_close(with_bias(x)[0], expected, **TOL)
    assert not torch.allclose(with_bias(x)[0], plain(x)[0], **TOL)
