r"""Attention without the ``L × S`` matrix: kernel (linear) attention and Linformer.

**Linear attention** (Katharopoulos et al., 2020) replaces ``exp(q·k)`` by ``φ(q)·φ(k)`` with
``φ(x) = elu(x) + 1 > 0``. Matrix products then regroup:

.. math::

    o_i = \frac{\phi(q_i)^\top \sum_j \phi(k_j) v_j^\top}{\phi(q_i)^\top \sum_j \phi(k_j)},

``O(L·E·Ev)`` instead of ``O(L·S·E)``. Causal: the sums run over ``j <= i``, i.e. prefix sums,
which is also an RNN with state ``(Σ φ(k) vᵀ, Σ φ(k))``. There is no softmax and no ``L × S``
score matrix to mask, so :func:`attn.masks.masked_softmax` has no place here; inside a chunk the
causal rule is :func:`attn.masks.causal`.

**Linformer** (Wang et al., 2020) projects the ``S`` keys and values down to ``k`` rows with
``(k, S)`` matrices, then attends exactly over those ``k`` rows: ``O(L·k)``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from attn import _checks, masks
from attn.functional import attend

__all__ = ["LinformerProjection", "elu_feature_map", "linear_attention", "linear_attention_recurrent",
           "linformer_attention"]


def elu_feature_map(x: torch.Tensor) -> torch.Tensor:
    """φ(x) = elu(x) + 1, positive everywhere, so the normaliser never vanishes.

    Shape: any, e.g. ``(B, H, L, E)``; the output has the shape of ``x``.
    """
    return F.elu(x) + 1.0


def linear_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, is_causal: bool = False,
                     eps: float = 1e-6, chunk_size: int = 64) -> torch.Tensor:
    """Kernel attention with φ = elu + 1 (parallel form).

    Args:
        q: ``(..., L, E)``. k: ``(..., S, E)``. v: ``(..., S, Ev)``.
        is_causal: query ``i`` sees keys ``j <= i`` (needs ``L == S``); computed chunk by chunk: exact
            ``φ(Q)φ(K)ᵀ`` products inside a chunk, the carried state ``Σ φ(k) vᵀ`` between chunks.
        eps: added to the normaliser.
        chunk_size: queries per chunk in the causal form.

    Returns:
        ``(..., L, Ev)``.
    """
    L, S, _ = _checks.qkv(q, k, v)
    fq, fk = elu_feature_map(q), elu_feature_map(k)  # (..., L, E), (..., S, E)
    if not is_causal:
        kv = fk.transpose(-2, -1) @ v  # (..., E, Ev): Σ_j φ(k_j) v_jᵀ
        z = fk.sum(dim=-2, keepdim=True)  # (..., 1, E): Σ_j φ(k_j)
        return (fq @ kv) / ((fq * z).sum(dim=-1, keepdim=True) + eps)  # (..., L, Ev)
    if L != S:
        raise ValueError(f"causal linear attention needs L == S, got q {_checks.fmt(q.shape)} and k {_checks.fmt(k.shape)}")
    c = _checks.positive_int("chunk_size", chunk_size)
    state = fk.new_zeros(*fk.shape[:-2], fk.shape[-1], v.shape[-1])  # (..., E, Ev)
    zsum = fk.new_zeros(*fk.shape[:-2], 1, fk.shape[-1])  # (..., 1, E)
    tri = masks.causal(c, device=q.device)  # (c, c): key j <= query i inside a chunk
    outs = []
    for t0 in range(0, L, c):
        t1 = min(t0 + c, L)
        qc, kc, vc = fq[..., t0:t1, :], fk[..., t0:t1, :], v[..., t0:t1, :]
        a = (qc @ kc.transpose(-2, -1)).masked_fill(~tri[: t1 - t0, : t1 - t0], 0.0)  # (..., c, c) within the chunk
        num = qc @ state + a @ vc  # (..., c, Ev)
        den = (qc * zsum).sum(-1, keepdim=True) + a.sum(-1, keepdim=True) + eps  # (..., c, 1)
        outs.append(num / den)
        state = state + kc.transpose(-2, -1) @ vc  # carry the prefix sums to the next chunk
        zsum = zsum + kc.sum(dim=-2, keepdim=True)
    return torch.cat(outs, dim=-2)  # (..., L, Ev)


def linear_attention_recurrent(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, eps: float = 1e-6) -> torch.Tensor:
    """Causal linear attention as an RNN, one token at a time (what decoding does): the state
    ``(Σ φ(k) vᵀ, Σ φ(k))`` has a fixed size, whatever the length. Shapes as :func:`linear_attention`.

    Shape: ``q``, ``k`` ``(..., L, E)``, ``v`` ``(..., L, Ev)``; output ``(..., L, Ev)``.
    """
    L, S, _ = _checks.qkv(q, k, v)
    if L != S:
        raise ValueError(f"linear_attention_recurrent is causal self-attention and needs L == S, got q "
                         f"{_checks.fmt(q.shape)} and k {_checks.fmt(k.shape)}")
    fq, fk = elu_feature_map(q), elu_feature_map(k)
    state = fk.new_zeros(*fk.shape[:-2], fk.shape[-1], v.shape[-1])  # (..., E, Ev)
    z = fk.new_zeros(*fk.shape[:-2], fk.shape[-1])  # (..., E)
    outs = []
    for t in range(q.shape[-2]):
        state = state + fk[..., t, :, None] * v[..., t, None, :]  # rank-one update
        z = z + fk[..., t, :]
        num = (fq[..., t, :, None] * state).sum(-2)  # (..., Ev)
        outs.append(num / ((fq[..., t, :] * z).sum(-1, keepdim=True) + eps))
    return torch.stack(outs, dim=-2)  # (..., L, Ev)


def linformer_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, proj_k: torch.Tensor,
                        proj_v: torch.Tensor | None = None, *, scale: float | None = None) -> torch.Tensor:
    """softmax(q (P_k k)ᵀ · scale) (P_v v): exact attention over ``r`` projected keys and values.

    Args:
        q: ``(..., L, E)``. k: ``(..., S, E)``. v: ``(..., S, Ev)``.
        proj_k: ``(r, S)`` mixes the ``S`` keys into ``r`` rows. proj_v: ``(r, S)`` for the values
            (default ``proj_k``, Linformer's shared projection).

    Returns:
        ``(..., L, Ev)``.
    """
    _, S, _ = _checks.qkv(q, k, v)
    proj_v = proj_k if proj_v is None else proj_v
    for name, p in (("proj_k", proj_k), ("proj_v", proj_v)):
        _checks.tensor(name, p, min_dim=2)
        if p.dim() != 2 or p.shape[1] != S:
            raise ValueError(f"{name} must have shape (r, S) with S = {S}, got {_checks.fmt(p.shape)}")
    kp = proj_k.to(k.dtype) @ k  # (..., r, E)
    vp = proj_v.to(v.dtype) @ v  # (..., r, Ev)
    return attend(q, kp, vp, scale=scale)  # (..., L, Ev): exact attention over the r rows


class LinformerProjection(nn.Module):
    """The ``(r, S)`` projections of Linformer for sequences of length ``S``.

    Args:
        seq_len: ``S``. rank: ``r <= S``.
        learned: trainable (as in the paper), else fixed.
        shared: one matrix for keys and values.
        init: ``"gaussian"``: entries of variance ``1 / r`` (a Johnson-Lindenstrauss projection,
            seeded by ``seed``); ``"pool"``: row ``i`` averages the ``i``-th of ``r`` consecutive
            chunks of positions (``r = S`` is the identity, exact attention).
        seed: for the Gaussian initial values.
    """

    def __init__(self, seq_len: int, rank: int, *, learned: bool = True, shared: bool = True,
                 init: str = "gaussian", seed: int = 0):
        super().__init__()
        _checks.positive_int("seq_len", seq_len)
        _checks.positive_int("rank", rank)
        if rank > seq_len:
            raise ValueError(f"rank ({rank}) must not exceed the sequence length seq_len ({seq_len})")
        if init not in ("gaussian", "pool"):
            raise ValueError(f"init must be 'gaussian' or 'pool', got {init!r}")
        g = torch.Generator().manual_seed(seed)
        if init == "pool":
            pool = torch.zeros(rank, seq_len)
            for i, chunk in enumerate(torch.arange(seq_len).tensor_split(rank)):
                pool[i, chunk] = 1.0 / len(chunk)  # row i: the mean of one chunk of positions
            mats = [pool.clone() for _ in range(1 if shared else 2)]
        else:
            mats = [torch.randn(rank, seq_len, generator=g) / math.sqrt(rank) for _ in range(1 if shared else 2)]
        params = [nn.Parameter(m, requires_grad=learned) for m in mats]
        self.proj_k = params[0]
        self.proj_v = params[-1]
        self.seq_len, self.rank = seq_len, rank

    def forward(self, q, k, v) -> torch.Tensor:
        if k.shape[-2] != self.seq_len:
            raise ValueError(f"k has length {k.shape[-2]} (shape {_checks.fmt(k.shape)}), but this projection was "
                             f"built for seq_len = {self.seq_len}")
        return linformer_attention(q, k, v, self.proj_k, self.proj_v)

    def extra_repr(self) -> str:
        return f"seq_len={self.seq_len}, rank={self.rank}"
