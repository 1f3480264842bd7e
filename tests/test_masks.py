"""attn.masks: one convention (True = may attend), checked against direct constructions."""

import re

import pytest
import torch
from torch.testing import assert_close

from attn import masks


def test_causal_is_the_lower_triangle_like_pytorch_is_causal():
    assert torch.equal(masks.causal(5), torch.ones(5, 5, dtype=torch.bool).tril())
    # Top-left alignment for L != S, as torch's is_causal.
    assert torch.equal(masks.causal(3, 5), torch.ones(3, 5, dtype=torch.bool).tril())


def test_causal_offset_aligns_bottom_right_for_cached_keys():
    m = masks.causal(2, 5, offset=3)  # two new queries at positions 3 and 4
    assert m.tolist() == [[True] * 4 + [False], [True] * 5]


def test_padding_from_lengths_blocks_keys_past_each_length():
    m = masks.padding([3, 1, 4])
    assert m.shape == (3, 1, 4)
    assert m[:, 0].tolist() == [[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 1, 1]]
    assert masks.padding([2], 5, L=3).shape == (1, 3, 5)


def test_padding_rejects_bad_lengths():
    with pytest.raises(ValueError, match=r"lengths must lie in \[0, S=3\], got \[4\]"):
        masks.padding([4], 3)
    with pytest.raises(ValueError, match="lengths is empty"):
        masks.padding([])
    with pytest.raises(ValueError, match="1-D sequence of integers"):
        masks.padding(torch.tensor([1.5]))


