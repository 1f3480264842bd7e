"""Claims of the self-attention chapter, checked against maths: the softmax Jacobian with and
without the 1/sqrt(d_k) scale, and the seed code's mask convention (1 = blocked, -1e9) against attn's
(True = may attend, -inf, zeros for a fully masked row)."""

import math

import pytest
import torch
from torch.testing import assert_close

import attn
import attn.book.examples
import attn.book.self_attention
from attn import masks


def _mean_jacobian_norm(d_k: int, scaled: bool, seed: int = 0) -> float:
    return attn.book.self_attention.softmax_saturation(d_k, scaled, seed=seed)["jac"]


def test_softmax_jacobian_closed_form_equals_autograd():
    s = torch.randn(7, dtype=torch.float64)
    p = torch.softmax(s, -1)
    J = torch.autograd.functional.jacobian(lambda x: torch.softmax(x, -1), s)
    assert_close(J, torch.diag(p) - torch.outer(p, p))
    assert_close(attn.book.self_attention.softmax_jacobian_norm(p), J.norm())
    rows = torch.softmax(torch.randn(3, 5, 7, dtype=torch.float64), -1)  # batched rows
    assert_close(attn.book.self_attention.softmax_jacobian_norm(rows)[1, 2], attn.book.self_attention.softmax_jacobian_norm(rows[1, 2]))


def test_softmax_saturation_measures_the_scores_it_draws():
    for d_k in (4, 256):
        raw, scaled = (attn.book.self_attention.softmax_saturation(d_k, s) for s in (False, True))
        assert raw["var"] == pytest.approx(d_k * scaled["var"], rel=1e-4)  # unscaled variance is d_k times larger
        assert 0.8 < scaled["var"] < 1.25  # about 1 with the scale
        assert 1 / 64 < scaled["max_w"] < 1 and scaled["entropy"] <= math.log(64) + 1e-6
    big = attn.book.self_attention.softmax_saturation(1024, False)
    assert big["max_w"] > 0.8 and big["entropy"] < 1  # saturated: close to one-hot


