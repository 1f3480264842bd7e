r"""Exact attention in tiles with the online softmax (FlashAttention's algorithm, in PyTorch).

The scores of one query block against one key block are computed, used and thrown away; only a
running maximum ``m``, a running normaliser ``l`` and an unnormalised output ``acc`` are kept per
query row. When a new key block brings a larger maximum ``m'``, the old sums are rescaled by
``exp(m - m')``:

.. math::

    m' = \max(m, \max_j s_j),\quad
    l' = e^{m - m'}\, l + \sum_j e^{s_j - m'},\quad
    \mathrm{acc}' = e^{m - m'}\, \mathrm{acc} + \sum_j e^{s_j - m'}\, v_j,

and at the end ``out = acc / l``. Memory is ``O(L·E + block²)`` instead of ``O(L·S)``.

The softmax is computed online, so :func:`attn.masks.masked_softmax` (which needs a whole row)
cannot be used; the causal triangle of a diagonal tile is :func:`attn.masks.causal`, and a row that
sees no key gives zeros, as ``masked_softmax`` defines it.
"""

from __future__ import annotations

import math

import torch

from attn import _checks, masks

__all__ = ["online_softmax_steps", "online_softmax_update", "tiled_attention"]


def tiled_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    is_causal: bool = False,
    mask: torch.Tensor | None = None,
    scale: float | None = None,
    block_size: int = 256,
) -> torch.Tensor:
    """softmax(q kᵀ · scale + mask) v, one ``block_size × block_size`` tile of scores at a time.

    Args:
        q: queries ``(..., L, E)``. k: keys ``(..., S, E)``. v: values ``(..., S, Ev)``; the batch
            dimensions ``...`` must be equal (no broadcasting).
        is_causal: key ``j`` is visible to query ``i`` only if ``j <= i + S - L``: aligned to the
            bottom-right corner, as everywhere in ``attn`` (the queries are the last ``L``
            positions; equal to PyTorch's top-left triangle when ``L = S``). Tiles above the
            diagonal are skipped, not computed and masked.
        mask: bool (True = may attend) or additive, broadcasting to ``(..., L, S)``. Tiles a boolean
            mask blocks completely are skipped.
        scale: multiplies the scores; default ``1 / sqrt(E)``.
        block_size: rows and columns of one tile. Large tiles (256-512) keep the work in big
            matrix products and the Python loop short.

    Returns:
        ``(..., L, Ev)``. A query whose keys are all masked gets zeros.

    Shape:
        Extra memory ``O(block_size² + L·Ev)`` per batch-head, never ``(L, S)``.

    Autograd differentiates through the tiles (it stores each tile's probabilities, so the backward
    pass needs ``O(L·S)`` memory again); a fused kernel such as FlashAttention instead keeps only
    the per-row log-sum-exp and recomputes each tile in its backward pass.
    """
    L, S, batch = _checks.qkv(q, k, v)
    _checks.positive_int("block_size", block_size)
    if not (q.shape[:-2] == k.shape[:-2] == v.shape[:-2]):
        raise ValueError(
            f"tiled_attention needs equal batch dimensions, got q {_checks.fmt(q.shape)}, "
            f"k {_checks.fmt(k.shape)}, v {_checks.fmt(v.shape)}"
        )
    if mask is not None:
        _checks.mask("mask", mask, (*batch, L, S))
        if mask.is_floating_point():
            mask = mask.to(q.dtype)
        mask = mask.expand(*batch, L, S).reshape(-1, L, S)  # (N, L, S); a view when it broadcast
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    dtype = q.dtype
    if dtype in (torch.float16, torch.bfloat16):  # the running sums need float32's range and precision
        q, k, v = q.float(), k.float(), v.float()
        mask = mask.float() if mask is not None and mask.is_floating_point() else mask
    E, Ev = q.shape[-1], v.shape[-1]
    qf = q.reshape(-1, L, E)  # (N, L, E) with N = prod(...); a view, no copy of q
    kt = k.reshape(-1, S, E).transpose(1, 2)  # (N, E, S)
    vf = v.reshape(-1, S, Ev)  # (N, S, Ev)
    N = qf.shape[0]
    # In-place updates are faster but autograd needs every intermediate: pick per call. An additive
    # mask can carry a gradient too (a learned bias), so it counts like q, k and v.
    grad = torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (q, k, v, mask))
    out = qf.new_empty(N, L, Ev)
    tris: dict[tuple[int, int, int], torch.Tensor] = {}  # hidden parts of diagonal tiles, built once
    off = S - L if is_causal else 0  # bottom-right alignment: query i sees keys j <= i + off
    for i0 in range(0, L, block_size):
        i1 = min(i0 + block_size, L)
        qi = qf[:, i0:i1] * scale  # (N, b, E): the scale folded into one block of queries
        m = qf.new_full((N, i1 - i0, 1), float("-inf"))  # running row maximum
        denom = qf.new_zeros(N, i1 - i0, 1)  # running normaliser (l in the FlashAttention paper)
        acc = qf.new_zeros(N, i1 - i0, Ev)  # running unnormalised output
        for j0 in range(0, max(0, min(i1 + off, S)) if is_causal else S, block_size):
            j1 = min(j0 + block_size, S)
            s = torch.bmm(qi, kt[:, :, j0:j1])  # (N, b, b) one tile of scores
            if is_causal and j1 - 1 > i0 + off:  # the tile crosses the diagonal: hide the keys after each query
                key = (i1 - i0, j1 - j0, i0 - j0 + off)
                if key not in tris:
                    tris[key] = ~masks.causal(i1 - i0, j1 - j0, offset=i0 - j0 + off, device=q.device)
                tri = tris[key]
                s = s.masked_fill(tri, float("-inf")) if grad else s.masked_fill_(tri, float("-inf"))
            if mask is not None:
                mt = mask[:, i0:i1, j0:j1]
                if mt.dtype == torch.bool:
                    if not mt.any():
                        continue  # nothing visible in this tile: skip its work
                    s = s.masked_fill(~mt, float("-inf"))
                else:
                    s = s + mt
            m, denom, acc, _, _ = online_softmax_update(m, denom, acc, s, vf[:, j0:j1], inplace=not grad)
        # A row that saw no key has denom = 0 and acc = 0: divide it by 1, giving zeros, not 0/0. (A
        # row that saw a key has denom >= 1: its maximum contributes exp(0).) Dividing by a tiny
        # number instead would send a gradient of 1/tiny back, which overflows: inf * 0 = NaN.
        out[:, i0:i1] = acc / denom.masked_fill(denom == 0, 1.0)
    return out.reshape(*batch, L, Ev).to(dtype)


