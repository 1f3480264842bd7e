"""Attention modules: the single head the book derives, and multi-head attention.

Shapes follow the package legend: ``B`` batch, ``H`` heads, ``L`` queries, ``S`` keys, ``E`` per-head
width, ``D = H * E`` model width. Masks are boolean with ``True`` = may attend.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from attn import _checks
from attn.functional import scaled_dot_product_attention

__all__ = ["MultiHeadAttention", "SelfAttention"]


class SelfAttention(nn.Module):
    """One attention head over one sequence: ``Q = X W_q``, ``K = X W_k``, ``V = X W_v``,
    ``Z = softmax(Q Kᵀ / sqrt(d_k)) V``, output ``Z W_o``.

    Args:
        d_model: width of the input tokens ``D``.
        d_k: width of queries and keys (default ``d_model``).
        d_v: width of values (default ``d_k``).
        bias: add biases to the four projections.
    """

    def __init__(self, d_model: int, d_k: int | None = None, d_v: int | None = None, *, bias: bool = False):
        super().__init__()
        d_k = d_model if d_k is None else d_k
        d_v = d_k if d_v is None else d_v
        for name, value in (("d_model", d_model), ("d_k", d_k), ("d_v", d_v)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        self.d_model, self.d_k, self.d_v = d_model, d_k, d_v
        self.W_q = nn.Linear(d_model, d_k, bias=bias)
        self.W_k = nn.Linear(d_model, d_k, bias=bias)
        self.W_v = nn.Linear(d_model, d_v, bias=bias)
        self.W_o = nn.Linear(d_v, d_model, bias=bias)

    def forward(
        self, x: torch.Tensor, *, mask: torch.Tensor | None = None, is_causal: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Args: ``x`` ``(B, L, D)`` or ``(L, D)``; ``mask`` broadcasting to ``(B, L, L)``.

        Returns: output ``(B, L, D)`` and weights ``(B, L, L)`` (no batch dimension if ``x`` had none).
        """
        _checks.tensor("x", x, min_dim=2)
        _checks.last_dim("x", x, self.d_model, "d_model")
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)  # (B, L, d_k), (B, L, d_k), (B, L, d_v)
        z, weights = scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal, return_weights=True)
        return self.W_o(z), weights  # (B, L, D), (B, L, L)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, d_k={self.d_k}, d_v={self.d_v}"


