"""The idea figure of "The Transformer architecture": one encoder block with its LayerNorms after
the residual additions (post-LN) beside the same block with them before each sub-layer (pre-LN).

- :func:`pre_post_ln`: the two blocks side by side, bottom to top, in the book's shape legend
  (``B`` batch, ``L`` length, ``D`` width; the feed-forward layer's hidden width is ``F``), with the
  residual paths drawn around each sub-layer.
"""

from __future__ import annotations

import matplotlib.pyplot as plt

from attn import _checks
from attn.book.diagram.draw import ATTENTION_COLOURS, INPUT, PLAIN, W, arrow, box, note

__all__ = ["pre_post_ln"]

_NORM = "#ffe8a3"  # LayerNorm boxes: the one thing that moves between the two panels
_RESIDUAL = "#1f4e79"
_ADD_R = 0.2  # radius of the circle of an addition


def _add(ax, x: float, y: float) -> None:
    from matplotlib.patches import Circle

    ax.add_patch(Circle((x, y), _ADD_R, facecolor=INPUT, edgecolor="#333333", linewidth=1.0))
    ax.text(x, y, "+", ha="center", va="center", fontsize=10, fontweight="bold")


def _skip(ax, x: float, y0: float, y1: float, side: float) -> None:
    """A residual path: from the stream at y0, out to the side, up, and into the addition at y1."""
    xs = x + side
    ax.plot([x, xs, xs], [y0, y0, y1], color=_RESIDUAL, lw=1.4)
    arrow(ax, (xs, y1), (x + (_ADD_R if side > 0 else -_ADD_R), y1), colour=_RESIDUAL)


def pre_post_ln(*, d_model: int = 512, d_ff: int = 2048, figsize: tuple[float, float] = (9.0, 6.4)):
    """Draw a post-LN encoder block beside a pre-LN one: where LayerNorm sits, and the residual paths.

    Args:
        d_model: the width ``D`` written in the figure (the base model's 512 by default).
        d_ff: the feed-forward layer's hidden width ``F`` written in the figure.
        figsize: the figure size in inches.

    Returns:
        The matplotlib ``Figure``: one axes, two panels titled ``post-LN (original Transformer)`` and
        ``pre-LN (GPT-2 and most models since)``. Each reads from ``x (B, L, D)`` at the bottom up
        through self-attention and the feed-forward layer ``D → F → D``, each sub-layer with its
        residual path (blue) into an addition; LayerNorm boxes (yellow) sit after each addition in
        post-LN and before each sub-layer in pre-LN, where a final LayerNorm follows the stack.
    """
    _checks.positive_int("d_model", d_model)
    _checks.positive_int("d_ff", d_ff)
    fig, ax = plt.subplots(figsize=figsize, constrained_layout=True)
    ax.set_xlim(-0.4, 11.6)
    ax.set_ylim(-0.7, 8.6)
    ax.axis("off")
    attention = ("self-attention  (B, L, D)", ATTENTION_COLOURS["encoder self-attention"])
    ffn = (f"feed-forward  D → F → D\nD = {d_model}, F = {d_ff}  (B, L, D)", PLAIN)
    norm = ("LayerNorm  (B, L, D)", _NORM)
    # (kind, label, colour) from the bottom up; "add" is an addition, "skip" where a residual leaves
    post = [("skip",), ("box", *attention), ("add",), ("box", *norm),
            ("skip",), ("box", *ffn), ("add",), ("box", *norm)]
    pre = [("skip",), ("box", *norm), ("box", *attention), ("add",),
           ("skip",), ("box", *norm), ("box", *ffn), ("add",), ("box", "final LayerNorm, once\nafter the "
                                                                      "last block  (B, L, D)", _NORM)]
    panels = [(2.9, "post-LN (original Transformer)", "x ← LN(x + Sublayer(x))", post),
              (8.5, "pre-LN (GPT-2 and most models since)", "x ← x + Sublayer(LN(x))", pre)]
    w = W * 0.95
    for x, title, rule, steps in panels:
        ax.text(x, 8.4, title, ha="center", va="center", fontsize=9.5, fontweight="bold")
        ax.text(x, 8.0, rule, ha="center", va="center", fontsize=8.5, family="monospace")
        box(ax, x, 0.0, "x  (B, L, D): one vector per token", INPUT)
        top, starts, gap = 0.26, [], 0.3  # top: the upper edge of the last thing drawn
        for step in steps:
            if step[0] == "skip":  # the residual leaves the stream just above the last thing drawn
                ax.plot([x, x], [top, top + 0.15], color="#333333", lw=1.0)
                top += 0.15
                starts.append(top)
            elif step[0] == "add":
                y = top + gap + _ADD_R
                arrow(ax, (x, top), (x, y - _ADD_R))
                _add(ax, x, y)
                _skip(ax, x, starts.pop(), y, side=-(w / 2 + 0.25))
                top = y + _ADD_R
            else:
                _, label, colour = step
                h = 0.72 if "\n" in label else 0.5
                y = top + gap + h / 2
                arrow(ax, (x, top), (x, y - h / 2))
                box(ax, x, y, label, colour, w=w, h=h, bold=colour == _NORM)
                top = y + h / 2
        arrow(ax, (x, top), (x, top + 0.45))
        ax.text(x, top + 0.6, "to the next block" if steps is post else "to the output layer",
                ha="center", va="bottom", fontsize=7.5)
    note(ax, 5.7, 4.3, "residual\npaths", ha="center", colour=_RESIDUAL)
    note(ax, 0.0, -0.55, "Post-LN: every residual sum passes through a LayerNorm on its way up.", colour="#333333")
    note(ax, 5.8, -0.55, "Pre-LN: the sums x + ... are never normalised;\nonly each branch's input is.",
         colour="#333333")
    ax.set_title("Where LayerNorm sits in a Transformer block: after the residual addition, or before the sub-layer",
                 fontsize=10)
    return fig