def test_key_padding_mask_conversion_inverts_the_meaning():
    kpm = torch.tensor([[False, False, True], [False, True, True]])  # True = ignore
    m = masks.from_key_padding_mask(kpm)
    assert m.shape == (2, 1, 3)
    assert torch.equal(m[:, 0], ~kpm)
    with pytest.raises(TypeError, match="key_padding_mask must be bool"):
        masks.from_key_padding_mask(kpm.float())
    with pytest.raises(ValueError, match=r"must have shape \(B, S\), got \(3\)"):
        masks.from_key_padding_mask(torch.tensor([True, False, True]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_to_additive_gives_zero_and_minus_inf_in_every_dtype(dtype):
    keep = masks.causal(4)
    add = masks.to_additive(keep, dtype)
    assert add.dtype == dtype
    assert (add[keep] == 0).all() and torch.isneginf(add[~keep]).all()
    assert torch.equal(masks.from_additive(add), keep)


def test_to_additive_rejects_non_boolean_masks():
    with pytest.raises(TypeError, match="mask must be bool"):
        masks.to_additive(torch.zeros(2, 2))
    with pytest.raises(TypeError, match="dtype must be a floating dtype"):
        masks.to_additive(masks.causal(2), torch.int32)


def test_combine_intersects_and_broadcasts():
    m = masks.combine(masks.causal(4), masks.padding([2, 4]), None)
    assert m.shape == (2, 4, 4)
    expected0 = torch.ones(4, 4, dtype=torch.bool).tril()
    expected0[:, 2:] = False
    assert torch.equal(m[0], expected0)
    assert torch.equal(m[1], masks.causal(4))
    assert masks.combine(None) is None
    with pytest.raises(TypeError, match="argument 1 is torch.float32"):
        masks.combine(masks.causal(2), torch.zeros(2, 2))


def test_fully_masked_rows_found_for_bool_and_additive():
    m = masks.combine(masks.causal(3), masks.padding([0], 3))  # nothing to attend to at all
    assert masks.fully_masked_rows(m).all()
    assert not masks.fully_masked_rows(masks.causal(3)).any()
    assert masks.fully_masked_rows(masks.to_additive(m)).all()


def test_sliding_window_and_dilated():
    w = masks.sliding_window(6, window=2)
    i, j = torch.meshgrid(torch.arange(6), torch.arange(6), indexing="ij")
    assert torch.equal(w, (i - j).abs() < 2)
    assert torch.equal(masks.sliding_window(6, window=2, is_causal=True), ((i - j) >= 0) & ((i - j) < 2))
    d = masks.dilated(7, window=2, dilation=3)
    assert d[3].tolist() == [True, False, False, True, False, False, True]
    assert torch.equal(masks.dilated(7, window=3, dilation=1), masks.sliding_window(7, window=3))


def test_local_global_gives_global_tokens_full_rows_and_columns():
    m = masks.local_global(8, window=1, global_tokens=[0, 5])
    assert m[0].all() and m[:, 0].all() and m[5].all() and m[:, 5].all()
    assert m[3].tolist() == [True, False, False, True, False, True, False, False]
    with pytest.raises(ValueError, match="global token index 9"):
        masks.local_global(8, window=1, global_tokens=[9])


def test_bigbird_is_seeded_and_contains_local_global():
    a = masks.bigbird(16, window=1, num_random=3, seed=7)
    b = masks.bigbird(16, window=1, num_random=3, seed=7)
    c = masks.bigbird(16, window=1, num_random=3, seed=8)
    assert torch.equal(a, b) and not torch.equal(a, c)
    lg = masks.local_global(16, window=1)
    assert (a | lg).equal(a)
    assert (a.sum(1) >= lg.sum(1)).all() and (a.sum(1) <= lg.sum(1) + 3).all()


def test_prefix_lm_is_bidirectional_over_the_prefix_then_causal():
    m = masks.prefix_lm(5, prefix=2)
    assert m[0].tolist() == [True, True, False, False, False]
    assert torch.equal(m[2:], masks.causal(5)[2:] | torch.tensor([True, True, False, False, False]))
    assert torch.equal(masks.prefix_lm(5, 0), masks.causal(5))


def test_cross_padding_is_per_query_source_padding():
    m = masks.cross_padding([2, 3], L=4, S=3)
    assert m.shape == (2, 4, 3)
    assert m[0, :, 2].logical_not().all() and m[1].all()


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_sizes_must_be_positive_integers(bad):
    with pytest.raises(ValueError, match="L must be a positive integer"):
        masks.causal(bad)


def test_masks_keep_softmax_rows_normalised():
    scores = torch.randn(4, 4)
    w = torch.softmax(scores + masks.to_additive(masks.causal(4)), -1)
    assert_close(w.sum(-1), torch.ones(4))
    assert (w.triu(1) == 0).all()


# --- mask algebra and the one masked softmax (issue 9, items 1 and 9) ----------------------------

def test_restrict_keeps_the_form_of_the_mask_and_blocks_what_allowed_blocks():
    allowed = masks.causal(3)
    keep = torch.tensor([[True, True, False]]).expand(3, 3)
    assert torch.equal(masks.restrict(None, allowed), allowed)
    assert torch.equal(masks.restrict(keep, allowed), keep & allowed)
    soft = torch.randn(3, 3)
    out = masks.restrict(soft, allowed)
    assert out.dtype == torch.float32
    assert torch.equal(out[allowed], soft[allowed]) and out[~allowed].eq(float("-inf")).all()
    with pytest.raises(TypeError, match="allowed must be bool"):
        masks.restrict(keep, torch.zeros(3, 3))


def test_add_bias_turns_any_mask_into_an_additive_one():
    bias = torch.randn(2, 3, 3)
    keep = masks.causal(3)
    assert torch.equal(masks.add_bias(None, bias), bias)
    from_bool = masks.add_bias(keep, bias)
    assert torch.equal(from_bool, bias + masks.to_additive(keep))
    assert torch.equal(masks.add_bias(masks.to_additive(keep), bias), from_bool)
    with pytest.raises(TypeError, match="bias must be a floating-point tensor"):
        masks.add_bias(keep, keep)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("form", ["bool", "additive", None])
def test_masked_softmax_is_softmax_of_the_allowed_scores_and_zero_on_empty_rows(dtype, form):
    scores = torch.randn(2, 4, 5, dtype=dtype, requires_grad=True)
    keep = torch.rand(2, 4, 5) > 0.4
    keep[0, 2] = False  # an empty row
    keep[1, 1] = True
    mask = {"bool": keep, "additive": masks.to_additive(keep, dtype), None: None}[form]
    w = masks.masked_softmax(scores, mask)
    assert w.dtype == dtype and w.shape == scores.shape
    if form is None:
        assert_close(w, torch.softmax(scores.float(), -1).to(dtype))
    else:
        assert (w[~keep] == 0).all() and (w[0, 2] == 0).all()
        assert_close(w.sum(-1)[keep.any(-1)].float(), torch.ones(int(keep.any(-1).sum())), atol=1e-2, rtol=0)
        expected = torch.softmax(scores.detach().double().masked_fill(~keep, float("-inf")), -1).nan_to_num()
        tol = 1e-6 if dtype in (torch.float32, torch.float64) else 1e-2
        assert_close(w.double(), expected, atol=tol, rtol=tol)
    (w.float() * torch.randn(2, 4, 5)).sum().backward()
    assert torch.isfinite(scores.grad).all()
    if form is not None:
        assert (scores.grad[0, 2] == 0).all(), "an empty row passes no gradient"


def test_softmax_lives_in_masks_alone():
    import pathlib
    import re

    src = pathlib.Path(masks.__file__).parent
    # bugs.py is the debugging chapter's zoo of wrong attention code: its softmaxes are wrong on purpose;
    # source_listing.py follows the source document's listing (a -1e9 fill, then softmax) to show where
    # that convention differs from attn's (tests/test_source_listing.py). Elsewhere a line that
    # computes a naive softmax to show how it fails says so ("on purpose").
    callers = sorted(p.relative_to(src).as_posix() for p in src.rglob("*.py")
                     if p.name not in {"masks.py", "bugs.py", "source_listing.py"}
                     and re.search(r"^(?!.*on purpose).*\.softmax\(", p.read_text(), re.M))
    assert callers == [], f"{callers} compute a softmax: call attn.masks.masked_softmax"
    import attn.attention

    assert not hasattr(attn.attention, "_and") and not hasattr(attn.attention, "_add")


def test_masks_carry_no_widget_concerns():
    import inspect

    text = inspect.getsource(masks).lower()
    for word in ("widget", "javascript", "browser"):
        assert word not in text
    # bigbird still draws its random keys from a portable, seeded stream (mulberry32)
    rng = masks.seeded_uniform(0)
    assert [round(next(rng), 6) for _ in range(3)] == [0.266429, 0.00033, 0.223272]


# --- what mutation testing found unpinned (issue 18): names in messages, S != L, defaults ---------

META = torch.device("meta")


@pytest.mark.parametrize("call,message", [
    (lambda: masks.causal(3, 0), "S must be a positive integer, got 0"),
    (lambda: masks.padding([1], 0), "S must be a positive integer, got 0"),
    (lambda: masks.padding([1], 2, L=0), "L must be a positive integer, got 0"),
    (lambda: masks.padding([], 2), "lengths is empty: need one length per sequence in the batch"),
    (lambda: masks.sliding_window(4, window=0), "window must be a positive integer, got 0"),
    (lambda: masks.dilated(4, window=0, dilation=1), "window must be a positive integer, got 0"),
    (lambda: masks.dilated(4, window=2, dilation=0), "dilation must be a positive integer, got 0"),
    (lambda: masks.local_global(4, window=1, global_tokens=(4,)), r"global token index 4 is outside \[0, 4\)"),
    (lambda: masks.bigbird(4, window=1, num_random=-1), "num_random must be a non-negative integer, got -1"),
    (lambda: masks.bigbird(4, window=1, num_random=1.5), "num_random must be a non-negative integer, got 1.5"),
    (lambda: masks.bigbird(4, window=1, num_random=True), "num_random must be a non-negative integer, got True"),
    (lambda: masks.prefix_lm(4, 5), r"prefix must lie in \[0, L=4\], got 5"),
    (lambda: masks.random_keys(0, num_random=1), "L must be a positive integer, got 0"),
    (lambda: masks.random_keys(3, 0, num_random=1), "S must be a positive integer, got 0"),
    (lambda: masks.random_keys(3, num_random=-1), "num_random must be a non-negative integer, got -1"),
    (lambda: masks.random_keys(3, 2, num_random=3), r"num_random \(3\) cannot exceed the number of keys S \(2\)"),
    (lambda: masks.random_keys(2, num_random=3), r"num_random \(3\) cannot exceed the number of keys S \(2\)"),
    (lambda: masks.combine(masks.causal(3, 4), masks.causal(2, 4)),
     r"combine\(\) got masks of shapes \(3, 4\) and \(2, 4\), which do not broadcast \(argument 1 against the ones "
     r"before it\): each must be \(L, S\), \(B, L, S\) or broadcast to one of them"),
])
def test_errors_name_the_argument_in_full(call, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        call()


@pytest.mark.parametrize("call,message", [
    (lambda: masks.restrict(None, [[True]]), "allowed must be a torch.Tensor, got list"),
    (lambda: masks.add_bias(None, 0.5), "bias must be a torch.Tensor, got float"),
    (lambda: masks.from_key_padding_mask([[True]]), "key_padding_mask must be a torch.Tensor, got list"),
    (lambda: masks.to_additive([[True]]), "mask must be a torch.Tensor, got list"),
    (lambda: masks.from_additive([[0.0]]), "mask must be a torch.Tensor, got list"),
    (lambda: masks.from_additive(torch.zeros(2, 2, dtype=torch.long)), "mask must be a floating-point tensor, got dtype torch.int64"),
    (lambda: masks.combine(masks.causal(2), "x"), "combine\\(\\) takes boolean masks \\(True = may attend\\); argument 1 is str"),
])
def test_type_errors_name_the_argument_in_full(call, message):
    with pytest.raises(TypeError, match=f"^{message}$"):
        call()


def test_mask_builders_take_a_number_of_keys_other_than_the_queries():
    assert torch.equal(masks.sliding_window(2, 4, window=2), torch.tensor([[1, 1, 0, 0], [1, 1, 1, 0]]).bool())
    assert torch.equal(masks.dilated(2, 5, window=2, dilation=2), torch.tensor([[1, 0, 1, 0, 0], [0, 1, 0, 1, 0]]).bool())
    lg = masks.local_global(2, 4, window=1, global_tokens=(1,))
    assert torch.equal(lg, torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]]).bool())
    assert masks.bigbird(3, 6, window=1, num_random=0).shape == (3, 6)
    assert torch.equal(masks.bigbird(3, 6, window=1, num_random=0), masks.local_global(3, 6, window=1))
    assert masks.cross_padding([2, 1], 3, 5).shape == (2, 3, 5)
    assert masks.cross_padding([2, 1], 3, 5)[:, 0].tolist() == [[1, 1, 0, 0, 0], [1, 0, 0, 0, 0]]


