r"""Sparse attention that really skips the work: a sliding window computed in bands, the
Longformer (window + global tokens) and BigBird (window + global + random keys) patterns on top,
and Sparse Transformer's strided pattern (window + every ``stride``-th key, ``O(L·sqrt(L))``).

:func:`attn.masks.sliding_window` *describes* the pattern as an ``(L, S)`` mask, but attention
under that mask still computes all ``L·S`` scores. Here queries are cut into blocks of ``c``
rows; block ``b`` can only see the keys ``[b·c - (w-1), b·c + c - 1 + (w-1)]``, a slab of
``c + 2(w-1)`` keys taken as a strided *view* (``unfold``) of the padded keys. The scores are
``(L/c) × c × (c + 2w)``: ``O(L·w)`` for ``c ≈ w``.

The window rule is :func:`attn.masks.sliding_window`'s, written in the slab's coordinates (a
``(L, S)`` mask is what this module avoids building); the tests check it against that mask. The
softmax is :func:`attn.masks.masked_softmax`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F

from attn import _checks, masks

__all__ = ["banded_attention", "bigbird_attention", "longformer_attention", "random_keys", "strided_attention",
           "strided_score_count"]


def _self_shapes(q, k, v) -> int:
    L, S, _ = _checks.qkv(q, k, v)
    if L != S or not (q.shape[:-2] == k.shape[:-2] == v.shape[:-2]):
        raise ValueError(
            "banded attention is self-attention: q, k and v need the same batch dimensions and length, "
            f"got q {_checks.fmt(q.shape)}, k {_checks.fmt(k.shape)}, v {_checks.fmt(v.shape)}"
        )
    return L


def _band_scores(q, k, v, window: int, is_causal: bool, block: int, scale: float):
    """Scores of every query against its slab of keys, the slab's values, and which entries are real.

    Returns ``s`` ``(N, nb, c, W)``, ``vs`` ``(N, nb, W, Ev)``, ``keep`` ``(nb, c, W)`` bool and
    ``key_pos`` ``(nb, W)`` (absolute key index of each slab column), with ``N`` the flattened batch,
    ``nb`` blocks of ``c`` queries and slab width ``W = c + left + right``.
    """
    L, E, Ev = q.shape[-2], q.shape[-1], v.shape[-1]
    c = min(block, L)
    nb = -(-L // c)
    left, right = window - 1, (0 if is_causal else window - 1)
    W = c + left + right
    qf = (q * scale).reshape(-1, L, E)  # (N, L, E)
    N = qf.shape[0]
    pad_q = nb * c - L
    qb = F.pad(qf, (0, 0, 0, pad_q)).view(N, nb, c, E)  # (N, nb, c, E)
    kp = F.pad(k.reshape(N, L, E), (0, 0, left, right + pad_q))  # (N, left + nb*c + right, E)
    vp = F.pad(v.reshape(N, L, Ev), (0, 0, left, right + pad_q))
    ks = kp.unfold(1, W, c)  # (N, nb, E, W) a strided view: no copy
    vs = vp.unfold(1, W, c).transpose(-1, -2)  # (N, nb, W, Ev)
    s = qb @ ks  # (N, nb, c, W)
    i = torch.arange(nb * c, device=q.device).view(nb, c)  # (nb, c) query positions
    j = (torch.arange(nb, device=q.device).view(nb, 1) * c - left + torch.arange(W, device=q.device))  # (nb, W)
    d = masks.distances_between(i, j)  # (nb, c, W) query minus key position
    keep = (d < window) & (d > -window) & (j.unsqueeze(1) >= 0) & (j.unsqueeze(1) < L)
    if is_causal:
        keep &= d >= 0
    return s, vs, keep, j


def banded_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    window: int,
    is_causal: bool = False,
    block_size: int | None = None,
    scale: float | None = None,
) -> torch.Tensor:
    """Sliding-window self-attention in ``O(L·window)`` time and memory.

    Equal to full attention under ``attn.masks.sliding_window(L, window=window, is_causal=is_causal)``:
    query ``i`` sees key ``j`` when ``|i - j| < window`` (``0 <= i - j < window`` if ``is_causal``).

    Args:
        q, k: ``(..., L, E)``. v: ``(..., L, Ev)``. Self-attention: one length ``L``.
        window: reach of the window (``1`` = each token sees only itself).
        is_causal: only the past part of the window.
        block_size: queries per block (default ``window``).
        scale: default ``1 / sqrt(E)``.

    Returns:
        ``(..., L, Ev)``.
    """
    L = _self_shapes(q, k, v)
    _checks.positive_int("window", window)
    block = _checks.positive_int("block_size", window if block_size is None else block_size)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s, vs, keep, _ = _band_scores(q, k, v, window, is_causal, block, scale)
    p = masks.masked_softmax(s, keep)  # (N, nb, c, W); the diagonal is always kept
    out = (p @ vs).flatten(1, 2)[:, :L]  # (N, L, Ev)
    return out.reshape(*q.shape[:-1], v.shape[-1])


random_keys = masks.random_keys  # one BigBird generator, in masks: the keys of masks.bigbird for a seed


def _global_index(global_tokens: Sequence[int], L: int, device) -> torch.Tensor:
    g = torch.as_tensor(list(global_tokens), dtype=torch.long, device=device)
    if g.numel() == 0 or (g < 0).any() or (g >= L).any() or g.unique().numel() != g.numel():
        raise ValueError(f"global_tokens must be distinct indices in [0, L={L}), got {list(global_tokens)}")
    return g


def longformer_attention(q, k, v, *, window: int, global_tokens: Sequence[int] = (0,),
                         block_size: int | None = None, scale: float | None = None) -> torch.Tensor:
    """Longformer-style attention: a sliding window, plus global tokens that see and are seen by all.

    Equal to full attention under ``attn.masks.local_global(L, window=window, global_tokens=...)``.
    Cost ``O(L·(window + G))`` for ``G`` global tokens. Shapes as :func:`banded_attention`.
    """
    return bigbird_attention(q, k, v, window=window, global_tokens=global_tokens, random=None,
                             block_size=block_size, scale=scale)


def bigbird_attention(q, k, v, *, window: int, global_tokens: Sequence[int] = (0,),
                      random: torch.Tensor | None = None, block_size: int | None = None,
                      scale: float | None = None) -> torch.Tensor:
    """BigBird-style attention: window + global tokens + a few random keys per query.

    Args:
        q, k, v, window, block_size, scale: as :func:`banded_attention` (non-causal).
        global_tokens: indices of the tokens that attend to, and are attended by, every token.
        random: ``(L, r)`` long, extra keys for each query (e.g. :func:`attn.masks.random_keys`,
            whose seed gives the pattern of :func:`attn.masks.bigbird`); a key
            already in the window, global, or repeated in the row counts once.

    Returns:
        ``(..., L, Ev)``, equal to full attention under the union of the three patterns. Cost
        ``O(L·(window + G + r))``: each group of keys is scored separately and the softmax is
        taken over their concatenation.
    """
    L = _self_shapes(q, k, v)
    _checks.positive_int("window", window)
    block = _checks.positive_int("block_size", window if block_size is None else block_size)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    g = _global_index(global_tokens, L, q.device)
    E, Ev = q.shape[-1], v.shape[-1]
    s_band, vs, keep, kpos = _band_scores(q, k, v, window, False, block, scale)
    N, nb, c, W = s_band.shape
    is_global = torch.zeros(L + 1, dtype=torch.bool, device=q.device)  # index L: a sentinel for padding
    is_global[g] = True
    keep = keep & ~is_global[kpos.clamp(0, L)].unsqueeze(1)  # a global key is scored in its own group
    qf, kf, vf = (q * scale).reshape(N, L, E), k.reshape(N, L, E), v.reshape(N, L, Ev)
    s_band = s_band.masked_fill(~keep, float("-inf")).view(N, nb * c, W)[:, :L]  # (N, L, W)
    s_glob = qf @ kf[:, g].transpose(1, 2)  # (N, L, G) every query sees the global keys
    groups, values = [s_band, s_glob], None
    if random is not None:
        _checks.tensor("random", random, min_dim=2)
        if random.dim() != 2 or random.shape[0] != L or random.dtype != torch.long:
            raise ValueError(f"random must be a (L, r) = ({L}, r) long tensor, got {_checks.fmt(random.shape)} {random.dtype}")
        _checks.entries("random", random, 0, L, bounds="[)", high_name="L", what=" (key indices)")
        # Query i against its own r keys: each query a batch of one, (L, 1) and (L, r) -> (L, 1, r).
        d = masks.distances_between(torch.arange(L, device=q.device).unsqueeze(1), random).squeeze(1)  # (L, r)
        dup = (random.unsqueeze(2) == random.unsqueeze(1)).tril(-1).any(dim=2)  # repeated in its row
        drop = (d.abs() < window) | is_global[random] | dup  # (L, r) already counted elsewhere
        kr = kf[:, random]  # (N, L, r, E) gathered keys
        s_rand = (qf.unsqueeze(2) @ kr.transpose(-1, -2)).squeeze(2)  # (N, L, r)
        groups.append(s_rand.masked_fill(drop, float("-inf")))
        values = vf[:, random]  # (N, L, r, Ev)
    p = masks.masked_softmax(torch.cat(groups, dim=-1))  # (N, L, W + G + r)
    p_band, p_glob = p[..., :W], p[..., W:W + g.numel()]
    out = F.pad(p_band, (0, 0, 0, nb * c - L)).view(N, nb, c, W) @ vs  # (N, nb, c, Ev)
    out = out.flatten(1, 2)[:, :L] + p_glob @ vf[:, g]  # (N, L, Ev)
    if values is not None:
        out = out + (p[..., W + g.numel():].unsqueeze(2) @ values).squeeze(2)
    # Global queries see everything: their rows are ordinary full attention (G rows, O(G·L)).
    w_g = masks.masked_softmax(qf[:, g] @ kf.transpose(1, 2))  # (N, G, L)
    out = out.index_copy(1, g, w_g @ vf)
    return out.reshape(*q.shape[:-1], Ev)


def strided_attention(q, k, v, *, window: int, stride: int, is_causal: bool = False,
                      block_size: int | None = None, scale: float | None = None) -> torch.Tensor:
    """Sparse Transformer's strided pattern: a sliding window plus every ``stride``-th key.

    Query ``i`` sees key ``j`` when ``|i - j| < window`` or ``i - j`` is a multiple of ``stride``
    (with ``is_causal``, only ``j <= i``): full attention under
    ``masks.sliding_window(L, window=window) | masks.dilated(L, window=L, dilation=stride)``.
    With ``window >= stride`` every key is two steps from every query (through the window into
    the key's residue class, then along the stride), and with ``stride ≈ window ≈ sqrt(L)`` each
    query scores about ``3·sqrt(L)`` keys: ``O(L·sqrt(L))`` (:func:`strided_score_count`).

    The window is computed in bands (:func:`banded_attention`); the strided keys by splitting the
    positions into ``stride`` residue classes and attending densely inside each class (``stride``
    blocks of ``(L/stride)²`` scores). A key reached both ways is scored in the band only; one
    softmax runs over the two groups.

    Args:
        q, k, v, window, is_causal, block_size, scale: as :func:`banded_attention`.
        stride: the step of the strided keys.

    Returns:
        ``(..., L, Ev)``.
    """
    L = _self_shapes(q, k, v)
    _checks.positive_int("window", window)
    _checks.positive_int("stride", stride)
    block = _checks.positive_int("block_size", window if block_size is None else block_size)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    E, Ev = q.shape[-1], v.shape[-1]
    s_band, vs, keep, _ = _band_scores(q, k, v, window, is_causal, block, scale)
    N, nb, c, W = s_band.shape
    s_band = s_band.masked_fill(~keep, float("-inf")).view(N, nb * c, W)[:, :L]  # (N, L, W)
    m = -(-L // stride)  # positions per residue class
    pad = m * stride - L
    # position a·stride + r -> class r, row a
    qc, kc = (F.pad(t.reshape(N, L, E), (0, 0, 0, pad)).view(N, m, stride, E).transpose(1, 2) for t in (q * scale, k))
    vc = F.pad(v.reshape(N, L, Ev), (0, 0, 0, pad)).view(N, m, stride, Ev).transpose(1, 2)  # (N, stride, m, Ev)
    s_str = qc @ kc.transpose(-1, -2)  # (N, stride, m, m)
    rows = torch.arange(m, device=q.device)
    d = masks.distances_between(rows * stride, rows * stride)  # (m, m) query minus key, within a class
    key_pos = rows.view(1, m) * stride + torch.arange(stride, device=q.device).view(stride, 1)  # (stride, m)
    keep_str = (d.abs() >= window) & (key_pos < L).unsqueeze(1)  # (stride, m, m) not in the band, real
    if is_causal:
        keep_str &= d > 0
    s_str = s_str.masked_fill(~keep_str, float("-inf")).transpose(1, 2).reshape(N, m * stride, m)[:, :L]  # (N, L, m)
    p = masks.masked_softmax(torch.cat([s_band, s_str], dim=-1))  # (N, L, W + m)
    out = F.pad(p[..., :W], (0, 0, 0, nb * c - L)).view(N, nb, c, W) @ vs  # (N, nb, c, Ev)
    p_str = F.pad(p[..., W:], (0, 0, 0, pad)).view(N, m, stride, m).transpose(1, 2)  # (N, stride, m, m)
    out_str = (p_str @ vc).transpose(1, 2).reshape(N, m * stride, Ev)  # (N, L + pad, Ev)
    out = out.flatten(1, 2)[:, :L] + out_str[:, :L]
    return out.reshape(*q.shape[:-1], Ev)


def strided_score_count(L: int, *, window: int, stride: int, is_causal: bool = False,
                        block_size: int | None = None) -> int:
    """Query-key scores :func:`strided_attention` computes for one sequence and head, padding
    included: the band's ``ceil(L/c)·c·(c + 2(window - 1))`` (``c + window - 1`` causal), plus
    ``stride·ceil(L/stride)²`` inside the residue classes. With ``stride = window = c ≈ sqrt(L)``
    that is about ``4·L·sqrt(L)`` (``3·L·sqrt(L)`` causal); full attention scores ``L²``.
    """
    _checks.positive_int("L", L)
    _checks.positive_int("window", window)
    _checks.positive_int("stride", stride)
    c = min(_checks.positive_int("block_size", window if block_size is None else block_size), L)
    band = -(-L // c) * c * (c + window - 1 + (0 if is_causal else window - 1))
    return band + stride * (-(-L // stride)) ** 2