class MultiHeadAttention(nn.Module):
    """Multi-head attention with fused projections.

    ``H`` heads of width ``E = D / H`` attend in parallel; their outputs are concatenated and mixed
    by ``out_proj``. The parameters are laid out as in ``nn.MultiheadAttention`` (``in_proj`` holds
    ``W_q; W_k; W_v`` stacked, ``(3D, D)``), so weights copy across one to one.

    Args:
        d_model: model width ``D``.
        num_heads: number of heads ``H``; must divide ``d_model``.
        dropout: dropout on the attention weights in training mode.
        bias: biases on the input and output projections.
    """

    def __init__(self, d_model: int, num_heads: int, *, dropout: float = 0.0, bias: bool = True):
        super().__init__()
        if not isinstance(num_heads, int) or num_heads < 1:
            raise ValueError(f"num_heads must be a positive integer, got {num_heads!r}")
        if not isinstance(d_model, int) or d_model < 1:
            raise ValueError(f"d_model must be a positive integer, got {d_model!r}")
        if d_model % num_heads != 0:
            raise ValueError(
                f"d_model ({d_model}) must be divisible by num_heads ({num_heads}): each head gets "
                f"d_model / num_heads = {d_model / num_heads:g} dimensions, which is not an integer"
            )
        self.d_model, self.num_heads, self.d_head = d_model, num_heads, d_model // num_heads
        self.dropout = dropout
        self.in_proj = nn.Linear(d_model, 3 * d_model, bias=bias)  # W_q; W_k; W_v stacked
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def _project(self, query, key, value):
        """Apply W_q, W_k, W_v, with one matmul when the inputs are the same tensor."""
        W, b = self.in_proj.weight, self.in_proj.bias
        D = self.d_model
        if key is query and value is query:  # self-attention: one fused matmul
            return self.in_proj(query).chunk(3, dim=-1)  # 3 x (B, L, D)
        bq, bk, bv = (None, None, None) if b is None else b.split(D)
        q = F.linear(query, W[:D], bq)  # (B, L, D)
        if key is value:  # cross-attention over one memory: keys and values in one matmul
            bkv = None if b is None else b[D:]
            k, v = F.linear(key, W[D:], bkv).chunk(2, dim=-1)  # 2 x (B, S, D)
        else:
            k = F.linear(key, W[D : 2 * D], bk)  # (B, S, D)
            v = F.linear(value, W[2 * D :], bv)  # (B, S, D)
        return q, k, v

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        B, N, _ = x.shape
        return x.view(B, N, self.num_heads, self.d_head).transpose(1, 2)  # (B, H, N, E)

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor | None = None,
        value: torch.Tensor | None = None,
        *,
        mask: torch.Tensor | None = None,
        key_mask: torch.Tensor | None = None,
        is_causal: bool = False,
        need_weights: bool = False,
        average_weights: bool = True,
    ):
        """Args:
            query: ``(B, L, D)``.
            key, value: ``(B, S, D)``; default ``query`` (self-attention). Pass the encoder output
                for cross-attention.
            mask: bool (True = may attend) or additive, broadcasting to ``(B, H, L, S)``; an
                ``(L, S)`` or ``(B, L, S)`` mask applies to every head.
            key_mask: ``(B, S)`` bool, ``True`` for real keys and ``False`` for padding
                (the opposite of ``nn.MultiheadAttention``'s ``key_padding_mask``).
            is_causal: block keys after each query.
            need_weights: also return attention weights.
            average_weights: average the weights over heads ``(B, L, S)``; else ``(B, H, L, S)``.

        Returns:
            output ``(B, L, D)``, and weights or ``None``.
        """
        key = query if key is None else key
        value = key if value is None else value
        for name, x in (("query", query), ("key", key), ("value", value)):
            _checks.tensor(name, x, min_dim=3)
            if x.dim() != 3:
                raise ValueError(f"{name} must have shape (B, N, D), got {_checks.fmt(x.shape)}")
            _checks.last_dim(name, x, self.d_model, "d_model")
        B, L, _ = query.shape
        S = key.shape[1]
        if key.shape[:2] != value.shape[:2] or key.shape[0] != B:
            raise ValueError(
                f"query {_checks.fmt(query.shape)}, key {_checks.fmt(key.shape)} and value "
                f"{_checks.fmt(value.shape)} must share B, and key and value must share S"
            )
        mask = self._merge_masks(mask, key_mask, B, L, S)
        q, k, v = (self._split_heads(t) for t in self._project(query, key, value))  # (B, H, L|S, E)
        p = self.dropout if self.training else 0.0
        if need_weights:
            z, w = scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal, dropout_p=p, return_weights=True)
        else:
            z, w = scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal, dropout_p=p), None
        z = z.transpose(1, 2).reshape(B, L, self.d_model)  # (B, L, D): heads concatenated
        out = self.out_proj(z)  # (B, L, D)
        if w is not None and average_weights:
            w = w.mean(dim=1)  # (B, L, S)
        return out, w

    def _merge_masks(self, mask, key_mask, B: int, L: int, S: int):
        if mask is not None:
            if isinstance(mask, torch.Tensor) and mask.dim() == 3:  # (B, L, S): the same for every head
                mask = mask.unsqueeze(1)  # (B, 1, L, S)
            _checks.mask("mask", mask, (B, self.num_heads, L, S))
        if key_mask is not None:
            _checks.tensor("key_mask", key_mask)
            if key_mask.dtype != torch.bool:
                raise TypeError(f"key_mask must be bool (True = real key), got dtype {key_mask.dtype}")
            if key_mask.shape != (B, S):
                raise ValueError(f"key_mask must have shape (B, S) = {_checks.fmt((B, S))}, got {_checks.fmt(key_mask.shape)}")
            km = key_mask[:, None, None, :]  # (B, 1, 1, S)
            if mask is None:
                mask = km
            elif mask.dtype == torch.bool:
                mask = mask & km
            else:
                mask = mask.masked_fill(~km, float("-inf"))
        return mask

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, num_heads={self.num_heads}, d_head={self.d_head}"
