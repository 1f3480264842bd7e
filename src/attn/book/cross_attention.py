"""What "Cross-attention" measures: how well learned cross-attention agrees with a date's true
alignment (:class:`attn.book.data.DateTask`), what it gives when its soft weights are hardened to
one-hot rows at inference (:func:`cross_attention_output`, :class:`hard_cross_attention`), and the
floating-point cost of a decoder step with and without the cross-attention cache.

"Why attention" uses :func:`alignment_scores` on its RNN's additive attention too.
Tests: tests/test_cross_chapter.py.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from attn import _checks, masks
from attn.attention import MultiHeadAttention

__all__ = ["DATE_DIGITS", "DATE_FIELDS", "alignment_scores", "cross_attention_output", "date_field_mass",
           "decoder_step_flops", "hard_cross_attention", "year_digit_breakdown"]


#: Target positions of the digits of an ISO date ``YYYY-MM-DD``, per field (hyphens have no source).
DATE_FIELDS = {"year": [0, 1, 2, 3], "month": [5, 6], "day": [8, 9]}


DATE_DIGITS = [t for ts in DATE_FIELDS.values() for t in ts]


def alignment_scores(w: torch.Tensor, pairs: list[tuple[str, str]], task) -> dict:
    """How well cross-attention weights agree with a :class:`attn.book.data.DateTask`'s true alignment.

    Args:
        w: ``(B, K, L, S)`` weights of ``K`` distributions per target row (heads, or their mean)
            for the ``B`` (source, target) ``pairs``, ``L >= 10`` written characters.
        pairs: the (source, target) dates the weights were recorded on.
        task: the :class:`attn.book.data.DateTask` (its ``alignment`` is the truth).

    Returns:
        ``{"mass": {field: (K,)}, "hits": (K,), "uniform": {field: float}}``: for the fields
        ``year``, ``month``, ``day`` and ``all digits``, the mean attention mass a digit puts on
        its true source characters (over the real source characters only); the fraction of
        digits whose most attended character is a true one; and the mass a uniform row over the
        real source characters would put there.
    """
    if w.dim() != 4 or w.shape[0] != len(pairs):
        raise ValueError(f"w must be (B, K, L, S) with B = len(pairs) = {len(pairs)}, got {tuple(w.shape)}")
    K = w.shape[1]
    groups = [*DATE_FIELDS.items(), ("all digits", DATE_DIGITS)]
    mass = {f: torch.zeros(K) for f, _ in groups}
    uniform = dict.fromkeys(mass, 0.0)
    hits = torch.zeros(K)
    for b, (src, tgt) in enumerate(pairs):
        truth = task.alignment(src, tgt)  # (10, S_b)
        wb = w[b, :, :10, : len(src)]  # (K, 10, S_b): real source keys only
        for f, ts in groups:
            mass[f] += (wb[:, ts] * truth[ts]).sum((-1, -2)) / len(ts)
            uniform[f] += (truth[ts].sum(-1) / len(src)).mean().item()
        top = wb[:, DATE_DIGITS].argmax(-1)  # (K, 8)
        hits += truth[DATE_DIGITS].gather(1, top.T).T.mean(-1)
    n = len(pairs)
    return {"mass": {f: m / n for f, m in mass.items()}, "hits": hits / n,
            "uniform": {f: u / n for f, u in uniform.items()}}


def date_field_mass(w: torch.Tensor, pairs: list[tuple[str, str]]) -> float:
    """Mean mass a date digit puts on the whole *field* it comes from (all four year digits, the
    whole month name, the whole day), ``w`` ``(B, L, S)`` one distribution per row (e.g. the mean
    of the heads) on sources ``"day month year"``."""
    total = 0.0
    for b, (src, _) in enumerate(pairs):
        day, month, _ = src.split(" ")
        spans = {"year": range(len(day) + len(month) + 2, len(src)),
                 "month": range(len(day) + 1, len(day) + 1 + len(month)), "day": range(len(day))}
        total += sum(float(w[b, t, list(spans[f])].sum()) for f, ts in DATE_FIELDS.items() for t in ts)
    return total / len(pairs) / len(DATE_DIGITS)


def year_digit_breakdown(w: torch.Tensor, pairs: list[tuple[str, str]]) -> tuple[float, float, float]:
    """Where a year digit's attention goes, ``w`` ``(B, L, S)``: the mean mass on its own source
    digit, on the three other year digits, and on the space before the year."""
    own = other = space = 0.0
    for b, (src, _) in enumerate(pairs):
        y0 = len(src) - 4  # first year digit in the source
        for t in range(4):
            own += float(w[b, t, y0 + t])
            other += float(w[b, t, y0 : y0 + 4].sum() - w[b, t, y0 + t])
            space += float(w[b, t, y0 - 1])
    n = 4 * len(pairs)
    return own / n, other / n, space / n


def decoder_step_flops(B: int, S: int, D: int, t: int, *, reproject: bool) -> int:
    """Floating-point operations (a multiply-add counts 2) of one decoder layer
    (d_ff = 4D) for one new token of each of ``B`` sequences, with ``t`` earlier tokens
    in the self-attention cache and a memory of ``S`` positions. ``reproject=True`` adds
    computing the memory's keys and values again (``K = M W_K``, ``V = M W_V``, each
    ``(B, S, D)``), which a static cross-attention cache saves. Matrix products only, as
    :func:`attn.measure.flops` counts them."""
    for name, value in (("B", B), ("S", S), ("D", D)):
        _checks.positive_int(name, value)
    _checks.non_negative_int("t", t, " (earlier tokens in the cache)")
    flops = 2 * B * 4 * D * D  # self-attention: W_Q, W_K, W_V and W_O for the new token
    flops += 2 * B * 2 * (t + 1) * D  # its scores and weighted sum over t + 1 keys
    flops += 2 * B * 2 * D * D  # cross-attention: W_Q and W_O for the new token
    flops += 2 * B * 2 * S * D  # cross-attention scores and weighted sum over S keys
    flops += 2 * B * 2 * D * 4 * D  # feed-forward D -> 4D -> D
    if reproject:
        flops += 2 * B * 2 * S * D * D  # K = M W_K and V = M W_V, again
    return flops


def cross_attention_output(module: MultiHeadAttention, query: torch.Tensor, memory: torch.Tensor,
                           key_mask: torch.Tensor | None = None, *, hard: bool = False
                           ) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-attention recomputed from ``module``'s public weights, soft or hardened.

    With ``hard=False`` this is what ``module(query, memory, key_mask=key_mask)`` computes. With
    ``hard=True`` every row of weights is replaced by a one-hot at its argmax (the most attended
    real source position takes all the weight), and the output is that single value row, mixed
    by ``out_proj``. Hardening a model trained with soft weights at inference is not training with
    hard attention.

    Args:
        module: the cross-attention (no ``positional``).
        query: ``(B, L, D)`` decoder states; memory: ``(B, S, D)``.
        key_mask: ``(B, S)`` bool, ``True`` = real source position, or ``None``.
        hard: one-hot rows at the argmax instead of the softmax.

    Returns:
        output ``(B, L, D)`` and the weights used ``(B, H, L, S)``.
    """
    if not isinstance(module, MultiHeadAttention) or module.positional is not None:
        raise TypeError(f"module must be an attn.MultiHeadAttention without positional, got {type(module).__name__}")
    for name, x in (("query", query), ("memory", memory)):
        _checks.tensor(name, x, min_dim=3)
        if x.dim() != 3:
            raise ValueError(f"{name} must have shape (B, N, D), got {_checks.fmt(x.shape)}")
        _checks.last_dim(name, x, module.d_model, "d_model")
    B, L, D = query.shape
    S, H, E = memory.shape[1], module.num_heads, module.d_head
    if memory.shape[0] != B:
        raise ValueError(f"query {_checks.fmt(query.shape)} and memory {_checks.fmt(memory.shape)} must share B")
    W, b = module.in_proj.weight, module.in_proj.bias
    bq, bk, bv = (None, None, None) if b is None else b.split(D)
    q = F.linear(query, W[:D], bq).view(B, L, H, E).transpose(1, 2)  # (B, H, L, E)
    k = F.linear(memory, W[D : 2 * D], bk).view(B, S, H, E).transpose(1, 2)  # (B, H, S, E)
    v = F.linear(memory, W[2 * D :], bv).view(B, S, H, E).transpose(1, 2)  # (B, H, S, E)
    scores = q @ k.transpose(-2, -1) / math.sqrt(E)  # (B, H, L, S)
    if key_mask is not None:
        if key_mask.dtype != torch.bool or key_mask.shape != (B, S):
            raise ValueError(f"key_mask must be bool (B, S) = {_checks.fmt((B, S))}, got "
                             f"{key_mask.dtype} {_checks.fmt(key_mask.shape)}")
        scores = scores.masked_fill(~key_mask[:, None, None, :], float("-inf"))
    # (B, H, L, S). Hard: one 1 per row, at the argmax of the scores (the softmax keeps their order).
    w = F.one_hot(scores.argmax(-1), S).to(v.dtype) if hard else masks.masked_softmax(scores)
    z = (w @ v).transpose(1, 2).reshape(B, L, D)  # (B, L, D): heads side by side
    return module.out_proj(z), w


