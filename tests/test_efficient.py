"""attn.efficient against PyTorch's attention (F.scaled_dot_product_attention under the matching
mask) or against the maths. Tolerances: float32 1e-5 unless stated; float64 1e-10."""

import math
import re

import pytest
import torch
import torch.nn.functional as F

import attn
from attn import book
from attn import efficient as ef
from attn import masks



@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """One thread for this module's timing-free but FLOP-heavy tests, restored afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def qkv(*shape, seed=0, dtype=torch.float32, requires_grad=False):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(*shape, generator=g, dtype=dtype).requires_grad_(requires_grad) for _ in range(3)]


# --- tiled attention -----------------------------------------------------------------------------

@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("block_size", [1, 16, 50, 256])
@pytest.mark.parametrize("L,S", [(100, 100), (37, 100), (100, 37)])
def test_tiled_equals_sdpa(is_causal, block_size, L, S):
    """Against PyTorch's kernel with attn's causal mask (bottom-right aligned when L != S; rows
    with no visible key give zeros, where PyTorch gives NaN)."""
    q, _, _ = qkv(2, 3, L, 16, seed=1)
    _, k, v = qkv(2, 3, S, 16, seed=2)
    out = ef.tiled_attention(q, k, v, is_causal=is_causal, block_size=block_size)
    allowed = masks.causal(L, S, offset=S - L) if is_causal else torch.ones(L, S, dtype=torch.bool)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed).nan_to_num(0.0)
    ref = ref.masked_fill(~allowed.any(-1, keepdim=True), 0.0)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    if L == S:  # and with no mask at all, PyTorch's own is_causal agrees
        torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=is_causal), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("additive", [False, True])
def test_tiled_with_mask_equals_sdpa_and_fully_masked_rows_give_zeros(additive):
    q, k, v = qkv(2, 3, 70, 8)
    m = torch.rand(2, 1, 70, 70, generator=torch.Generator().manual_seed(3)) > 0.6
    m[0, 0, 5] = False  # a query that may see nothing
    m[1, 0, :, 32:64] = False  # whole tiles blocked (skipped)
    mask = masks.to_additive(m) if additive else m
    out = ef.tiled_attention(q, k, v, mask=mask, block_size=32)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    assert not out.isnan().any()
    assert out[0, :, 5].abs().max() == 0


def test_tiled_mask_and_causal_combine():
    q, k, v = qkv(1, 2, 64, 8)
    m = masks.sliding_window(64, window=5)
    out = ef.tiled_attention(q, k, v, mask=m, is_causal=True, block_size=16)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=m & masks.causal(64))
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


def test_tiled_backward_equals_sdpa_gradients():
    a = qkv(1, 2, 48, 8, requires_grad=True)
    b = [t.detach().clone().requires_grad_() for t in a]
    ef.tiled_attention(*a, is_causal=True, block_size=16).square().sum().backward()
    F.scaled_dot_product_attention(*b, is_causal=True).square().sum().backward()
    for x, y in zip(a, b, strict=True):
        torch.testing.assert_close(x.grad, y.grad, atol=1e-5, rtol=1e-5)


def test_tiled_causal_skips_the_tiles_above_the_diagonal():
    q, k, v = qkv(1, 1, 256, 16)
    full = attn.measure.flops(lambda: ef.tiled_attention(q, k, v, block_size=64))
    causal = attn.measure.flops(lambda: ef.tiled_attention(q, k, v, is_causal=True, block_size=64))
    assert causal == full * 10 // 16  # 4 x 4 tiles, 10 on or below the diagonal


def test_tiled_half_precision_matches_float32():
    q, k, v = qkv(1, 2, 64, 16)
    out = ef.tiled_attention(q.bfloat16(), k.bfloat16(), v.bfloat16(), is_causal=True, block_size=16)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), F.scaled_dot_product_attention(q, k, v, is_causal=True), atol=3e-2, rtol=3e-2)


@pytest.mark.parametrize("bad", [0, -4, 2.5])
def test_tiled_rejects_bad_block_size(bad):
    q, k, v = qkv(1, 1, 8, 4)
    with pytest.raises(ValueError, match="block_size"):
        ef.tiled_attention(q, k, v, block_size=bad)


def test_tiled_rejects_mask_of_wrong_shape():
    q, k, v = qkv(1, 1, 8, 4)
    with pytest.raises(ValueError, match=r"mask of shape \(7, 8\)"):
        ef.tiled_attention(q, k, v, mask=torch.ones(7, 8, dtype=torch.bool))


# --- the online softmax, step by step (the tiled pass's figure draws these) ----------------------

_SCORES, _VALUES = [1.0, 3.0, 0.0, 2.0, 5.0, 1.0, 4.0, 2.0], [2.0, 0.0, 1.0, 3.0, 1.0, 2.0, 0.0, 4.0]


@pytest.mark.parametrize("block_size", [1, 2, 3, 8])
def test_online_softmax_steps_carry_the_softmax_of_every_prefix(block_size):
    s, v = torch.tensor(_SCORES, dtype=torch.float64), torch.tensor(_VALUES, dtype=torch.float64)
    steps = list(ef.online_softmax_steps(_SCORES, _VALUES, block_size))
    assert [st["start"] for st in steps] == list(range(0, 8, block_size))
    for st, nxt in zip(steps, steps[1:] + [None], strict=True):
        end = nxt["start"] if nxt else 8
        prefix = s[:end]
        # after a block: m is the prefix's max, a / ell its attention output, ell its exp-sum under m
        assert st["m"] == float(prefix.max())
        assert st["ell"] == pytest.approx(float((prefix - st["m"]).exp().sum()), rel=1e-12)
        assert st["a"] / st["ell"] == pytest.approx(float(torch.softmax(prefix, 0) @ v[:end]), rel=1e-12)
        # the carried state is rescaled by exp(m_old - m): 0 for the first block, 1 where m kept
        assert st["rescale"] == pytest.approx(math.exp(st["m_old"] - st["m"]), rel=1e-12)
        assert st["ell"] == pytest.approx(st["rescale"] * st["ell_old"] + st["block_ell"], rel=1e-12)
        assert st["a"] == pytest.approx(st["rescale"] * st["a_old"] + st["block_a"], rel=1e-12)
        if nxt:
            assert (nxt["m_old"], nxt["ell_old"], nxt["a_old"]) == (st["m"], st["ell"], st["a"])
    assert steps[0]["rescale"] == 0 and steps[0]["ell_old"] == steps[0]["a_old"] == 0


@pytest.mark.parametrize("block_size", [1, 3])
def test_online_softmax_steps_end_where_tiled_attention_does(block_size):
    # one query, E = 1: q = 1 and k = the scores give exactly these scores under scale = 1
    s, v = torch.tensor(_SCORES, dtype=torch.float64), torch.tensor(_VALUES, dtype=torch.float64)
    last = list(ef.online_softmax_steps(_SCORES, _VALUES, block_size))[-1]
    out = ef.tiled_attention(torch.ones(1, 1, dtype=torch.float64), s[:, None], v[:, None], scale=1.0, block_size=block_size)
    assert last["a"] / last["ell"] == pytest.approx(float(out), rel=1e-12)


def test_online_softmax_steps_check_their_arguments_when_called():
    with pytest.raises(ValueError, match=r"^block_size must be a positive integer, got 0$"):
        ef.online_softmax_steps(_SCORES, _VALUES, 0)  # at the call, not at the first next()
    with pytest.raises(ValueError, match=r"8 scores and 7 values"):
        ef.online_softmax_steps(_SCORES, _VALUES[:7], 2)
    with pytest.raises(ValueError, match=r"0 scores and 0 values"):
        ef.online_softmax_steps([], [], 2)


# --- tiled: what mutation testing found unpinned (issue 18) ------------------------------------

@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_tiled_half_precision_is_computed_in_float32_and_rounded_once(dtype):
    q, k, v = (t.to(dtype) for t in qkv(1, 2, 40, 16))
    mask = masks.to_additive(masks.sliding_window(40, window=9), dtype)
    out = ef.tiled_attention(q, k, v, mask=mask, is_causal=True, block_size=16)
    ref = ef.tiled_attention(q.float(), k.float(), v.float(), mask=mask.float(), is_causal=True, block_size=16)
    assert out.dtype == dtype and torch.equal(out, ref.to(dtype))


@pytest.mark.parametrize("shape", [(7, 4), (2, 7, 4), (2, 3, 1, 7, 4)])
def test_tiled_takes_any_number_of_batch_dimensions(shape):
    q, k, v = qkv(*shape)
    out = ef.tiled_attention(q, k, v, is_causal=True, block_size=3)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True), atol=1e-5, rtol=1e-5)


def test_tiled_errors_name_the_argument_in_full():
    q, k, v = qkv(2, 1, 8, 4)
    with pytest.raises(ValueError, match=r"^block_size must be a positive integer, got 0$"):
        ef.tiled_attention(q, k, v, block_size=0)
    with pytest.raises(ValueError, match=r"^tiled_attention needs equal batch dimensions, got q \(2, 1, 8, 4\), "
                                         r"k \(2, 3, 8, 4\), v \(1, 3, 8, 4\)$"):
        ef.tiled_attention(q, k.expand(2, 3, 8, 4), v[:1].expand(1, 3, 8, 4))


@pytest.mark.parametrize("block_size", [2, 3, 16])
def test_tiled_custom_scale_and_small_blocks_equal_sdpa(block_size):
    q, k, v = qkv(2, 2, 19, 8)
    for L in (19, 11):
        out = ef.tiled_attention(q[..., :L, :], k, v, is_causal=True, scale=0.3, block_size=block_size)
        allowed = masks.causal(L, 19, offset=19 - L)
        ref = F.scaled_dot_product_attention(q[..., :L, :], k, v, attn_mask=allowed, scale=0.3)
        torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


def test_tiled_keeps_one_running_maximum_per_row():
    """Rows of very different scale: a maximum shared across rows would underflow the small rows."""
    q, k, v = qkv(2, 1, 8, 8)
    q = q * torch.tensor([100.0, 1.0, 1e-3, 30.0, 1.0, 1.0, 1.0, 1.0])[:, None]  # row 0's scores reach ~100s
    q[1] *= 0.01  # and one batch element much smaller than the other
    out = ef.tiled_attention(q, k, v, block_size=4)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v), atol=1e-5, rtol=1e-5)


def test_tiled_casts_an_additive_mask_of_another_dtype():
    q, k, v = qkv(1, 2, 9, 4)
    mask = masks.to_additive(masks.sliding_window(9, window=3), torch.float64) + 0.1
    with torch.no_grad():
        out = ef.tiled_attention(q, k, v, mask=mask, block_size=4)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask.float()), atol=1e-5, rtol=1e-5)


def test_tiled_updates_in_place_without_autograd_and_copies_with_it():
    """The running sums are updated in place when no gradient is needed (the fast path), and out of
    place when one is; a tensor that merely exists does not ask for a gradient."""
    q, k, v = qkv(1, 2, 12, 4)
    run = lambda *t: ef.tiled_attention(*t, is_causal=True, block_size=4)  # noqa: E731
    fast = attn.measure.operators(lambda: run(q, k, v))
    assert {"masked_fill_", "baddbmm_", "exp_"} <= set(fast), fast
    slow = attn.measure.operators(lambda: run(q.requires_grad_(), k, v))
    assert not {"masked_fill_", "baddbmm_", "exp_"} & set(slow), slow


def test_tiled_causal_with_more_queries_than_keys_computes_only_the_tiles_with_visible_keys():
    q, _, _ = qkv(1, 1, 64, 8)
    _, k, v = qkv(1, 1, 16, 8)
    ops = attn.measure.operators(lambda: ef.tiled_attention(q, k, v, is_causal=True, block_size=16))
    assert ops.count("bmm") == 1  # the first 48 queries see no key: their tiles are skipped


@pytest.mark.parametrize("grad", [False, True])
def test_tiled_builds_its_causal_tiles_on_the_inputs_device(grad):
    """On meta a CPU-made triangle fails (the out-of-place masked_fill of the autograd path checks it)."""
    q, k, v = (t.to("meta").requires_grad_(grad) for t in qkv(1, 2, 9, 4))
    assert ef.tiled_attention(q, k, v, is_causal=True, block_size=4).device.type == "meta"


# --- fully masked rows: finite gradients on every path (issue 18) ---------------------------------

_EMPTY_ROW_CASES = ["bool", "additive", "causal_L_gt_S"]


def _empty_row_inputs(case, dtype):
    L, S = (6, 6) if case != "causal_L_gt_S" else (9, 6)
    q = torch.randn(1, 2, L, 16, generator=torch.Generator().manual_seed(4), dtype=dtype)
    k, v = (torch.randn(1, 2, S, 16, generator=torch.Generator().manual_seed(5 + i), dtype=dtype) for i in range(2))
    if case == "causal_L_gt_S":
        return (q, k, v), dict(is_causal=True), masks.causal(L, S, offset=S - L)
    m = torch.ones(L, S, dtype=torch.bool)
    m[2] = False
    return (q, k, v), dict(mask=m if case == "bool" else masks.to_additive(m, dtype)), m


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("case", _EMPTY_ROW_CASES)
@pytest.mark.parametrize("path", ["tiled", "sdpa", "weights"])
def test_fully_masked_row_gives_zero_output_and_finite_gradients_on_every_path(path, case, dtype):
    """A query with no visible key: output zeros, gradients finite and zero for its query row, even
    with a large upstream gradient (100: the tiled path used to divide by finfo.tiny, whose
    gradient 1/tiny overflows, and inf * 0 = NaN)."""
    (q, k, v), kw, allowed = _empty_row_inputs(case, dtype)
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    if path == "tiled":
        out = ef.tiled_attention(q, k, v, block_size=4, **kw)
    else:
        out = attn.scaled_dot_product_attention(q, k, v, return_weights=path == "weights", **kw)
        out = out[0] if path == "weights" else out
    empty = ~allowed.any(-1)  # (L,)
    assert out[..., empty, :].abs().max() == 0
    g = 100 * torch.randn(out.shape, generator=torch.Generator().manual_seed(9)).to(dtype)
    out.backward(g)
    for name, t in (("q", q), ("k", k), ("v", v)):
        assert torch.isfinite(t.grad).all(), f"{name}.grad has NaN/inf on the {path} path ({case}, {dtype})"
    assert q.grad[..., empty, :].abs().max() == 0


def test_tiled_gradients_with_a_fully_masked_row_equal_sdpa():
    (q, k, v), kw, _ = _empty_row_inputs("additive", torch.float64)
    a = [t.clone().requires_grad_() for t in (q, k, v)]
    b = [t.clone().requires_grad_() for t in (q, k, v)]
    g = 100 * torch.randn(1, 2, 6, 16, dtype=torch.float64)
    ef.tiled_attention(*a, block_size=4, **kw).backward(g)
    attn.scaled_dot_product_attention(*b, **kw).backward(g)
    for x, y in zip(a, b, strict=True):
        torch.testing.assert_close(x.grad, y.grad, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("needs_grad", [False, True])
def test_tiled_backward_into_a_learned_additive_mask(needs_grad):
    """A bias that needs a gradient, with q, k, v that may not: the result and the bias's gradient
    equal PyTorch's (the in-place fast path must not be taken)."""
    q, k, v = qkv(1, 2, 10, 8, dtype=torch.float64, requires_grad=needs_grad)
    bias = torch.randn(2, 10, 10, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    a, b = bias.clone().requires_grad_(), bias.clone().requires_grad_()
    g = torch.randn(1, 2, 10, 8, generator=torch.Generator().manual_seed(8), dtype=torch.float64)
    out = ef.tiled_attention(q, k, v, mask=a, block_size=4)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=b)
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=1e-10)
    out.backward(g)
    ref.backward(g)
    torch.testing.assert_close(a.grad, b.grad, atol=1e-10, rtol=1e-10)


