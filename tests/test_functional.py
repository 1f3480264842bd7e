"""attn.functional against torch.nn.functional.scaled_dot_product_attention and the maths."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.testing import assert_close

import attn
from attn import masks
from attn.functional import scaled_dot_product_attention as sdpa

TOL32 = dict(atol=1e-5, rtol=1e-5)


def _qkv(*batch, L=5, S=7, E=8, Ev=None, dtype=torch.float32):
    Ev = E if Ev is None else Ev
    return (
        torch.randn(*batch, L, E, dtype=dtype),
        torch.randn(*batch, S, E, dtype=dtype),
        torch.randn(*batch, S, Ev, dtype=dtype),
    )


@settings(max_examples=60, deadline=None)
@given(
    B=st.integers(1, 3), H=st.integers(1, 3), L=st.integers(1, 9), S=st.integers(1, 9),
    E=st.integers(1, 16), Ev=st.integers(1, 16), causal=st.booleans(), seed=st.integers(0, 2**16),
)
def test_both_paths_match_pytorch_on_random_shapes(B, H, L, S, E, Ev, causal, seed):
    torch.manual_seed(seed)
    q, k, v = _qkv(B, H, L=L, S=S, E=E, Ev=Ev)
    expected = F.scaled_dot_product_attention(q, k, v)
    if causal:  # attn's is_causal is bottom-right aligned (PyTorch's top-left differs when L != S)
        bottom_right = masks.causal(L, S, offset=S - L)
        expected = F.scaled_dot_product_attention(q, k, v, attn_mask=bottom_right)
        expected = expected.masked_fill(masks.fully_masked_rows(bottom_right), 0.0)  # L > S: empty rows
    fast = sdpa(q, k, v, is_causal=causal)
    slow, w = sdpa(q, k, v, is_causal=causal, return_weights=True)
    assert_close(fast, expected, **TOL32)
    assert_close(slow, expected, **TOL32)
    assert w.shape == (B, H, L, S)


@settings(max_examples=40, deadline=None)
@given(L=st.integers(1, 8), S=st.integers(1, 8), seed=st.integers(0, 2**16), p=st.floats(0.05, 0.9))
def test_boolean_mask_matches_pytorch_and_weights_rows_sum_to_one(L, S, seed, p):
    torch.manual_seed(seed)
    q, k, v = _qkv(2, 3, L=L, S=S)
    mask = torch.rand(2, 1, L, S) > p  # broadcasts over heads
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    out, w = sdpa(q, k, v, mask=mask, return_weights=True)
    assert_close(sdpa(q, k, v, mask=mask), expected, **TOL32)
    assert_close(out, expected, **TOL32)
    has_key = mask.any(-1).expand(2, 3, L)
    assert_close(w.sum(-1)[has_key], torch.ones(int(has_key.sum())), **TOL32)
    assert (w[~mask.expand_as(w)] == 0).all(), "blocked pairs must get exactly zero weight"


def test_additive_mask_matches_pytorch_and_equals_its_boolean_form():
    q, k, v = _qkv(2, 4)
    keep = torch.rand(5, 7) > 0.3
    keep[:, 0] = True
    add = masks.to_additive(keep)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=add)
    assert_close(sdpa(q, k, v, mask=add), expected, **TOL32)
    assert_close(sdpa(q, k, v, mask=add, return_weights=True)[0], expected, **TOL32)
    assert_close(sdpa(q, k, v, mask=keep), expected, **TOL32)


def test_soft_additive_bias_is_added_to_scores():
    q, k, v = _qkv(3)
    bias = torch.randn(5, 7)
    expected = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(8) + bias, -1) @ v
    assert_close(sdpa(q, k, v, mask=bias, return_weights=True)[0], expected, **TOL32)
    assert_close(sdpa(q, k, v, mask=bias), expected, **TOL32)


@pytest.mark.parametrize("scale", [0.01, 0.5, 3.0])
def test_custom_scale_matches_pytorch(scale):
    q, k, v = _qkv(2, 3)
    expected = F.scaled_dot_product_attention(q, k, v, scale=scale)
    assert_close(sdpa(q, k, v, scale=scale), expected, **TOL32)
    assert_close(sdpa(q, k, v, scale=scale, return_weights=True)[0], expected, **TOL32)


def test_explicit_path_is_the_formula_written_out():
    q, k, v = _qkv(4)
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    out, w = sdpa(q, k, v, return_weights=True)
    assert_close(w, weights, **TOL32)
    assert_close(out, weights @ v, **TOL32)


def test_batch_and_head_broadcasting_matches_pytorch():
    q = torch.randn(3, 2, 5, 8)
    k, v = torch.randn(1, 2, 7, 8), torch.randn(1, 2, 7, 8)  # one memory shared by the batch
    mask = masks.causal(5, 7)  # (L, S) for every batch element and head
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert_close(sdpa(q, k, v, mask=mask), expected, **TOL32)
    assert_close(sdpa(q, k, v, mask=mask, return_weights=True)[0], expected, **TOL32)


def test_unbatched_inputs_work():
    q, k, v = _qkv(L=3, S=4)
    expected = F.scaled_dot_product_attention(q, k, v)
    assert_close(sdpa(q, k, v), expected, **TOL32)
    assert sdpa(q, k, v, return_weights=True)[1].shape == (3, 4)


def test_is_causal_combines_with_a_mask():
    q, k, v = _qkv(1, L=6, S=6)
    pad = masks.padding([4], 6)  # (1, 1, 6)
    both = masks.combine(masks.causal(6), pad)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=both)
    assert_close(sdpa(q, k, v, mask=pad, is_causal=True), expected, **TOL32)
    assert_close(sdpa(q, k, v, mask=masks.to_additive(pad), is_causal=True, return_weights=True)[0], expected, **TOL32)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("kind", ["bool", "additive"])
def test_fully_masked_row_gives_zeros_not_nan(dtype, weights, kind):
    q, k, v = _qkv(2, 2, L=4, S=5, dtype=dtype)
    keep = torch.ones(4, 5, dtype=torch.bool)
    keep[1] = False  # query 1 may attend nothing
    mask = keep if kind == "bool" else masks.to_additive(keep, dtype)
    res = sdpa(q, k, v, mask=mask, return_weights=weights)
    out = res[0] if weights else res
    assert not torch.isnan(out).any()
    assert (out[:, :, 1] == 0).all()
    if weights:
        assert (res[1][:, :, 1] == 0).all() and not torch.isnan(res[1]).any()


@pytest.mark.parametrize("dtype,tol", [(torch.float16, 2e-3), (torch.bfloat16, 2e-2)])
def test_half_precision_matches_float64_reference(dtype, tol):
    q, k, v = _qkv(2, 2, L=6, S=6, dtype=torch.float64)
    mask = masks.causal(6)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    for weights in (False, True):
        res = sdpa(q.to(dtype), k.to(dtype), v.to(dtype), mask=mask, return_weights=weights)
        out = res[0] if weights else res
        assert out.dtype == dtype
        assert_close(out.double(), ref, atol=tol * 4, rtol=tol)


def test_dropout_zeroes_some_weights_and_rescales_the_rest():
    torch.manual_seed(1)
    q, k, v = _qkv(2, 4, L=16, S=16)
    _, w = sdpa(q, k, v, dropout_p=0.5, return_weights=True)
    dropped = (w == 0).float().mean().item()
    assert 0.35 < dropped < 0.65
    _, w0 = sdpa(q, k, v, return_weights=True)
    kept = w != 0
    assert_close(w[kept], 2 * w0[kept], **TOL32)


# --- errors -----------------------------------------------------------------------------------

def test_mismatched_last_dims_name_k_and_both_shapes():
    with pytest.raises(ValueError, match=r"k has last dimension 6 \(shape \(2, 7, 6\)\), expected 8"):
        sdpa(torch.randn(2, 5, 8), torch.randn(2, 7, 6), torch.randn(2, 7, 8))


def test_key_value_length_mismatch_is_reported():
    with pytest.raises(ValueError, match=r"k and v must have the same source length S.*\(2, 7, 8\).*\(2, 6, 8\)"):
        sdpa(torch.randn(2, 5, 8), torch.randn(2, 7, 8), torch.randn(2, 6, 8))


def test_mask_that_cannot_broadcast_is_reported_with_shapes():
    q, k, v = _qkv(2, L=5, S=7)
    with pytest.raises(ValueError, match=r"mask of shape \(5, 5\) cannot broadcast to the scores' shape \(2, 5, 7\)"):
        sdpa(q, k, v, mask=torch.ones(5, 5, dtype=torch.bool))


@pytest.mark.parametrize("dtype", [torch.int64, torch.uint8, torch.int32])
def test_integer_mask_is_a_type_error(dtype):
    q, k, v = _qkv(L=5, S=7)
    with pytest.raises(TypeError, match=f"mask must be bool.*got dtype {dtype}"):
        sdpa(q, k, v, mask=torch.ones(5, 7, dtype=dtype))


def test_empty_sequences_are_rejected():
    with pytest.raises(ValueError, match="q has an empty query length L"):
        sdpa(torch.randn(0, 8), torch.randn(3, 8), torch.randn(3, 8))
    with pytest.raises(ValueError, match="k has an empty source length S"):
        sdpa(torch.randn(2, 8), torch.randn(0, 8), torch.randn(0, 8))


def test_non_tensor_and_integer_inputs_are_type_errors():
    with pytest.raises(TypeError, match="q must be a torch.Tensor, got list"):
        sdpa([[1.0]], torch.randn(1, 1), torch.randn(1, 1))
    with pytest.raises(TypeError, match="k must be a floating-point tensor"):
        sdpa(torch.randn(2, 2), torch.ones(2, 2, dtype=torch.long), torch.randn(2, 2))


def test_batch_dims_that_do_not_broadcast_are_reported():
    with pytest.raises(ValueError, match=r"batch dimensions of q \(2, 5, 8\), k \(3, 7, 8\)"):
        sdpa(torch.randn(2, 5, 8), torch.randn(3, 7, 8), torch.randn(3, 7, 8))


def test_public_name_is_reexported():
    assert attn.scaled_dot_product_attention is sdpa


# --- gradients through fully masked rows (issue 9, item 1) -------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("kind", ["bool", "additive", "additive+learned bias"])
def test_fully_masked_row_gives_finite_gradients_on_both_paths(dtype, weights, kind):
    q, k, v = (t.requires_grad_() for t in _qkv(2, 2, L=4, S=5, dtype=dtype))
    keep = torch.ones(4, 5, dtype=torch.bool)
    keep[1] = False  # query 1 may attend nothing
    bias = torch.randn(4, 5, dtype=dtype, requires_grad=True)  # e.g. a learned score bias
    mask = {"bool": keep, "additive": masks.to_additive(keep, dtype),
            "additive+learned bias": masks.to_additive(keep, dtype) + bias}[kind]
    res = sdpa(q, k, v, mask=mask, return_weights=weights)
    out = res[0] if weights else res
    (out.float() ** 2).sum().backward()
    for name, t in (("q", q), ("k", k), ("v", v), ("bias", bias)):
        if t.grad is not None:
            assert torch.isfinite(t.grad).all(), f"{name}.grad has NaN or inf"
    assert (q.grad[:, :, 1] == 0).all(), "the masked query's output is the constant 0"
    assert q.grad[:, :, 0].abs().sum() > 0


def test_the_issue_example_has_finite_key_gradients():
    q, k, v = (torch.randn(1, 3, 4, requires_grad=True) for _ in range(3))
    m = masks.to_additive(torch.tensor([[1, 1, 1], [0, 0, 0], [1, 1, 1]], dtype=torch.bool))
    sdpa(q, k, v, mask=m, return_weights=True)[0].sum().backward()
    assert not k.grad.isnan().any()


# --- asking for weights never changes the result (issue 9, item 3) -----------------------------

@pytest.mark.parametrize("make", ["issue: all 40", "random * 20", "random * 100"])
def test_weights_path_equals_fused_path_in_float16_with_large_inputs(make):
    torch.manual_seed(0)
    if make == "issue: all 40":
        q = k = v = torch.full((1, 3, 64), 40.0, dtype=torch.float16)
    else:
        scale = float(make.split("* ")[1])
        q, k, v = ((torch.randn(2, 4, 64) * scale).half() for _ in range(3))
    fused = sdpa(q, k, v)
    out, w = sdpa(q, k, v, return_weights=True)
    assert torch.isfinite(fused).all()
    assert torch.isfinite(out).all() and torch.isfinite(w).all()
    ref = F.scaled_dot_product_attention(q.double(), k.double(), v.double())
    tol = dict(atol=4e-3 * v.abs().max().item(), rtol=4e-3)  # float16 rounding of values this large
    assert_close(out.double(), ref, **tol)
    assert_close(out, fused, **tol)


# --- is_causal has one meaning: bottom-right (issue 9, item 6) ----------------------------------

@pytest.mark.parametrize("L, S", [(2, 5), (1, 6), (5, 3), (4, 4)])
@pytest.mark.parametrize("weights", [False, True])
def test_is_causal_aligns_the_triangle_bottom_right(L, S, weights):
    q, k, v = _qkv(2, L=L, S=S)
    res = sdpa(q, k, v, is_causal=True, return_weights=weights)
    out = res[0] if weights else res
    bottom_right = masks.causal(L, S, offset=S - L)  # query i sits at position S - L + i
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=bottom_right)
    expected = expected.masked_fill(masks.fully_masked_rows(bottom_right), 0.0)  # L > S: first rows see nothing
    assert_close(out, expected, **TOL32)
    if weights:
        assert (res[1][..., ~bottom_right] == 0).all()
    if L < S:  # PyTorch's is_causal is top-left aligned: a different answer
        assert not torch.allclose(out, F.scaled_dot_product_attention(q, k, v, is_causal=True))
    if L == S:  # the usual lower triangle: the two conventions agree
        assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True), **TOL32)


def test_top_left_alignment_is_an_explicit_mask():
    q, k, v = _qkv(2, L=2, S=5)
    assert_close(sdpa(q, k, v, mask=masks.causal(2, 5)), F.scaled_dot_product_attention(q, k, v, is_causal=True),
                 **TOL32)


# --- masks of fewer than two dimensions (issue 18, item 5) ---------------------------------------

@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("form", ["bool", "additive", "scalar"])
def test_a_1d_key_mask_broadcasts_on_both_paths_as_pytorch_computes_it(form, weights):
    """A ``(S,)`` mask broadcasts over queries, batch and heads (as its ``(1, S)`` form does in
    PyTorch); the fused path used to pass it on and raise IndexError from the CPU kernel."""
    q, k, v = _qkv(1, 2, L=3, S=4, E=4)
    keep = torch.tensor([True, True, False, True])
    m = {"bool": keep, "additive": masks.to_additive(keep), "scalar": torch.tensor(True)}[form]
    out = sdpa(q, k, v, mask=m, return_weights=weights)
    out = out[0] if weights else out
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=m.reshape(1, -1) if m.dim() else m.reshape(1, 1))
    assert_close(out, ref, **TOL32)


# --- what mutation testing found unpinned (issue 18) ---------------------------------------------

@pytest.mark.parametrize("call,error,message", [
    (lambda: sdpa(torch.randn(2, 8), torch.randn(3, 8), torch.ones(3, 8, dtype=torch.long)), TypeError,
     "v must be a floating-point tensor, got dtype torch.int64"),
    (lambda: sdpa(torch.randn(8), torch.randn(3, 8), torch.randn(3, 8)), ValueError,
     r"q must have at least 2 dimensions, got shape \(8\)"),
    (lambda: sdpa(torch.randn(2, 8), torch.randn(3, 8).double(), torch.randn(3, 8)), TypeError,
     "q, k and v must share one dtype, got torch.float32, torch.float64 and torch.float32"),
    (lambda: sdpa(torch.randn(2, 8), torch.randn(3, 4), torch.randn(3, 8)), ValueError,
     r"k has last dimension 4 \(shape \(3, 4\)\), expected 8 \(q and k must have the same last dimension E\)"),
    (lambda: sdpa(torch.randn(2, 0), torch.randn(3, 0), torch.randn(3, 8)), ValueError,
     r"q has an empty embedding E dimension \(shape \(2, 0\)\); attention over nothing is undefined"),
    (lambda: sdpa(*_qkv(), dropout_p=1.0), ValueError, r"dropout_p must lie in \[0, 1\), got 1.0"),
    (lambda: sdpa(*_qkv(), dropout_p=1.5), ValueError, r"dropout_p must lie in \[0, 1\), got 1.5"),
])
def test_errors_name_the_argument_in_full(call, error, message):
    with pytest.raises(error, match=f"^{message}$"):
        call()


@pytest.mark.parametrize("p,message", [
    (True, r"dropout_p must be a number in \[0, 1\), got True"),  # True < 1 is False, but True is no probability
    ("0.1", r"dropout_p must be a number in \[0, 1\), got '0.1'"),  # was a TypeError from comparing a str
    (float("nan"), r"dropout_p must be a number in \[0, 1\), got nan"),
    (-0.1, r"dropout_p must lie in \[0, 1\), got -0.1"),
])
def test_dropout_p_must_be_a_probability_below_one_not_a_bool_or_text(p, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        sdpa(*_qkv(), dropout_p=p)


@pytest.mark.parametrize("holder", ["q", "k", "v", "q2 v3"])
@pytest.mark.parametrize("weights", [False, True])
def test_batch_dimensions_broadcast_from_any_input_and_a_full_batch_mask_fits(holder, weights):
    """The mask is checked against the broadcast batch of all three inputs, whichever holds it.
    (With v alone holding part of it, PyTorch's kernel raised a RuntimeError: issue 18.)"""
    shapes = {"q": (1, 1, 5, 8), "k": (1, 1, 7, 8), "v": (1, 1, 7, 8)}
    if holder == "q2 v3":
        shapes["q"], shapes["v"] = (2, 1, 5, 8), (1, 3, 7, 8)
    else:
        shapes[holder] = (2, 3) + shapes[holder][2:]
    q, k, v = (torch.randn(*shapes[n]) for n in "qkv")
    mask = torch.rand(2, 3, 5, 7) > 0.3
    mask[..., 0] = True
    out = sdpa(q, k, v, mask=mask, return_weights=weights)
    out = out[0] if weights else out
    ref = F.scaled_dot_product_attention(q.expand(2, 3, 5, 8), k.expand(2, 3, 7, 8), v.expand(2, 3, 7, 8), attn_mask=mask)
    assert_close(out, ref, **TOL32)
    with pytest.raises(ValueError, match=r"cannot broadcast to the scores' shape \(2, 3, 5, 7\)"):
        sdpa(q, k, v, mask=torch.ones(4, 3, 5, 7, dtype=torch.bool), return_weights=weights)


@pytest.mark.parametrize("batch", [(), (3,), (2, 3, 2)])
def test_masks_are_checked_against_inputs_of_any_rank(batch):
    q, k, v = _qkv(*batch, L=4, S=6)
    full = torch.rand(*batch, 4, 6) > 0.3
    full[..., 0] = True
    assert_close(sdpa(q, k, v, mask=full), F.scaled_dot_product_attention(q, k, v, attn_mask=full), **TOL32)
    keep = torch.tensor([True, False, True, True, False, True])  # (S,) broadcasts over everything
    for weights in (False, True):
        out = sdpa(q, k, v, mask=keep, return_weights=weights)
        out = out[0] if weights else out
        assert out.shape == (*batch, 4, 8)
        assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=keep.expand(4, 6)), **TOL32)