def online_softmax_update(
    m: torch.Tensor,
    denom: torch.Tensor,
    acc: torch.Tensor,
    s: torch.Tensor,
    v: torch.Tensor,
    *,
    inplace: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Fold one tile of scores into the running state of the online softmax (the module's formula).

    Args:
        m: running row maximum ``(N, b, 1)``, ``-inf`` for a row that has seen no key yet.
        denom: running normaliser ``(N, b, 1)`` (``l``). acc: running unnormalised output ``(N, b, Ev)``.
        s: this tile's scores ``(N, b, t)``, ``-inf`` where a key is hidden. v: its values ``(N, t, Ev)``.
        inplace: update ``s``, ``denom`` and ``acc`` in place (faster; only without autograd).

    Returns:
        ``(m', denom', acc', corr, p)``: the new state; ``corr = exp(m - m')``, the factor that
        rescaled the old sums (0 while a row has seen no key, 1 where its maximum did not rise);
        and ``p = exp(s - m')`` ``(N, b, t)``, the tile's own unnormalised weights.
    """
    m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))  # (N, b, 1)
    m_safe = m_new.masked_fill(m_new == float("-inf"), 0.0)  # rows with nothing seen yet
    corr = torch.exp(m - m_safe)  # rescales the old sums; 0 while m is -inf
    if inplace:
        p = s.sub_(m_safe).exp_()
        denom.mul_(corr).add_(p.sum(dim=-1, keepdim=True))
        acc.mul_(corr).baddbmm_(p, v)
    else:
        p = torch.exp(s - m_safe)  # (N, b, t)
        denom = denom * corr + p.sum(dim=-1, keepdim=True)
        acc = torch.baddbmm(acc * corr, p, v)  # (N, b, Ev)
    return m_new, denom, acc, corr, p


def online_softmax_steps(scores, values, block_size: int):
    """One query's online softmax, a block of keys at a time: yields the state after each block.

    The step-by-step view of :func:`tiled_attention`'s inner loop (the same
    :func:`online_softmax_update`), in float64, for a few scores and one-number values, as the
    "Efficient attention" chapter's figure (:func:`attn.book.diagram.tiled_pass`) draws it.

    Args:
        scores: the query's scores, one per key (already scaled). values: one number per key.
        block_size: keys per block.

    Yields:
        One dict of floats per block: ``start`` (its first key), ``m_old``, ``m`` (the running
        maximum before and after), ``rescale`` (``exp(m_old - m)``), ``ell_old``, ``a_old`` (the
        running sum and unnormalised output carried in), ``block_ell``, ``block_a`` (this block's
        own sums under the new maximum) and ``ell``, ``a`` (the state carried out). After the last
        block ``a / ell`` is the attention output.

    Raises:
        ValueError: if ``scores`` and ``values`` differ in length or are empty, or ``block_size`` is
            not a positive integer.
    """
    s = torch.as_tensor(scores, dtype=torch.float64).reshape(1, 1, -1)  # (1, 1, S)
    v = torch.as_tensor(values, dtype=torch.float64).reshape(1, -1, 1)  # (1, S, 1)
    if s.numel() == 0 or s.numel() != v.numel():
        raise ValueError(f"scores and values need the same, non-zero length; got {s.numel()} scores and "
                         f"{v.numel()} values")
    _checks.positive_int("block_size", block_size)
    return _steps(s, v, block_size)  # checked above, now: a generator body would check only when first read


def _steps(s: torch.Tensor, v: torch.Tensor, block_size: int):
    m = s.new_full((1, 1, 1), float("-inf"))
    ell, a = s.new_zeros(1, 1, 1), s.new_zeros(1, 1, 1)
    for start in range(0, s.shape[-1], block_size):
        vb = v[:, start : start + block_size]
        m_new, ell_new, a_new, corr, p = online_softmax_update(m, ell, a, s[..., start : start + block_size], vb)
        yield {"start": start, "m_old": float(m), "m": float(m_new), "rescale": float(corr),
               "ell_old": float(ell), "a_old": float(a), "block_ell": float(p.sum()), "block_a": float(p @ vb),
               "ell": float(ell_new), "a": float(a_new)}
        m, ell, a = m_new, ell_new, a_new