# --- banded sliding window, Longformer, BigBird --------------------------------------------------

@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("window,block", [(1, None), (4, None), (4, 7), (16, 16), (200, None)])
def test_banded_equals_full_attention_under_sliding_window_mask(causal, window, block):
    q, k, v = qkv(2, 3, 90, 8, dtype=torch.float64)
    out = ef.banded_attention(q, k, v, window=window, is_causal=causal, block_size=block)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=masks.sliding_window(90, window=window, is_causal=causal))
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=1e-10)


def test_banded_cost_grows_linearly_with_length():
    small = attn.measure.flops(lambda: ef.banded_attention(*qkv(1, 1, 512, 16), window=32))
    large = attn.measure.flops(lambda: ef.banded_attention(*qkv(1, 1, 2048, 16), window=32))
    assert large == 4 * small  # 4x the length, 4x the work (full attention: 16x)


def test_longformer_equals_full_attention_under_local_global_mask():
    q, k, v = qkv(2, 2, 77, 8, dtype=torch.float64)
    g = (0, 5, 76)
    out = ef.longformer_attention(q, k, v, window=6, global_tokens=g, block_size=10)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=masks.local_global(77, window=6, global_tokens=g))
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=1e-10)


def test_bigbird_equals_full_attention_under_its_mask():
    L = 64
    q, k, v = qkv(2, 2, L, 8, dtype=torch.float64)
    rnd = ef.random_keys(L, num_random=3, seed=4)
    keep = masks.local_global(L, window=4, global_tokens=(0, 1))
    keep[torch.arange(L).unsqueeze(1), rnd] = True
    out = ef.bigbird_attention(q, k, v, window=4, global_tokens=(0, 1), random=rnd)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=1e-10)


