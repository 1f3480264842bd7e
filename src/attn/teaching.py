"""The book's worked example: small enough to check with a pencil, shared by the chapters.

Three tokens with 4-dimensional embeddings and projection matrices of small integers, so that
``Q = X W_Q``, ``K = X W_K``, ``V = X W_V`` and the scores ``Q K^T`` are whole numbers, and with
``d_k = 4`` the scale ``1 / sqrt(d_k)`` is a half. The self-attention chapter computes it by hand;
multi-head splits it into two heads of width 2; the causal chapter masks it; cross-attention uses
its three tokens as the memory.

Below it, the measurements behind the tables of the cross-attention chapter (how well learned
cross-attention agrees with a date's true alignment) and the positional-encodings chapter (offset
matrices, score spreads along diagonals, T5's exact buckets, accuracy per position).
"""

from __future__ import annotations

import torch

__all__ = ["DATE_DIGITS", "DATE_FIELDS", "alignment_scores", "correct_per_position", "date_field_mass",
           "diagonal_spread", "offset_matrix", "own_buckets", "token_loss", "worked_example",
           "year_digit_breakdown"]


def worked_example() -> dict:
    """The example: ``tokens`` (3 words), ``X`` ``(3, 4)`` and ``W_Q``, ``W_K``, ``W_V`` ``(4, 4)``,
    float32 tensors (fresh copies on every call, so a chapter may change them)."""
    t = lambda rows: torch.tensor(rows, dtype=torch.float32)  # noqa: E731
    return {
        "tokens": ["the", "cat", "sat"],
        "X": t([[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]),
        "W_Q": t([[1, 0, 0, 1], [0, 1, 1, 0], [1, 0, 1, 0], [0, 1, 0, 0]]),
        "W_K": t([[0, 1, 1, 0], [1, 0, 0, 1], [0, 0, 1, 1], [1, 1, 0, 0]]),
        "W_V": t([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 2, 0], [0, 0, 0, 2]]),
    }


# --- moved from the cross / positional chapters
# Measurements the cross-attention and positional-encodings chapters report: the harness behind
# their tables, here so that the chapters show the idea and the result, and tests check the harness.

#: Target positions of the digits of an ISO date ``YYYY-MM-DD``, per field (hyphens have no source).
DATE_FIELDS = {"year": [0, 1, 2, 3], "month": [5, 6], "day": [8, 9]}
DATE_DIGITS = [t for ts in DATE_FIELDS.values() for t in ts]


def alignment_scores(w: torch.Tensor, pairs: list[tuple[str, str]], task) -> dict:
    """How well cross-attention weights agree with a :class:`attn.data.DateTask`'s true alignment.

    Args:
        w: ``(B, K, L, S)`` weights of ``K`` distributions per target row (heads, or their mean)
            for the ``B`` (source, target) ``pairs``, ``L >= 10`` written characters.
        pairs: the (source, target) dates the weights were recorded on.
        task: the :class:`attn.data.DateTask` (its ``alignment`` is the truth).

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


def offset_matrix(k: int, d: int, base: float = 10000.0) -> torch.Tensor:
    """``M_k``, ``(d, d)`` float64, block-diagonal: ``PE[pos + k] = M_k @ PE[pos]``
    for every position of the sinusoidal table (``d`` even), one 2x2 rotation by
    ``omega_i k`` per pair."""
    if d < 2 or d % 2:
        raise ValueError(f"d must be a positive even number (sin/cos pairs), got d={d}")
    omega = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
    c, s = torch.cos(omega * k), torch.sin(omega * k)
    blocks = [torch.tensor([[ci, si], [-si, ci]], dtype=torch.float64)
              for ci, si in zip(c.tolist(), s.tolist(), strict=True)]
    return torch.block_diag(*blocks)  # (d, d)


def diagonal_spread(s: torch.Tensor) -> float:
    """Largest ``max - min`` along a diagonal ``n - m = r`` of scores ``s`` ``(L, S)``: 0 when the
    score depends on the positions only through their offset."""
    diagonals = [s.diagonal(r) for r in range(-s.shape[0] + 1, s.shape[1])]
    return max((d.max() - d.min()).item() for d in diagonals)


def own_buckets(buckets: torch.Tensor) -> int:
    """How many distances ``0, 1, 2, ...`` in a row have a bucket no other distance shares, given
    the buckets ``(n,)`` of distances ``0 .. n - 1`` in order."""
    b = buckets.tolist()
    count = 0
    while count < len(b) and b.count(b[count]) == 1:
        count += 1
    return count


def token_loss(model, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Mean cross-entropy of a token model on ``batch = (tokens, targets)``, both ``(B, L)``;
    targets ``-100`` (``attn.data.IGNORE``) carry no target. The ``loss_fn`` for
    :func:`attn.train.train`."""
    import torch.nn.functional as F

    tokens, targets = batch[0], batch[1]
    logits = model(tokens)  # (B, L, V)
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-100)


def correct_per_position(model, tokens: torch.Tensor, targets: torch.Tensor,
                         mask: torch.Tensor | None = None) -> torch.Tensor:
    """How many of the sequences ``tokens`` ``(B, L)`` the model gets right at each position,
    ``(L,)`` long; positions whose target is ``-100`` never count. ``mask`` goes to the model."""
    with torch.no_grad():
        pred = model(tokens, mask=mask).argmax(-1)  # (B, L)
    return ((pred == targets) & (targets != -100)).sum(0)  # (L,)
