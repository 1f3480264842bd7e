"""Figures of "Positional encodings": where a position enters a Transformer.

- :func:`where_positions`: the three places, side by side. Added to ``x`` once, before the layers
  (the sinusoidal code or a row of a learned table ``W_P``); rotating ``q`` and ``k`` in every layer
  (RoPE, a 2-D pair turned by ``position * theta``, so that ``q_i . k_j`` depends on ``i - j``
  only); and a bias per offset added to the scores ``Q K^T / sqrt(E)`` (ALiBi, T5). The numbers it
  draws (a sinusoidal code, the rotated vectors and their scores, ALiBi's biases) are computed by
  :mod:`attn.positional`.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import Circle, FancyArrowPatch

from attn import _checks
from attn import positional as _positional
from attn.book import viz as _viz  # noqa: F401 (in a notebook, importing it sets the book's figure format)
from attn.book.diagram.draw import PLAIN, arrow, box, grid, note, tokens

__all__ = ["where_positions"]

_INPUT_COLOUR = "#bde0fe"  # the position code added to x
_QK_COLOUR = "#ffc8dd"  # the rotation of q and k
_SCORE_COLOUR = "#fde2b8"  # the scores and their bias
_Q, _K = "#1d3557", "#c1121f"  # the query and key arrows


def _rotated(vec: tuple[float, float], pos: int) -> tuple[float, float]:
    """A 2-D vector turned by RoPE to position ``pos`` (``E = 2``: one pair, ``theta = 1`` radian)."""
    x = torch.tensor([vec], dtype=torch.float64)  # (1, 2): one token
    out = _positional.RotaryPositionalEncoding(2).rotate(x, offset=pos)[0]
    return float(out[0]), float(out[1])


def where_positions(*, tokens_shown: list[str] | tuple[str, ...] = ("the", "cat", "sat"),
                    pairs: tuple[tuple[int, int], ...] = ((2, 1), (5, 4)), num_heads: int = 4,
                    figsize: tuple[float, float] = (11.0, 4.8)):
    """Draw the three places a position enters a Transformer, with numbers from :mod:`attn.positional`.

    Args:
        tokens_shown: the tokens of the sequence (``L`` of them, at positions ``0 .. L - 1``); the
            first panel shows the code added at the last position, the third the ``(L, L)`` bias.
        pairs: one or two ``(i, j)`` query and key positions, a unit circle each in the RoPE panel; the query
            ``q = (1, 0)`` and the key ``k = (1, 0)`` are turned by ``i`` and ``j`` radians
            (``E = 2``, so ``theta = 1``), and the score ``q_i . k_j`` is written under the circle.
        num_heads: ``H`` of the ALiBi encoding whose first head (the steepest slope) is drawn.
        figsize: the figure size in inches.

    Returns:
        The matplotlib ``Figure``: three panels titled ``1. added to x``, ``2. rotating q and k``
        and ``3. biasing the scores``. The RoPE arrows carry the gids ``rope-q-<i>`` and
        ``rope-k-<j>``.
    """
    tokens_shown = list(tokens_shown)
    if not tokens_shown:
        raise ValueError("tokens_shown needs at least one token, got none")
    pairs = tuple(tuple(p) for p in pairs)
    if not 1 <= len(pairs) <= 2 or any(len(p) != 2 for p in pairs):
        raise ValueError(f"pairs must be one or two (i, j) position pairs, got {pairs}")
    for i, j in pairs:
        _checks.non_negative_int("pairs", i, " (a query position)")
        _checks.non_negative_int("pairs", j, " (a key position)")
    _checks.positive_int("num_heads", num_heads)
    L = len(tokens_shown)
    fig, ax = plt.subplots(figsize=figsize, constrained_layout=True)
    ax.axis("off")
    top = 4.35  # the panels' titles

    # 1. added to x, once, before the layers
    x1 = 1.9
    ax.text(x1, top, "1. added to x, once\n(sinusoidal, or a learned table W_P)", ha="center", va="center",
            fontsize=8.5, fontweight="bold")
    tokens(ax, x1, 0.35, tokens_shown, width=2.8)
    box(ax, x1, 1.2, "token embeddings  X  (L, D)\none row of W_E per token", PLAIN, w=3.0, h=0.6)
    box(ax, x1, 2.25, "X + positions  (L, D)\nrow i gets the code of position i", _INPUT_COLOUR, w=3.0, h=0.6,
        bold=True)
    box(ax, x1, 3.35, "attention layers\n(positions are already inside X)", PLAIN, w=3.0, h=0.6)
    arrow(ax, (x1, 0.57), (x1, 0.9))
    arrow(ax, (x1 - 1.2, 1.5), (x1 - 1.2, 1.95))
    arrow(ax, (x1, 2.55), (x1, 3.05))
    last = L - 1
    code = _positional.sinusoidal_table(L, 4)[last].tolist()  # d = 4, the last token's position
    note(ax, x1 + 0.25, 1.73, f"+ sinusoidal code, d = 4, position {last}:\n[" + ", ".join(f"{v:.2f}" for v in code) + "]",
         ha="center")

    # 2. rotating q and k, in every layer (RoPE)
    ax.text(5.95, top, "2. rotating q and k, every layer (RoPE)\nturn by position × θ (θ = 1 rad here)",
            ha="center", va="center", fontsize=8.5, fontweight="bold")
    r = 0.78
    q0, k0 = (1.0, 0.0), (1.0, 0.0)
    n = len(pairs)
    span = 3.9
    for c, (i, j) in enumerate(pairs):
        cx, cy = 4.0 + span * (c + 0.5) / n, 2.35
        ax.add_patch(Circle((cx, cy), r, facecolor=_QK_COLOUR, edgecolor="#999999", linewidth=0.8, alpha=0.5))
        ax.plot([cx - r, cx + r], [cy, cy], color="#bbbbbb", linewidth=0.6)
        qi, kj = _rotated(q0, i), _rotated(k0, j)
        for vec, colour, gid, label in ((qi, _Q, f"rope-q-{i}", f"q at i = {i}"), (kj, _K, f"rope-k-{j}",
                                                                                    f"k at j = {j}")):
            end = (cx + r * vec[0], cy + r * vec[1])
            ax.add_patch(FancyArrowPatch((cx, cy), end, arrowstyle="-|>", mutation_scale=9, color=colour,
                                         linewidth=1.6, gid=gid))
            ax.text(cx + 1.22 * r * vec[0], cy + 1.22 * r * vec[1], label, ha="center", va="center",
                    fontsize=7, color=colour)
        score = qi[0] * kj[0] + qi[1] * kj[1]
        ax.text(cx, cy - r - 0.3, f"angle between: (i - j) θ = {i - j} rad\nq_{i} · k_{j} = {score:.2f}",
                ha="center", va="top", fontsize=7.2)
    ax.text(5.95, 0.2, "q = k = (1, 0) before turning. Same offset i - j,\nsame angle between them, same score.",
            ha="center", va="center", fontsize=7, color="#333333")

    # 3. biasing the scores, in every layer (ALiBi, T5)
    x3 = 8.55
    ax.text(10.0, top, "3. biasing the scores, every layer\na number per offset i - j (ALiBi, T5)", ha="center",
            va="center", fontsize=8.5, fontweight="bold")
    alibi = _positional.ALiBi(num_heads)
    bias = alibi.score_bias(torch.zeros(1, num_heads, L, 2), 0, L)[0, 0]  # (L, S), the first head
    slope = float(alibi.slopes[0])
    cell = min(0.55, 1.65 / L)
    grid_top = 3.45
    low = float(bias.min()) if L > 1 else -1.0
    shades = [[_SCORE_COLOUR if b == 0 else plt.cm.Oranges(0.25 + 0.5 * float(b) / low) for b in row]
              for row in bias.tolist()]
    grid(ax, x3 + 0.45, grid_top, L, L, shades, cell=cell,
         texts=[["0" if b == 0 else f"{b:.2f}" for b in row] for row in bias.tolist()], fontsize=6.8)
    for t, tok in enumerate(tokens_shown):
        ax.text(x3 + 0.4, grid_top - (t + 0.5) * cell, tok, ha="right", va="center", fontsize=7,
                family="monospace")
        ax.text(x3 + 0.45 + (t + 0.5) * cell, grid_top + 0.05, tok, ha="center", va="bottom", fontsize=7,
                family="monospace")
    gx = x3 + 0.45 + L * cell
    ax.text(gx + 0.15, grid_top - L * cell / 2, f"bias b, (L, S)\nb_ij = -m |i - j|\nALiBi head 1:\nm = {slope:g}",
            ha="left", va="center", fontsize=7)
    ax.text(10.0, grid_top - L * cell - 0.35, "softmax(Q K^T / √E + b) V", ha="center", va="center", fontsize=8,
            bbox={"boxstyle": "round,pad=0.25", "facecolor": _SCORE_COLOUR, "edgecolor": "#333333"})
    ax.text(10.0, 0.55, "ALiBi: fixed slopes m, one per head.\nT5: a learned number per head\n"
            "and bucket of offsets.", ha="center", va="center", fontsize=7, color="#333333")

    for x in (3.75, 8.1):  # panel separators
        ax.plot([x, x], [0.0, 4.6], color="#cccccc", linewidth=0.8, linestyle="--")
    ax.set_xlim(-0.05, 12.0)
    ax.set_ylim(-0.1, 4.75)
    ax.set_aspect("equal")
    ax.set_title("Where a position enters a Transformer: three places", fontsize=9.5)
    return fig