def test_dilated_causal_sees_no_future_key():
    m = masks.dilated(5, window=2, dilation=2, is_causal=True)
    assert not (m & ~masks.causal(5)).any()
    assert m.tolist()[4] == [False, False, True, False, True]


def test_bigbird_keeps_given_global_tokens_and_its_documented_defaults():
    m = masks.bigbird(8, window=1, global_tokens=(3,), num_random=0)
    assert m[3].all() and m[:, 3].all() and not m[0, 1:3].any()
    assert torch.equal(masks.bigbird(16, window=1), masks.bigbird(16, window=1, num_random=2, seed=0))


def test_bigbird_random_keys_are_a_partial_fisher_yates_shuffle_of_seeded_uniform():
    """The specification written out once more: query i takes the first num_random entries of a
    partial shuffle of 0..S-1, swapping position r with r + floor(u * (S - r))."""
    L, S, r_n, seed = 6, 9, 3, 5
    rng = masks.seeded_uniform(seed)
    expected = masks.local_global(L, S, window=1, global_tokens=())
    for i in range(L):
        keys = list(range(S))
        for r in range(r_n):
            j = r + int(next(rng) * (S - r))
            assert r <= j < S
            keys[r], keys[j] = keys[j], keys[r]
        expected[i, keys[:r_n]] = True
    got = masks.bigbird(L, S, window=1, global_tokens=(), num_random=r_n, seed=seed)
    assert torch.equal(got, expected)
    assert (got.sum(1) >= r_n).all()  # num_random distinct keys in every row