def test_bigbird_reproduces_attn_masks_bigbird():
    L, r = 40, 2
    keep = masks.bigbird(L, window=3, global_tokens=(0,), num_random=r, seed=7)
    extra = keep & ~masks.local_global(L, window=3, global_tokens=(0,))  # the random keys not already kept
    rnd = torch.arange(L).unsqueeze(1).repeat(1, r)  # a query's own index: in its window, counted once
    for i in range(L):
        idx = extra[i].nonzero().flatten()
        rnd[i, : idx.numel()] = idx
    q, k, v = qkv(1, 2, L, 8, dtype=torch.float64)
    out = ef.bigbird_attention(q, k, v, window=3, global_tokens=(0,), random=rnd)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=keep), atol=1e-10, rtol=1e-10)


def test_sparse_attention_errors_name_the_argument():
    q, k, v = qkv(1, 1, 16, 4)
    with pytest.raises(ValueError, match="window"):
        ef.banded_attention(q, k, v, window=0)
    with pytest.raises(ValueError, match="block_size"):
        ef.banded_attention(q, k, v, window=2, block_size=0)
    with pytest.raises(ValueError, match="global_tokens"):
        ef.longformer_attention(q, k, v, window=2, global_tokens=(16,))
    with pytest.raises(ValueError, match="random"):
        ef.bigbird_attention(q, k, v, window=2, random=torch.zeros(15, 2, dtype=torch.long))
    with pytest.raises(ValueError, match=r"random must lie in \[0, L=16\) \(key indices\), got entries from -1 to 30"):
        ef.bigbird_attention(q, k, v, window=2, random=torch.arange(-1, 31).view(16, 2))
    with pytest.raises(ValueError, match="self-attention"):
        ef.banded_attention(q, k[..., :8, :], v[..., :8, :], window=2)
    with pytest.raises(ValueError, match="num_random"):
        ef.random_keys(4, num_random=5)


