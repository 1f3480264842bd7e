"""Causal attention, as the chapter book/causal_attention.ipynb uses it: causality under
perturbation of future tokens (and a check that catches broken masks), masking before the softmax,
fully masked rows, teacher forcing against cached decoding, and the step mask of cached decoding."""

import functools
import importlib.util
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.testing import assert_close

import attn
from attn import masks, positional
from attn.book.causal_attention import greedy_with_step_mask, stepwise_logits
from attn.models import TokenModel

VOCAB, D, H = 23, 32, 4


@functools.lru_cache(maxsize=None)
def lm(pos: str = "sinusoidal", seed: int = 0) -> TokenModel:
    """A small random causal LM with the given positional encoding (cached: models are read-only)."""
    torch.manual_seed(seed)
    spec = {
        "sinusoidal": "sinusoidal",
        "none": None,
        "alibi": lambda: positional.ALiBi(H),
        "rope": lambda: positional.RotaryPositionalEncoding(D // H),
        "t5": lambda: positional.T5RelativePositionBias(H, bidirectional=False),
    }[pos]
    spec = spec() if callable(spec) else spec
    return TokenModel(VOCAB, d_model=D, num_heads=H, num_layers=2, is_causal=True, max_len=64,
                      positional=spec).eval()


POSITIONALS = ["sinusoidal", "none", "alibi", "rope", "t5"]


def perturb_from(x: torch.Tensor, t: int, g: torch.Generator) -> torch.Tensor:
    """x with every token at positions >= t replaced by a different random token."""
    x2 = x.clone()
    shift = torch.randint(1, VOCAB, x[:, t:].shape, generator=g)
    x2[:, t:] = (x[:, t:] + shift) % VOCAB
    return x2


@settings(max_examples=30, deadline=None)
@given(L=st.integers(2, 20), data=st.data(), pos=st.sampled_from(POSITIONALS), seed=st.integers(0, 2**16))
def test_perturbing_future_tokens_leaves_earlier_logits_unchanged(L, data, pos, seed):
    t = data.draw(st.integers(1, L - 1), label="first perturbed position")
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, VOCAB, (2, L), generator=g)
    x2 = perturb_from(x, t, g)
    model = lm(pos)
    with torch.no_grad():
        before, after = model(x), model(x2)  # (B, L, V)
    assert_close(after[:, :t], before[:, :t], atol=1e-6, rtol=1e-6)
    assert not torch.allclose(after[:, t], before[:, t], atol=1e-4), "the perturbation must matter"


@settings(max_examples=20, deadline=None)
@given(L=st.integers(2, 20), data=st.data(), seed=st.integers(0, 2**16))
def test_perturbation_check_catches_an_off_by_one_mask(L, data, seed):
    t = data.draw(st.integers(1, L - 1), label="first perturbed position")
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, VOCAB, (1, L), generator=g)
    x2 = perturb_from(x, t, g)
    broken = masks.causal(L, offset=1)  # j <= i + 1: each position sees the next token
    with torch.no_grad():
        before, after = lm()(x, mask=broken), lm()(x2, mask=broken)
    assert not torch.allclose(after[:, t - 1], before[:, t - 1], atol=1e-4)


def test_perturbation_check_catches_a_missing_mask():
    L = 10
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, VOCAB, (1, L), generator=g)
    x2 = perturb_from(x, L - 1, g)
    leaky = torch.ones(L, L, dtype=torch.bool)
    with torch.no_grad():
        changed = (lm()(x2, mask=leaky) - lm()(x, mask=leaky)).abs().amax(-1)[0]  # (L,)
    assert (changed > 1e-4).all(), "without a mask every position depends on the last token"