@pytest.mark.parametrize("weights", [False, True])
def test_an_additive_mask_of_another_dtype_is_cast_to_the_inputs(weights):
    q, k, v = _qkv(2, L=4, S=6)
    keep = torch.rand(4, 6) > 0.4
    keep[:, 0] = True
    mask = masks.to_additive(keep, torch.float64) + 0.25 * torch.randn(4, 6, dtype=torch.float64)
    out = sdpa(q, k, v, mask=mask, return_weights=weights)
    out = out[0] if weights else out
    assert out.dtype == torch.float32
    assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask.float()), **TOL32)


def test_explicit_attention_defaults_to_no_dropout_and_the_usual_scale():
    q, k, v = _qkv(2, L=4, S=6)
    out, w = attn.functional.explicit_attention(q, k, v)
    assert_close(w, torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(8), -1), **TOL32)
    assert_close(out, w @ v, **TOL32)


def test_explicit_attention_of_float64_stays_float64_and_half_is_scored_in_float32():
    q, k, v = _qkv(2, L=4, S=6, dtype=torch.float64)
    out, w = attn.functional.explicit_attention(q, k, v)
    assert_close(w, torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(8), -1), atol=1e-15, rtol=1e-15)
    # float16 q . k of 40 * 40 * 8 = 12800 ... per entry overflows nothing, but 128 dims of 30 do
    q16 = torch.full((1, 2, 128), 30.0, dtype=torch.float16)
    k16 = torch.full((1, 3, 128), 30.0, dtype=torch.float16)
    v16 = torch.randn(1, 3, 4, dtype=torch.float16)
    out16, w16 = attn.functional.explicit_attention(q16, k16, v16, scale=1.0)  # scores 115200 > 65504
    assert torch.isfinite(w16).all() and torch.equal(w16, torch.full_like(w16, 1 / 3))