def test_seeded_uniform_gives_multiples_of_two_to_the_minus_32():
    rng = masks.seeded_uniform(7)
    for _ in range(50):
        u = next(rng)
        assert 0 <= u < 1 and (u * 2**32).is_integer()


def test_prefix_lm_with_the_whole_sequence_as_prefix_is_full_attention():
    assert masks.prefix_lm(4, 4).all()
    assert torch.equal(masks.prefix_lm(4, 0), masks.causal(4))


def test_combine_skips_none_anywhere():
    c = masks.causal(3)
    assert torch.equal(masks.combine(None, c), c)
    assert torch.equal(masks.combine(c, None, masks.causal(3, offset=-1)), masks.causal(3, offset=-1))


def test_masks_on_the_meta_device_stay_there():
    """A mask made on the inputs' device builds every part there (a CPU part would fail here)."""
    assert masks.causal(3, 4, device=META).device == META
    assert masks.to_additive(masks.causal(3, device=META), torch.float16).device == META


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_masked_softmax_keeps_the_half_dtype_and_normalises_in_float32(dtype):
    scores = torch.tensor([[20.0, 19.0, 0.0, -30.0]], dtype=dtype) * 2
    w = masks.masked_softmax(scores)
    assert w.dtype == dtype
    ref = torch.softmax(scores.double(), -1).to(dtype)  # rounded once, at the end
    assert torch.equal(w, ref)