def test_matrices_table_puts_named_matrices_side_by_side():
    t = attn.book.examples.matrices(["a", "b"], ("x", torch.tensor([[1.0, 2], [3, 4]])), ("y", torch.eye(2)), cols="pq")
    assert "x p" in repr(t) and "y q" in repr(t)
    lines = repr(t).splitlines()
    assert lines[-1].split() == ["b", "3", "4", "0", "1"]
    with pytest.raises(ValueError, match="matrix 'y' must be 2-D with 2 rows"):
        attn.book.examples.matrices(["a", "b"], ("y", torch.eye(3)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_unscaled_softmax_passes_more_gradient_at_small_d_k_and_less_at_large_d_k(seed):
    assert _mean_jacobian_norm(16, False, seed) > _mean_jacobian_norm(16, True, seed)
    assert _mean_jacobian_norm(1024, False, seed) < _mean_jacobian_norm(1024, True, seed) / 2


def _seed_code_attention(q, k, v, mask):
    """The convention of the code the book grew from: 1 = blocked, filled with -1e9."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    return torch.softmax(scores.masked_fill(mask == 1, -1e9), dim=-1) @ v


def test_seed_code_mask_convention_equals_attn_except_on_fully_masked_rows():
    allowed = masks.combine(masks.causal(6), masks.padding([6, 3], 6).flip(-1))  # (B, L, S), left padding
    full = masks.fully_masked_rows(allowed)[..., 0]  # (B, L)
    assert full.sum() == 3
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 6, 8, generator=g) for _ in range(3))
    seed_mask = (~allowed).long()  # 1 = blocked
    ours = attn.scaled_dot_product_attention(q, k, v, mask=seed_mask == 0)
    theirs = _seed_code_attention(q, k, v, seed_mask)
    assert_close(theirs[~full], ours[~full])
    assert (ours[full] == 0).all()
    assert_close(theirs[full], v.mean(1, keepdim=True).expand_as(v)[full])  # uniform over blocked keys
    with pytest.raises(RuntimeError, match="overflow"):
        _seed_code_attention(q.half(), k.half(), v.half(), seed_mask)


def test_seed_code_fill_of_minus_1e9_becomes_minus_inf_in_float16_and_a_fully_masked_row_gives_nan():
    fill = torch.tensor(-1e9, dtype=torch.float16)
    assert torch.finfo(torch.float16).max == 65504 and fill.item() == float("-inf")
    allowed = masks.combine(masks.causal(4), masks.padding([4, 2], 4).flip(-1))  # (B, L, S), left padding
    full = masks.fully_masked_rows(allowed)[..., 0]  # (B, L)
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 4, 8, generator=g) for _ in range(3))
    scores = (q @ k.transpose(-2, -1) / math.sqrt(8)).half()
    seed_out = torch.softmax(scores.masked_fill(~allowed, fill), -1) @ v.half()
    assert seed_out[full].isnan().all() and not seed_out[~full].isnan().any()
    ours = attn.scaled_dot_product_attention(q.half(), k.half(), v.half(), mask=allowed)
    assert (ours[full] == 0).all() and not ours.isnan().any()
    assert_close(seed_out[~full].float(), ours[~full].float(), atol=1e-2, rtol=1e-2)


def test_softmax_saturation_with_variance_4_needs_a_divisor_of_4_sqrt_d_k():
    for d_k in (4, 64):
        reference = attn.book.self_attention.softmax_saturation(d_k, True)
        wide = attn.book.self_attention.softmax_saturation(d_k, True, std=2.0)
        fixed = attn.book.self_attention.softmax_saturation(d_k, True, std=2.0, divisor=4 * math.sqrt(d_k))
        assert wide["var"] == pytest.approx(16 * reference["var"], rel=1e-4)  # std 2: 2^4 times the variance
        assert fixed["var"] == pytest.approx(reference["var"], rel=1e-4)
        assert fixed["entropy"] == pytest.approx(reference["entropy"], rel=1e-4)
    assert attn.book.self_attention.softmax_saturation(16, False, divisor=1.0) == \
        attn.book.self_attention.softmax_saturation(16, False)
    for name, kwargs in [("std", {"std": 0.0}), ("divisor", {"divisor": -1.0})]:
        with pytest.raises(ValueError, match=f"{name} must be a positive number"):
            attn.book.self_attention.softmax_saturation(4, True, **kwargs)


class _OneHead(torch.nn.Module):
    """The optional section's one-head model (pre-LN block, width d), with values tied to keys or not."""

    def __init__(self, vocab: int, d: int, max_len: int, tie_kv: bool):
        super().__init__()
        nn = torch.nn
        self.embed, self.pos = nn.Embedding(vocab, d), attn.SinusoidalPositionalEncoding(d, max_len)
        self.norm, self.qkv, self.out = nn.LayerNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ff = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.ReLU(), nn.Linear(4 * d, d))
        self.head = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, vocab))
        self.tie_kv, self.scale = tie_kv, 1 / math.sqrt(d)

    def forward(self, tokens):
        x = self.pos(self.embed(tokens))  # (B, L, d)
        q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
        z = attn.scaled_dot_product_attention(q, k, k if self.tie_kv else v, scale=self.scale)
        x = x + self.out(z)
        return self.head(x + self.ff(x))


def test_tied_values_equal_keys_and_learn_key_value_recall_worse_than_separate_ones_at_seed_0():
    import torch.nn.functional as F

    from attn import book

    task, steps = book.data.KVRecall(), 300  # the chapter's task and budget
    batches = [book.data.kv_recall(64, task, seed=10_000 + i) for i in range(steps)]
    test = book.data.kv_recall(500, task, seed=0)

    def loss(model, batch):
        tokens, targets, _ = batch
        return F.cross_entropy(model(tokens).flatten(0, 1), targets.flatten(), ignore_index=book.data.IGNORE)

    test_loss, threads = {}, torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: one thread is fastest, and steady on a busy machine
    try:
        with torch.random.fork_rng():
            for tie in (False, True):
                torch.manual_seed(0)
                model = _OneHead(task.vocab_size, 64, task.seq_len, tie)
                book.train.train(model, batches.__getitem__, loss, steps=steps, lr=3e-3, warmup=30, seed=0,
                                 progress=False)
                with torch.no_grad():
                    test_loss[tie] = loss(model, test).item()
    finally:
        torch.set_num_threads(threads)
    assert test_loss[True] > test_loss[False] + 0.1, test_loss
