"""Attention modules: the single head the book derives, and multi-head attention.

Shapes follow the package legend: ``B`` batch, ``H`` heads, ``L`` queries, ``S`` keys, ``E`` per-head
width, ``D = H * E`` model width. Masks are boolean with ``True`` = may attend.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from attn import _checks, masks
from attn.functional import attend, scaled_dot_product_attention

__all__ = ["KVCache", "MultiHeadAttention", "SelfAttention", "record_attention"]


class KVCache:
    """Keys and values kept between decoding steps, shaped ``(B, H, S, E)``.

    A decoder that generates one token at a time would otherwise recompute the keys and values of
    every earlier token at every step. With ``static=True`` (cross-attention) the first call stores
    the projected encoder keys and values, and later calls reuse them.

    The cache writes new rows into pre-allocated buffers (``capacity`` rows, doubled whenever they
    fill up) instead of concatenating at every step, which would copy the whole cache each time:
    ``k`` and ``v`` are views of the first ``len(cache)`` rows. When the new keys carry gradients
    (training through the cache), it concatenates instead, so autograd sees ordinary tensors.

    Args:
        static: keep the first keys/values and return them on every later call.
        capacity: rows to allocate at the first update (default: twice the first length, at least 64).
    """

    def __init__(self, static: bool = False, capacity: int | None = None):
        if capacity is not None:
            _checks.positive_int("capacity", capacity, " or None")
        self.static = static
        self.capacity = capacity
        self.k: torch.Tensor | None = None  # (B, H, S, E): the cached rows
        self.v: torch.Tensor | None = None
        self._buf: tuple[torch.Tensor, torch.Tensor] | None = None  # (B, H, capacity, E) each

    def __len__(self) -> int:
        return 0 if self.k is None else self.k.shape[-2]

    def _check(self, k: torch.Tensor, v: torch.Tensor) -> None:
        if k.dim() != 4 or v.dim() != 4 or k.shape[:3] != v.shape[:3]:
            raise ValueError(
                f"k and v must be (B, H, S_new, E) with the same B, H and S_new, got k {_checks.fmt(k.shape)} "
                f"and v {_checks.fmt(v.shape)}"
            )
        if self.k is None:
            return
        if k.shape[:2] != self.k.shape[:2]:
            raise ValueError(
                f"new keys {_checks.fmt(k.shape)} do not match the cached {_checks.fmt(self.k.shape)} in (B, H)"
            )
        for name, new, old in (("k", k, self.k), ("v", v, self.v)):
            if new.shape[-1] != old.shape[-1]:
                raise ValueError(
                    f"{name} has head width {new.shape[-1]} (shape {_checks.fmt(new.shape)}), but the cached "
                    f"{name} has {old.shape[-1]} (shape {_checks.fmt(old.shape)})"
                )

    def update(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append new keys/values ``(B, H, S_new, E)``; return everything cached ``(B, H, S, E)``."""
        if self.static:  # cross-attention: the keys/values of the memory, stored as given
            self.k, self.v, self._buf = k, v, None
            return self.k, self.v
        self._check(k, v)
        n, new = len(self), k.shape[-2]
        if torch.is_grad_enabled() and (k.requires_grad or v.requires_grad):
            # Keep autograd's view simple: plain tensors, concatenated.
            if self.k is not None:
                k, v = torch.cat([self.k, k], dim=-2), torch.cat([self.v, v], dim=-2)  # (B, H, S + S_new, E)
            self.k, self.v, self._buf = k, v, None
            return self.k, self.v
        if self._buf is None or n + new > self._buf[0].shape[-2]:
            first = self._buf is None and self.capacity is not None and self.capacity >= n + new
            cap = self.capacity if first else max(2 * (n + new), 64)
            bufs = tuple(t.new_empty(*t.shape[:2], cap, t.shape[-1]) for t in (k, v))  # (B, H, cap, E)
            if n:  # moving to a larger buffer: one copy per doubling, not one per step
                bufs[0].narrow(-2, 0, n).copy_(self.k)
                bufs[1].narrow(-2, 0, n).copy_(self.v)
            self._buf = bufs
        kb, vb = self._buf
        kb.narrow(-2, n, new).copy_(k)  # write only the new rows
        vb.narrow(-2, n, new).copy_(v)
        self.k, self.v = kb.narrow(-2, 0, n + new), vb.narrow(-2, 0, n + new)  # views (B, H, S + S_new, E)
        return self.k, self.v

    def __repr__(self) -> str:
        return f"KVCache(static={self.static}, length={len(self)})"


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
            _checks.positive_int(name, value)
        self.d_model, self.d_k, self.d_v = d_model, d_k, d_v
        self.W_q = nn.Linear(d_model, d_k, bias=bias)
        self.W_k = nn.Linear(d_model, d_k, bias=bias)
        self.W_v = nn.Linear(d_model, d_v, bias=bias)
        self.W_o = nn.Linear(d_v, d_model, bias=bias)

    def forward(
        self, x: torch.Tensor, *, mask: torch.Tensor | None = None, is_causal: bool = False, need_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Args: ``x`` ``(B, L, D)`` or ``(L, D)``; ``mask`` broadcasting to ``(B, L, L)``;
        ``need_weights``: also return the attention weights.

        Returns: output ``(B, L, D)`` and weights ``(B, L, L)`` or ``None`` (no batch dimension if
        ``x`` had none). The weights are always computed, explicitly, as the formula above says;
        ``need_weights`` only decides whether they are returned (the package's return convention).
        """
        _checks.tensor("x", x, min_dim=2)
        _checks.last_dim("x", x, self.d_model, "d_model")
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)  # (B, L, d_k), (B, L, d_k), (B, L, d_v)
        z, weights = scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal, return_weights=True)
        return self.W_o(z), (weights if need_weights else None)  # (B, L, D), (B, L, L) or None

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
        positional: an encoding that acts inside attention (see :mod:`attn.positional`): mode
            ``"qk"`` rotates queries and keys (RoPE), mode ``"scores"`` adds a bias to the scores
            (ALiBi, T5, Shaw). Positions belong to one sequence, so a module with ``positional``
            does self-attention only (see :meth:`forward`).
    """

    def __init__(
        self, d_model: int, num_heads: int, *, dropout: float = 0.0, bias: bool = True, positional: nn.Module | None = None
    ):
        super().__init__()
        self.d_model, self.num_heads, self.d_head = d_model, num_heads, _checks.heads(d_model, num_heads)
        self.dropout = dropout
        self.in_proj = nn.Linear(d_model, 3 * d_model, bias=bias)  # W_q; W_k; W_v stacked
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        if positional is not None and getattr(positional, "mode", None) not in ("scores", "qk"):
            raise ValueError(
                "positional must be an encoding that acts inside attention (mode 'scores' or 'qk'); "
                f"got {type(positional).__name__} with mode {getattr(positional, 'mode', None)!r}. "
                "Encodings with mode 'input' are added to the token embeddings instead."
            )
        for attr, mine in (("d_head", self.d_head), ("num_heads", num_heads)):
            theirs = getattr(positional, attr, None)
            if theirs is not None and theirs != mine:
                raise ValueError(
                    f"positional {type(positional).__name__} has {attr}={theirs}, but this attention has {attr}={mine}"
                )
        self.positional = positional
        self.record_weights = False  # when True, forward keeps its weights in self.last_weights
        self.last_weights: torch.Tensor | None = None  # (B, H, L, S)
        self.head_mask: torch.Tensor | None = None  # (H,) 1 keeps a head, 0 removes it (ablation)

    def _project(self, query, key, value):
        """Apply W_q, W_k, W_v and split the results into heads ``(B, H, N, E)``, with one matmul
        when the inputs are the same tensor."""
        if key is query and value is query:  # self-attention: one fused matmul, one view splits all three
            B, L, _ = query.shape
            qkv = self.in_proj(query).view(B, L, 3, self.num_heads, self.d_head)  # (B, L, 3, H, E)
            return qkv.permute(2, 0, 3, 1, 4).unbind(0)  # 3 x (B, H, L, E): views, nothing copied
        W, b = self.in_proj.weight, self.in_proj.bias
        D = self.d_model
        bq, bk, bv = (None, None, None) if b is None else b.split(D)
        q = F.linear(query, W[:D], bq)  # (B, L, D)
        if key is value:  # cross-attention over one memory: keys and values in one matmul
            bkv = None if b is None else b[D:]
            k, v = F.linear(key, W[D:], bkv).chunk(2, dim=-1)  # 2 x (B, S, D)
        else:
            k = F.linear(key, W[D : 2 * D], bk)  # (B, S, D)
            v = F.linear(value, W[2 * D :], bv)  # (B, S, D)
        return self._split_heads(q), self._split_heads(k), self._split_heads(v)  # (B, H, L|S, E)

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
        cache: KVCache | None = None,
        need_weights: bool = False,
        average_weights: bool = True,
    ):
        """Args:
            query: ``(B, L, D)``.
            key, value: ``(B, S, D)``; default ``query``. **Self-attention** means that ``key``
                and ``value`` are omitted or are the ``query`` tensor itself (``m(x)``,
                ``m(x, x)`` and ``m(x, x, x)`` are the same call); anything else is
                cross-attention, e.g. over the encoder output. A module built with
                ``positional`` does self-attention only and refuses other ``key``/``value``
                tensors, even equal copies of ``query``.
            mask: bool (True = may attend) or additive, broadcasting to ``(B, H, L, S)``; an
                ``(L, S)`` or ``(B, L, S)`` mask applies to every head. With a cache, ``S`` counts
                the cached keys too.
            key_mask: ``(B, S)`` bool, ``True`` for real keys and ``False`` for padding
                (the opposite of ``nn.MultiheadAttention``'s ``key_padding_mask``).
            is_causal: block keys after each query, as in :func:`attn.scaled_dot_product_attention`:
                the triangle is aligned bottom-right, the queries being the *last* ``L`` positions
                of the ``S`` keys, which is what decoding with a cache needs; for ``L == S`` it is
                the usual lower triangle.
            cache: a :class:`KVCache`. For self-attention the new keys and values are appended
                and the queries attend to everything cached; a ``KVCache(static=True)`` for
                cross-attention projects ``key``/``value`` once and reuses them afterwards.
            need_weights: also return attention weights.
            average_weights: average the weights over heads ``(B, L, S)``; else ``(B, H, L, S)``.

        Returns:
            output ``(B, L, D)``, and weights or ``None``.
        """
        self_attention = key is None or (key is query and (value is None or value is query))
        if not self_attention and self.positional is not None:
            raise ValueError(
                f"positional={type(self.positional).__name__} acts in self-attention only: key and value must "
                "be omitted or be the query tensor itself (got a separate key: "
                + (f"a tensor of shape {_checks.fmt(key.shape)})" if isinstance(key, torch.Tensor) else f"{type(key).__name__})")
            )
        if cache is not None and cache.static and self.positional is not None:
            raise ValueError(
                f"positional={type(self.positional).__name__} needs a growing cache: KVCache(static=True) "
                "keeps cross-attention's keys and values, which carry no positions of this sequence"
            )
        key = query if key is None else key
        value = key if value is None else value
        reuse = cache is not None and cache.static and cache.k is not None
        # Self-attention: key and value are the query, checked once.
        self._check_inputs(query, *((None, None) if reuse or self_attention else (key, value)))
        B, L, _ = query.shape
        past = len(cache) if cache is not None and not cache.static else 0

        q, k, v = self._project_heads(query, key, value, cache if reuse else None)  # (B, H, L|S, E)
        q, k = self._rotate(q, k, past)  # RoPE: queries and keys at positions past, past + 1, ...
        if cache is not None and not reuse:
            k, v = cache.update(k, v)  # (B, H, past + S_new, E)
        mask = self._scores_mask(q, mask, key_mask, B, L, k.shape[-2])  # (B|1, H|1, L, S) or None
        z, w = self._attend(q, k, v, mask, is_causal, need_weights)  # (B, H, L, E), (B, H, L, S)
        out = self._merge_heads(z)  # (B, L, D)
        if w is not None and average_weights:
            w = w.mean(dim=1)  # (B, L, S)
        return out, w

    def _project_heads(self, query, key, value, static_cache: KVCache | None):
        """Project and split into heads; a filled static cache supplies the keys and values."""
        if static_cache is None:
            return self._project(query, key, value)  # (B, H, L|S, E)
        W, b = self.in_proj.weight, self.in_proj.bias
        D = self.d_model
        q = self._split_heads(F.linear(query, W[:D], None if b is None else b[:D]))  # (B, H, L, E)
        k, v = static_cache.k, static_cache.v  # (B, H, S, E)
        if k.shape[0] != query.shape[0]:
            raise ValueError(f"the cache holds keys for batch size {k.shape[0]}, query has B = {query.shape[0]}")
        return q, k, v

    def _rotate(self, q, k, past: int):
        """Rotate queries and keys by their absolute positions (positional mode "qk")."""
        pos = self.positional
        if pos is None or pos.mode != "qk":
            return q, k
        return pos.rotate(q, past), pos.rotate(k, past)

    def _scores_mask(self, q, mask, key_mask, B: int, L: int, S: int):
        """One mask for the scores: ``mask`` and ``key_mask`` merged, plus a positional score bias."""
        pos = self.positional
        if mask is None and key_mask is None and pos is None:  # the common case: nothing to merge
            return None
        mask = self._merge_masks(mask, key_mask, B, L, S)
        if pos is not None and pos.mode == "scores":
            mask = masks.add_bias(mask, pos.score_bias(q, S - L, S))  # bias (B|1, H, L, S)
        return mask

    def _attend(self, q, k, v, mask, is_causal: bool, need_weights: bool):
        """Scaled dot-product attention per head; weights only when asked for or recorded."""
        p = self.dropout if self.training else 0.0
        # q, k, v come from our own projections of checked inputs: attend skips checking them again.
        if not (need_weights or self.record_weights):
            return attend(q, k, v, mask=mask, is_causal=is_causal, dropout_p=p), None
        z, w = attend(q, k, v, mask=mask, is_causal=is_causal, dropout_p=p, return_weights=True)
        if self.record_weights:
            self.last_weights = w.detach()
        return z, (w if need_weights else None)

    def _merge_heads(self, z: torch.Tensor) -> torch.Tensor:
        """Concatenate the heads and mix them with ``out_proj``: ``(B, H, L, E) -> (B, L, D)``."""
        if self.head_mask is not None:  # ablation: silence chosen heads before they are mixed
            z = z * self.head_mask.to(z.dtype).view(1, -1, 1, 1)
        B, _, L, _ = z.shape
        z = z.transpose(1, 2).reshape(B, L, self.d_model)  # (B, L, D): heads concatenated
        return self.out_proj(z)  # (B, L, D)

    def _check_inputs(self, query, key, value) -> None:
        param_dtype = self.in_proj.weight.dtype
        given = (("query", query),) if key is None else (("query", query), ("key", key), ("value", value))
        for name, x in given:
            _checks.tensor(name, x, min_dim=3)
            _checks.floating(name, x)
            if x.dtype != param_dtype and not torch.is_autocast_enabled(x.device.type):
                raise TypeError(
                    f"{name} has dtype {x.dtype} but the parameters of this MultiHeadAttention are {param_dtype}: "
                    f"convert one of them (x.to({param_dtype}) or module.to({x.dtype}))"
                )
            if x.dim() != 3:
                raise ValueError(f"{name} must have shape (B, N, D), got {_checks.fmt(x.shape)}")
            _checks.last_dim(name, x, self.d_model, "d_model")
            _checks.non_empty(name, x, 1, "query length L" if name == "query" else "source length S")
        if key is not None and (key.shape[:2] != value.shape[:2] or key.shape[0] != query.shape[0]):
            raise ValueError(
                f"query {_checks.fmt(query.shape)}, key {_checks.fmt(key.shape)} and value "
                f"{_checks.fmt(value.shape)} must share B, and key and value must share S"
            )

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
            mask = masks.restrict(mask, key_mask[:, None, None, :])  # key_mask as (B, 1, 1, S)
        return mask

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, num_heads={self.num_heads}, d_head={self.d_head}"


class record_attention:
    """Context manager: every :class:`MultiHeadAttention` inside ``model`` keeps its weights.

    >>> with record_attention(model) as rec:
    ...     model(x)
    >>> rec["layers.0.self_attn"]  # (B, H, L, S)
    """

    def __init__(self, model: nn.Module):
        self.modules = {name: m for name, m in model.named_modules() if isinstance(m, MultiHeadAttention)}
        self.weights: dict[str, torch.Tensor] = {}

    def __enter__(self) -> dict[str, torch.Tensor]:
        for m in self.modules.values():
            m.record_weights, m.last_weights = True, None
        return self.weights

    def __exit__(self, *exc) -> None:
        for name, m in self.modules.items():
            m.record_weights = False
            if m.last_weights is not None:
                self.weights[name] = m.last_weights
            m.last_weights = None