def test_masked_softmax_in_float64_is_not_rounded_to_float32():
    scores = torch.randn(3, 7, dtype=torch.float64)
    assert_close(masks.masked_softmax(scores), torch.softmax(scores, -1), atol=1e-15, rtol=1e-15)


def test_fully_masked_rows_of_batched_masks_keep_their_shape():
    m = torch.ones(2, 3, 4, dtype=torch.bool)
    m[1, 2] = False
    rows = masks.fully_masked_rows(m)
    assert rows.shape == (2, 3, 1)
    assert rows[..., 0].tolist() == [[False] * 3, [False, False, True]]
    assert torch.equal(masks.fully_masked_rows(masks.to_additive(m)), rows)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_masked_softmax_adds_a_half_bias_in_float32(dtype):
    """1000 + 0.25 is not representable in half precision: added there, the bias would vanish."""
    scores = torch.tensor([[1000.0, 1000.0]], dtype=dtype)
    bias = torch.tensor([[0.25, 0.0]], dtype=dtype)
    w = masks.masked_softmax(scores, bias)
    assert w.dtype == dtype
    ref = torch.softmax(torch.tensor([[0.25, 0.0]], dtype=torch.float64), -1).to(dtype)
    assert torch.equal(w, ref) and w[0, 0] > w[0, 1]


@pytest.mark.parametrize("L,S,r,seed", [(16, None, 3, 7), (6, 9, 3, 5), (40, None, 2, 0), (5, 3, 3, 11)])
def test_one_bigbird_generator_gives_both_paths_the_same_pattern(L, S, r, seed):
    """masks.bigbird (the mask) and attn.efficient's random keys (for bigbird_attention) draw the
    same keys for one seed."""
    import attn.efficient as ef

    keys = ef.random_keys(L, S, num_random=r, seed=seed)  # (L, r)
    assert keys.shape == (L, r) and keys.dtype == torch.long
    assert all(len(set(row)) == r for row in keys.tolist())  # distinct keys in every row
    mask = masks.local_global(L, S, window=1, global_tokens=())
    mask[torch.arange(L).unsqueeze(1), keys] = True
    assert torch.equal(mask, masks.bigbird(L, S, window=1, global_tokens=(), num_random=r, seed=seed))


def test_sliding_window_offset_puts_the_queries_at_the_last_positions():
    L, S, w = 3, 7, 3
    i = torch.arange(L).unsqueeze(1) + (S - L)  # absolute positions 4, 5, 6
    j = torch.arange(S).unsqueeze(0)
    m = masks.sliding_window(L, S, window=w, is_causal=True, offset=S - L)
    assert torch.equal(m, (i - j >= 0) & (i - j < w))
    assert torch.equal(m, masks.sliding_window(S, window=w, is_causal=True)[-L:])  # the last rows of the square
    assert torch.equal(m, masks.causal(L, S, offset=S - L) & ~masks.causal(L, S, offset=S - L - w))
    assert torch.equal(masks.sliding_window(L, S, window=w, offset=S - L), masks.sliding_window(S, window=w)[-L:])


# --- what mutation testing found unpinned (second round) -----------------------------------------

@pytest.mark.parametrize("lengths,S", [([1, 4], 3), ([4, 1], 3), ([2, -1], 3), ([-1, 2, 3], None)])
def test_padding_rejects_one_bad_length_among_good_ones(lengths, S):
    """Every length is checked, not only a batch whose lengths are all bad."""
    shown = max(lengths) if S is None else S
    with pytest.raises(ValueError, match=rf"^lengths must lie in \[0, S={shown}\], got {re.escape(str(lengths))}$"):
        masks.padding(lengths, S)


