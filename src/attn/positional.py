r"""Positional encodings: attention alone cannot tell order, these tell it.

Every encoding declares, in its class attribute ``mode``, where it enters the model:

- ``"input"``: added to the token embeddings before the first layer,
  ``forward(x, offset=0) -> x + PE[offset : offset + L]`` (sinusoidal, learned absolute, 2-D).
- ``"scores"``: a bias added to the attention scores inside every self-attention layer,
  ``score_bias(q, q_offset, S) -> (B|1, H|1, L, S)`` for queries at positions
  ``q_offset .. q_offset + L - 1`` and keys at ``0 .. S - 1`` (ALiBi, T5 buckets, Shaw relative).
  The bias is added to the *scaled* scores.
- ``"qk"``: rotates queries and keys after their projections,
  ``rotate(x, offset) -> x`` for ``x`` of shape ``(B, H, N, E)`` at positions
  ``offset .. offset + N - 1`` (RoPE).

:class:`attn.MultiHeadAttention` takes ``positional=`` for the last two modes and applies them in
self-attention, with or without a :class:`attn.KVCache`.

Sinusoidal encoding (Vaswani et al., 2017), for position ``pos`` and dimension pair ``i``:

.. math::

    PE_{(pos, 2i)} = \sin\!\left(pos / 10000^{2i/d}\right), \qquad
    PE_{(pos, 2i+1)} = \cos\!\left(pos / 10000^{2i/d}\right)
"""

from __future__ import annotations


import torch
from torch import nn

from attn import _checks

__all__ = ["SinusoidalPositionalEncoding", "sinusoidal_table"]


def sinusoidal_table(max_len: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """The table ``PE`` of shape ``(max_len, d_model)``; even columns sin, odd columns cos."""
    if max_len < 1 or d_model < 1:
        raise ValueError(f"max_len and d_model must be positive, got max_len={max_len}, d_model={d_model}")
    pos = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)  # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(d/2),)
    angle = pos / base ** (two_i / d_model)  # (max_len, ceil(d/2))
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return pe.float()


class SinusoidalPositionalEncoding(nn.Module):
    """Adds the fixed sinusoidal table to token embeddings: ``x + PE[offset : offset + L]``.

    Args:
        d_model: embedding width ``D``.
        max_len: longest sequence the table covers.
        base: the wavelength base (10000 in the original paper).
    """

    mode = "input"

    def __init__(self, d_model: int, max_len: int = 4096, base: float = 10000.0):
        super().__init__()
        self.d_model, self.max_len, self.base = d_model, max_len, base
        self.register_buffer("pe", sinusoidal_table(max_len, d_model, base), persistent=False)

    def encoding(self, L: int, offset: int = 0) -> torch.Tensor:
        """Rows ``offset .. offset + L - 1`` of the table, ``(L, D)``."""
        if offset < 0 or offset + L > self.max_len:
            raise ValueError(
                f"positions {offset}..{offset + L - 1} do not fit the positional table of max_len={self.max_len}; "
                f"build the encoding with max_len >= {offset + L}"
            )
        return self.pe[offset : offset + L]

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """``x``: ``(B, L, D)`` or ``(L, D)``. Returns the same shape."""
        _checks.tensor("x", x, min_dim=2)
        _checks.last_dim("x", x, self.d_model, "d_model of the positional encoding")
        L = x.shape[-2]
        if offset + L > self.max_len:
            raise ValueError(
                f"x has sequence length {L} (shape {_checks.fmt(x.shape)}) but the positional table holds "
                f"max_len={self.max_len} positions" + (f" (from offset {offset})" if offset else "")
            )
        return x + self.encoding(L, offset).to(x.dtype)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}, base={self.base:g}"


