"""One self-attention layer, many ways to attend: the same projections and heads, with the
attention step itself swapped (full, tiled, sliding window, Longformer, strided, LSH, linear,
Linformer), so a model can be trained with each and compared like for like."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from attn import _checks
from attn.attention import MultiHeadAttention
from attn.efficient.hashing import lsh_attention, random_rotations
from attn.efficient.linear import LinformerProjection, linear_attention
from attn.efficient.sparse import banded_attention, longformer_attention, strided_attention
from attn.efficient.tiled import tiled_attention
from attn.functional import scaled_dot_product_attention

__all__ = ["KINDS", "EfficientSelfAttention", "swap_attention"]

#: The attention steps :class:`EfficientSelfAttention` can use.
KINDS = ("full", "tiled", "window", "longformer", "strided", "lsh", "linear", "linformer")
_NEEDS = {"window": ("window",), "longformer": ("window", "global_tokens"), "strided": ("window", "stride"),
          "lsh": ("num_buckets", "chunk_size"), "linformer": ("rank", "seq_len")}


class EfficientSelfAttention(nn.Module):
    """Multi-head self-attention whose attention step is ``kind``.

    Args:
        d_model, num_heads: as :class:`attn.MultiHeadAttention` (same ``in_proj``/``out_proj`` layout).
        kind: one of :data:`KINDS`.
        window: reach of the sliding window (``"window"``, ``"longformer"``, ``"strided"``).
        global_tokens: Longformer's global positions. stride: the strided pattern's step.
        num_buckets, chunk_size, num_hashes: LSH attention's (:func:`attn.efficient.lsh_attention`);
            it shares queries and keys, so the key projection goes unused. Training draws fresh
            rotations at every call, as Reformer does; evaluation uses the fixed ``seed=0`` ones.
        rank, seq_len: Linformer's projected length ``r`` and the sequence length it is built for.
        bias: biases on the projections.
    """

    def __init__(self, d_model: int, num_heads: int, kind: str = "full", *, window: int | None = None,
                 global_tokens: tuple[int, ...] | None = None, stride: int | None = None,
                 num_buckets: int | None = None, chunk_size: int | None = None, num_hashes: int = 1,
                 rank: int | None = None, seq_len: int | None = None, bias: bool = True):
        super().__init__()
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        _checks.heads(d_model, num_heads)
        given = {"window": window, "global_tokens": global_tokens, "stride": stride, "num_buckets": num_buckets,
                 "chunk_size": chunk_size, "rank": rank, "seq_len": seq_len}
        missing = [name for name in _NEEDS.get(kind, ()) if given[name] is None]
        if missing:
            raise ValueError(f"kind={kind!r} needs " + " and ".join(f"{name}=" for name in missing))
        self.kind, self.window, self.num_heads, self.d_model = kind, window, num_heads, d_model
        self.global_tokens, self.stride = global_tokens, stride
        self.num_buckets, self.chunk_size, self.num_hashes = num_buckets, chunk_size, num_hashes
        if kind == "lsh":
            random_rotations(d_model // num_heads, num_buckets=num_buckets, num_hashes=num_hashes)  # checks them
        self.in_proj = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        self.linformer = LinformerProjection(seq_len, rank) if kind == "linformer" else None

    def attend(self, q, k, v, is_causal: bool) -> torch.Tensor:
        """The swapped step: ``(B, H, L, E)`` three times -> ``(B, H, L, E)``."""
        if self.kind == "full":
            return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
        if self.kind == "tiled":
            return tiled_attention(q, k, v, is_causal=is_causal)
        if self.kind == "window":
            return banded_attention(q, k, v, window=self.window, is_causal=is_causal)
        if self.kind == "strided":
            return strided_attention(q, k, v, window=self.window, stride=self.stride, is_causal=is_causal)
        if self.kind == "lsh":  # shared QK: the queries hash and serve as keys
            rotations = None
            if self.training:  # fresh random rotations at every step
                rotations = torch.randn(self.num_hashes, q.shape[-1], self.num_buckets // 2, device=q.device)
            return lsh_attention(q, v, num_buckets=self.num_buckets, chunk_size=self.chunk_size,
                                 num_hashes=self.num_hashes, rotations=rotations, is_causal=is_causal)
        if self.kind == "longformer":
            if is_causal:
                raise ValueError("Longformer's global tokens see the whole sequence: it cannot be causal here")
            return longformer_attention(q, k, v, window=self.window, global_tokens=self.global_tokens)
        if self.kind == "linear":
            return linear_attention(q, k, v, is_causal=is_causal)
        if is_causal:
            raise ValueError("Linformer mixes all positions in its projection: it cannot be causal")
        return self.linformer(q, k, v)

    def forward(self, x: torch.Tensor, *, mask=None, key_mask=None, is_causal: bool = False, cache=None,
                need_weights: bool = False, average_weights: bool = True):
        """``x`` ``(B, L, D)`` -> ``(output (B, L, D), weights or None)``: the call signature and the
        return convention of :class:`attn.MultiHeadAttention`, so it drops into
        :class:`attn.blocks.EncoderLayer`.

        Only ``kind="full"`` computes attention weights (``need_weights=True``: ``(B, L, L)``
        averaged over heads, or ``(B, H, L, L)`` with ``average_weights=False``); the other kernels
        never form the ``(L, L)`` matrix, which is their point, and refuse ``need_weights=True``.
        """
        if mask is not None or key_mask is not None or cache is not None:
            raise ValueError(f"EfficientSelfAttention(kind={self.kind!r}) takes no mask, key_mask or cache")
        if need_weights and self.kind != "full":
            raise ValueError(
                f"EfficientSelfAttention(kind={self.kind!r}) computes no attention weights: it never forms the "
                "(L, L) matrix, so need_weights=True cannot be served; use kind='full' or attn.MultiHeadAttention")
        _checks.tensor("x", x, min_dim=3)
        _checks.last_dim("x", x, self.d_model, "d_model")
        B, L, D = x.shape
        H = self.num_heads
        q, k, v = (t.view(B, L, H, D // H).transpose(1, 2) for t in self.in_proj(x).chunk(3, dim=-1))  # (B, H, L, E)
        w = None
        if need_weights:  # kind "full": the explicit path, which also returns the weights
            z, w = scaled_dot_product_attention(q, k, v, is_causal=is_causal, return_weights=True)  # w (B, H, L, L)
            w = w.mean(dim=1) if average_weights else w  # (B, L, L) or (B, H, L, L)
        else:
            z = self.attend(q, k, v, is_causal)  # (B, H, L, E)
        return self.out_proj(z.transpose(1, 2).reshape(B, L, D)), w  # (B, L, D)

    def extra_repr(self) -> str:
        extra = "".join(f", {name}={getattr(self, name)}" for name in _NEEDS.get(self.kind, ())
                        if name in ("window", "global_tokens", "stride", "num_buckets", "chunk_size"))
        return f"d_model={self.d_model}, num_heads={self.num_heads}, kind={self.kind!r}{extra}"


def swap_attention(model: nn.Module, kind: str, **kwargs) -> nn.Module:
    """Replace the ``self_attn`` of every block of ``model`` (e.g. :class:`attn.models.TokenModel`)
    by an :class:`EfficientSelfAttention` of ``kind``, keeping its projection weights (with or
    without biases, in their dtype and on their device). Returns ``model``.

    A block's attention is found by its type: a ``self_attn`` that is an
    :class:`attn.MultiHeadAttention` or an :class:`EfficientSelfAttention` (so a swapped model can
    be swapped again). Other modules, even ones with ``in_proj``/``out_proj`` attributes, are left
    alone; cross-attention (``cross_attn``) is never swapped.

    Raises:
        ValueError: ``model`` holds no such self-attention; or a block whose attention carries a
            positional encoding (ALiBi, RoPE, T5 or Shaw relative positions act on the scores or on
            q and k, inside attention): the swapped step has no place for it, and dropping it would
            silently change the model.
    """
    olds = [(layer, layer.self_attn) for layer in model.modules()
            if isinstance(getattr(layer, "self_attn", None), (MultiHeadAttention, EfficientSelfAttention))]
    if not olds:
        raise ValueError(
            f"swap_attention found no self-attention (MultiHeadAttention or EfficientSelfAttention) in a "
            f"{type(model).__name__}: it replaces the self_attn of a model's blocks")
    for _, old in olds:  # check every block before changing any
        pos = getattr(old, "positional", None)
        if pos is not None:
            raise ValueError(
                f"swap_attention cannot carry the positional encoding {type(pos).__name__} (mode {pos.mode!r}) that "
                "acts inside this model's attention: EfficientSelfAttention has no place for it. To compare attention "
                "kinds, build the model with positions added to the input (positional='sinusoidal', None, or an "
                "encoding of mode 'input' such as attn.positional.LearnedPositionalEncoding)")
    for layer, old in olds:
        w = old.in_proj.weight
        new = EfficientSelfAttention(old.d_model, old.num_heads, kind, bias=old.in_proj.bias is not None,
                                     **kwargs).to(device=w.device, dtype=w.dtype)
        new.in_proj.load_state_dict(old.in_proj.state_dict())
        new.out_proj.load_state_dict(old.out_proj.state_dict())
        layer.self_attn = new
    return model
