"""The source document's closing PyTorch listing, written again in the book's style, so it can be run.

The document this book was written from (``shared/sources/000_*.txt``) ends with a small listing: a
single-head ``SimpleSelfAttention`` and a sinusoidal ``PositionalEncoding``. This module follows
it step by step and keeps its conventions, which differ from the rest of ``attn``:

- a mask is ``1`` (or ``True``) where attention is **blocked**, the opposite of the book's
  convention (``True`` = may attend); :func:`allowed` converts one into the other;
- blocked scores are filled with ``-1e9`` (:data:`FILL`) before the softmax, not removed with
  ``-inf``: a query whose keys are all blocked gets a *uniform* row of weights (the mean of the
  values), where ``attn`` gives zeros; and ``masked_fill(..., -1e9)`` on a float16 tensor raises,
  because float16 ends at 65504 (``-1e9`` rounded to float16 is ``-inf``);
- the four projections have biases, and a call returns ``(output, weights)``.

Its parameters have the names of :class:`attn.SelfAttention`'s (``W_q``, ``W_k``, ``W_v``, ``W_o``),
so :func:`to_attn` copies them across one to one. The debugging chapter runs both and measures where
they agree and where they do not; ``tests/test_source_listing.py`` checks each claim.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from attn.attention import SelfAttention

__all__ = ["FILL", "PositionalEncoding", "SimpleSelfAttention", "allowed", "to_attn"]

#: The listing's fill for blocked scores. Finite in float32 and bfloat16; float16 cannot hold it.
FILL = -1e9


class SimpleSelfAttention(nn.Module):
    """One attention head, as in the listing: project, score, fill the blocked scores, softmax, mix,
    project back.

    Args:
        d_model: width of the input tokens ``D``.
        d_k: width of queries and keys. d_v: width of values.
        fill: the number written over blocked scores (the listing's ``-1e9``); a parameter only so
            the chapter can show what the fill becomes in float16.
    """

    def __init__(self, d_model: int, d_k: int, d_v: int, *, fill: float = FILL):
        super().__init__()
        self.d_k, self.fill = d_k, fill
        self.W_q = nn.Linear(d_model, d_k)  # queries
        self.W_k = nn.Linear(d_model, d_k)  # keys
        self.W_v = nn.Linear(d_model, d_v)  # values
        self.W_o = nn.Linear(d_v, d_model)  # back to the model width

    @classmethod
    def from_matrices(cls, W_Q: torch.Tensor, W_K: torch.Tensor, W_V: torch.Tensor,
                      W_O: torch.Tensor | None = None) -> SimpleSelfAttention:
        """A layer computing ``Q = X W_Q``, ``K = X W_K``, ``V = X W_V`` and ``output = Z W_O``
        (the book's right-multiplied matrices, ``(D, d_k)``, ``(D, d_k)``, ``(D, d_v)``, ``(d_v, D)``;
        ``W_O`` defaults to the identity), with zero biases."""
        d_model, d_k = W_Q.shape
        d_v = W_V.shape[1]
        if W_K.shape != W_Q.shape or W_V.shape[0] != d_model:
            raise ValueError(f"W_Q (D, d_k), W_K (D, d_k) and W_V (D, d_v) must share D; got W_Q "
                             f"{tuple(W_Q.shape)}, W_K {tuple(W_K.shape)}, W_V {tuple(W_V.shape)}")
        W_O = torch.eye(d_v, d_model) if W_O is None else W_O
        if W_O.shape != (d_v, d_model):
            raise ValueError(f"W_O must be (d_v, D) = {(d_v, d_model)}, got {tuple(W_O.shape)}")
        layer = cls(d_model, d_k, d_v)
        with torch.no_grad():
            for linear, W in ((layer.W_q, W_Q), (layer.W_k, W_K), (layer.W_v, W_V), (layer.W_o, W_O)):
                linear.weight.copy_(W.T)  # nn.Linear computes x Wᵀ + b
                linear.bias.zero_()
        return layer

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Args: ``x`` ``(B, L, D)``; ``mask`` ``(B, L, L)`` or ``(L, L)``, ``1`` where blocked.

        Returns: output ``(B, L, D)`` and weights ``(B, L, L)``.
        """
        Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)  # (B, L, d_k), (B, L, d_k), (B, L, d_v)
        scores = Q @ K.transpose(-2, -1) / math.sqrt(self.d_k)  # (B, L, L)
        if mask is not None:
            scores = scores.masked_fill(mask == 1, self.fill)  # 1 = blocked; float16 cannot hold -1e9
        weights = F.softmax(scores, dim=-1)  # (B, L, L); an all-blocked row is uniform, not zero
        context = weights @ V  # (B, L, d_v)
        return self.W_o(context), weights  # (B, L, D), (B, L, L)


class PositionalEncoding(nn.Module):
    """The listing's sinusoidal encoding: ``x + PE[:L]``, the table built in float32 from
    ``exp(-2i log(10000) / D)`` and kept as a buffer ``pe`` of shape ``(1, max_len, D)``.

    Args:
        d_model: embedding width ``D`` (even, as in the listing).
        max_len: longest sequence the table covers.
    """

    def __init__(self, d_model: int, max_len: int = 5000):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)  # (max_len, 1)
        inv_wavelength = torch.exp(torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))  # (D / 2,)
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * inv_wavelength)  # even columns
        pe[:, 1::2] = torch.cos(position * inv_wavelength)  # odd columns
        self.register_buffer("pe", pe.unsqueeze(0))  # (1, max_len, D); saved with the model, not trained

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` ``(B, L, D)`` -> ``(B, L, D)``."""
        return x + self.pe[:, : x.size(1)]


def allowed(mask: torch.Tensor) -> torch.Tensor:
    """The listing's mask (``1`` = blocked) in the book's convention: bool, ``True`` = may attend.

    Shape: any, e.g. ``(B, L, L)``; the result has the same shape."""
    return mask != 1


def to_attn(layer: SimpleSelfAttention) -> SelfAttention:
    """:class:`attn.SelfAttention` with ``layer``'s weights and biases (the parameter names match).

    Called as ``to_attn(layer)(x, mask=allowed(mask), need_weights=True)`` it gives ``layer(x, mask)``
    wherever a query may see at least one key; a query with none gets zeros instead of a uniform row.
    Shapes as in :meth:`SimpleSelfAttention.forward`: ``x`` ``(B, L, D)``."""
    d_model, d_k, d_v = layer.W_q.in_features, layer.W_q.out_features, layer.W_v.out_features
    twin = SelfAttention(d_model, d_k, d_v, bias=True)
    twin.load_state_dict(layer.state_dict())
    return twin.to(next(layer.parameters()).dtype)
