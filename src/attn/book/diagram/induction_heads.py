"""Figures of "Induction heads": the two-layer circuit that copies a repeated sequence.

- :func:`induction_circuit`: a short sequence whose last token occurred before ("q x m q"). In
  layer 1 a previous-token head moves each token's identity one position to the right, so the
  position of ``x`` now also holds "preceded by q". In layer 2 the induction head's query at the
  last ``q`` asks for "preceded by q", matches that key, attends to ``x`` and copies it: the
  prediction for the next token is ``x``. The key that layer 2 matches was written by layer 1
  (K-composition).
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt

from attn.book import viz as _viz  # noqa: F401 (in a notebook, importing it sets the book's figure format)
from attn.book.diagram.draw import INPUT, PLAIN, arrow, box, note

__all__ = ["INDUCTION", "PREVIOUS", "induction_circuit", "induction_target"]

PREVIOUS = "#f4a259"  # the previous-token head (layer 1)
INDUCTION = "#e76f51"  # the induction head (layer 2)
_FAINT = "#c8c8c8"


def induction_target(tokens: Sequence[str]) -> tuple[int, int]:
    """Where an induction head looks: ``(earlier, attended)`` for the last token of ``tokens``.

    ``earlier`` is the position of the most recent earlier occurrence of the last token, and
    ``attended = earlier + 1`` the position after it, whose token the head copies.

    Raises:
        ValueError: if ``tokens`` has fewer than 3 or more than 10 entries, or its last token does not
            occur earlier with a token after that occurrence.
    """
    tokens = [str(t) for t in tokens]
    if not 3 <= len(tokens) <= 10:
        raise ValueError(f"tokens: need 3 to 10 tokens to fit the figure, got {len(tokens)}")
    last = len(tokens) - 1
    earlier = [j for j in range(last - 1) if tokens[j] == tokens[last]]  # j + 1 < last: a token follows
    if not earlier:
        raise ValueError(f"tokens: the last token {tokens[last]!r} must occur earlier, before the one but "
                         f"last position, so that a token follows it; got {tokens}")
    return earlier[-1], earlier[-1] + 1


def induction_circuit(tokens: Sequence[str] = ("q", "x", "m", "q"), *, figsize: tuple[float, float] | None = None):
    """Draw the induction circuit on ``tokens``, whose last token ``A`` occurred before, followed by ``B``.

    Args:
        tokens: the sequence, 3 to 10 tokens, its last token repeating an earlier one (the most recent
            earlier occurrence is used).
        figsize: the figure size in inches; default: sized to the sequence.

    Returns:
        The matplotlib ``Figure`` (one axes, no ticks), bottom to top: the tokens with their positions;
        layer 1's previous-token head, an arrow from every position to the one before it, the one into
        ``B``'s position bold, and ``B``'s position labelled "B, preceded by A"; layer 2's induction
        head, its query at the last position ("A") matched to that key and attending to ``B``; the
        prediction ``B`` above the last position. The attention arrows carry the gids
        ``previous-<i>`` (from query ``i`` to key ``i - 1``) and ``induction-<i>-<j>``.

    Raises:
        ValueError: as :func:`induction_target`.
    """
    tokens = [str(t) for t in tokens]
    earlier, target = induction_target(tokens)
    n, last = len(tokens), len(tokens) - 1
    a, b = tokens[last], tokens[target]
    step = 1.9
    xs = [2.6 + step * j for j in range(n)]
    x_notes = xs[-1] + 1.1  # the notes, right of the last position
    width = x_notes + 3.4
    if figsize is None:
        figsize = (0.78 * width, 5.2)
    fig, ax = plt.subplots(figsize=figsize, constrained_layout=True)
    ax.set_xlim(-0.2, width)
    ax.set_ylim(-1.3, 6.0)
    ax.axis("off")
    y_tok, y_l1, y_l2, y_out = 0.0, 2.0, 3.9, 5.4

    # the residual stream of each position: what the layers read from and write into
    for x in xs:
        ax.plot([x, x], [y_tok + 0.25, y_out - 0.3], color="#e3e3e3", lw=3, zorder=0)
    for j, (x, t) in enumerate(zip(xs, tokens, strict=True)):
        box(ax, x, y_tok, t, INPUT, w=0.8, h=0.45, bold=j in (earlier, target, last), fontsize=9)
        ax.text(x, y_tok - 0.45, f"{j}", ha="center", va="top", fontsize=7, color="#555555")
    ax.text(0.0, y_tok, "tokens", fontsize=8, va="center", fontweight="bold")
    ax.text(0.0, y_tok - 0.55, "position", fontsize=7, va="center", color="#555555")

    # layer 1: every position attends to the one before it and copies that token's identity
    ax.text(0.0, y_l1, "layer 1\nprevious-token\nhead", fontsize=8, va="center", fontweight="bold",
            color="#9c4a00")
    for i in range(1, n):
        on = i == target
        arrow(ax, (xs[i - 1] + 0.1, y_tok + 0.3), (xs[i] - 0.1, y_l1 - 0.3), colour=PREVIOUS if on else _FAINT,
              rad=-0.15)
        ax.patches[-1].set_gid(f"previous-{i}")
        ax.patches[-1].set_linewidth(2.2 if on else 0.9)
    box(ax, xs[target], y_l1, f"{b}\npreceded by {a}", PREVIOUS, w=1.7, h=0.62, bold=True, fontsize=7.5)
    note(ax, x_notes, y_l1, f"each position attends to the one\nbefore it: layer 1 writes\n"
         f"\"preceded by {a}\" into the position of {b}")

    # layer 2: the query at the last A asks for "preceded by A", finds B's position and copies B
    ax.text(0.0, y_l2, "layer 2\ninduction\nhead", fontsize=8, va="center", fontweight="bold", color="#9c2f2f")
    box(ax, xs[last], y_l2, f"query: {a}\nwho followed {a}?", INDUCTION, w=1.7, h=0.62, bold=True, fontsize=7.5)
    arrow(ax, (xs[last], y_tok + 0.25), (xs[last], y_l2 - 0.32), colour="#333333")
    arrow(ax, (xs[last] - 0.87, y_l2), (xs[target] + 0.2, y_l1 + 0.33), colour=INDUCTION, rad=0.25)
    ax.patches[-1].set_gid(f"induction-{last}-{target}")
    ax.patches[-1].set_linewidth(2.2)
    note(ax, x_notes, y_l2, f"the key at {b} holds \"preceded by {a}\",\nwhich matches the query {a}:\n"
         f"attend to {b}, copy {b}", colour="#9c2f2f")

    # the prediction
    box(ax, xs[last], y_out, f"next: {b}", PLAIN, w=1.2, h=0.45, bold=True, fontsize=8.5)
    arrow(ax, (xs[last], y_l2 + 0.32), (xs[last], y_out - 0.24))
    ax.text(0.0, y_out, "prediction", fontsize=8, va="center", fontweight="bold")
    ax.text(0.0, -0.95, f"K-composition: layer 2's key at position {target} is built from what layer 1 wrote "
            "there.\nOne layer cannot do this: there a key holds only its own token and position.",
            fontsize=7, va="center", color="#333333")
    ax.set_title(f"The induction circuit: seeing {a} again, predict what followed it last time", fontsize=9.5)
    return fig
