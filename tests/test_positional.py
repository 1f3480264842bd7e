"""attn.positional against the formulas of its papers (Vaswani 2017, Shaw 2018, Raffel 2020, Su 2021,
Press 2022) and inside MultiHeadAttention, with and without a KV cache."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.testing import assert_close

import attn
from attn.positional import (
    ENCODINGS,
    ALiBi,
    LearnedPositionalEncoding,
    RotaryPositionalEncoding,
    ShawRelativePositionalBias,
    Sinusoidal2DPositionalEncoding,
    T5RelativePositionBias,
    alibi_slopes,
    sinusoidal_table,
    t5_bucket,
)


def test_table_matches_the_formula_elementwise():
    d, n = 10, 50
    pe = sinusoidal_table(n, d)
    for pos in (0, 1, 7, 49):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            assert math.isclose(pe[pos, 2 * i].item(), math.sin(angle), abs_tol=1e-6)
            assert math.isclose(pe[pos, 2 * i + 1].item(), math.cos(angle), abs_tol=1e-6)


def test_values_are_bounded_and_odd_widths_work():
    pe = sinusoidal_table(1000, 7)
    assert pe.shape == (1000, 7) and pe.abs().max() <= 1.0
    pos = torch.arange(1000, dtype=torch.float64)
    assert_close(pe[:, 6], torch.sin(pos / 10000 ** (6 / 7)).float())  # the unpaired last column is a sine


def test_module_adds_the_table_with_offset():
    m = attn.SinusoidalPositionalEncoding(8, max_len=20)
    x = torch.zeros(2, 5, 8)
    assert_close(m(x), m.pe[:5].expand(2, 5, 8))
    assert_close(m(x, offset=3), m.pe[3:8].expand(2, 5, 8))


def test_sequence_longer_than_table_is_a_clear_error():
    m = attn.SinusoidalPositionalEncoding(8, max_len=16)
    with pytest.raises(ValueError, match=r"sequence length 17 \(shape \(1, 17, 8\)\).*max_len=16"):
        m(torch.zeros(1, 17, 8))
    with pytest.raises(ValueError, match=r"x has last dimension 4 \(shape \(1, 3, 4\)\), expected 8"):
        m(torch.zeros(1, 3, 4))
    with pytest.raises(ValueError, match="max_len >= 20"):
        m.encoding(5, offset=15)


def test_table_is_not_saved_in_state_dict():
    assert "pe" not in attn.SinusoidalPositionalEncoding(8, max_len=16).state_dict()


# --- helpers -----------------------------------------------------------------------------------------

F64 = dict(rtol=1e-10, atol=1e-10)  # float64 maths that should agree to rounding


def randn(*shape, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


# --- RoPE ----------------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(half=st.integers(1, 16), N=st.integers(1, 12), offset=st.integers(0, 10_000), seed=st.integers(0, 2**16))
def test_rope_preserves_the_norm_of_every_vector(half, N, offset, seed):
    rope = RotaryPositionalEncoding(2 * half)
    x = randn(2, 3, N, 2 * half, seed=seed)
    y = rope.rotate(x, offset)
    assert y.shape == x.shape and y.dtype == x.dtype
    assert_close(y.norm(dim=-1), x.norm(dim=-1), **F64)


@settings(max_examples=40, deadline=None)
@given(m=st.integers(0, 500), n=st.integers(0, 500), t=st.integers(0, 5000), seed=st.integers(0, 2**16))
def test_rope_score_depends_only_on_the_offset_between_query_and_key(m, n, t, seed):
    rope = RotaryPositionalEncoding(16)
    q, k = randn(2, 1, 1, 16, seed=seed).unbind(0)  # (1, 1, E) each
    before = (rope.rotate(q, m) * rope.rotate(k, n)).sum()
    after = (rope.rotate(q, m + t) * rope.rotate(k, n + t)).sum()
    assert_close(after, before, rtol=1e-9, atol=1e-9)  # angles up to ~5500 rad lose a few digits


def test_rope_changes_the_score_when_the_offset_changes():
    rope = RotaryPositionalEncoding(16)
    q, k = randn(2, 1, 16).unbind(0)
    scores = [(rope.rotate(q, 0) * rope.rotate(k, n)).sum().item() for n in range(4)]
    assert len({round(s, 6) for s in scores}) == 4


@settings(max_examples=40, deadline=None)
@given(N=st.integers(1, 20), data=st.data())
def test_rope_on_a_slice_equals_rotating_everything_then_slicing(N, data):
    start = data.draw(st.integers(0, N - 1))
    stop = data.draw(st.integers(start + 1, N))
    rope = RotaryPositionalEncoding(8)
    x = randn(2, 2, N, 8)
    assert_close(rope.rotate(x[:, :, start:stop], start), rope.rotate(x, 0)[:, :, start:stop], **F64)


def test_rope_equals_an_explicit_2x2_rotation_of_each_pair():
    E, base, offset = 6, 10000.0, 5
    rope = RotaryPositionalEncoding(E, base)
    x = randn(1, 1, 4, E)
    y = rope.rotate(x, offset)
    for n in range(4):
        p = offset + n
        for i in range(E // 2):
            a = p * base ** (-2 * i / E)
            R = torch.tensor([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]], dtype=torch.float64)
            assert_close(y[0, 0, n, 2 * i : 2 * i + 2], R @ x[0, 0, n, 2 * i : 2 * i + 2], **F64)
        assert_close(y[0, 0, n], rope.rotation_matrix(p, torch.float64) @ x[0, 0, n], **F64)


def test_rope_at_position_zero_is_the_identity_and_half_precision_keeps_its_dtype():
    rope = RotaryPositionalEncoding(8)
    x = randn(1, 2, 1, 8)
    assert_close(rope.rotate(x, 0), x, rtol=0, atol=0)
    y = rope.rotate(x.half(), 3)
    assert y.dtype == torch.float16
    assert_close(y.double(), rope.rotate(x, 3), rtol=0, atol=5e-3)  # float16 rounding


def test_rope_rejects_odd_widths_and_vectors_of_the_wrong_width():
    with pytest.raises(ValueError, match="d_head must be even, got d_head=7"):
        RotaryPositionalEncoding(7)
    with pytest.raises(ValueError, match=r"x has last dimension 6 \(shape \(1, 2, 3, 6\)\), expected 8"):
        RotaryPositionalEncoding(8).rotate(torch.zeros(1, 2, 3, 6), 0)
    with pytest.raises(ValueError, match="offset must be a non-negative integer"):
        RotaryPositionalEncoding(8).rotate(torch.zeros(1, 2, 3, 8), -1)


# --- ALiBi ---------------------------------------------------------------------------------------


def test_alibi_slopes_for_eight_heads_are_the_powers_of_one_half():
    assert_close(alibi_slopes(8), torch.tensor([2.0**-h for h in range(1, 9)]), rtol=0, atol=0)


def test_alibi_slopes_for_six_heads_interleave_the_next_power_of_two():
    expected = [2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8, 2.0**-1, 2.0**-3]  # 4 heads' slopes, then 8 heads' odd ones
    assert_close(alibi_slopes(6), torch.tensor(expected), rtol=0, atol=0)


@settings(max_examples=60, deadline=None)
@given(H=st.integers(1, 200))
def test_alibi_slopes_are_h_distinct_values_in_zero_one(H):
    m = alibi_slopes(H)
    assert m.shape == (H,)
    assert bool((m > 0).all() and (m < 1).all())
    assert len(set(m.tolist())) == H


@pytest.mark.parametrize("H, L, S, q_offset", [(4, 5, 5, 0), (3, 2, 7, 5), (8, 1, 9, 8)])
def test_alibi_bias_is_minus_slope_times_distance(H, L, S, q_offset):
    alibi = ALiBi(H)
    bias = alibi.score_bias(torch.zeros(2, H, L, 4), q_offset, S)
    assert bias.shape == (1, H, L, S)
    m = alibi_slopes(H)
    expected = torch.tensor(
        [[[-m[h].item() * abs(q_offset + i - j) for j in range(S)] for i in range(L)] for h in range(H)]
    )
    assert_close(bias[0], expected, rtol=1e-6, atol=1e-6)


def test_alibi_rejects_queries_with_another_number_of_heads():
    with pytest.raises(ValueError, match=r"q has 2 heads \(shape \(1, 2, 3, 4\).*num_heads=4"):
        ALiBi(4).score_bias(torch.zeros(1, 2, 3, 4), 0, 3)


# --- T5 buckets ----------------------------------------------------------------------------------


@pytest.mark.parametrize("bidirectional", [True, False])
def test_t5_distance_zero_is_bucket_zero(bidirectional):
    assert t5_bucket(torch.tensor([0]), bidirectional).tolist() == [0]


def test_t5_buckets_match_hand_computed_values():
    d = torch.tensor([1, 7, 8, 16, 32, 64, 127, 128, 1000])
    # n = 16 buckets per sign, m = 8 exact: 8 + floor(log(d / 8) / log(16) * 8), at most 15.
    assert t5_bucket(-d).tolist() == [1, 7, 8, 10, 12, 14, 15, 15, 15]
    assert t5_bucket(d).tolist() == [17, 23, 24, 26, 28, 30, 31, 31, 31]  # the upper half for later keys


T5_ARGS = st.tuples(st.booleans(), st.integers(2, 32), st.integers(1, 300)).filter(
    lambda a: (not a[0] or a[1] % 2 == 0 and a[1] >= 4) and a[2] > (a[1] // 2 if a[0] else a[1]) // 2
)


@settings(max_examples=60, deadline=None)
@given(args=T5_ARGS)
def test_t5_buckets_grow_with_distance_and_are_exact_for_small_distances(args):
    bidirectional, num_buckets, max_distance = args
    n = num_buckets // 2 if bidirectional else num_buckets
    d = torch.arange(0, 4 * max_distance + 2)
    for sign in ((-1, 1) if bidirectional else (-1,)):
        b = t5_bucket(sign * d, bidirectional, num_buckets, max_distance)
        assert bool((b[1:] >= b[:-1]).all()), "not monotone in |distance|"
        small = b[1 : n // 2]  # distances 1 .. m - 1
        assert len(set(small.tolist())) == len(small), "small distances share a bucket"
        far = b[max_distance:]
        assert bool((far == far[0]).all()) and far[0] == b.max(), "distances beyond max_distance differ"
        assert int(b.min()) >= 0 and int(b.max()) < num_buckets


@settings(max_examples=40, deadline=None)
@given(args=T5_ARGS.filter(lambda a: a[0]))
def test_t5_bidirectional_buckets_separate_keys_before_and_after_the_query(args):
    _, num_buckets, max_distance = args
    d = torch.arange(1, 3 * max_distance)
    before = set(t5_bucket(-d, True, num_buckets, max_distance).tolist())
    after = set(t5_bucket(d, True, num_buckets, max_distance).tolist())
    assert before.isdisjoint(after)
    assert max(before) < num_buckets // 2 <= min(after)


def test_t5_unidirectional_gives_later_keys_bucket_zero():
    assert t5_bucket(torch.tensor([1, 5, 500]), bidirectional=False).tolist() == [0, 0, 0]


def test_t5_bias_looks_up_one_scalar_per_bucket_and_head():
    t5 = T5RelativePositionBias(3, num_buckets=8, max_distance=16)
    L, S, q_offset = 4, 10, 6
    bias = t5.score_bias(torch.zeros(2, 3, L, 5), q_offset, S)
    assert bias.shape == (1, 3, L, S)
    for i in range(L):
        for j in range(S):
            bucket = t5_bucket(torch.tensor(j - (q_offset + i)), True, 8, 16)
            assert_close(bias[0, :, i, j], t5.embedding.weight[bucket], rtol=0, atol=0)


def test_t5_rejects_bad_bucket_arguments_and_head_mismatch():
    with pytest.raises(ValueError, match="even num_buckets >= 4.*got 7"):
        T5RelativePositionBias(2, num_buckets=7)
    with pytest.raises(ValueError, match=r"max_distance \(4\) must exceed"):
        T5RelativePositionBias(2, num_buckets=32, max_distance=4)
    with pytest.raises(ValueError, match="num_heads=2"):
        T5RelativePositionBias(2).score_bias(torch.zeros(1, 3, 2, 4), 0, 2)


# --- Shaw relative embeddings --------------------------------------------------------------------


@pytest.mark.parametrize("num_heads", [None, 3])
def test_shaw_bias_equals_an_explicit_loop(num_heads):
    E, k, L, S, q_offset = 4, 2, 3, 8, 4
    shaw = ShawRelativePositionalBias(E, num_heads, max_distance=k).double()
    q = randn(2, 3, L, E)
    bias = shaw.score_bias(q, q_offset, S)
    assert bias.shape == (2, 3, L, S)
    for b in range(2):
        for h in range(3):
            w = shaw.vectors if num_heads is None else shaw.vectors[h]  # (2k + 1, E)
            for i in range(L):
                for j in range(S):
                    r = max(-k, min(k, j - (q_offset + i)))
                    expected = q[b, h, i] @ w[r + k] / math.sqrt(E)
                    assert_close(bias[b, h, i, j], expected, **F64)


def test_shaw_keys_beyond_max_distance_share_the_clipped_vector():
    shaw = ShawRelativePositionalBias(4, max_distance=2)
    assert shaw.index(1, 12, q_offset=6)[0].tolist() == [0, 0, 0, 0, 0, 1, 2, 3, 4, 4, 4, 4]
    bias = shaw.score_bias(torch.randn(1, 1, 1, 4), 6, 12)[0, 0, 0]  # (S,)
    assert_close(bias[:4], bias[0].expand(4), rtol=0, atol=0)
    assert_close(bias[8:], bias[8].expand(4), rtol=0, atol=0)
    assert bias[0] != bias[8]


def test_shaw_rejects_head_and_width_mismatches():
    with pytest.raises(ValueError, match="num_heads=4"):
        ShawRelativePositionalBias(4, 4).score_bias(torch.zeros(1, 2, 3, 4), 0, 3)
    with pytest.raises(ValueError, match=r"q has last dimension 6 \(shape \(1, 2, 3, 6\)\), expected 4"):
        ShawRelativePositionalBias(4).score_bias(torch.zeros(1, 2, 3, 6), 0, 3)


# --- 2-D sin-cos ---------------------------------------------------------------------------------


def test_2d_table_rows_in_the_first_half_and_columns_in_the_second():
    D, Hh, W = 16, 3, 5
    enc = Sinusoidal2DPositionalEncoding(D, Hh, W)
    pe = enc.table()
    assert pe.shape == (Hh * W, D) and pe.abs().max() <= 1.0
    grid = pe.view(Hh, W, D)
    rows, cols = grid[..., : D // 2], grid[..., D // 2 :]
    assert_close(rows, rows[:, :1].expand(Hh, W, D // 2), rtol=0, atol=0)  # same along a row
    assert_close(cols, cols[:1].expand(Hh, W, D // 2), rtol=0, atol=0)  # same down a column
    assert_close(rows[:, 0], sinusoidal_table(Hh, D // 2))  # and it is the 1-D table
    assert_close(cols[0], sinusoidal_table(W, D // 2))
    assert len({tuple(v) for v in pe.tolist()}) == Hh * W  # every patch gets its own code


def test_2d_forward_adds_the_table_and_checks_the_patch_count():
    enc = Sinusoidal2DPositionalEncoding(8, 2, 3)
    assert_close(enc(torch.zeros(4, 6, 8)), enc.table().expand(4, 6, 8))
    with pytest.raises(ValueError, match=r"7 patches \(shape \(1, 7, 8\)\).*2 \* 3 = 6"):
        enc(torch.zeros(1, 7, 8))
    with pytest.raises(ValueError, match="multiple of 4.*d_model=6"):
        Sinusoidal2DPositionalEncoding(6, 2, 2)


# --- learned absolute ----------------------------------------------------------------------------


def test_learned_forward_adds_the_table_rows_at_the_offset():
    enc = LearnedPositionalEncoding(8, max_len=10)
    x = randn(2, 4, 8).float()
    assert_close(enc(x), x + enc.embedding.weight[:4], rtol=0, atol=0)
    assert_close(enc(x, offset=6), x + enc.embedding.weight[6:10], rtol=0, atol=0)
    enc(x, offset=3).sum().backward()
    assert enc.embedding.weight.grad[3:7].abs().sum() > 0 and enc.embedding.weight.grad[7:].abs().sum() == 0


def test_learned_table_starts_small():
    w = LearnedPositionalEncoding(64, max_len=1000).embedding.weight
    assert 0.019 < w.std().item() < 0.021


def test_learned_rejects_a_sequence_longer_than_the_table():
    enc = LearnedPositionalEncoding(8, max_len=8)
    with pytest.raises(ValueError, match=r"sequence length 9, offset 0.*max_len=8"):
        enc(torch.zeros(1, 9, 8))
    with pytest.raises(ValueError, match=r"sequence length 4, offset 5.*max_len=8"):
        enc(torch.zeros(1, 4, 8), offset=5)


# --- the registry --------------------------------------------------------------------------------


def test_registry_names_every_encoding_with_its_interface():
    assert set(ENCODINGS) == {"sinusoidal", "learned", "shaw", "t5", "rope", "alibi", "sinusoidal2d"}
    method = {"input": "forward", "scores": "score_bias", "qk": "rotate"}
    for name, cls in ENCODINGS.items():
        assert cls.mode in method, name
        assert callable(getattr(cls, method[cls.mode])), name
    assert all(hasattr(attn.positional, n) for n in attn.positional.__all__)


# --- inside MultiHeadAttention -------------------------------------------------------------------

D_MODEL, HEADS = 16, 4
E_HEAD = D_MODEL // HEADS

INSIDE = {
    "rope": lambda: RotaryPositionalEncoding(E_HEAD),
    "alibi": lambda: ALiBi(HEADS),
    "t5": lambda: T5RelativePositionBias(HEADS, num_buckets=8, max_distance=16, bidirectional=False),
    "t5-bidirectional": lambda: T5RelativePositionBias(HEADS, num_buckets=8, max_distance=16),
    "shaw": lambda: ShawRelativePositionalBias(E_HEAD, max_distance=2),
    "shaw-per-head": lambda: ShawRelativePositionalBias(E_HEAD, HEADS, max_distance=2),
}


def mha_with(name: str) -> attn.MultiHeadAttention:
    """float64 attention whose positional parameters are large enough to matter (std 1, not 0.02)."""
    pos = INSIDE[name]()
    for p in pos.parameters():
        torch.nn.init.normal_(p, std=1.0)
    return attn.MultiHeadAttention(D_MODEL, HEADS, positional=pos).double().eval()


@pytest.mark.parametrize("name", INSIDE)
def test_incremental_decoding_with_a_cache_equals_the_full_causal_pass(name):
    mha = mha_with(name)
    x = randn(2, 7, D_MODEL)
    full, _ = mha(x, is_causal=True)
    cache = attn.KVCache()
    parts = [mha(x[:, :3], is_causal=True, cache=cache)[0]]  # prefill three tokens
    parts += [mha(x[:, t : t + 1], is_causal=True, cache=cache)[0] for t in range(3, 7)]  # then one at a time
    assert len(cache) == 7
    assert_close(torch.cat(parts, dim=1), full, rtol=1e-9, atol=1e-9)
    pos, mha.positional = mha.positional, None  # the encoding must change the result, or this test proves nothing
    assert (mha(x, is_causal=True)[0] - full).abs().max() > 1e-4
    mha.positional = pos


@pytest.mark.parametrize("name", INSIDE)
@pytest.mark.parametrize("is_causal", [False, True])
def test_weights_path_equals_fused_path(name, is_causal):
    mha = mha_with(name)
    x = randn(2, 5, D_MODEL)
    key_mask = torch.tensor([[True] * 5, [True, True, True, False, False]])
    fused, none = mha(x, is_causal=is_causal, key_mask=key_mask)
    explicit, w = mha(x, is_causal=is_causal, key_mask=key_mask, need_weights=True, average_weights=False)
    assert none is None and w.shape == (2, HEADS, 5, 5)
    # The explicit path takes its softmax in float32 even for float64 inputs: float32 tolerances.
    assert_close(explicit, fused, rtol=1e-6, atol=1e-6)
    assert_close(w.sum(-1), torch.ones(2, HEADS, 5, dtype=torch.float64), rtol=1e-6, atol=1e-6)
    if is_causal:
        assert bool((w.triu(1) == 0).all())


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_rope_makes_self_attention_see_order(seed):
    mha = mha_with("rope")
    x = randn(1, 6, D_MODEL, seed=seed)
    perm = torch.randperm(6, generator=torch.Generator().manual_seed(seed))
    if bool((perm == torch.arange(6)).all()):
        perm = torch.tensor([1, 0, 2, 3, 4, 5])
    out, _ = mha(x)
    permuted, _ = mha(x[:, perm])
    assert (permuted - out[:, perm]).abs().max() > 1e-6  # positions matter
    mha.positional = None  # the same weights without positions are permutation-equivariant
    assert_close(mha(x[:, perm])[0], mha(x)[0][:, perm], **F64)