# --- strided (Sparse Transformer) and LSH (Reformer) ---------------------------------------------

def _strided_mask(L, window, stride, causal=False):
    return (masks.sliding_window(L, window=window, is_causal=causal)
            | masks.dilated(L, window=L, dilation=stride, is_causal=causal))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("L,window,stride,block", [(64, 8, 8, None), (37, 3, 6, None), (50, 4, 7, 5),
                                                    (10, 1, 3, None), (5, 2, 7, None), (30, 40, 4, None)])
def test_strided_equals_full_attention_under_window_or_stride_mask(causal, L, window, stride, block):
    q, k, v = qkv(2, 3, L, 8, dtype=torch.float64)
    out = ef.strided_attention(q, k, v, window=window, stride=stride, is_causal=causal, block_size=block)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=_strided_mask(L, window, stride, causal))
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=1e-10)


def test_strided_gradients_equal_masked_sdpa():
    a = qkv(1, 2, 40, 8, dtype=torch.float64, requires_grad=True)
    b = [t.detach().clone().requires_grad_() for t in a]
    ef.strided_attention(*a, window=4, stride=6).square().sum().backward()
    F.scaled_dot_product_attention(*b, attn_mask=_strided_mask(40, 4, 6)).square().sum().backward()
    for x, y in zip(a, b, strict=True):
        torch.testing.assert_close(x.grad, y.grad, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("L,window,stride", [(64, 8, 8), (37, 3, 6), (10, 1, 3), (1024, 32, 32)])
def test_strided_computes_exactly_the_counted_scores(causal, L, window, stride):
    E, Ev = 8, 4
    q, k, _ = qkv(1, 2, L, E)
    v = torch.randn(1, 2, L, Ev)
    with torch.no_grad():
        flops = attn.measure.flops(ef.strided_attention, q, k, v, window=window, stride=stride, is_causal=causal)
    scores = ef.strided_score_count(L, window=window, stride=stride, is_causal=causal)
    assert flops == 2 * 2 * (E + Ev) * scores  # 2 heads; q·k and p·v, a multiply-add counts two


def test_strided_cost_grows_as_n_to_the_one_and_a_half():
    counts = [ef.strided_score_count(n, window=int(n**0.5), stride=int(n**0.5)) for n in (1024, 4096, 16384)]
    assert counts == [n * (4 * int(n**0.5) - 2) for n in (1024, 4096, 16384)]  # about 4 L sqrt(L)
    assert ef.strided_score_count(1024, window=32, stride=32, is_causal=True) == 1024 * (3 * 32 - 1)


@pytest.mark.parametrize("causal", [False, True])
def test_strided_pattern_reaches_every_key_in_two_steps_when_the_window_is_at_least_the_stride(causal):
    L = 50
    want = masks.causal(L) if causal else torch.ones(L, L, dtype=torch.bool)
    for window, stride in [(4, 4), (7, 7), (9, 7)]:
        keep = _strided_mask(L, window, stride, causal).double()
        assert torch.equal((keep @ keep) > 0, want), (window, stride)
    keep = _strided_mask(L, 3, 5, causal).double()  # a window shorter than the stride leaves gaps
    assert not torch.equal((keep @ keep) > 0, want)


def _lsh_reference(qk, v, num_buckets, chunk, rounds, causal, seed=0):
    """Full attention (SDPA) under the pairs some round puts in one bucket and in the same or
    previous chunk after sorting; a query's own key only when it has none. Written with loops."""
    L, E = qk.shape[-2:]
    x, vv = qk.reshape(-1, L, E), v.reshape(-1, L, v.shape[-1])
    rot = ef.random_rotations(E, num_buckets=num_buckets, num_hashes=rounds, seed=seed)
    buckets = ef.lsh_buckets(x, rot)
    outs = []
    for n in range(x.shape[0]):
        keep = torch.zeros(L, L, dtype=torch.bool)
        for r in range(rounds):
            b = buckets[n, r].tolist()
            order = sorted(range(L), key=lambda p, b=b: (b[p], p))
            chunk_of = {p: i // chunk for i, p in enumerate(order)}
            for i in range(L):
                for j in range(L):
                    keep[i, j] |= b[i] == b[j] and chunk_of[i] - chunk_of[j] in (0, 1)
        if causal:
            keep &= masks.causal(L)
        keep &= ~torch.eye(L, dtype=torch.bool)
        alone = ~keep.any(-1)
        keep[alone, alone.nonzero().flatten()] = True
        outs.append(F.scaled_dot_product_attention(x[n], F.normalize(x[n], dim=-1), vv[n], attn_mask=keep))
    return torch.stack(outs).reshape(*qk.shape[:-1], v.shape[-1])


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("L,buckets,chunk,rounds", [(24, 4, 6, 2), (30, 8, 4, 3), (13, 2, 5, 1), (16, 1, 4, 2),
                                                     (7, 2, 10, 4)])
def test_lsh_equals_full_attention_under_the_union_of_its_rounds(causal, L, buckets, chunk, rounds):
    qk, v, _ = qkv(2, 2, L, 8, dtype=torch.float64)
    out = ef.lsh_attention(qk, v, num_buckets=buckets, chunk_size=chunk, num_hashes=rounds, is_causal=causal)
    ref = _lsh_reference(qk, v, buckets, min(chunk, L), rounds, causal)
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=1e-10)


def test_lsh_with_one_bucket_and_one_chunk_is_full_attention_without_the_diagonal():
    qk, v, _ = qkv(2, 3, 20, 8, dtype=torch.float64)
    out = ef.lsh_attention(qk, v, num_buckets=1, chunk_size=20)
    keys = F.normalize(qk, dim=-1)
    ref = F.scaled_dot_product_attention(qk, keys, v, attn_mask=~torch.eye(20, dtype=torch.bool))
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=1e-10)


