"""The whole encoder-decoder Transformer as one labelled matplotlib figure.

:func:`transformer_diagram` draws the architecture of Vaswani et al. (2017) with the book's shape
legend (``B`` batch, ``L`` target length, ``S`` source length, ``D`` model width, ``H`` heads,
``E = D / H``): the encoder and decoder stacks, the three attentions (encoder self-attention,
masked decoder self-attention, cross-attention), and where the masks and the positions enter.
The chapters "Why attention" and "The Transformer architecture" show it; nothing is printed.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

__all__ = ["ATTENTION_COLOURS", "transformer_diagram"]

#: One colour per kind of attention, shared by the figure's boxes and its legend.
ATTENTION_COLOURS: dict[str, str] = {
    "encoder self-attention": "#f4a259",
    "masked self-attention": "#e76f51",
    "cross-attention": "#8ab17d",
}
_PLAIN = "#e9eef5"  # embeddings, norms, feed-forward, head
_INPUT = "#ffffff"
_W, _H = 3.2, 0.52  # box width and height, in data units


def _box(ax, x: float, y: float, text: str, colour: str = _PLAIN, *, h: float = _H, bold: bool = False):
    ax.add_patch(FancyBboxPatch((x - _W / 2, y - h / 2), _W, h, boxstyle="round,pad=0.02,rounding_size=0.08",
                                facecolor=colour, edgecolor="#333333", linewidth=1.0))
    ax.text(x, y, text, ha="center", va="center", fontsize=7.5, fontweight="bold" if bold else "normal")


def _arrow(ax, start: tuple[float, float], end: tuple[float, float], *, colour: str = "#333333",
           style: str = "-|>", rad: float = 0.0, dashed: bool = False):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=9, color=colour, linewidth=1.0,
                                 connectionstyle=f"arc3,rad={rad}", linestyle="--" if dashed else "-"))


def _note(ax, x: float, y: float, text: str, *, ha: str = "left", colour: str = "#444444"):
    ax.text(x, y, text, ha=ha, va="center", fontsize=6.8, color=colour, style="italic")


def transformer_diagram(*, num_layers: str = "N", figsize: tuple[float, float] = (9.0, 8.6)):
    """Draw the encoder-decoder Transformer with shapes, masks and positions.

    Args:
        num_layers: how the repeat count of each stack is written (``"N"``, or e.g. ``"6"``).
        figsize: the figure size in inches.

    Returns:
        The matplotlib ``Figure`` (one axes, no ticks). Every box is labelled with the shape of the
        tensor it produces, in the book's legend: ``(B, S, D)`` on the encoder side,
        ``(B, L, D)`` on the decoder side, ``(B, H, L, S)`` for cross-attention weights.
    """
    fig, ax = plt.subplots(figsize=figsize, constrained_layout=True)
    ax.set_xlim(-0.6, 12.2)
    ax.set_ylim(-0.4, 12.4)
    ax.axis("off")
    xe, xd = 2.6, 8.4  # encoder and decoder columns

    # --- inputs and positions (bottom) ---------------------------------------------------------
    _box(ax, xe, 0.3, "source tokens  (B, S)", _INPUT)
    _box(ax, xd, 0.3, "target tokens, shifted right  (B, L)", _INPUT)
    _box(ax, xe, 1.3, "embedding × √D  (B, S, D)")
    _box(ax, xd, 1.3, "embedding × √D  (B, L, D)")
    _box(ax, xe, 2.3, "+ positional encoding  (B, S, D)", "#d8e2dc")
    _box(ax, xd, 2.3, "+ positional encoding  (B, L, D)", "#d8e2dc")
    _note(ax, (xe + xd) / 2, 2.3, "positions enter here\n(or inside attention:\nRoPE, ALiBi, T5)", ha="center")
    for x in (xe, xd):
        _arrow(ax, (x, 0.3 + _H / 2), (x, 1.3 - _H / 2))
        _arrow(ax, (x, 1.3 + _H / 2), (x, 2.3 - _H / 2))

    # --- encoder layer ---------------------------------------------------------------------------
    enc = [(3.5, "encoder self-attention\nQ, K, V from source  (B, S, D)", ATTENTION_COLOURS["encoder self-attention"]),
           (4.4, "add & layer norm", _PLAIN),
           (5.3, "feed-forward  D → 4D → D", _PLAIN),
           (6.2, "add & layer norm  (B, S, D)", _PLAIN)]
    ax.add_patch(FancyBboxPatch((xe - _W / 2 - 0.25, 2.95), _W + 0.5, 3.8, boxstyle="round,pad=0.02",
                                facecolor="none", edgecolor="#555555", linestyle="--", linewidth=1.0))
    ax.text(xe - _W / 2 - 0.35, 4.85, f"encoder layer\n× {num_layers}", ha="right", va="center", fontsize=8,
            fontweight="bold")
    prev = 2.3
    for y, label, colour in enc:
        _box(ax, xe, y, label, colour, h=0.62 if "\n" in label else _H)
        _arrow(ax, (xe, prev + _H / 2), (xe, y - (0.31 if "\n" in label else _H / 2)))
        prev = y
    _note(ax, xe - _W / 2 - 0.3, 3.25, "padding mask\n(B, 1, 1, S)", ha="right", colour="#9c4a00")
    _box(ax, xe, 7.4, "memory  (B, S, D)", "#cfd8e3", bold=True)
    _arrow(ax, (xe, 6.2 + _H / 2), (xe, 7.4 - _H / 2))

    # --- decoder layer ---------------------------------------------------------------------------
    dec = [(3.5, "masked self-attention\nQ, K, V from target  (B, L, D)", ATTENTION_COLOURS["masked self-attention"]),
           (4.4, "add & layer norm", _PLAIN),
           (5.5, "cross-attention\nQ from target (B, L, D)\nK, V from memory (B, S, D)\nweights (B, H, L, S)",
            ATTENTION_COLOURS["cross-attention"]),
           (6.6, "add & layer norm", _PLAIN),
           (7.4, "feed-forward  D → 4D → D", _PLAIN),
           (8.3, "add & layer norm  (B, L, D)", _PLAIN)]
    ax.add_patch(FancyBboxPatch((xd - _W / 2 - 0.25, 2.95), _W + 0.5, 5.95, boxstyle="round,pad=0.02",
                                facecolor="none", edgecolor="#555555", linestyle="--", linewidth=1.0))
    ax.text(xd + _W / 2 + 0.35, 5.85, f"decoder layer\n× {num_layers}", ha="left", va="center", fontsize=8,
            fontweight="bold")
    prev, prev_h = 2.3, _H
    for y, label, colour in dec:
        h = 0.3 + 0.22 * label.count("\n") + 0.1 if "\n" in label else _H
        _box(ax, xd, y, label, colour, h=h)
        _arrow(ax, (xd, prev + prev_h / 2), (xd, y - h / 2))
        prev, prev_h = y, h
    _note(ax, xd + _W / 2 + 0.3, 3.2, "causal mask (L, L)\n+ padding (B, 1, 1, L)", colour="#9c4a00")
    _note(ax, xd + _W / 2 + 0.3, 4.85, "source padding mask\n(B, 1, 1, S)", colour="#9c4a00")
    # memory -> cross-attention (keys and values)
    _arrow(ax, (xe + _W / 2, 7.4), (xd - _W / 2, 5.5), rad=-0.2, colour="#4f772d")
    _note(ax, 5.5, 7.0, "K, V", ha="center", colour="#4f772d")

    # --- output ----------------------------------------------------------------------------------
    _box(ax, xd, 9.3, "linear  D → vocabulary  (B, L, V)")
    _box(ax, xd, 10.3, "softmax: next-token probs  (B, L, V)", _INPUT, bold=True)
    _arrow(ax, (xd, 8.3 + _H / 2), (xd, 9.3 - _H / 2))
    _arrow(ax, (xd, 9.3 + _H / 2), (xd, 10.3 - _H / 2))

    # --- legend ----------------------------------------------------------------------------------
    y = 11.9
    ax.text(-0.5, y, "the three attentions:", fontsize=8, fontweight="bold", va="center")
    for i, (name, colour) in enumerate(ATTENTION_COLOURS.items()):
        ax.add_patch(FancyBboxPatch((-0.5, y - 0.45 - 0.38 * i - 0.12), 0.3, 0.24, boxstyle="round,pad=0.01",
                                    facecolor=colour, edgecolor="#333333"))
        ax.text(-0.1, y - 0.45 - 0.38 * i, name, fontsize=7.5, va="center")
    ax.text(-0.5, 9.7, "B batch, H heads, E = D / H per head,\nL target length, S source length, D width,\n"
            "V vocabulary. Masks: True = may attend.", fontsize=7, va="center", color="#333333")
    ax.set_title("The encoder-decoder Transformer: shapes, the three attentions, masks and positions", fontsize=10)
    return fig


# --- cross-attention and positional figures -------------------------------------------------------
__all__ += ["encoder_decoder"]


def _tokens(ax, x: float, y: float, tokens: list[str], *, width: float = _W) -> None:
    """One small white box per token, side by side, centred at (x, y)."""
    w = width / max(len(tokens), 1)
    for i, tok in enumerate(tokens):
        cx = x - width / 2 + w * (i + 0.5)
        ax.add_patch(FancyBboxPatch((cx - w / 2 + 0.04, y - 0.2), w - 0.08, 0.4, boxstyle="round,pad=0.02",
                                    facecolor=_INPUT, edgecolor="#333333", linewidth=0.8))
        ax.text(cx, y, tok, ha="center", va="center", fontsize=7.5, family="monospace")


def encoder_decoder(source: tuple[str, ...] | list[str] = ("the", "cat", "sat"),
                    target: tuple[str, ...] | list[str] = ("<s>", "le", "chat"), *,
                    figsize: tuple[float, float] = (8.0, 6.4)) -> plt.Figure:
    """Draw the wiring of an encoder-decoder: where cross-attention gets its queries, keys and values.

    The source tokens run through the encoder stack into the memory ``M``; the decoder input runs
    through masked self-attention, then cross-attention (queries from the decoder, keys and values
    from ``M``), then the feed-forward network, to the logits. Each sublayer's residual connection
    and LayerNorm is written in a note, not drawn.

    Args:
        source: the source tokens written under the encoder, ``S`` of them.
        target: the decoder's input tokens (the target shifted right), ``L`` of them.
        figsize: the figure size in inches.

    Returns:
        The matplotlib ``Figure`` (one axes, no ticks), shapes in the book's legend: ``(B, S, D)``
        for the memory, ``(B, L, D)`` on the decoder side, ``(B, H, L, S)`` for the cross-attention
        weights. The arrow that carries the memory into cross-attention has the gid
        ``"memory-to-cross"``, the one that carries the decoder's queries ``"decoder-to-cross"``.
    """
    source, target = list(source), list(target)
    if not source or not target:
        raise ValueError(f"source and target need at least one token each, got {len(source)} and {len(target)}")
    fig, ax = plt.subplots(figsize=figsize, constrained_layout=True)
    ax.set_xlim(-0.4, 10.6)
    ax.set_ylim(-0.3, 7.4)
    ax.axis("off")
    xe, xd = 2.4, 7.8  # encoder and decoder columns
    cross_colour = ATTENTION_COLOURS["cross-attention"]

    # encoder: tokens -> embedding -> stack -> memory
    _tokens(ax, xe, 0.2, source)
    ax.text(xe, -0.2, f"source tokens  (B, S),  S = {len(source)}", ha="center", va="top", fontsize=7)
    _box(ax, xe, 1.1, "embedding + positions  (B, S, D)")
    _box(ax, xe, 2.6, "encoder stack × N\nself-attention over the source,\nfeed-forward",
         ATTENTION_COLOURS["encoder self-attention"], h=1.0)
    _box(ax, xe, 4.3, "memory M  (B, S, D)", "#cfd8e3", bold=True)
    _arrow(ax, (xe, 0.42), (xe, 1.1 - _H / 2))
    _arrow(ax, (xe, 1.1 + _H / 2), (xe, 2.1))
    _arrow(ax, (xe, 3.1), (xe, 4.3 - _H / 2))
    _note(ax, xe, 4.85, "computed once per source;\nevery decoder layer reads the same M", ha="center")

    # decoder: tokens -> embedding -> masked self-attention -> cross-attention -> FFN -> logits
    _tokens(ax, xd, 0.2, target)
    ax.text(xd, -0.2, f"decoder input, target shifted right  (B, L),  L = {len(target)}", ha="center",
            va="top", fontsize=7)
    steps = [(1.1, "embedding + positions  (B, L, D)", _PLAIN, _H),
             (2.05, "masked self-attention\nQ, K, V from the decoder  (B, L, D)",
              ATTENTION_COLOURS["masked self-attention"], 0.62),
             (3.35, "cross-attention\nQ from the decoder, K, V from M\nweights (B, H, L, S)", cross_colour, 0.84),
             (4.6, "feed-forward  D → 4D → D  (B, L, D)", _PLAIN, _H),
             (6.0, "linear: logits  (B, L, V)", _INPUT, _H)]
    prev_top = 0.42
    for i, (y, label, colour, h) in enumerate(steps):
        _box(ax, xd, y, label, colour, h=h, bold=i == len(steps) - 1)
        if i == 2:  # the decoder's states enter cross-attention as its queries
            ax.add_patch(FancyArrowPatch((xd, prev_top), (xd, y - h / 2), arrowstyle="-|>", mutation_scale=9,
                                         color="#333333", linewidth=1.0, gid="decoder-to-cross"))
            _note(ax, xd + 0.12, (prev_top + y - h / 2) / 2, "Q")
        else:
            _arrow(ax, (xd, prev_top), (xd, y - h / 2))
        prev_top = y + h / 2
    ax.add_patch(FancyBboxPatch((xd - _W / 2 - 0.2, 1.6), _W + 0.4, 3.4, boxstyle="round,pad=0.02",
                                facecolor="none", edgecolor="#555555", linestyle="--", linewidth=1.0))
    ax.text(xd + _W / 2 + 0.35, 4.6, "decoder layer\n× N", ha="left", va="center", fontsize=8, fontweight="bold")
    _note(ax, xd + _W / 2 + 0.35, 2.05, "causal mask\n(L, L)", colour="#9c4a00")
    _note(ax, xd + _W / 2 + 0.35, 3.35, "source padding\nmask (B, S)", colour="#9c4a00")

    # the memory feeds every decoder layer's cross-attention: keys and values
    ax.add_patch(FancyArrowPatch((xe + _W / 2, 4.3), (xd - _W / 2, 3.35), arrowstyle="-|>", mutation_scale=11,
                                 color="#4f772d", linewidth=1.6, connectionstyle="arc3,rad=-0.15",
                                 gid="memory-to-cross"))
    _note(ax, (xe + xd) / 2 + 0.1, 4.72, "K = M W_K\nV = M W_V", ha="center", colour="#4f772d")

    ax.text(-0.3, 7.1, "Each sublayer (attention or feed-forward) is wrapped as LayerNorm(x + sublayer(x)):\n"
            "a residual connection adds its input back, a LayerNorm rescales each position.",
            fontsize=7, va="center", color="#333333")
    ax.text(-0.3, 6.45, "B batch, H heads, L target length,\nS source length, D width, V vocabulary.",
            fontsize=7, va="center", color="#333333")
    ax.set_title("Encoder-decoder wiring: cross-attention takes Q from the decoder, K and V from the memory",
                 fontsize=9.5)
    return fig