@pytest.mark.parametrize("is_causal", [False, True])
def test_sliding_window_is_built_on_the_requested_device(is_causal):
    m = masks.sliding_window(3, 5, window=2, is_causal=is_causal, offset=2, device=META)
    assert m.device == META and m.shape == (3, 5) and m.dtype == torch.bool


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a second device: the lengths' device decides")
def test_padding_is_built_on_the_device_of_the_lengths():
    lengths = torch.tensor([2, 4, 1], device="cuda")
    m = masks.padding(lengths, 5, L=2)
    assert m.device == lengths.device
    assert torch.equal(m.cpu(), masks.padding([2, 4, 1], 5, L=2))


def test_random_keys_without_a_seed_are_the_keys_of_bigbird_without_one():
    """One default seed (0) for the generator and for bigbird, so unseeded calls agree."""
    keys = masks.random_keys(8, num_random=2)
    assert torch.equal(keys, masks.random_keys(8, num_random=2, seed=0))
    mask = masks.local_global(8, window=1, global_tokens=())
    mask[torch.arange(8).unsqueeze(1), keys] = True
    assert torch.equal(mask, masks.bigbird(8, window=1, global_tokens=()))
    assert not torch.equal(keys, masks.random_keys(8, num_random=2, seed=1))


# --- distances: the one grid of query minus key positions (issue 30) -----------------------------

def test_distances_is_query_position_minus_key_position():
    assert masks.distances(2, 3).tolist() == [[0, -1, -2], [1, 0, -1]]
    assert masks.distances(2, 3, offset=1).tolist() == [[1, 0, -1], [2, 1, 0]]  # queries at positions 1 and 2
    assert masks.distances(3).tolist() == [[0, -1, -2], [1, 0, -1], [2, 1, 0]]  # S defaults to L
    assert masks.distances(1, 4, offset=-2).tolist() == [[-2, -3, -4, -5]]
    assert masks.distances(2, 3).dtype == torch.long
    assert masks.distances(2, 3, device=META).device == META


@pytest.mark.parametrize("L,S,offset", [(4, 4, 0), (3, 7, 4), (5, 3, 0), (2, 6, 1), (6, 2, -3)])
def test_the_masks_are_rules_on_the_distances(L, S, offset):
    d = masks.distances(L, S, offset=offset)
    assert torch.equal(masks.causal(L, S, offset=offset), d >= 0)
    assert torch.equal(masks.sliding_window(L, S, window=2, offset=offset), d.abs() < 2)
    assert torch.equal(masks.sliding_window(L, S, window=3, is_causal=True, offset=offset), (d >= 0) & (d < 3))
    d0 = masks.distances(L, S)
    assert torch.equal(masks.dilated(L, S, window=2, dilation=2), (d0.abs() < 4) & (d0 % 2 == 0))
    assert torch.equal(masks.dilated(L, S, window=2, dilation=2, is_causal=True), (d0 >= 0) & (d0 < 4) & (d0 % 2 == 0))


def test_distances_between_takes_any_positions_and_batches():
    q, k = torch.tensor([[5, 7], [0, 1]]), torch.tensor([[1, 2, 9], [3, 0, 1]])  # (2, L=2), (2, S=3)
    d = masks.distances_between(q, k)
    assert d.shape == (2, 2, 3)
    assert d.tolist() == [[[4, 3, -4], [6, 5, -2]], [[-3, 0, -1], [-2, 1, 0]]]
    assert torch.equal(masks.distances_between(torch.arange(3) + 2, torch.arange(5)), masks.distances(3, 5, offset=2))


@pytest.mark.parametrize("call,message", [
    (lambda: masks.distances(0), "L must be a positive integer, got 0"),
    (lambda: masks.distances(2, True), "S must be a positive integer, got True"),
    (lambda: masks.distances(2, 3, offset=0.5), "offset must be an integer, got 0.5"),
    (lambda: masks.causal(2, 3, offset=True), "offset must be an integer, got True"),
    (lambda: masks.sliding_window(True, window=1), "L must be a positive integer, got True"),
    (lambda: masks.prefix_lm(4, True), r"prefix must be an integer in \[0, L=4\], got True"),
])
def test_distances_and_the_masks_on_them_name_a_bad_size(call, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        call()