def test_lsh_buckets_are_the_argmax_over_rotations_and_their_negatives():
    x = torch.randn(3, 10, 8)
    rot = ef.random_rotations(8, num_buckets=6, num_hashes=2, seed=3)
    b = ef.lsh_buckets(x, rot)
    for r in range(2):
        proj = x @ rot[r]  # (3, 10, 3)
        assert torch.equal(b[:, r], torch.cat([proj, -proj], -1).argmax(-1))
    assert b.min() >= 0 and b.max() < 6
    assert torch.equal(rot, ef.random_rotations(8, num_buckets=6, num_hashes=2, seed=3))  # the seed fixes them


@pytest.mark.parametrize("L,buckets,chunk,rounds", [(24, 4, 6, 2), (30, 8, 4, 3), (100, 1, 16, 1)])
def test_lsh_computes_exactly_the_counted_scores_plus_the_hashing(L, buckets, chunk, rounds):
    E, Ev = 8, 4
    qk, v = torch.randn(1, 2, L, E), torch.randn(1, 2, L, Ev)
    with torch.no_grad():
        flops = attn.measure.flops(ef.lsh_attention, qk, v, num_buckets=buckets, chunk_size=chunk,
                                   num_hashes=rounds)
    hashing = 2 * 2 * L * E * (buckets // 2) * rounds
    assert flops == 2 * 2 * (E + Ev) * ef.lsh_score_count(L, chunk_size=chunk, num_hashes=rounds) + hashing
    assert ef.lsh_score_count(1024, chunk_size=64, num_hashes=2) == 2 * 1024 * 128  # linear in L


def test_lsh_is_causal_and_has_finite_gradients():
    qk, v, _ = qkv(1, 2, 30, 8, requires_grad=True)
    out = ef.lsh_attention(qk, v, num_buckets=4, chunk_size=4, num_hashes=2, is_causal=True)
    out.square().sum().backward()
    assert torch.isfinite(qk.grad).all() and torch.isfinite(v.grad).all()
    qk2, v2 = qk.detach().clone(), v.detach().clone()
    qk2[..., 20:, :], v2[..., 20:, :] = torch.randn(1, 2, 10, 8), torch.randn(1, 2, 10, 8)
    out2 = ef.lsh_attention(qk2, v2, num_buckets=4, chunk_size=4, num_hashes=2, is_causal=True)
    # the future changes the buckets and the sort, but no past query may attend to it
    ref = _lsh_reference(qk2.double(), v2.double(), 4, 4, 2, True)
    torch.testing.assert_close(out2.double(), ref, atol=1e-5, rtol=1e-5)


def test_strided_and_lsh_errors_name_the_argument():
    q, k, v = qkv(1, 1, 16, 4)
    with pytest.raises(ValueError, match="stride"):
        ef.strided_attention(q, k, v, window=2, stride=0)
    with pytest.raises(ValueError, match="self-attention"):
        ef.strided_attention(q, k[..., :8, :], v[..., :8, :], window=2, stride=3)
    with pytest.raises(ValueError, match="num_buckets"):
        ef.lsh_attention(q, v, num_buckets=3, chunk_size=4)
    with pytest.raises(ValueError, match="chunk_size"):
        ef.lsh_attention(q, v, num_buckets=2, chunk_size=0)
    with pytest.raises(ValueError, match=r"rotations must be \(num_hashes, E, num_buckets // 2\) = \(1, 4, 1\)"):
        ef.lsh_attention(q, v, num_buckets=2, chunk_size=4, rotations=torch.randn(1, 4, 2))
    with pytest.raises(ValueError, match="qk and v"):
        ef.lsh_attention(q, v[..., :8, :], num_buckets=2, chunk_size=4)


# --- linear attention and Linformer --------------------------------------------------------------

def _kernel_attention_quadratic(q, k, v, causal):
    a = ef.elu_feature_map(q) @ ef.elu_feature_map(k).transpose(-2, -1)  # (..., L, S)
    if causal:
        a = a.tril()
    return (a @ v) / (a.sum(-1, keepdim=True) + 1e-6)


@pytest.mark.parametrize("causal", [False, True])
def test_linear_attention_equals_its_quadratic_form(causal):
    q, k, v = qkv(2, 3, 50, 8, dtype=torch.float64)
    out = ef.linear_attention(q, k, v, is_causal=causal, chunk_size=16)
    torch.testing.assert_close(out, _kernel_attention_quadratic(q, k, v, causal), atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_causal_linear_attention_recurrent_equals_parallel(chunk):
    q, k, v = qkv(2, 2, 33, 8, dtype=torch.float64)
    torch.testing.assert_close(ef.linear_attention_recurrent(q, k, v),
                               ef.linear_attention(q, k, v, is_causal=True, chunk_size=chunk), atol=1e-10, rtol=1e-10)


def test_causal_linear_attention_ignores_the_future():
    q, k, v = qkv(1, 1, 20, 4)
    k2, v2 = k.clone(), v.clone()
    k2[..., 10:, :] += 5
    v2[..., 10:, :] -= 3
    a = ef.linear_attention(q, k, v, is_causal=True, chunk_size=8)
    b = ef.linear_attention(q, k2, v2, is_causal=True, chunk_size=8)
    torch.testing.assert_close(a[..., :10, :], b[..., :10, :])


def test_linformer_with_identity_projection_is_exact_attention():
    q, k, v = qkv(2, 2, 24, 8)
    out = ef.linformer_attention(q, k, v, torch.eye(24))
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v), atol=1e-5, rtol=1e-5)


def test_linformer_projection_reduces_keys_to_rank_and_checks_inputs():
    """The output is exact attention over the r projected keys and values (computed here by hand)."""
    proj = ef.LinformerProjection(32, 4, shared=False)
    q, k, v = qkv(2, 2, 32, 8, dtype=torch.float64)
    proj = proj.double()
    assert proj.proj_k.shape == proj.proj_v.shape == (4, 32)
    kp, vp = proj.proj_k @ k, proj.proj_v @ v  # (2, 2, 4, 8): 4 mixed keys and values
    ref = torch.softmax(q @ kp.transpose(-2, -1) / 8 ** 0.5, dim=-1) @ vp
    torch.testing.assert_close(proj(q, k, v), ref, atol=1e-12, rtol=1e-12)
    assert not torch.equal(proj.proj_k, proj.proj_v)  # shared=False: two matrices
    with pytest.raises(ValueError, match=r"rank \(40\).*seq_len \(32\)"):
        ef.LinformerProjection(32, 40)
    with pytest.raises(ValueError, match="proj_k must have shape"):
        ef.linformer_attention(q, k, v, torch.ones(4, 31))
    with pytest.raises(ValueError, match="seq_len = 32"):
        proj(q, k[..., :16, :], v[..., :16, :])


