"""attn.positional against the formulas of its papers (Vaswani 2017, Shaw 2018, Raffel 2020, Su 2021,
Press 2022) and inside MultiHeadAttention, with and without a KV cache."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.testing import assert_close

import attn
from attn import positional
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
    with pytest.raises(ValueError, match=r"d_head must be even \(RoPE rotates pairs of dimensions\), got d_head=7"):
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
    with pytest.raises(ValueError, match=r"num_buckets must be even for bidirectional buckets \(half per sign\), got num_buckets=7"):
        T5RelativePositionBias(2, num_buckets=7)
    with pytest.raises(ValueError, match=r"num_buckets must be at least 4 for bidirectional buckets \(half per sign\), got 2"):
        T5RelativePositionBias(2, num_buckets=2)
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
    with pytest.raises(ValueError) as e:  # the message says why 4: rows and columns, each in sin/cos pairs
        Sinusoidal2DPositionalEncoding(6, 2, 2)
    assert str(e.value) == ("d_model must be a multiple of 4 for a 2-D sin-cos encoding (half the channels for rows, "
                            "half for columns, each in sin/cos pairs), got d_model=6")


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


# --- every bad input named in full; defaults, boundaries and precision pinned (mutation testing, make mutate) ---

BAD_INPUTS = [
    ('table_len0', lambda: positional.sinusoidal_table(0, 4), ValueError, 'max_len must be a positive integer, got 0'),
    ('table_d0', lambda: positional.sinusoidal_table(4, 0), ValueError, 'd_model must be a positive integer, got 0'),
    ('table_len_bool', lambda: positional.sinusoidal_table(True, 4), ValueError, 'max_len must be a positive integer, got True'),
    ('table_d_float', lambda: positional.sinusoidal_table(4, 4.0), ValueError, 'd_model must be a positive integer, got 4.0'),
    ('table_base', lambda: positional.sinusoidal_table(4, 4, base=0), ValueError, 'base must be a positive number (the wavelength base, 10000 in the paper), got 0'),
    ('sin_enc_off', lambda: positional.SinusoidalPositionalEncoding(4).encoding(2, offset=-1), ValueError, 'offset must be a non-negative integer (the position of the first token), got -1'),
    ('sin_enc', lambda: positional.SinusoidalPositionalEncoding(4, max_len=3).encoding(2, offset=2), ValueError, 'positions 2..3 do not fit the positional table of max_len=3; build the encoding with max_len >= 4'),
    ('sin_x_list', lambda: positional.SinusoidalPositionalEncoding(4)([1.0]), TypeError, 'x must be a torch.Tensor, got list'),
    ('sin_x_1d', lambda: positional.SinusoidalPositionalEncoding(4)(torch.zeros(4)), ValueError, 'x must have at least 2 dimensions, got shape (4)'),
    ('sin_x_int', lambda: positional.SinusoidalPositionalEncoding(4)(torch.zeros(2, 4, dtype=torch.long)), TypeError, 'x must be a floating-point tensor, got dtype torch.int64'),
    ('sin_x_dim', lambda: positional.SinusoidalPositionalEncoding(4)(torch.zeros(2, 3)), ValueError, 'x has last dimension 3 (shape (2, 3)), expected 4 (d_model of the positional encoding)'),
    ('sin_long', lambda: positional.SinusoidalPositionalEncoding(4, max_len=3)(torch.zeros(4, 4)), ValueError, 'x has sequence length 4 (shape (4, 4)) but the positional table holds max_len=3 positions'),
    ('sin_long_off', lambda: positional.SinusoidalPositionalEncoding(4, max_len=3)(torch.zeros(3, 4), offset=1), ValueError, 'x has sequence length 3 (shape (3, 4)) but the positional table holds max_len=3 positions (from offset 1)'),
    ('learn_d', lambda: positional.LearnedPositionalEncoding(0, 4), ValueError, 'd_model must be a positive integer, got 0'),
    ('learn_len', lambda: positional.LearnedPositionalEncoding(4, 0), ValueError, 'max_len must be a positive integer, got 0'),
    ('learn_off', lambda: positional.LearnedPositionalEncoding(4, 4).encoding(2, offset=-1), ValueError, 'offset must be a non-negative integer (the position of the first token), got -1'),
    ('learn_fit', lambda: positional.LearnedPositionalEncoding(4, 4).encoding(3, offset=2), ValueError, 'positions 2..4 (sequence length 3, offset 2) do not fit the learned table of max_len=4; a learned table cannot extrapolate'),
    ('learn_x_list', lambda: positional.LearnedPositionalEncoding(4, 4)([1.0]), TypeError, 'x must be a torch.Tensor, got list'),
    ('learn_x_1d', lambda: positional.LearnedPositionalEncoding(4, 4)(torch.zeros(4)), ValueError, 'x must have at least 2 dimensions, got shape (4)'),
    ('learn_x_int', lambda: positional.LearnedPositionalEncoding(4, 4)(torch.zeros(2, 4, dtype=torch.long)), TypeError, 'x must be a floating-point tensor, got dtype torch.int64'),
    ('learn_x_dim', lambda: positional.LearnedPositionalEncoding(4, 4)(torch.zeros(2, 3)), ValueError, 'x has last dimension 3 (shape (2, 3)), expected 4 (d_model of the positional encoding)'),
    ('2d_d', lambda: positional.Sinusoidal2DPositionalEncoding(0, 2, 2), ValueError, 'd_model must be a positive integer, got 0'),
    ('2d_h', lambda: positional.Sinusoidal2DPositionalEncoding(8, 0, 2), ValueError, 'height must be a positive integer, got 0'),
    ('2d_w', lambda: positional.Sinusoidal2DPositionalEncoding(8, 2, 0), ValueError, 'width must be a positive integer, got 0'),
    ('2d_x_list', lambda: positional.Sinusoidal2DPositionalEncoding(8, 2, 2)([1.0]), TypeError, 'x must be a torch.Tensor, got list'),
    ('2d_x_1d', lambda: positional.Sinusoidal2DPositionalEncoding(8, 2, 2)(torch.zeros(8)), ValueError, 'x must have at least 2 dimensions, got shape (8)'),
    ('2d_x_int', lambda: positional.Sinusoidal2DPositionalEncoding(8, 2, 2)(torch.zeros(2, 8, dtype=torch.long)), TypeError, 'x must be a floating-point tensor, got dtype torch.int64'),
    ('2d_x_dim', lambda: positional.Sinusoidal2DPositionalEncoding(8, 2, 2)(torch.zeros(2, 4)), ValueError, 'x has last dimension 4 (shape (2, 4)), expected 8 (d_model of the positional encoding)'),
    ('2d_off', lambda: positional.Sinusoidal2DPositionalEncoding(8, 2, 2)(torch.zeros(2, 8), offset=-1), ValueError, 'offset must be a non-negative integer (the position of the first token), got -1'),
    ('2d_many', lambda: positional.Sinusoidal2DPositionalEncoding(8, 2, 2)(torch.zeros(5, 8)), ValueError, 'x has 5 patches (shape (5, 8)) but the grid holds height * width = 2 * 2 = 4'),
    ('2d_many_off', lambda: positional.Sinusoidal2DPositionalEncoding(8, 2, 2)(torch.zeros(4, 8), offset=1), ValueError, 'x has 4 patches (shape (4, 8)) from offset 1 but the grid holds height * width = 2 * 2 = 4'),
    ('shaw_d', lambda: positional.ShawRelativePositionalBias(0), ValueError, 'd_head must be a positive integer, got 0'),
    ('shaw_k', lambda: positional.ShawRelativePositionalBias(4, max_distance=0), ValueError, 'max_distance must be a positive integer, got 0'),
    ('shaw_h', lambda: positional.ShawRelativePositionalBias(4, num_heads=0), ValueError, 'num_heads must be a positive integer, got 0'),
    ('shaw_q_list', lambda: positional.ShawRelativePositionalBias(4).score_bias([1.0], 0, 3), TypeError, 'q must be a torch.Tensor, got list'),
    ('shaw_q_3d', lambda: positional.ShawRelativePositionalBias(4).score_bias(torch.zeros(2, 3, 4), 0, 3), ValueError, 'q must have shape (B, H, L, E), got (2, 3, 4)'),
    ('shaw_q_heads', lambda: positional.ShawRelativePositionalBias(4, num_heads=2).score_bias(torch.zeros(1, 3, 2, 4), 0, 2), ValueError, 'q has 3 heads (shape (1, 3, 2, 4), (B, H, L, E)) but the encoding was built with num_heads=2'),
    ('shaw_q_E', lambda: positional.ShawRelativePositionalBias(4).score_bias(torch.zeros(1, 2, 2, 3), 0, 2), ValueError, 'q has last dimension 3 (shape (1, 2, 2, 3)), expected 4 (d_head of the positional encoding)'),
    ('shaw_off', lambda: positional.ShawRelativePositionalBias(4).score_bias(torch.zeros(1, 2, 2, 4), -1, 2), ValueError, 'q_offset must be a non-negative integer (the position of the first token), got -1'),
    ('t5_float', lambda: positional.t5_bucket(torch.zeros(2), True, 32, 128), TypeError, 'relative_position must be an integer tensor (j - i), got dtype torch.float32'),
    ('t5_m', lambda: positional.t5_bucket(torch.zeros(2, dtype=torch.long), True, 32, 8), ValueError, 'max_distance (8) must exceed the 8 exactly-bucketed distances (num_buckets=32)'),
    ('t5_h', lambda: positional.T5RelativePositionBias(0), ValueError, 'num_heads must be a positive integer, got 0'),
    ('t5_off', lambda: positional.T5RelativePositionBias(2).score_bias(torch.zeros(1, 2, 2, 4), -1, 2), ValueError, 'q_offset must be a non-negative integer (the position of the first token), got -1'),
    ('alibi_off', lambda: positional.ALiBi(2).score_bias(torch.zeros(1, 2, 2, 4), -1, 2), ValueError, 'q_offset must be a non-negative integer (the position of the first token), got -1'),
    ('rope_d', lambda: positional.RotaryPositionalEncoding(0), ValueError, 'd_head must be a positive integer, got 0'),
    ('rope_odd', lambda: positional.RotaryPositionalEncoding(3), ValueError, 'd_head must be even (RoPE rotates pairs of dimensions), got d_head=3'),
    ('rope_base', lambda: positional.RotaryPositionalEncoding(4, base=-1.0), ValueError, 'base must be a positive number (the wavelength base, 10000 in the paper), got -1.0'),
    ('rope_x_list', lambda: positional.RotaryPositionalEncoding(4).rotate([1.0]), TypeError, 'x must be a torch.Tensor, got list'),
    ('rope_x_1d', lambda: positional.RotaryPositionalEncoding(4).rotate(torch.zeros(4)), ValueError, 'x must have at least 2 dimensions, got shape (4)'),
    ('rope_x_int', lambda: positional.RotaryPositionalEncoding(4).rotate(torch.zeros(2, 4, dtype=torch.long)), TypeError, 'x must be a floating-point tensor, got dtype torch.int64'),
    ('rope_x_dim', lambda: positional.RotaryPositionalEncoding(4).rotate(torch.zeros(2, 6)), ValueError, 'x has last dimension 6 (shape (2, 6)), expected 4 (d_head of the rotary encoding)'),
    ('rope_off', lambda: positional.RotaryPositionalEncoding(4).rotate(torch.zeros(2, 4), offset=-1), ValueError, 'offset must be a non-negative integer (the position of the first token), got -1'),
    ('rope_pos', lambda: positional.RotaryPositionalEncoding(4).rotation_matrix(-1), ValueError, 'pos must be a non-negative integer (the position to rotate by), got -1'),
]


@pytest.mark.parametrize(("_case", "call", "error", "message"), BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_every_bad_input_is_named_in_full(_case, call, error, message):
    with pytest.raises(error) as e:
        call()
    assert str(e.value) == message


def test_the_smallest_tables_and_the_longest_sequences_that_fit_are_accepted():
    assert sinusoidal_table(1, 1).shape == (1, 1)
    enc = attn.SinusoidalPositionalEncoding(4, max_len=3)
    assert enc(torch.zeros(3, 4)).shape == (3, 4)  # L == max_len fits; 2-D x (unbatched) too
    assert_close(enc.encoding(2), enc.pe[:2])  # offset defaults to 0
    assert_close(enc.encoding(2, offset=1), enc.pe[1:3])
    learned = LearnedPositionalEncoding(4, max_len=4)
    assert_close(learned.encoding(2), learned.embedding.weight[:2], rtol=0, atol=0)
    assert learned(torch.zeros(4, 4)).shape == (4, 4)
    grid = Sinusoidal2DPositionalEncoding(8, 2, 2)
    assert_close(grid(torch.zeros(3, 8), offset=1), grid.pe[1:4])


def test_defaults_are_the_papers():
    enc = attn.SinusoidalPositionalEncoding(8)
    assert enc.max_len == 4096 and enc.base == 10000.0
    assert_close(enc.pe, sinusoidal_table(4096, 8, 10000.0), rtol=0, atol=0)
    assert Sinusoidal2DPositionalEncoding(8, 2, 2).base == 10000.0
    assert RotaryPositionalEncoding(4).base == 10000.0
    assert ShawRelativePositionalBias(4).max_distance == 16
    t5 = T5RelativePositionBias(2)
    assert (t5.num_buckets, t5.max_distance, t5.bidirectional) == (32, 128, True)
    # the base reaches the tables
    assert not torch.equal(sinusoidal_table(8, 8, 100.0), sinusoidal_table(8, 8))
    assert not torch.equal(Sinusoidal2DPositionalEncoding(8, 2, 2, base=100.0).pe, Sinusoidal2DPositionalEncoding(8, 2, 2).pe)


def test_tables_are_computed_in_float64_so_far_positions_are_exact_in_float32():
    """At position 4000 a float32 angle is off by ~1e-4 rad; the tables compute in float64 first."""
    n, d = 4096, 16
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    freq = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    ref = torch.zeros(n, d, dtype=torch.float64)
    ref[:, 0::2], ref[:, 1::2] = torch.sin(pos * freq), torch.cos(pos * freq)
    assert_close(sinusoidal_table(n, d), ref.float(), rtol=0, atol=2e-7)
    rope = RotaryPositionalEncoding(d)
    assert_close(rope.angles(8, offset=4000), pos[4000:4008] * freq, rtol=0, atol=1e-9)
    rows, cols = sinusoidal_table(2, 4, 100.0), sinusoidal_table(3, 4, 100.0)  # the 2-D grid: 1-D tables, its base
    grid = Sinusoidal2DPositionalEncoding(8, 2, 3, base=100.0).pe
    assert_close(grid, torch.cat([rows[:, None].expand(2, 3, 4), cols[None].expand(2, 3, 4)], -1).reshape(6, 8))
    assert_close(attn.SinusoidalPositionalEncoding(8, max_len=5, base=100.0).pe, sinusoidal_table(5, 8, 100.0))


def test_encodings_keep_the_input_dtype_and_device():
    for enc in (attn.SinusoidalPositionalEncoding(4), LearnedPositionalEncoding(4, 8), Sinusoidal2DPositionalEncoding(4, 2, 2)):
        for dtype in (torch.float16, torch.bfloat16, torch.float64):
            assert enc(torch.zeros(3, 4, dtype=dtype)).dtype == dtype
    rope = RotaryPositionalEncoding(4)
    assert rope.angles(3, device="meta").device.type == "meta"
    assert rope.rotate(torch.zeros(1, 3, 4, device="meta")).device.type == "meta"
    assert_close(rope.rotate(torch.ones(3, 4)), rope.rotate(torch.ones(3, 4), offset=0))
    assert not torch.equal(rope.rotate(torch.ones(3, 4)), rope.rotate(torch.ones(3, 4), offset=1))
    assert ShawRelativePositionalBias(4).index(3, 3, device="meta").device.type == "meta"
    assert T5RelativePositionBias(2).buckets(3, 3, device="meta").device.type == "meta"
    for dtype in (torch.float16, torch.bfloat16, torch.float64):
        q = torch.randn(1, 2, 3, 4).to(dtype)
        for bias in (ShawRelativePositionalBias(4), ShawRelativePositionalBias(4, num_heads=2), T5RelativePositionBias(2), ALiBi(2)):
            assert bias.score_bias(q, 0, 3).dtype == dtype
    q = torch.zeros(1, 2, 3, 4, device="meta")
    for bias in (ShawRelativePositionalBias(4), T5RelativePositionBias(2), ALiBi(2)):
        bias.to("meta")
        assert bias.score_bias(q, 0, 3).device.type == "meta"


def test_buffers_are_not_saved_and_parameters_have_their_shapes_and_scale():
    assert "pe" not in Sinusoidal2DPositionalEncoding(8, 2, 2).state_dict()
    assert "slopes" not in ALiBi(4).state_dict()
    shared, per_head = ShawRelativePositionalBias(8, max_distance=5), ShawRelativePositionalBias(8, num_heads=3, max_distance=5)
    assert shared.vectors.shape == (11, 8) and per_head.vectors.shape == (3, 11, 8)
    big = ShawRelativePositionalBias(64, num_heads=4, max_distance=64)
    assert 0.019 < big.vectors.std().item() < 0.021
    assert 0.018 < T5RelativePositionBias(16, num_buckets=64).embedding.weight.std().item() < 0.022


@pytest.mark.parametrize("num_heads", [None, 4])
def test_shaw_reset_parameters_redraws_every_vector_in_place_at_std_0_02(num_heads):
    """What a stack's independent copies call: the same Parameter (its dtype kept), every entry
    drawn anew from N(0, 0.02²)."""
    torch.manual_seed(0)
    bias = ShawRelativePositionalBias(64, num_heads=num_heads, max_distance=16).double()
    vectors = bias.vectors
    with torch.no_grad():
        vectors.fill_(1.0)
    bias.reset_parameters()
    assert bias.vectors is vectors and vectors.dtype == torch.float64 and vectors.requires_grad
    assert 0.019 < vectors.std().item() < 0.021 and abs(vectors.mean().item()) < 0.002
    assert vectors.unique().numel() > vectors.numel() // 2  # one draw per entry, not one for all
    assert (vectors != vectors.float().double()).any()  # drawn in float64, not float32 numbers widened


def test_index_and_buckets_default_to_queries_from_position_zero():
    shaw = ShawRelativePositionalBias(4, max_distance=2)
    assert torch.equal(shaw.index(3, 3), shaw.index(3, 3, 0))
    assert not torch.equal(shaw.index(3, 3), shaw.index(3, 3, 1))
    t5 = T5RelativePositionBias(2)
    assert torch.equal(t5.buckets(3, 3), t5.buckets(3, 3, 0))
    assert not torch.equal(t5.buckets(3, 3), t5.buckets(3, 3, 1))
    assert_close(RotaryPositionalEncoding(4).rotation_matrix(0), torch.eye(4))
    assert torch.equal(RotaryPositionalEncoding(4).angles(3), RotaryPositionalEncoding(4).angles(3, offset=0))
    default = torch.get_default_dtype()
    try:  # ALiBi's slopes are float32 whatever the default dtype
        torch.set_default_dtype(torch.float64)
        assert alibi_slopes(4).dtype == torch.float32
    finally:
        torch.set_default_dtype(default)


def test_t5_bucket_counts_are_checked_by_name():
    zeros = torch.zeros(2, dtype=torch.long)
    t5_bucket(zeros, True, 4, 8)  # the smallest bidirectional count
    t5_bucket(zeros, False, 2, 8)
    for call, message in [
        (lambda: t5_bucket([0, 1], True, 32, 128), "relative_position must be a torch.Tensor, got list"),
        (lambda: t5_bucket(zeros, True, 0, 128), "num_buckets must be a positive integer, got 0"),
        (lambda: t5_bucket(zeros, True, 32, 0), "max_distance must be a positive integer, got 0"),
        (lambda: t5_bucket(zeros, False, 1, 128), "num_buckets must be at least 2 (exact and logarithmic halves), got 1"),
        (lambda: alibi_slopes(0), "num_heads must be a positive integer, got 0"),
    ]:
        with pytest.raises((TypeError, ValueError)) as e:
            call()
        assert str(e.value) == message


def test_t5_max_distance_must_exceed_the_exact_buckets_by_at_least_one():
    t5_bucket(torch.zeros(2, dtype=torch.long), True, 32, 9)  # m = 8 exact buckets, max_distance 9: fine
    with pytest.raises(ValueError, match=r"max_distance \(8\) must exceed"):
        t5_bucket(torch.zeros(2, dtype=torch.long), True, 32, 8)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a second device: the queries' device decides")
def test_score_biases_are_built_on_the_device_of_the_queries():
    """The positions (Shaw's rows, T5's buckets, ALiBi's distances) are built where q lives; built on
    the CPU, Shaw's gather and T5's embedding lookup of CUDA tensors would fail."""
    torch.manual_seed(0)
    q = torch.randn(2, 2, 3, 4)
    for bias in (ShawRelativePositionalBias(4), ShawRelativePositionalBias(4, num_heads=2),
                 T5RelativePositionBias(2), ALiBi(2)):
        expected = bias.score_bias(q, 2, 5)
        got = bias.to("cuda").score_bias(q.cuda(), 2, 5)
        assert got.device.type == "cuda"
        assert_close(got.cpu(), expected)


@pytest.mark.skipif(not torch.backends.mps.is_available(), reason="needs Apple's MPS, which lacks float64")
def test_rope_on_mps_computes_its_angles_in_float32():
    rope = RotaryPositionalEncoding(8)
    assert rope.angles(5, device="mps").dtype == torch.float32
    x = torch.randn(1, 2, 5, 8)
    assert_close(rope.rotate(x.to("mps"), offset=3).cpu(), rope.rotate(x, offset=3))
