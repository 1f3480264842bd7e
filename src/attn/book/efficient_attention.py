"""What "Efficient attention" counts and shows: floating-point operations on shapes alone (meta
tensors, so any length costs nothing to count), and the calls whose PyTorch kernel the chapter
records (:func:`attn.measure.sdpa_path` names the kernel).

Tests: tests/test_efficient.py.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from attn import masks, measure
from attn.functional import scaled_dot_product_attention

__all__ = ["meta_flops", "sdpa_cases"]


def meta_flops(fn, n: int, *, heads: int = 4, d_head: int = 32) -> int:
    """Floating-point operations of ``fn(q, k, v)`` for one sequence of ``n`` tokens, counted on
    ``meta`` tensors of shape ``(1, heads, n, d_head)`` (shapes only: nothing is computed, so any
    ``n`` costs nothing to count). ``fn`` must accept meta tensors (a module: ``.to("meta")``)."""
    q, k, v = (torch.empty(1, heads, n, d_head, device="meta") for _ in range(3))
    return measure.flops(fn, q, k, v)


def sdpa_cases(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> dict[str, Callable[[], object]]:
    """Calls whose SDPA path the efficient-attention chapter shows, by name; each is a thunk.

    Shape: ``q``, ``k``, ``v`` ``(1, H, L, E)`` with ``L == S``; the 3-D case drops the batch, the
    ``nn.MultiheadAttention`` case folds the heads into ``D = H * E``.
    """
    L, D = q.shape[-2], q.shape[-3] * q.shape[-1]
    causal = masks.causal(L, device=q.device)  # (L, L)
    x = q.transpose(1, 2).reshape(1, L, D)  # (1, L, D)
    mha = torch.nn.MultiheadAttention(D, q.shape[-3], batch_first=True, device=q.device, dtype=q.dtype)
    return {
        "4-D q, k, v": lambda: F.scaled_dot_product_attention(q, k, v),
        "is_causal=True": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        "boolean mask": lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=causal),
        "float64": lambda: F.scaled_dot_product_attention(q.double(), k.double(), v.double()),
        "dropout_p=0.1": lambda: F.scaled_dot_product_attention(q, k, v, dropout_p=0.1),
        "3-D q, k, v (no head dim)": lambda: F.scaled_dot_product_attention(q[0], k[0], v[0]),
        "attn.scaled_dot_product_attention(return_weights=True)":
            lambda: scaled_dot_product_attention(q, k, v, return_weights=True),
        "nn.MultiheadAttention(need_weights=True)": lambda: mha(x, x, x),
    }