# --- grouped-query attention ----------------------------------------------------------------------

def test_gqa_with_as_many_kv_heads_as_heads_equals_multi_head_attention():
    torch.manual_seed(0)
    mha = attn.MultiHeadAttention(32, 4)
    gqa = ef.GroupedQueryAttention.from_multi_head(mha)
    x = torch.randn(2, 9, 32)
    for causal in (False, True):
        torch.testing.assert_close(gqa(x, is_causal=causal)[0], mha(x, is_causal=causal)[0], atol=1e-5, rtol=1e-5)


def test_gqa_equals_multi_head_attention_with_repeated_kv_heads():
    torch.manual_seed(0)
    gqa = ef.GroupedQueryAttention(32, 8, 2)
    x = torch.randn(2, 9, 32)
    B, L, H, E = 2, 9, 8, 4
    q = gqa.q_proj(x).view(B, L, H, E).transpose(1, 2)
    k, v = gqa.kv_proj(x).view(B, L, 2, 2, E).permute(2, 0, 3, 1, 4)
    k, v = k.repeat_interleave(4, dim=1), v.repeat_interleave(4, dim=1)  # heads 0-3 share K/V head 0
    ref = gqa.out_proj(attn.functional.explicit_attention(q, k, v, masks.causal(L))[0].transpose(1, 2).reshape(B, L, 32))
    torch.testing.assert_close(gqa(x, is_causal=True)[0], ref, atol=1e-5, rtol=1e-5)


def test_gqa_cached_decoding_equals_full_pass_and_cache_is_smaller():
    torch.manual_seed(0)
    gqa = ef.GroupedQueryAttention(32, 8, 2)
    x = torch.randn(1, 12, 32)
    full = gqa(x, is_causal=True)[0]
    cache = attn.KVCache()
    steps = [gqa(x[:, :5], is_causal=True, cache=cache)[0]] + [gqa(x[:, t:t + 1], is_causal=True, cache=cache)[0]
                                                             for t in range(5, 12)]
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-5)
    assert cache.k.shape == (1, 2, 12, 4)
    held = cache.k.nbytes + cache.v.nbytes
    assert held == ef.kv_cache_bytes(batch=1, seq_len=12, num_layers=1, num_kv_heads=2, d_head=4)
    assert held * 4 == ef.kv_cache_bytes(batch=1, seq_len=12, num_layers=1, num_kv_heads=8, d_head=4)


def test_gqa_rejects_kv_heads_that_do_not_divide_heads():
    with pytest.raises(ValueError, match=r"num_heads \(8\) must be divisible by num_kv_heads \(3\): each key/value "
                                         r"head serves num_heads / num_kv_heads = 2.66667 query heads"):
        ef.GroupedQueryAttention(32, 8, 3)
    with pytest.raises(ValueError, match="num_kv_heads must be a positive integer, got True"):
        ef.GroupedQueryAttention(32, 8, True)
    with pytest.raises(ValueError, match="num_kv_heads"):
        ef.GroupedQueryAttention(32, 8, 0)


# --- gradient checkpointing ------------------------------------------------------------------------

def test_checkpointing_keeps_results_and_gradients_and_saves_activation_memory():
    torch.manual_seed(0)
    layers = torch.nn.ModuleList(attn.blocks.EncoderLayer(32, 4, 64, dropout=0.0) for _ in range(3))
    x = torch.randn(2, 40, 32, requires_grad=True)
    results = {}
    for ck in (False, True):
        out, saved = ef.saved_activation_bytes(lambda ck=ck: ef.checkpointed(layers, x, checkpoint_layers=ck, is_causal=True))
        out.square().sum().backward()
        results[ck] = (out.detach(), x.grad.clone(), [p.grad.clone() for p in layers.parameters()], saved)
        x.grad = None
        layers.zero_grad()
    (o0, g0, p0, s0), (o1, g1, p1, s1) = results[False], results[True]
    torch.testing.assert_close(o1, o0)
    torch.testing.assert_close(g1, g0)
    for a, b in zip(p1, p0, strict=True):
        torch.testing.assert_close(a, b)
    assert s1 == 3 * x.nbytes  # only each layer's input is kept
    assert s0 > 10 * s1


# --- the swappable layer -----------------------------------------------------------------------------

@pytest.mark.parametrize("kind,kwargs", [("full", {}), ("tiled", {}), ("window", {"window": 100})])
def test_swapped_exact_kinds_give_the_model_its_original_output(kind, kwargs):
    torch.manual_seed(0)
    model = attn.models.TokenModel(20, d_model=16, num_heads=2, num_layers=2, max_len=30, is_causal=True).eval()
    tokens = torch.randint(0, 20, (2, 30))
    expected = model(tokens)
    ef.swap_attention(model, kind, **kwargs)
    assert isinstance(model.layers[0].self_attn, ef.EfficientSelfAttention)
    torch.testing.assert_close(model(tokens), expected, atol=1e-5, rtol=1e-5)


def test_swapped_approximate_kinds_run_and_reject_what_they_cannot_do():
    torch.manual_seed(0)
    model = attn.models.TokenModel(20, d_model=16, num_heads=2, num_layers=1, max_len=30)
    tokens = torch.randint(0, 20, (2, 30))
    model.eval()
    expected = model(tokens)
    assert ef.swap_attention(model, "linformer", rank=30, seq_len=30) is model
    with torch.no_grad():  # an identity projection at full rank: Linformer is exact attention again
        model.layers[0].self_attn.linformer.proj_k.copy_(torch.eye(30))
    torch.testing.assert_close(model(tokens), expected, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="kind must be one of"):
        ef.EfficientSelfAttention(16, 2, "sparse")
    with pytest.raises(ValueError, match="cannot be causal"):
        ef.EfficientSelfAttention(16, 2, "linformer", rank=4, seq_len=30)(torch.randn(1, 30, 16), is_causal=True)


# --- which kernel runs ------------------------------------------------------------------------------

