"""The claims of the positional-encodings chapter, checked against maths or brute force: the
last-write task's ground truth, offsets as linear maps of the sinusoidal code, permutation
equivariance without positions, prefix consistency of causal models, and which table rows a
training step can reach."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.testing import assert_close

import attn
from attn.book import data
from attn import positional as P
from attn.models import TokenModel
from attn.book.positional_encodings import offset_matrix


# --- attn.book.data.last_write ---------------------------------------------------------------------------

def test_last_write_is_deterministic_for_a_seed():
    a = data.last_write(40, 30, seed=5)
    b = data.last_write(40, 30, seed=5)
    c = data.last_write(40, 30, seed=6)
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    assert not torch.equal(a[0], c[0])


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 6), length=st.integers(1, 40), num_values=st.integers(1, 5),
       num_fillers=st.integers(1, 5), p_write=st.floats(0.05, 1.0), seed=st.integers(0, 1000))
def test_last_write_targets_equal_a_plain_loop(n, length, num_values, num_fillers, p_write, seed):
    tokens, targets, source = data.last_write(n, length, num_values=num_values, num_fillers=num_fillers,
                                              p_write=p_write, seed=seed)
    assert tokens.shape == targets.shape == source.shape == (n, length)
    for seq, tgt, src in zip(tokens.tolist(), targets.tolist(), source.tolist(), strict=True):
        assert seq[0] < num_values, "position 0 is always a write"
        assert all(0 <= t < num_values + num_fillers for t in seq)
        last = None
        for i, t in enumerate(seq):
            if t < num_values:  # a write: no target, and it becomes the latest write
                last = i
                assert tgt[i] == data.IGNORE
            else:
                assert tgt[i] == seq[last]
            assert src[i] == last


def test_last_write_rate_and_distance_do_not_depend_on_length():
    _, short_t, short_s = data.last_write(400, 32, seed=1)
    _, long_t, long_s = data.last_write(100, 128, seed=2)
    rate_short = (short_t == data.IGNORE)[:, 1:].float().mean().item()
    rate_long = (long_t == data.IGNORE)[:, 1:].float().mean().item()
    assert abs(rate_short - 0.15) < 0.02 and abs(rate_long - 0.15) < 0.02
    # mean distance back to the latest write, away from the start, is ~ (1 - p) / p whatever the length
    gap_long = (torch.arange(128) - long_s)[:, 64:].float().mean().item()
    gap_short = (torch.arange(32) - short_s)[:, 24:].float().mean().item()
    assert abs(gap_long - 0.85 / 0.15) < 1.0 and abs(gap_short - gap_long) < 1.5


def test_last_write_rejects_bad_arguments():
    with pytest.raises(ValueError, match=r"p_write must lie in \(0, 1\] \(the probability of a write\), got 0"):
        data.last_write(2, 8, p_write=0)
    with pytest.raises(ValueError, match="length must be a positive integer, got 0"):
        data.last_write(2, 0)
    with pytest.raises(ValueError, match="num_fillers must be a positive integer, got True"):
        data.last_write(2, 8, num_fillers=True)


def test_offset_matrix_needs_a_positive_even_width():
    with pytest.raises(ValueError, match=r"d must be even \(sin/cos pairs\), got d=3"):
        offset_matrix(1, 3)
    with pytest.raises(ValueError, match="d must be a positive integer, got 0"):
        offset_matrix(1, 0)


# --- sinusoidal: an offset is one rotation for every position --------------------------------------

@settings(max_examples=20, deadline=None)
@given(k=st.integers(1, 500), half=st.integers(1, 16))
def test_sinusoidal_offset_is_the_same_orthogonal_map_at_every_position(k, half):
    d = 2 * half
    pe = P.sinusoidal_table(1000, d).double()
    M = offset_matrix(k, d)
    assert_close(pe[k:], pe[:-k] @ M.T, atol=1e-6, rtol=0)
    assert_close(M.T @ M, torch.eye(d, dtype=torch.float64))
    dots = (pe[:-k] * pe[k:]).sum(1)  # PE[pos] . PE[pos + k] = sum_i cos(omega_i k)
    omega = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    assert_close(dots, torch.cos(omega * k).sum().expand_as(dots), atol=1e-5, rtol=0)


def test_2d_code_makes_the_four_neighbours_of_a_patch_equally_similar():
    t = P.Sinusoidal2DPositionalEncoding(32, 8, 8).table().double().view(8, 8, 32)
    for r, c in [(3, 4), (1, 1), (6, 2)]:
        sims = [F.cosine_similarity(t[r, c], t[rr, cc], dim=0) for rr, cc in
                [(r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)]]
        assert max(sims) - min(sims) < 1e-6


# --- models: what positions change --------------------------------------------------------------------

def test_encoder_without_positions_is_permutation_equivariant_and_with_them_is_not():
    torch.manual_seed(0)
    x = torch.randint(0, 16, (4, 12))
    perm = torch.randperm(12)
    for positional, equivariant in [(None, True), ("sinusoidal", False)]:
        model = TokenModel(16, d_model=32, num_heads=4, num_layers=2, max_len=12, positional=positional).eval()
        with torch.no_grad():
            gap = (model(x[:, perm]) - model(x)[:, perm]).abs().max().item()
        assert (gap < 1e-5) == equivariant, (positional, gap)


@pytest.mark.parametrize("name", ["none", "sinusoidal", "learned", "rope", "alibi", "t5"])
def test_causal_model_output_on_a_prefix_equals_the_prefix_of_its_output(name):
    make = {"none": lambda: None, "sinusoidal": lambda: "sinusoidal",
            "learned": lambda: P.LearnedPositionalEncoding(32, 64), "rope": lambda: P.RotaryPositionalEncoding(8),
            "alibi": lambda: P.ALiBi(4), "t5": lambda: P.T5RelativePositionBias(4, bidirectional=False)}[name]
    torch.manual_seed(0)
    model = TokenModel(16, d_model=32, num_heads=4, num_layers=2, max_len=64, is_causal=True, positional=make()).eval()
    x = torch.randint(0, 16, (3, 64))
    with torch.no_grad():
        full = model(x)
        for L in (1, 7, 32):
            assert_close(model(x[:, :L]), full[:, :L], atol=1e-5, rtol=1e-5)


def test_training_on_length_n_never_touches_learned_rows_or_t5_buckets_past_n():
    N = 16
    learned = P.LearnedPositionalEncoding(32, 4 * N)
    t5 = P.T5RelativePositionBias(4, bidirectional=False)
    for positional, weight in [(learned, learned.embedding.weight), (t5, t5.embedding.weight)]:
        torch.manual_seed(0)
        model = TokenModel(16, d_model=32, num_heads=4, num_layers=1, max_len=4 * N, is_causal=True, positional=positional)
        tokens, targets, _ = data.last_write(8, N, num_values=8, num_fillers=8, seed=0)
        loss = F.cross_entropy(model(tokens).flatten(0, 1), targets.flatten(), ignore_index=data.IGNORE)
        loss.backward()
        grad = weight.grad
        if positional is t5:  # distances 0 .. N - 1 = 15 each have their own bucket (16 exact ones)
            assert int(P.t5_bucket(-torch.arange(N), bidirectional=False).max()) == N - 1
        assert grad[N:].abs().max() == 0, "rows past N receive no gradient"
        assert bool(grad[:N].abs().sum(-1).gt(0).all()), "every row below N receives one"


# --- the chapter's helpers: attn.book.data.previous_token and attn.book.positional_encodings

def test_previous_token_targets_are_the_tokens_shifted_by_one():
    tokens, targets = data.previous_token(5, 12, 7, seed=3)
    assert tokens.shape == targets.shape == (5, 12) and int(tokens.max()) < 7
    assert (targets[:, 0] == data.IGNORE).all()
    assert torch.equal(targets[:, 1:], tokens[:, :-1])
    again, _ = data.previous_token(5, 12, 7, seed=3)
    assert torch.equal(tokens, again)
    with pytest.raises(ValueError, match="vocab"):
        data.previous_token(5, 12, 0)


def test_offset_matrix_rejects_an_odd_width():
    with pytest.raises(ValueError, match="d=3"):
        offset_matrix(1, 3)


def test_diagonal_spread_is_zero_exactly_when_scores_depend_on_the_offset_only():
    r = torch.arange(6)
    toeplitz = torch.cos(0.3 * (r[None, :] - r[:, None]).double())  # (6, 6), a function of n - m
    assert attn.book.positional_encodings.diagonal_spread(toeplitz) < 1e-12
    bumped = toeplitz.clone()
    bumped[2, 4] += 0.5
    assert attn.book.positional_encodings.diagonal_spread(bumped) == pytest.approx(0.5)


def test_own_buckets_counts_the_leading_distances_with_a_bucket_of_their_own():
    assert attn.book.positional_encodings.own_buckets(torch.tensor([0, 1, 2, 3, 3, 4])) == 3
    assert attn.book.positional_encodings.own_buckets(torch.tensor([0, 1, 2])) == 3
    assert attn.book.positional_encodings.own_buckets(P.t5_bucket(-torch.arange(200), bidirectional=False)) == 16


def test_token_loss_and_correct_per_position_match_a_direct_computation():
    torch.manual_seed(0)
    model = TokenModel(16, d_model=32, num_heads=4, num_layers=1, max_len=12).eval()
    tokens, targets = data.previous_token(8, 12, 16, seed=1)
    with torch.no_grad():
        logits = model(tokens)  # (B, L, V)
        expected = F.cross_entropy(logits.reshape(-1, 16), targets.reshape(-1), ignore_index=data.IGNORE)
        assert_close(attn.book.train.token_loss(model, (tokens, targets)), expected)
    correct = attn.book.positional_encodings.correct_per_position(model, tokens, targets)
    by_loop = [sum(int(logits[b, t].argmax()) == int(targets[b, t]) for b in range(8) if targets[b, t] >= 0)
               for t in range(12)]
    assert correct.tolist() == by_loop and correct[0] == 0