@pytest.mark.parametrize("masked", [False, True])
def test_dropout_and_scale_reach_the_fused_kernel(masked):
    """Same seed, same dropout draws as PyTorch's kernel, with and without a mask."""
    q, k, v = _qkv(2, 2, L=6, S=6)
    mask = masks.causal(6) if masked else None
    torch.manual_seed(3)
    out = sdpa(q, k, v, mask=mask, dropout_p=0.5, scale=0.3)
    torch.manual_seed(3)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.5, scale=0.3)
    assert_close(out, ref, **TOL32)
    assert not torch.allclose(out, sdpa(q, k, v, mask=mask, scale=0.3))  # dropout did something


def test_dropout_on_the_weights_path_drops_at_the_given_rate():
    torch.manual_seed(1)
    q, k, v = _qkv(4, 4, L=32, S=32)
    _, w = sdpa(q, k, v, dropout_p=0.2, return_weights=True)
    assert 0.15 < (w == 0).float().mean().item() < 0.25
    _, w0 = sdpa(q, k, v, return_weights=True)
    kept = w != 0
    assert_close(w[kept], w0[kept] / 0.8, **TOL32)


def test_is_causal_with_equal_lengths_builds_no_mask():
    """PyTorch's own is_causal does the work (and skips the blocked half): no mask tensor is made."""
    q, k, v = _qkv(1, 2, L=6, S=6)
    ops = attn.measure.operators(lambda: sdpa(q, k, v, is_causal=True))
    assert "arange" not in ops and "masked_fill" not in ops, ops


