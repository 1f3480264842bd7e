"""Which kernel does a call run? The ATen operators PyTorch dispatches (``attn.measure.operators``)
name it."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from attn import masks
from attn.functional import scaled_dot_product_attention
from attn.measure import operators

__all__ = ["sdpa_cases", "sdpa_path"]


def sdpa_path(fn: Callable[[], object]) -> str:
    """``"fused (flash, CPU)"`` when ``fn()`` reaches PyTorch's fused CPU attention kernel,
    ``"fused (<name>)"`` for another fused kernel, else ``"math (matmul + softmax)"``."""
    ops = operators(fn)
    for op in ops:
        if op == "_scaled_dot_product_flash_attention_for_cpu":
            return "fused (flash, CPU)"
        if op.startswith("_scaled_dot_product_") and op != "_scaled_dot_product_attention_math":
            return f"fused ({op})"
    return "math (matmul + softmax)"


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
