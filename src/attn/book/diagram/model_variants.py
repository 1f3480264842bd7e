"""The idea figure of "Model variants": who may attend to whom in BERT, GPT and T5, on the book's
worked example.

- :func:`attention_patterns`: the boolean masks of the three families side by side, computed by
  :mod:`attn.masks` (``True`` = may attend), one grid per attention: BERT's bidirectional encoder,
  GPT's causal decoder, and T5's three (bidirectional encoder, causal decoder, cross-attention).
"""

from __future__ import annotations

import matplotlib.pyplot as plt

from attn import masks
from attn.book.diagram.draw import ATTENTION_COLOURS, grid, note

__all__ = ["attention_patterns", "patterns"]

_BLOCKED = "#ffffff"


def patterns(source: list[str] | tuple[str, ...], target: list[str] | tuple[str, ...]) -> dict:
    """The masks the figure draws, from :mod:`attn.masks`: ``{name: (mask, query labels, key labels,
    kind)}``, with ``kind`` a key of ``ATTENTION_COLOURS``. ``S = len(source)``, ``L = len(target)``.

    BERT's encoder and T5's read the ``source`` tokens (``S`` of them); GPT, a decoder, reads the same
    tokens as its sequence (``L = S``), and T5's decoder the ``target``, so its cross-attention mask
    is ``(L, S)``.
    """
    source, target = [str(t) for t in source], [str(t) for t in target]
    for name, toks in (("source", source), ("target", target)):
        if not 1 <= len(toks) <= 6:
            raise ValueError(f"{name}: need 1 to 6 tokens to fit the figure, got {len(toks)}")
    S, L = len(source), len(target)
    every = masks.padding([S], S, L=S)[0]  # (S, S): no padding, so every key is allowed
    return {
        "BERT: encoder self-attention (S, S)": (every, source, source, "encoder self-attention"),
        "GPT: causal self-attention (L, L)": (masks.causal(S), source, source, "masked self-attention"),
        "T5 encoder: encoder self-attention (S, S)": (every, source, source, "encoder self-attention"),
        "T5 decoder: decoder causal self-attention (L, L)": (masks.causal(L), target, target, "masked self-attention"),
        "T5 decoder: cross-attention (L, S)": (masks.cross_padding([S], L, S)[0], target, source,
                                              "cross-attention"),
    }


def attention_patterns(source=("the", "cat", "sat"), target=("<s>", "le", "chat"), *,
                       figsize: tuple[float, float] = (10.0, 3.6)):
    """Draw the attention patterns of BERT, GPT and T5 side by side: ``1`` = may attend, ``0`` = blocked.

    Args:
        source: the input tokens (``S``, 1 to 6): what BERT and GPT read, and T5's encoder.
        target: T5's decoder input, shifted right (1 to 6 tokens, starting with ``<s>``).
        figsize: the figure size in inches.

    Returns:
        The matplotlib ``Figure``: one axes with five grids, rows = queries, columns = keys, each
        cell ``1`` (coloured by the kind of attention) or ``0`` (white), the masks that
        :func:`patterns` takes from :mod:`attn.masks`. Groups: ``BERT (encoder-only)``, ``GPT
        (decoder-only)`` and ``T5 (encoder-decoder)``.
    """
    drawn = patterns(source, target)
    S, L = len(drawn["BERT: encoder self-attention (S, S)"][1]), len(target)
    fig, ax = plt.subplots(figsize=figsize, constrained_layout=True)
    ax.axis("off")
    c = 0.42
    top = max(S, L) * c + 0.9
    x = 0.0
    groups = {"BERT": "BERT (encoder-only)", "GPT": "GPT (decoder-only)", "T5": "T5 (encoder-decoder)"}
    starts = {}
    for title, (m, rows, cols, kind) in drawn.items():
        family = title.split(":")[0].split()[0]
        starts.setdefault(family, x)
        colours = [[ATTENTION_COLOURS[kind] if a else _BLOCKED for a in r] for r in m.tolist()]
        texts = [["1" if a else "0" for a in r] for r in m.tolist()]
        grid(ax, x, top, len(rows), len(cols), colours, cell=c, texts=texts, fontsize=8)
        for i, t in enumerate(rows):
            ax.text(x - 0.06, top - (i + 0.5) * c, t, ha="right", va="center", fontsize=7)
        for j, t in enumerate(cols):
            ax.text(x + (j + 0.5) * c, top - len(rows) * c - 0.06, t, ha="right", va="top", fontsize=7,
                    rotation=45, rotation_mode="anchor")
        label = title.split(": ")[1].replace(" (", "\n(")
        ax.text(x + len(cols) * c / 2, top + 0.1, label, ha="center", va="bottom", fontsize=7.5)
        x += len(cols) * c + (1.6 if family != "T5" or "cross" in title else 1.1)
        if family != "T5":
            x += 0.3
    for family, x0 in starts.items():
        ax.text(x0, top + 0.85, groups[family], ha="left", va="bottom", fontsize=9, fontweight="bold")
    note(ax, -0.8, -0.25, "Rows are queries, columns keys; 1 = may attend (True in attn.masks), 0 = blocked. "
         "T5's decoder reads its own past (causal) and the whole source (cross-attention).", colour="#333333")
    ax.set_xlim(-0.9, x - 1.2)
    ax.set_ylim(-0.5, top + 1.3)
    ax.set_aspect("equal")
    ax.set_title("Who may attend to whom: BERT, GPT and T5 on \"" + " ".join(drawn[next(iter(drawn))][1]) + '"',
                 fontsize=10)
    return fig