@pytest.mark.parametrize("weights", [False, True])
def test_the_causal_mask_is_built_on_the_inputs_device(weights):
    """On the meta device a CPU-made triangle fails (tests/test_devices.py covers the package)."""
    meta = torch.device("meta")
    q, k, v = (t.to(meta) for t in _qkv(2, L=4, S=6))
    out = sdpa(q, k, v, mask=torch.ones(6, dtype=torch.bool, device=meta), is_causal=True, return_weights=weights)
    assert (out[0] if weights else out).device == meta
    out = sdpa(q, k, v, is_causal=True, return_weights=weights)  # L != S: the triangle alone
    assert (out[0] if weights else out).device == meta


@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("q_shape,k_shape,v_shape", [
    ((2, 2, 3, 4), (2, 5, 4), (2, 5, 4)),  # q alone has two batch dimensions
    ((2, 3, 4), (2, 2, 5, 4), (2, 5, 4)),  # k alone
    ((2, 3, 4), (2, 5, 4), (2, 2, 5, 4)),  # v alone
    ((1, 3, 4), (1, 5, 4), (2, 1, 5, 4)),  # v alone, and q of lower rank
])
def test_inputs_of_different_ranks_broadcast_their_batch_and_the_mask_fits(q_shape, k_shape, v_shape, weights):
    q, k, v = torch.randn(q_shape), torch.randn(k_shape), torch.randn(v_shape)
    batch = torch.broadcast_shapes(q_shape[:-2], k_shape[:-2], v_shape[:-2])
    mask = torch.rand(*batch, 3, 5) > 0.3
    mask[..., 0] = True
    out = sdpa(q, k, v, mask=mask, return_weights=weights)
    out = out[0] if weights else out
    ref = F.scaled_dot_product_attention(*(t.expand(*batch, *t.shape[-2:]) for t in (q, k, v)), attn_mask=mask)
    assert_close(out, ref, **TOL32)