def test_sdpa_path_sees_the_fused_cpu_kernel_and_the_math_fallbacks():
    q, k, v = qkv(1, 2, 16, 8)
    assert attn.measure.sdpa_path(lambda: F.scaled_dot_product_attention(q, k, v)) == "fused (flash, CPU)"
    assert attn.measure.sdpa_path(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=masks.causal(16))) == "fused (flash, CPU)"
    assert attn.measure.sdpa_path(lambda: F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)) == "math (matmul + softmax)"
    assert attn.measure.sdpa_path(lambda: F.scaled_dot_product_attention(q[0], k[0], v[0])) == "math (matmul + softmax)"
    assert "bmm" in attn.measure.operators(lambda: attn.functional.explicit_attention(q, k, v))


# --- Transformer-XL-style segment recurrence ----------------------------------------------------------

def test_two_segments_with_memory_equal_one_pass_over_both():
    torch.manual_seed(0)
    model = ef.SegmentRecurrentLM(16, 16, 2, 2, max_distance=32)
    torch.nn.init.normal_(model.rel_bias)  # a non-trivial relative bias
    x = torch.randint(0, 16, (2, 20))
    full, _ = model(x)
    torch.testing.assert_close(model.segments(x, 10), full, atol=1e-5, rtol=1e-5)


def test_without_memory_each_segment_is_computed_alone():
    torch.manual_seed(0)
    model = ef.SegmentRecurrentLM(16, 16, 2, 1)
    x = torch.randint(0, 16, (1, 20))
    alone, _ = model(x[:, 10:])
    torch.testing.assert_close(model.segments(x, 10, memory=False)[:, 10:], alone)
    assert not torch.allclose(model.segments(x, 10)[:, 10:], alone)


def test_memory_is_kept_without_gradient():
    model = ef.SegmentRecurrentLM(16, 16, 2, 1)
    _, mems = model(torch.randint(0, 16, (1, 8)))
    assert not mems[0].requires_grad


def test_delayed_copy_targets_are_the_tokens_delay_back():
    tokens, targets = book.data.delayed_copy(3, 20, 5, seed=1)
    assert torch.equal(targets[:, 5:], tokens[:, :-5])
    assert (targets[:, :5] == -100).all()


def _segment_reference(model, tokens, mems=None):
    """The pre-LN forward with a memory written out step by step, without dropout (the former
    implementation), for comparison in eval mode."""
    x = model.embed(tokens)
    for i, layer in enumerate(model.layers):
        h = layer.norm1(x)
        ctx = h if mems is None else torch.cat([layer.norm1(mems[i]), h], dim=1)  # (B, M + T, D)
        x = x + layer.self_attn(h, ctx, ctx, mask=model.relative_bias(i, h.shape[1], ctx.shape[1]))[0]
        x = x + layer.ff(layer.norm2(x))
    return model.head(model.norm(x))


