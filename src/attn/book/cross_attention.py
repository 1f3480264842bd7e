"""What "Cross-attention" measures: how well learned cross-attention agrees with a date's true
alignment (:class:`attn.book.data.DateTask`), and the floating-point cost of a decoder step with and
without the cross-attention cache.

"Why attention" uses :func:`alignment_scores` on its RNN's additive attention too.
Tests: tests/test_cross_chapter.py.
"""

from __future__ import annotations

import torch

from attn import _checks

__all__ = ["DATE_DIGITS", "DATE_FIELDS", "alignment_scores", "date_field_mass", "decoder_step_flops",
           "year_digit_breakdown"]


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