class hard_cross_attention:
    """Context manager: inside it, every cross-attention of ``model`` (the modules whose name ends in
    ``cross_attn``, as in :class:`attn.models.Seq2Seq`) puts all of each row's weight on its argmax
    (:func:`cross_attention_output` with ``hard=True``), with forward hooks removed on exit.

    >>> with hard_cross_attention(model):
    ...     tokens = model.generate(src, 11, src_key_mask=key_mask, start_id=1)
    """

    def __init__(self, model: nn.Module):
        self.modules = [m for name, m in model.named_modules()
                        if name.endswith("cross_attn") and isinstance(m, MultiHeadAttention)]
        if not self.modules:
            raise ValueError(f"model has no MultiHeadAttention named '...cross_attn' ({type(model).__name__})")
        self.handles: list = []

    @staticmethod
    def _hook(module, args, kwargs, output):
        query, memory = args[0], (args[1] if len(args) > 1 else kwargs["key"])
        if kwargs.get("mask") is not None:
            raise ValueError("hard_cross_attention handles key_mask only; this call passed mask")
        out, w = cross_attention_output(module, query, memory, kwargs.get("key_mask"), hard=True)
        if output[1] is None:
            return out, None
        return out, (w.mean(1) if kwargs.get("average_weights", True) else w)

    def __enter__(self) -> hard_cross_attention:
        self.handles = [m.register_forward_hook(self._hook, with_kwargs=True) for m in self.modules]
        return self

    def __exit__(self, *exc) -> None:
        for h in self.handles:
            h.remove()
        self.handles = []
