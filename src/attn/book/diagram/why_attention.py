"""The idea of "Why attention", drawn: a recurrence's chain of states against attention's one hop.

- :func:`chain_vs_hop`: left, an RNN reads the tokens one after another, so the first token reaches
  the last position through every state in between; right, attention gives the last position a
  direct edge from every token, weighted by similarity. Under each token, the number of hops to
  the last position, from :func:`attn.book.why_attention.hops`.
"""

from __future__ import annotations

import matplotlib.pyplot as plt

from attn.book import why_attention as _chapter
from attn.book.diagram.draw import INPUT, PLAIN, arrow, box, note

__all__ = ["chain_vs_hop"]

_PATH = "#c0392b"  # the path from the first token to the last position
_ATTENTION = "#f4a259"  # the attention colour of the book's figures (encoder self-attention)


def chain_vs_hop(tokens=("the", "cat", "sat", "down"), *, figsize: tuple[float, float] = (10.0, 3.9)):
    """An RNN's chain of ``n`` states next to attention's one hop, for ``n`` tokens.

    Args:
        tokens: the ``n`` token labels (2 to 6 fit).
        figsize: the figure size in inches.

    Returns:
        The matplotlib ``Figure``: two axes, "RNN: one step after another" (tokens ``x1 ... xn``
        feeding states ``h1 ... hn`` in a chain, the path from ``x1`` to ``hn`` in red) and
        "attention: one hop" (every token joined directly to the last output ``zn``). Under each
        token, ``hops`` says how many edges separate it from the last position.
    """
    tokens = [str(t) for t in tokens]
    n = len(tokens)
    if not 2 <= n <= 6:
        raise ValueError(f"tokens: need 2 to 6 labels to fit the figure, got {n}")
    fig, axes = plt.subplots(1, 2, figsize=figsize, constrained_layout=True)
    step = 1.5
    xs = [0.9 + step * j for j in range(n)]
    y_tok, y_out = 0.0, 2.0
    for ax, kind in zip(axes, _chapter.KINDS, strict=True):
        ax.set_xlim(0, xs[-1] + 0.9)
        ax.set_ylim(-1.35, 3.1)
        ax.axis("off")
        counts = _chapter.hops(n, kind)
        for j, (x, tok) in enumerate(zip(xs, tokens, strict=True)):
            box(ax, x, y_tok, f"x{j + 1}  {tok}", INPUT, small=True, w=1.2, h=0.42)
            ax.text(x, y_tok - 0.45, f"{counts[j]} hop{'s' if counts[j] != 1 else ''}", ha="center", va="top",
                    fontsize=7.5, color=_PATH if j == 0 else "#444444", fontweight="bold" if j == 0 else "normal")
        if kind == "rnn":
            ax.set_title("RNN: one step after another", fontsize=9.5)
            for j, x in enumerate(xs):
                last = j == n - 1
                box(ax, x, y_out, f"h{j + 1}", PLAIN, small=True, w=0.8, h=0.42, bold=last,
                    edge=_PATH if last else "#333333")
                arrow(ax, (x, y_tok + 0.23), (x, y_out - 0.23), colour=_PATH if j == 0 else "#333333")
                if j:
                    arrow(ax, (xs[j - 1] + 0.42, y_out), (x - 0.42, y_out), colour=_PATH)
            note(ax, xs[0] - 0.5, y_out + 0.62, f"h{n} waits for h1, ..., h{n - 1}: {n} steps in a row; "
                 f"x1 reaches h{n} in {counts[0]} hops", colour=_PATH)
        else:
            ax.set_title("attention: one hop", fontsize=9.5)
            for i, x in enumerate(xs):
                last = i == n - 1
                box(ax, x, y_out, f"z{i + 1}", PLAIN, small=True, w=0.8, h=0.42, bold=last,
                    edge=_PATH if last else "#333333")
            for j, x in enumerate(xs):
                arrow(ax, (x, y_tok + 0.23), (xs[-1] - 0.1 * (n - 1 - j), y_out - 0.23),
                      colour=_PATH if j == 0 else _ATTENTION)
            note(ax, xs[0] - 0.5, y_out + 0.95, f"z{n} reads every token directly, with weights from similarity;",
                 colour=_PATH)
            note(ax, xs[0] - 0.5, y_out + 0.62, "every output does the same, all at once: 1 step", colour="#444444")
        ax.text(xs[0] - 0.5, -1.15, "hops: edges from the token to the last position", fontsize=7,
                color="#555555", va="center")
    fig.suptitle(f"How token 1 reaches position {n}: a chain of {n} states, or one hop", fontsize=10)
    return fig
