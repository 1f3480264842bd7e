"""Claims of the self-attention chapter, checked against maths: the softmax Jacobian with and
without the 1/sqrt(d_k) scale, and the seed code's mask convention (1 = blocked, -1e9) against attn's
(True = may attend, -inf, zeros for a fully masked row)."""

import math

import pytest
import torch
from torch.testing import assert_close

import attn
from attn import masks


def _mean_jacobian_norm(d_k: int, scaled: bool, seed: int = 0) -> float:
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(512, d_k, generator=g), torch.randn(64, d_k, generator=g)
    p = torch.softmax(q @ k.T / (math.sqrt(d_k) if scaled else 1.0), dim=-1)  # (512, 64)
    J = torch.diag_embed(p) - p.unsqueeze(-1) * p.unsqueeze(-2)  # (512, 64, 64)
    return J.flatten(-2).norm(dim=-1).mean().item()


def test_softmax_jacobian_closed_form_equals_autograd():
    s = torch.randn(7, dtype=torch.float64)
    p = torch.softmax(s, -1)
    J = torch.autograd.functional.jacobian(lambda x: torch.softmax(x, -1), s)
    assert_close(J, torch.diag(p) - torch.outer(p, p))


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
