"""attn.masks: one convention (True = may attend), checked against direct constructions."""

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
    assert torch.equal(masks.sliding_window(6, window=2, causal=True), ((i - j) >= 0) & ((i - j) < 2))
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
    with pytest.raises(ValueError, match="L must be an integer >= 1"):
        masks.causal(bad)


def test_masks_keep_softmax_rows_normalised():
    scores = torch.randn(4, 4)
    w = torch.softmax(scores + masks.to_additive(masks.causal(4)), -1)
    assert_close(w.sum(-1), torch.ones(4))
    assert (w.triu(1) == 0).all()
