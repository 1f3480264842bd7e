"""Transformer-XL-style segment recurrence (Dai et al., 2019).

A long sequence is processed in segments of ``T`` tokens. Each layer also attends to the previous
segment's hidden states at its input (the *memory*), kept without gradient, so information can
flow further back than one segment: up to ``num_layers × T`` tokens. Positions are relative (a
learned bias per head and distance ``i - j``), because absolute positions would repeat in every
segment.
"""

from __future__ import annotations

import torch
from torch import nn

from attn import _checks, _moved, masks
from attn.attention import KVCache
from attn.blocks import EncoderLayer

__all__ = ["SegmentRecurrentLM"]


class SegmentRecurrentLM(nn.Module):
    """A causal language model that carries a memory from segment to segment.

    Args:
        vocab_size, d_model, num_heads, num_layers: sizes (pre-LN blocks, ``d_ff = 4 · d_model``).
        max_distance: keys further back than this are not attended (the relative bias table size).
        dropout: the blocks' dropout (attention weights, and each sublayer's output before its
            residual addition), active in training mode only.

    Each layer is an :class:`attn.blocks.EncoderLayer` run through its own ``forward``: its
    self-attention gets a :class:`attn.KVCache` that already holds the keys and values of the
    memory, so the segment's queries attend to memory and segment alike under the relative bias.
    """

    def __init__(self, vocab_size: int, d_model: int = 32, num_heads: int = 2, num_layers: int = 1,
                 *, max_distance: int = 64, dropout: float = 0.0):
        super().__init__()
        self.max_distance = _checks.positive_int("max_distance", max_distance)
        self.embed = nn.Embedding(vocab_size, d_model)
        self.layers = nn.ModuleList(EncoderLayer(d_model, num_heads, 4 * d_model, dropout=dropout, norm_first=True)
                                    for _ in range(num_layers))
        self.rel_bias = nn.Parameter(torch.zeros(num_layers, num_heads, max_distance))  # per layer, head, distance
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def relative_bias(self, layer: int, L: int, S: int) -> torch.Tensor:
        """Additive mask ``(1, H, L, S)``: the learned bias of distance ``i - j`` for the last ``L``
        of ``S`` positions, ``-inf`` for future keys and keys beyond ``max_distance``."""
        device = self.rel_bias.device
        # Which keys: the causal window of attn.masks, the queries being the last L of S positions.
        allowed = masks.sliding_window(L, S, window=self.max_distance, is_causal=True, offset=S - L,
                                       device=device)  # (L, S)
        dist = masks.distances(L, S, offset=S - L, device=device)  # (L, S) query minus key position
        bias = self.rel_bias[layer][:, dist.clamp(0, self.max_distance - 1)]  # (H, L, S)
        return masks.add_bias(allowed, bias).unsqueeze(0)  # (1, H, L, S)

    def forward(self, tokens: torch.Tensor, mems: list[torch.Tensor] | None = None):
        """``tokens`` ``(B, T)`` and the memories of the previous segment (one ``(B, M, D)`` per
        layer, or None) -> ``(logits (B, T, V), new memories)``."""
        _checks.tensor("tokens", tokens, min_dim=2)
        if mems is not None and len(mems) != len(self.layers):
            raise ValueError(f"mems must hold one tensor per layer ({len(self.layers)}), got {len(mems)}")
        x = self.embed(tokens)  # (B, T, D)
        if mems is not None:
            for i, m in enumerate(mems):
                _checks.tensor(f"mems[{i}]", m, min_dim=3)
                if m.dim() != 3 or m.shape[0] != x.shape[0] or m.shape[2] != x.shape[2]:
                    raise ValueError(f"mems[{i}] must have shape (B, M, D) = ({x.shape[0]}, M, {x.shape[2]}) for tokens "
                                     f"{_checks.fmt(tokens.shape)}, got {_checks.fmt(m.shape)}")
        new_mems = []
        T = x.shape[1]
        for i, layer in enumerate(self.layers):
            new_mems.append(x.detach())  # this layer's input, the next segment's memory (no gradient)
            cache, M = None, 0
            if mems is not None:
                # The memory's keys and values, projected as the block projects its own input
                # (pre-LN: from norm1 of it), put in the cache by the attention's own forward. Only
                # the cache is wanted from this call, so it asks with one query row, not M.
                cache, M = KVCache(), mems[i].shape[1]
                h_mem = layer.norm1(mems[i])  # (B, M, D)
                layer.self_attn(h_mem[:, -1:], h_mem, h_mem, cache=cache)  # fills cache: (B, H, M, E) each
            x = layer(x, mask=self.relative_bias(i, T, M + T), cache=cache)  # (B, T, D)
        return self.head(self.norm(x)), new_mems

    def segments(self, tokens: torch.Tensor, segment_len: int, *, memory: bool = True) -> torch.Tensor:
        """Run a long sequence ``(B, N)`` segment by segment -> logits ``(B, N, V)``; with
        ``memory=False`` every segment starts from nothing (a vanilla fixed-context model)."""
        _checks.positive_int("segment_len", segment_len)
        mems, out = None, []
        for t0 in range(0, tokens.shape[1], segment_len):
            logits, new = self(tokens[:, t0 : t0 + segment_len], mems)
            mems = new if memory else None
            out.append(logits)
        return torch.cat(out, dim=1)


def __getattr__(name: str):
    return _moved.attribute(__name__, name)  # names that moved to attn.book, until attn 0.3