def test_mask_before_softmax_is_a_distribution_and_blind_to_the_future():
    g = torch.Generator().manual_seed(0)
    L, E = 7, 8
    q, k, v = (torch.randn(L, E, generator=g, dtype=torch.float64) for _ in range(3))
    causal = masks.causal(L)
    s = q @ k.T / math.sqrt(E)
    before = torch.softmax(s.masked_fill(~causal, float("-inf")), -1)  # (L, S)
    after = torch.softmax(s, -1) * causal
    assert_close(before.sum(-1), torch.ones(L, dtype=torch.float64))
    assert (after.sum(-1)[:-1] < 1 - 1e-6).all(), "masking after softmax loses mass"
    # Maths: renormalising the after-softmax rows gives the correct weights...
    assert_close(after / after.sum(-1, keepdim=True), before)
    # ...and the correct weights are PyTorch's causal attention.
    assert_close(before @ v, F.scaled_dot_product_attention(q, k, v, is_causal=True))
    # Changing the last key moves the earlier rows of the wrong weights only.
    k2 = k.clone()
    k2[-1] += 3.0
    s2 = q @ k2.T / math.sqrt(E)
    before2 = torch.softmax(s2.masked_fill(~causal, float("-inf")), -1)
    after2 = torch.softmax(s2, -1) * causal
    assert torch.equal(before2[:-1], before[:-1])
    assert (after2[:-1] - after[:-1]).abs().max() > 1e-3


def test_minus_1e9_overflows_in_float16_and_the_dtype_minimum_overflows_when_added():
    assert torch.isneginf(torch.tensor(-1e9, dtype=torch.float16))
    with pytest.raises(RuntimeError, match="overflow"):
        torch.zeros(2, dtype=torch.float16).masked_fill(torch.tensor([True, False]), -1e9)
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        lo = torch.tensor(torch.finfo(dtype).min, dtype=dtype)
        assert torch.isfinite(lo) and torch.isneginf(lo + lo)
    assert torch.isneginf(torch.tensor(torch.finfo(torch.float16).min, dtype=torch.float16) - 20)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_fully_masked_rows_from_left_padding_give_zeros_not_nan(dtype):
    lengths, L = [6, 3, 1], 6
    mask = masks.combine(masks.causal(L), masks.padding(lengths, L).flip(-1))  # (B, L, S)
    empty = masks.fully_masked_rows(mask)[..., 0]  # (B, L)
    assert empty.sum().item() == 0 + 3 + 5
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(3, 2, L, 8, generator=g) for _ in range(3))  # (B, H, L, E)
    m = mask.unsqueeze(1)  # (B, 1, L, S)
    s = q.to(dtype) @ k.to(dtype).transpose(-2, -1)
    naive = torch.softmax(s.masked_fill(~m, float("-inf")).float(), -1)
    assert torch.isnan(naive[empty.unsqueeze(1).expand(-1, 2, -1)]).all()
    reference = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=m)
    tol = {torch.float32: 1e-5, torch.float16: 5e-3, torch.bfloat16: 3e-2}[dtype]
    for return_weights in (False, True):
        out = attn.scaled_dot_product_attention(q.to(dtype), k.to(dtype), v.to(dtype), mask=m,
                                                return_weights=return_weights)
        out = out[0] if return_weights else out
        assert out.dtype == dtype and not torch.isnan(out).any()
        rows = empty.unsqueeze(1).expand(-1, 2, -1)  # (B, H, L)
        assert (out[rows] == 0).all()
        assert_close(out[~rows].double(), reference[~rows], atol=tol, rtol=tol)