def test_segment_recurrence_in_eval_equals_the_pre_ln_forward_written_out():
    torch.manual_seed(0)
    model = ef.SegmentRecurrentLM(16, 16, 2, 2, max_distance=6, dropout=0.3).eval()
    torch.nn.init.normal_(model.rel_bias)
    a, b = torch.randint(0, 16, (2, 9)), torch.randint(0, 16, (2, 7))
    out, mems = model(a)
    torch.testing.assert_close(out, _segment_reference(model, a), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(model(b, mems)[0], _segment_reference(model, b, mems), atol=1e-5, rtol=1e-5)
    grads = []
    for forward in (lambda: model(b, mems)[0], lambda: _segment_reference(model, b, mems)):
        model.zero_grad()
        forward().square().sum().backward()  # the memory's keys and values train the projections too
        grads.append([p.grad.clone() for p in model.parameters()])
    for new, ref in zip(*grads, strict=True):
        torch.testing.assert_close(new, ref, atol=1e-4, rtol=1e-4)


def test_segment_recurrence_applies_the_blocks_dropout_in_training():
    torch.manual_seed(0)
    tokens = torch.randint(0, 16, (2, 8))
    for p in (0.0, 0.5):
        model = ef.SegmentRecurrentLM(16, 16, 2, 2, dropout=p)
        _, mems = model(tokens)
        outs = []
        for _ in range(2):
            torch.manual_seed(1)
            outs.append(model.train()(tokens, mems)[0])
        evald = model.eval()(tokens, mems)[0]
        torch.testing.assert_close(outs[0], outs[1])  # one seed, one dropout draw
        if p == 0.0:
            torch.testing.assert_close(outs[0], evald)
        else:
            assert (outs[0] - evald).abs().max() > 1e-2  # the blocks' dropouts act in training mode
            for layer in model.layers:  # the block's own residual dropouts: turning them off changes the output
                layer.dropout1.p = layer.dropout2.p = 0.0
            torch.manual_seed(1)
            assert not torch.allclose(model.train()(tokens, mems)[0], outs[0])


def test_recurrence_errors_name_the_argument():
    with pytest.raises(ValueError, match="max_distance"):
        ef.SegmentRecurrentLM(16, max_distance=0)
    model = ef.SegmentRecurrentLM(16, 16, 2, 2)
    with pytest.raises(ValueError, match="segment_len"):
        model.segments(torch.zeros(1, 4, dtype=torch.long), 0)
    with pytest.raises(ValueError, match=r"mems must hold one tensor per layer \(2\)"):
        model(torch.zeros(1, 4, dtype=torch.long), [torch.zeros(1, 4, 16)])


def test_linformer_pooling_projection_at_full_rank_is_exact_and_error_falls_with_rank():
    q, k, v = qkv(1, 2, 64, 8)
    exact = F.scaled_dot_product_attention(q, k, v)
    errors = []
    for r in (4, 16, 64):
        with torch.no_grad():
            approx = ef.LinformerProjection(64, r, learned=False, init="pool")(q, k, v)
        errors.append(((approx - exact).norm() / exact.norm()).item())
    assert errors[0] > errors[1] > errors[2] and errors[2] < 1e-6
    with pytest.raises(ValueError, match="init must be"):
        ef.LinformerProjection(64, 4, init="svd")


# --- swap_attention and bad input to the efficient APIs (issue 18, items 3 and 4) -------------------

@pytest.mark.parametrize("make_pos", [lambda: attn.ALiBi(2), lambda: attn.RotaryPositionalEncoding(8),
                                      lambda: attn.T5RelativePositionBias(2)], ids=["alibi", "rope", "t5"])
def test_swap_attention_refuses_positions_that_act_inside_attention(make_pos):
    """Dropping the encoding silently changed the model's outputs; the swap now refuses, naming
    the encoding, and leaves the model as it was."""
    torch.manual_seed(0)
    model = attn.models.TokenModel(20, d_model=16, num_heads=2, num_layers=2, max_len=12, positional=make_pos()).eval()
    tokens = torch.randint(0, 20, (2, 12))
    expected = model(tokens)
    with pytest.raises(ValueError, match=rf"cannot carry the positional encoding {type(make_pos()).__name__}"):
        ef.swap_attention(model, "full")
    assert all(isinstance(b.self_attn, attn.MultiHeadAttention) for b in model.layers)
    torch.testing.assert_close(model(tokens), expected, atol=0, rtol=0)


def test_swap_attention_keeps_bias_free_projections_and_the_dtype():
    torch.manual_seed(0)
    model = attn.models.TokenModel(20, d_model=16, num_heads=2, num_layers=1, max_len=12, is_causal=True)
    for block in model.layers:
        block.self_attn = attn.MultiHeadAttention(16, 2, bias=False)
    model = model.double().eval()
    tokens = torch.randint(0, 20, (2, 12))
    expected = model(tokens)
    ef.swap_attention(model, "tiled")
    new = model.layers[0].self_attn
    assert new.in_proj.bias is None and new.out_proj.bias is None and new.in_proj.weight.dtype == torch.float64
    torch.testing.assert_close(model(tokens), expected, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("heads", [0, -4, 2.0, True])
def test_efficient_self_attention_names_a_bad_head_count(heads):
    with pytest.raises(ValueError, match=rf"num_heads must be a positive integer, got {heads!r}"):
        ef.EfficientSelfAttention(16, heads)
    with pytest.raises(ValueError, match="d_model must be a positive integer, got 0"):
        ef.EfficientSelfAttention(0, 2)


@pytest.mark.parametrize("S", [3, 7])
def test_linear_attention_recurrent_needs_one_length(S):
    q, _, _ = qkv(1, 5, 4)
    _, k, v = qkv(1, S, 4)
    with pytest.raises(ValueError, match=r"needs L == S, got q \(1, 5, 4\) and k \(1, " + str(S)):
        ef.linear_attention_recurrent(q, k, v)


@pytest.mark.parametrize("dtype", [torch.long, torch.float64])
def test_gqa_names_an_input_of_the_wrong_dtype(dtype):
    gqa = ef.GroupedQueryAttention(16, 4, 2)
    x = torch.ones(1, 3, 16, dtype=dtype)
    match = "x must be a floating-point tensor, got dtype torch.int64" if dtype == torch.long else \
        r"x has dtype torch.float64 but the parameters of this GroupedQueryAttention are torch.float32"
    with pytest.raises(TypeError, match=match):
        gqa(x)
    assert gqa.double()(torch.ones(1, 3, 16, dtype=torch.float64))[0].dtype == torch.float64


@pytest.mark.parametrize("L,S", [(-3, None), (0, None), (4, -1)])
def test_random_keys_names_a_bad_length(L, S):
    name, bad = ("L", L) if S is None else ("S", S)
    with pytest.raises(ValueError, match=rf"{name} must be a positive integer, got {bad}"):
        ef.random_keys(L, S, num_random=1)


def test_segment_memories_of_the_wrong_batch_or_width_are_named():
    torch.manual_seed(0)
    lm = ef.SegmentRecurrentLM(16, d_model=8, num_heads=2, num_layers=1)
    tokens = torch.randint(0, 16, (2, 5))
    _, mems = lm(tokens)
    assert lm(tokens, mems)[0].shape == (2, 5, 16)
    with pytest.raises(ValueError, match=r"mems\[0\] must have at least 3 dimensions, got shape \(5, 8\)"):
        lm(tokens, [torch.zeros(5, 8)])
    for bad in (torch.zeros(3, 5, 8), torch.zeros(2, 5, 6), torch.zeros(2, 1, 5, 8)):
        with pytest.raises(ValueError, match=r"mems\[0\] must have shape \(B, M, D\) = \(2, M, 8\).*got " +
                           re.escape(attn._checks.fmt(bad.shape))):
            lm(tokens, [bad])


@pytest.mark.parametrize("delay", [0, -1, 1.5])
def test_delayed_copy_needs_a_positive_delay(delay):
    with pytest.raises(ValueError, match=rf"delay must be a positive integer, got {delay!r}"):
        book.data.delayed_copy(2, 8, delay)


def test_meta_flops_equals_a_real_count_and_grows_as_n_squared_for_full_attention():
    q, k, v = (torch.randn(1, 4, 64, 32) for _ in range(3))
    with torch.no_grad():
        real = attn.measure.flops(attn.functional.explicit_attention, q, k, v)
    assert book.efficient_attention.meta_flops(attn.functional.explicit_attention, 64) == real == 2 * 2 * 4 * 64 * 64 * 32
    assert book.efficient_attention.meta_flops(ef.linear_attention, 128) < book.efficient_attention.meta_flops(attn.functional.explicit_attention, 128)


# --- benchmarks/efficient_quality.py: the stored table and a tiny run ------------------------------

def _quality_benchmark(root):
    import importlib.util

    spec = importlib.util.spec_from_file_location("efficient_quality", root / "benchmarks" / "efficient_quality.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_stored_quality_table_has_every_kind_with_three_seeds_and_its_metadata(root):
    bench = _quality_benchmark(root)
    rows = book.results.measured("efficient_quality")
    assert {r["attention"] for r in rows} == set(bench.KINDS)
    for name in bench.KINDS:
        assert sorted(int(r["seed"]) for r in rows if r["attention"] == name) == [0, 1, 2]
    assert all(0 <= float(r[key]) <= 1 for r in rows for key in ("local", "long_range"))
    assert all(int(r["steps"]) == 400 and float(r["cpu_s"]) > 0 and r["torch"] for r in rows)


def test_quality_benchmark_runs_a_tiny_sweep(root, tmp_path):
    bench = _quality_benchmark(root)
    kinds = ["LSH (4 buckets, chunks of 4, 2 rounds)"]
    rows = bench.main(["--steps", "2", "--seeds", "0", "--threads", "1", "--kinds", *kinds,
                       "--out", str(tmp_path / "q.csv")])
    assert [r["attention"] for r in rows] == kinds
    import csv

    with open(tmp_path / "q.csv", newline="") as f:
        stored = list(csv.DictReader(f))
    assert [r["attention"] for r in stored] == kinds and all(r["steps"] == "2" for r in stored)
