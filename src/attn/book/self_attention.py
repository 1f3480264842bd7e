"""What "Self-attention" measures: how the softmax saturates without the ``1 / sqrt(d_k)`` scale.

Tests: tests/test_self_attention_chapter.py.
"""

from __future__ import annotations

import math

import torch

from attn import _checks
from attn.masks import masked_softmax

__all__ = ["softmax_jacobian_norm", "softmax_saturation"]


def softmax_jacobian_norm(p: torch.Tensor) -> torch.Tensor:
    """Frobenius norm of the softmax Jacobian ``J = diag(p) - p p^T`` for each row of ``p``.

    Shape: ``p`` ``(..., S)`` (rows of softmax weights) -> ``(...)``."""
    J = torch.diag_embed(p) - p.unsqueeze(-1) * p.unsqueeze(-2)  # (..., S, S)
    return J.flatten(-2).norm(dim=-1)


def softmax_saturation(d_k: int, scaled: bool, *, n_queries: int = 512, n_keys: int = 64,
                       seed: int = 0, std: float = 1.0, divisor: float | None = None) -> dict[str, float]:
    """Score ``n_queries`` random queries against ``n_keys`` random keys (entries N(0, std²),
    width ``d_k``), divided by ``sqrt(d_k)`` when ``scaled`` (by ``divisor`` instead, when given), and
    measure the softmax.

    Returns: ``var`` the variance of the scores, ``max_w`` the mean largest weight of a row,
    ``entropy`` the mean row entropy in nats, ``jac`` the mean :func:`softmax_jacobian_norm`.

    Raises:
        ValueError: if ``std`` or ``divisor`` is not a positive number."""
    _checks.positive_number("std", std)
    if divisor is None:
        divisor = math.sqrt(d_k) if scaled else 1.0
    _checks.positive_number("divisor", divisor)
    g = torch.Generator().manual_seed(seed)
    q = std * torch.randn(n_queries, d_k, generator=g)
    k = std * torch.randn(n_keys, d_k, generator=g)
    s = q @ k.T / divisor  # (n_queries, n_keys)
    p = masked_softmax(s)
    entropy = -(p * torch.log(p.clamp_min(1e-30))).sum(-1)
    return {"var": s.var().item(), "max_w": p.max(-1).values.mean().item(),
            "entropy": entropy.mean().item(), "jac": softmax_jacobian_norm(p).mean().item()}