def test_an_empty_embedding_is_named_for_batched_inputs_too():
    with pytest.raises(ValueError, match=r"^q has an empty embedding E dimension \(shape \(1, 2, 0\)\)"):
        sdpa(torch.randn(1, 2, 0), torch.randn(1, 3, 0), torch.randn(1, 3, 4))


# --- what mutation testing found unpinned (second round) -----------------------------------------

def test_attend_has_the_defaults_of_scaled_dot_product_attention():
    """``attend`` is the same computation minus the input checks: no mask, not causal, no dropout,
    the output alone. L != S, so a causal default would block keys and differ."""
    q, k, v = _qkv(2, L=5, S=7)
    out = attn.functional.attend(q, k, v)
    assert isinstance(out, torch.Tensor), "without return_weights the output comes alone"
    assert_close(out, F.scaled_dot_product_attention(q, k, v), **TOL32)
    assert_close(out, sdpa(q, k, v), **TOL32)


@pytest.mark.parametrize("weights", [False, True])
def test_bfloat16_scores_are_formed_in_float32_so_a_one_unit_gap_survives(weights):
    """bfloat16 has float32's range (nothing overflows) but 8 significant bits: a score of 257
    rounds to 256, and two keys whose scores differ by a whole unit would tie at weight 1/2.
    PyTorch's kernel scores in float32 and gives softmax([256, 257]); the weights path must too."""
    q = torch.tensor([[1.0, 1.0]], dtype=torch.bfloat16)
    k = torch.tensor([[256.0, 0.0], [256.0, 1.0]], dtype=torch.bfloat16)  # q . k = 256 and 257
    v = torch.tensor([[0.0], [1.0]], dtype=torch.bfloat16)  # the output is the weight of key 1
    exact = torch.softmax(torch.tensor([[256.0, 257.0]], dtype=torch.float64), -1)  # 0.2689, 0.7311
    res = sdpa(q, k, v, scale=1.0, return_weights=weights)
    out = res[0] if weights else res
    assert_close(out.double(), exact[:, 1:], atol=4e-3, rtol=0)  # bfloat16 rounding of 0.7311: 0.7305
    assert_close(out, F.scaled_dot_product_attention(q, k, v, scale=1.0), atol=0, rtol=0)
    if weights:
        assert_close(res[1], exact.to(torch.bfloat16), atol=0, rtol=0)
        out_e, w_e = attn.functional.explicit_attention(q, k, v, scale=1.0)
        assert torch.equal(w_e, res[1]) and torch.equal(out_e, out)


