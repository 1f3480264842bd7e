r"""Scaled dot-product attention, the one formula the rest of the package is built on.

.. math::

    \operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}} + M\right) V

Two paths compute it. :func:`explicit_attention` writes out every step (matmul, scale, mask,
softmax, matmul) and returns the weights, so readers can look at them.
:func:`scaled_dot_product_attention` calls it when weights are asked for and otherwise hands the
work to PyTorch's fused :func:`torch.nn.functional.scaled_dot_product_attention`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from attn import _checks, masks

__all__ = ["attend", "explicit_attention", "prepare_mask", "scaled_dot_product_attention"]


def prepare_mask(
    mask: torch.Tensor | None, is_causal: bool, L: int, S: int, batch: tuple[int, ...], dtype, device
) -> torch.Tensor | None:
    """Check ``mask``, fold ``is_causal`` into it, and return a bool or ``dtype`` additive mask.

    ``is_causal`` is the bottom-right aligned triangle ``masks.causal(L, S, offset=S - L)``: the
    ``L`` queries are the last ``L`` of the ``S`` positions. Combined with a boolean mask both must
    allow a pair; an additive mask gets ``-inf`` where the triangle blocks.

    Shape: ``mask`` broadcasts to ``batch + (L, S)``, e.g. ``(B, H, L, S)``; the result too.
    """
    if mask is not None:
        _checks.mask("mask", mask, (*batch, L, S))
        if mask.dim() < 2:  # (S,) or (): broadcasts, but PyTorch's fused kernels index a query dimension
            mask = mask.reshape((1,) * (2 - mask.dim()) + tuple(mask.shape))  # (1, S) or (1, 1)
        if mask.is_floating_point() and mask.dtype != dtype:
            mask = mask.to(dtype)
    if is_causal:
        mask = masks.restrict(mask, masks.causal(L, S, offset=S - L, device=device))
    return mask


def explicit_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    scale: float | None = None,
    dropout_p: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The reference computation, step by step. Inputs are assumed checked (see
    :func:`scaled_dot_product_attention`); ``mask`` is bool (True = may attend) or additive.

    Returns ``(output, weights)`` with shapes ``(..., L, Ev)`` and ``(..., L, S)``.
    """
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    if q.dtype in (torch.float16, torch.bfloat16):
        # Scores of half-precision inputs are formed in float32, as PyTorch's kernels accumulate
        # them: q @ kᵀ overflows float16 (largest value 65504) long before the softmax would mind.
        q, k = q.float(), k.float()
    scores = (q * scale) @ k.transpose(-2, -1)  # (..., L, S): scaling q first keeps products small
    # Masked softmax: blocked pairs get weight 0; a row with no allowed key gives zeros, not NaN.
    weights = masks.masked_softmax(scores, mask).to(v.dtype)  # (..., L, S)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    return weights @ v, weights  # (..., L, Ev), (..., L, S)


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    mask: torch.Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    dropout_p: float = 0.0,
    return_weights: bool = False,
):
    """softmax(q kᵀ · scale + mask) v.

    Args:
        q: queries ``(..., L, E)``.
        k: keys ``(..., S, E)``.
        v: values ``(..., S, Ev)``.
        mask: bool ``(..., L, S)`` with ``True`` where query ``i`` may attend key ``j``, or a
            floating mask added to the scores (``0`` keep, ``-inf`` remove). Broadcasts to
            ``(..., L, S)``.
        is_causal: also block keys after each query, with the triangle aligned to the
            **bottom-right** corner: the ``L`` queries are the last ``L`` of the ``S`` positions,
            so query ``i`` may attend key ``j`` when ``j <= i + S - L`` (``masks.causal(L, S,
            offset=S - L)``). This is the one meaning of ``is_causal`` in ``attn``; it is what a
            query block decoded after ``S - L`` cached keys needs. For ``L == S`` it is the usual
            lower triangle, equal to PyTorch's. For ``L != S`` PyTorch's ``is_causal`` aligns
            top-left (``j <= i``); pass ``mask=masks.causal(L, S)`` for that. With ``L > S``
            the first ``L - S`` queries see no key and get zeros.
        scale: multiplies the scores; default ``1 / sqrt(E)``.
        dropout_p: dropout on the attention weights (pass ``0.0`` at evaluation).
        return_weights: also return the weights; this uses the explicit path.

    Returns:
        output ``(..., L, Ev)``, and with ``return_weights`` also weights ``(..., L, S)``.
        A query whose keys are all masked gets zeros (not NaN), in every floating dtype.

    Raises:
        TypeError: an input that is not a floating tensor, or a mask of the wrong dtype.
        ValueError: shapes that do not fit; the message names the argument and the shapes.
    """
    _checks.qkv(q, k, v)
    return attend(q, k, v, mask=mask, is_causal=is_causal, scale=scale, dropout_p=dropout_p,
                  return_weights=return_weights)


def attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    mask: torch.Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    dropout_p: float = 0.0,
    return_weights: bool = False,
):
    """:func:`scaled_dot_product_attention` without the checks of ``q``, ``k`` and ``v``.

    For callers that made ``q`` ``(..., L, E)``, ``k`` ``(..., S, E)`` and ``v`` ``(..., S, Ev)``
    themselves, such as :class:`attn.MultiHeadAttention`, which checks its own inputs: the same
    computation, arguments and results, minus a few microseconds per call. ``mask`` and
    ``dropout_p`` are still checked.
    """
    _checks.probability("dropout_p", dropout_p)
    L, S = q.shape[-2], k.shape[-2]
    if is_causal and L == 1:
        # One query at the last position (a decoding step): the bottom-right triangle blocks nothing.
        is_causal = False
    if not return_weights and mask is None and (not is_causal or L == S):
        # PyTorch's fused kernels (flash / memory-efficient / math) give the same result without
        # materialising the weights, and with is_causal they skip the blocked half of the work.
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=is_causal, scale=scale)
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    mask = prepare_mask(mask, is_causal, L, S, batch, q.dtype, q.device)
    if (mask is not None or return_weights) and torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]) != batch:
        # v holds part of the batch that q and k lack: PyTorch's kernels add the mask in place to
        # scores of q's and k's smaller batch and raise a RuntimeError, and the weights would lack
        # that batch, which the output has. Expanding q (a view) gives the scores the full batch.
        q = q.expand(*batch, *q.shape[-2:])
    if return_weights:
        return explicit_attention(q, k, v, mask, scale, dropout_p)
    # Fully masked rows come out of PyTorch's kernels as zeros already, with finite gradients (tested).
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, scale=scale)