@pytest.mark.slow  # several seconds: `make unit` skips it, `make test` runs it
@pytest.mark.parametrize("pos", POSITIONALS)
def test_teacher_forcing_equals_cached_and_uncached_step_by_step_decoding(pos):
    model = lm(pos)
    x = torch.randint(0, VOCAB, (2, 15), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        parallel = model(x)
        no_cache = torch.stack([model(x[:, : t + 1])[:, -1] for t in range(15)], 1)
        caches = model.new_caches()
        cached = torch.cat([model(x[:, t : t + 1], caches=caches) for t in range(15)], 1)
    assert_close(no_cache, parallel, atol=1e-5, rtol=1e-5)
    assert_close(cached, parallel, atol=1e-5, rtol=1e-5)
    assert [len(c) for c in caches] == [15, 15]


@pytest.mark.slow  # several seconds: `make unit` skips it, `make test` runs it
@pytest.mark.parametrize("pos", POSITIONALS)
def test_cached_generation_gives_the_same_tokens_as_recomputing(pos):
    prompt = torch.randint(0, VOCAB, (2, 4), generator=torch.Generator().manual_seed(2))
    model = lm(pos)
    assert torch.equal(model.generate(prompt, 30, use_cache=True), model.generate(prompt, 30, use_cache=False))


def test_cached_step_mask_must_be_the_last_row_sized_to_the_keys():
    model = lm()
    x = torch.randint(0, VOCAB, (1, 12), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        parallel = model(x)
    last_row = stepwise_logits(model, x, lambda S: masks.causal(1, S, offset=S - 1))
    assert_close(last_row, parallel, atol=1e-5, rtol=1e-5)
    first_row = stepwise_logits(model, x, lambda S: masks.causal(S)[:1])  # top-left: sees key 0 only
    assert_close(first_row[:, 0], parallel[:, 0], atol=1e-5, rtol=1e-5)  # S = 1: still right
    assert not torch.allclose(first_row[:, 1:], parallel[:, 1:], atol=1e-3)
    # The bottom-right row is what is_causal means in MultiHeadAttention with a cache.
    mha = attn.MultiHeadAttention(D, H).eval()
    h = torch.randn(1, 6, D, generator=torch.Generator().manual_seed(4))

    def last_step(**kw):
        cache = attn.KVCache()
        mha(h[:, :5], is_causal=True, cache=cache)  # five cached keys
        return mha(h[:, 5:], cache=cache, **kw)[0]  # the sixth query, S = 6

    with torch.no_grad():
        full = mha(h, is_causal=True)[0][:, 5:]  # the oracle: one parallel pass
        via_flag = last_step(is_causal=True)
        bottom_right = last_step(mask=masks.causal(1, 6, offset=5))
        top_left = last_step(mask=masks.causal(1, 6))
    assert_close(via_flag, full, atol=1e-6, rtol=1e-5)
    assert_close(bottom_right, full, atol=1e-6, rtol=1e-5)
    assert not torch.allclose(top_left, full, atol=1e-3)
    # ...and the training-sized mask does not fit the keys: a clear error, not silent garbage.
    with pytest.raises(ValueError, match=r"mask of shape \(1, 32\) cannot broadcast"):
        stepwise_logits(model, x, lambda _S: masks.causal(32)[:1])


def _load_benchmark(root):
    spec = importlib.util.spec_from_file_location("kv_cache_bench", root / "benchmarks" / "kv_cache.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # several seconds: `make unit` skips it, `make test` runs it
def test_kv_cache_benchmark_checks_tokens_and_reports_a_ratio(root):
    bench = _load_benchmark(root)
    model = bench.build(d_model=16, num_layers=1, num_heads=2, max_len=40)
    prompt = torch.randint(0, 64, (1, 3), generator=torch.Generator().manual_seed(0))
    tokens = bench.check_identical(model, prompt, 12)
    assert tokens.shape == (1, 15)
    t_cache, t_full = bench.measure(model, prompt, 12, rounds=1)
    assert t_cache > 0 and t_full > 0


def test_kv_cache_memory_arithmetic_of_exercise_4():
    layers, heads, head_dim, tokens, bytes_per_number = 32, 32, 128, 4096, 2
    cache_bytes = 2 * layers * heads * head_dim * tokens * bytes_per_number  # keys and values
    assert cache_bytes == 2**31  # 2 GiB
    D = heads * head_dim
    weights = layers * (4 * D * D + 2 * D * 4 * D)  # attention + FFN matrices, d_ff = 4D
    assert weights == 12 * D * D * layers
    assert round(weights * bytes_per_number / 1e9, 1) == 12.9
    assert 5.5 < weights * bytes_per_number / cache_bytes < 6.5  # "about a sixth"


# --- the chapter's helpers: attn.book.causal_attention -------------------------------------------


def test_greedy_with_step_mask_equals_generate_with_the_last_row_and_sizes_each_step_mask():
    model, prompt = lm(), torch.randint(0, VOCAB, (1, 5), generator=torch.Generator().manual_seed(6))
    right = greedy_with_step_mask(model, prompt, 12, lambda S: masks.causal(1, S, offset=S - 1))
    assert right.shape == (1, 17) and torch.equal(right, model.generate(prompt, 12))
    seen = []
    wrong = greedy_with_step_mask(model, prompt, 12, lambda S: seen.append(S) or masks.causal(S)[:1])
    assert seen == list(range(6, 18))  # one call per new token, sized to the keys after it
    assert torch.equal(wrong[:, :6], right[:, :6])  # the first new token comes from the prompt pass


def test_token_dependency_is_lower_triangular_for_the_causal_mask_and_leaks_when_off_by_one():
    model = lm()
    x = torch.randint(0, VOCAB, (1, 9), generator=torch.Generator().manual_seed(7))
    dep = attn.book.causal_attention.token_dependency(model, x, VOCAB)
    assert dep.shape == (9, 9) and dep.triu(1).max() == 0 and (dep.diagonal() > 0).all()
    broken = attn.book.causal_attention.token_dependency(model, x, VOCAB, mask=masks.causal(9, offset=1))
    assert (broken.diagonal(1) > 0).all()  # each output moves with the next token
    assert torch.equal(dependency_by_hand(model, x)[:, 4], dep[:, 4])


def dependency_by_hand(model, x):
    """Column by column, the oracle of token_dependency: replace token t by the next id."""
    with torch.no_grad():
        base = model(x)
        cols = []
        for t in range(x.shape[1]):
            x2 = x.clone()
            x2[0, t] = (x2[0, t] + 1) % VOCAB
            cols.append((model(x2) - base).abs().amax(-1)[0])
    return torch.stack(cols, 1)


def test_causal_alignment_names_what_each_function_does():
    assert attn.book.causal_attention.causal_alignment(F.scaled_dot_product_attention) == "top-left"
    assert attn.book.causal_attention.causal_alignment(attn.scaled_dot_product_attention) == "bottom-right"

    def refuses(*_args, **_kwargs):
        raise ValueError("no")

    assert attn.book.causal_attention.causal_alignment(refuses) == "an error"
    assert attn.book.causal_attention.causal_alignment(lambda *args, **_kw: args[2][:, :1] * 0) == "other"


def test_fully_masked_outcomes_name_nan_uniform_overflow_and_zeros():
    mask = masks.combine(masks.causal(6), masks.padding([6, 3], 6).flip(-1))  # (B, L, S)
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 6, 4, generator=g) for _ in range(3))
    f32 = attn.book.causal_attention.fully_masked_outcomes(q, k, v, mask)
    assert f32 == {"masked_fill(-inf)": "NaN", "masked_fill(-1e9)": "uniform over blocked keys",
                   "masked_fill(finfo.min)": "uniform over blocked keys", "attn weights": "zeros",
                   "attn output": "zeros"}
    f16 = attn.book.causal_attention.fully_masked_outcomes(q.half(), k.half(), v.half(), mask)
    assert f16["masked_fill(-1e9)"] == "error: overflow" and f16["attn output"] == "zeros"


def test_next_token_windows_targets_are_the_inputs_shifted_by_one_and_lm_helpers_agree():
    ids = torch.arange(100) % VOCAB
    x, y = attn.book.causal_attention.next_token_windows(ids, 4, 10, seed=0)
    assert x.shape == y.shape == (4, 10) and torch.equal(x[:, 1:], y[:, :-1])
    assert torch.equal(y, (x + 1) % VOCAB)  # the text counts up: the next id follows
    model = lm()
    loss, acc = attn.book.causal_attention.lm_evaluate(model, x, y)
    assert_close(torch.tensor(loss), attn.book.train.token_loss(model, (x, y)).detach())
    with torch.no_grad():
        assert acc == (model(x).argmax(-1) == y).float().mean().item() and 0 <= acc <= 1


def test_additive_causal_mask_is_zero_on_and_below_the_diagonal_and_minus_inf_only_above():
    # The source documents' slip: they allow "0 or -1e9" on and below the diagonal.
    for L in (1, 2, 5, 9):
        C = masks.causal(L)
        M = masks.to_additive(C)
        assert torch.equal(C, torch.ones(L, L).tril().bool())
        assert (M[C] == 0).all() and (M[~C] == float("-inf")).all()


def test_minus_1e9_on_the_allowed_entries_erases_float32_scores_but_not_float64_ones():
    g = torch.Generator().manual_seed(0)
    L = 6
    C = masks.causal(L)
    scores = 4 * torch.randn(L, L, generator=g, dtype=torch.float64)  # |scores| < 32 here
    assert scores.abs().max() < 32  # half the float32 spacing at 1e9 (64)
    right = torch.softmax(scores + masks.to_additive(C).double(), -1)
    slip = masks.to_additive(C).double().masked_fill(C, -1e9)
    assert_close(torch.softmax(scores + slip, -1), right)  # exact arithmetic: a shift, harmless
    f32 = torch.softmax(scores.float() + slip.float(), -1)
    assert torch.equal(f32, (C / C.sum(-1, keepdim=True)).float())  # float32: uniform rows
    assert (f32.double() - right).abs().max() > 0.3
