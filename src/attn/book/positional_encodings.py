"""What "Positional encodings" measures: the offset matrices of the sinusoidal table, how far a
score depends on more than the offset, T5's exact buckets, and accuracy per position.

Tests: tests/test_positional_chapter.py.
"""

from __future__ import annotations

import torch

from attn import _checks

__all__ = ["correct_per_position", "diagonal_spread", "offset_matrix", "own_buckets"]


def offset_matrix(k: int, d: int, base: float = 10000.0) -> torch.Tensor:
    """``M_k``, ``(d, d)`` float64, block-diagonal: ``PE[pos + k] = M_k @ PE[pos]``
    for every position of the sinusoidal table (``d`` even), one 2x2 rotation by
    ``omega_a k`` per pair ``a``."""
    _checks.positive_int("d", d)
    _checks.divisible("d", d, 2, why=" (sin/cos pairs)")
    omega = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
    c, s = torch.cos(omega * k), torch.sin(omega * k)
    blocks = [torch.tensor([[ci, si], [-si, ci]], dtype=torch.float64)
              for ci, si in zip(c.tolist(), s.tolist(), strict=True)]
    return torch.block_diag(*blocks)  # (d, d)


def diagonal_spread(s: torch.Tensor) -> float:
    """Largest ``max - min`` along a diagonal ``j - i = r`` of scores ``s`` ``(L, S)``: 0 when the
    score depends on the positions only through their offset."""
    diagonals = [s.diagonal(r) for r in range(-s.shape[0] + 1, s.shape[1])]
    return max((d.max() - d.min()).item() for d in diagonals)


def own_buckets(buckets: torch.Tensor) -> int:
    """How many distances ``0, 1, 2, ...`` in a row have a bucket no other distance shares, given
    the buckets ``(n,)`` of distances ``0 .. n - 1`` in order."""
    b = buckets.tolist()
    count = 0
    while count < len(b) and b.count(b[count]) == 1:
        count += 1
    return count


def correct_per_position(model, tokens: torch.Tensor, targets: torch.Tensor,
                         mask: torch.Tensor | None = None) -> torch.Tensor:
    """How many of the sequences ``tokens`` ``(B, L)`` the model gets right at each position,
    ``(L,)`` long; positions whose target is ``-100`` never count. ``mask`` goes to the model."""
    with torch.no_grad():
        pred = model(tokens, mask=mask).argmax(-1)  # (B, L)
    return ((pred == targets) & (targets != -100)).sum(0)  # (L,)
