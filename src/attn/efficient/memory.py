"""Spending less memory: fewer key/value heads (multi-query and grouped-query attention), and
gradient checkpointing of a stack of blocks.

- Grouped-query attention (Ainslie et al., 2023): ``H`` query heads share ``H_kv`` key/value heads
  in groups of ``H / H_kv``. ``H_kv = H`` is multi-head attention, ``H_kv = 1`` multi-query
  attention (Shazeer, 2019). The KV cache shrinks by ``H / H_kv``.
- Checkpointing (Chen et al., 2016): keep only each block's input during the forward pass and
  recompute the block's insides during the backward pass: activation memory of one block instead
  of all, for about one extra forward pass of time.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from attn import _checks, masks
from attn.attention import KVCache
from attn.functional import scaled_dot_product_attention

__all__ = ["GroupedQueryAttention", "checkpointed", "kv_cache_bytes", "saved_activation_bytes"]


def kv_cache_bytes(*, batch: int, seq_len: int, num_layers: int, num_kv_heads: int, d_head: int,
                   dtype: torch.dtype = torch.float32) -> int:
    """Bytes a KV cache holds: keys and values, ``(B, H_kv, S, E)`` each, in every layer."""
    return 2 * num_layers * batch * num_kv_heads * seq_len * d_head * torch.finfo(dtype).bits // 8


class GroupedQueryAttention(nn.Module):
    """Self-attention with ``num_heads`` query heads and ``num_kv_heads`` key/value heads.

    Args:
        d_model: ``D``. num_heads: ``H`` (divides ``D``). num_kv_heads: ``H_kv`` (divides ``H``).
        bias: biases on the projections.

    The query projection is ``(D, D)``; the key and value projections are ``(H_kv·E, D)`` each, so
    with ``H_kv < H`` there are fewer parameters and a smaller cache.

    Why not :func:`attn.functional.scaled_dot_product_attention`: it takes as many K/V heads as
    query heads, so it would need the ``H_kv`` heads copied ``H / H_kv`` times. PyTorch's fused
    kernel with ``enable_gqa=True`` shares them without the copy, and it is called directly here
    (only ``need_weights=True`` takes the explicit path, with the copies);
    the causal mask it gets is :func:`attn.masks.causal` with the package's bottom-right alignment,
    so ``is_causal`` means what it means everywhere in ``attn``.
    """

    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, *, bias: bool = True):
        super().__init__()
        self.d_head = _checks.heads(d_model, num_heads)
        _checks.positive_int("num_kv_heads", num_kv_heads)
        _checks.divisible("num_heads", num_heads, num_kv_heads, by_name="num_kv_heads", why=(
            f": each key/value head serves num_heads / num_kv_heads = {num_heads / num_kv_heads:g} query heads, "
            "which is not an integer"))
        self.d_model, self.num_heads, self.num_kv_heads = d_model, num_heads, num_kv_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.kv_proj = nn.Linear(d_model, 2 * num_kv_heads * self.d_head, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x: torch.Tensor, *, is_causal: bool = False, cache: KVCache | None = None,
                need_weights: bool = False, average_weights: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``x`` ``(B, L, D)`` -> ``(output (B, L, D), weights or None)``, the return convention of every
        attention module in ``attn``. With a cache the keys/values cached are ``(B, H_kv, S, E)`` and
        ``is_causal`` aligns the queries with the last ``L`` keys. ``need_weights=True`` also returns the
        weights, ``(B, L, S)`` averaged over the ``H`` query heads or ``(B, H, L, S)`` with
        ``average_weights=False``, from the explicit path (each K/V head repeated for its query heads)."""
        _checks.tensor("x", x, min_dim=3)
        _checks.floating("x", x)
        _checks.last_dim("x", x, self.d_model, "d_model")
        if x.dim() != 3:
            raise ValueError(f"x must have shape (B, L, D), got {_checks.fmt(x.shape)}")
        if x.dtype != self.q_proj.weight.dtype and not torch.is_autocast_enabled(x.device.type):
            raise TypeError(f"x has dtype {x.dtype} but the parameters of this GroupedQueryAttention are "
                            f"{self.q_proj.weight.dtype}: convert one of them (x.to({self.q_proj.weight.dtype}) "
                            f"or module.to({x.dtype}))")
        B, L, _ = x.shape
        q = self.q_proj(x).view(B, L, self.num_heads, self.d_head).transpose(1, 2)  # (B, H, L, E)
        k, v = self.kv_proj(x).view(B, L, 2, self.num_kv_heads, self.d_head).permute(2, 0, 3, 1, 4)  # 2 x (B, H_kv, L, E)
        if cache is not None:
            k, v = cache.update(k, v)  # (B, H_kv, S, E)
        S = k.shape[-2]
        # The one causal rule of attn (bottom-right: the queries are the last L of S positions). For
        # L == S it is PyTorch's own triangle, which the fused kernel applies without a mask.
        mask = masks.causal(L, S, offset=S - L, device=x.device) if is_causal and S != L else None  # (L, S)
        w = None
        if need_weights:  # the explicit path: K/V heads repeated to the H query heads, weights kept
            g = self.num_heads // self.num_kv_heads
            z, w = scaled_dot_product_attention(q, k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1),
                                                mask=mask, is_causal=is_causal and mask is None,
                                                return_weights=True)  # (B, H, L, E), (B, H, L, S)
            w = w.mean(dim=1) if average_weights else w  # (B, L, S) or (B, H, L, S)
        else:
            z = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal and mask is None,
                                               enable_gqa=True)  # (B, H, L, E): each K/V head serves H / H_kv query heads
        return self.out_proj(z.transpose(1, 2).reshape(B, L, self.d_model)), w  # (B, L, D)

    @classmethod
    def from_multi_head(cls, mha: nn.Module, num_kv_heads: int | None = None) -> GroupedQueryAttention:
        """Copy an :class:`attn.MultiHeadAttention`; with fewer K/V heads, each group's K/V
        projections are the mean of its heads' (mean-pooling, as in the GQA paper's uptraining)."""
        H, E, D = mha.num_heads, mha.d_head, mha.d_model
        Hkv = H if num_kv_heads is None else num_kv_heads
        gqa = cls(D, H, Hkv, bias=mha.in_proj.bias is not None)
        W = mha.in_proj.weight.detach()
        b = None if mha.in_proj.bias is None else mha.in_proj.bias.detach()

        def pool(t):  # (H*E, ...) -> (Hkv*E, ...) averaging the heads of each group
            return t.reshape(Hkv, H // Hkv, E, *t.shape[1:]).mean(1).reshape(Hkv * E, *t.shape[1:])

        with torch.no_grad():
            gqa.q_proj.weight.copy_(W[:D])
            gqa.kv_proj.weight.copy_(torch.cat([pool(W[D:2 * D]), pool(W[2 * D:])]))
            gqa.out_proj.weight.copy_(mha.out_proj.weight)
            if b is not None:
                gqa.q_proj.bias.copy_(b[:D])
                gqa.kv_proj.bias.copy_(torch.cat([pool(b[D:2 * D]), pool(b[2 * D:])]))
                gqa.out_proj.bias.copy_(mha.out_proj.bias)
        return gqa

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, num_heads={self.num_heads}, num_kv_heads={self.num_kv_heads}"


def checkpointed(layers, x: torch.Tensor, *, checkpoint_layers: bool = True, **kwargs) -> torch.Tensor:
    """Run ``x`` through ``layers`` one after the other, each under ``torch.utils.checkpoint`` when
    ``checkpoint_layers`` (and gradients are being recorded). ``kwargs`` go to every layer.

    Shape: ``x`` ``(B, L, D)`` in, ``(B, L, D)`` out (each layer keeps the shape).
    """
    for layer in layers:
        if checkpoint_layers and torch.is_grad_enabled():
            x = checkpoint(layer, x, use_reentrant=False, **kwargs)
        else:
            x = layer(x, **kwargs)
    return x


def saved_activation_bytes(fn) -> tuple[torch.Tensor, int]:
    """Run ``fn()`` and count the bytes autograd keeps for the backward pass (distinct storages).

    This is the memory that grows with depth and length and that checkpointing trades for time.
    With ``torch.utils.checkpoint`` the layers' inputs are what is kept. Returns ``(fn(), bytes)``.

    Shape: ``fn()`` returns a tensor such as ``(B, L, D)``; the count is a plain ``int`` of bytes.
    """
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor):
        if not isinstance(t, nn.Parameter):  # the weights are kept anyway
            st = t.untyped_storage()
            seen[st.data_ptr()] = st.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    return out, sum(seen.values())