def test_weights_have_the_batch_of_the_output_with_or_without_a_mask():
    """The weights are ``(..., L, S)`` beside an output ``(..., L, Ev)``: one batch for both, which
    must not change when an all-allowing mask is passed."""
    q, k, v = torch.randn(3, 4), torch.randn(5, 4), torch.randn(2, 5, 4)  # v alone holds the batch
    out_m, w_m = sdpa(q, k, v, mask=torch.ones(3, 5, dtype=torch.bool), return_weights=True)
    out, w = sdpa(q, k, v, return_weights=True)
    assert out.shape == out_m.shape == (2, 3, 4)
    assert_close(out, out_m, **TOL32)
    assert w_m.shape == (2, 3, 5)
    assert w.shape == w_m.shape


def test_one_causal_query_builds_no_mask():
    """A decoding step (one query after S - 1 cached keys) sees every key: is_causal blocks nothing,
    so no triangle is built and PyTorch's kernel runs without a mask."""
    q, k, v = _qkv(1, 2, L=1, S=6)
    ops = attn.measure.operators(lambda: sdpa(q, k, v, is_causal=True))
    assert "arange" not in ops and "masked_fill" not in ops, ops
    assert_close(sdpa(q, k, v, is_causal=True), F.scaled_dot_product_attention(q, k, v), **TOL32)
