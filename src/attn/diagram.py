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


# --- multi-head and causal figures ----------------------------------------------------------------
# Three pictures of the idea, not of data: the head split and concatenation with their shapes
# (multi-head chapter), the mask entering before the softmax, and the decoding loop with its KV cache
# growing one row per step (causal chapter). They take sizes and labels only.

__all__ += ["head_split", "kv_cache_loop", "mask_before_softmax"]

_HEAD_COLOURS = ("#8ecae6", "#ffb703", "#b5e48c", "#cdb4db", "#f4a261", "#90be6d", "#e5989b", "#a8dadc")
_BLOCKED = "#d9d9d9"


def _grid(ax, x: float, y: float, rows: int, cols: int, colours, *, cell: float = 0.32, texts=None,
          fontsize: float = 7.0):
    """A rows x cols grid of cells, top-left corner at (x, y); colours[i][j] or one colour per column."""
    from matplotlib.patches import Rectangle

    for i in range(rows):
        for j in range(cols):
            colour = colours[i][j] if isinstance(colours[0], (list, tuple)) else colours[j]
            ax.add_patch(Rectangle((x + j * cell, y - (i + 1) * cell), cell, cell, facecolor=colour,
                                   edgecolor="#333333", linewidth=0.7))
            if texts is not None and texts[i][j]:
                ax.text(x + (j + 0.5) * cell, y - (i + 0.5) * cell, texts[i][j], ha="center", va="center",
                        fontsize=fontsize)
    return x + cols * cell, y - rows * cell  # bottom-right corner


def head_split(*, d_model: int = 4, num_heads: int = 2, tokens: list[str] | tuple[str, ...] = ("the", "cat", "sat"),
               figsize: tuple[float, float] = (10.0, 4.2)):
    """Draw multi-head attention as split, attend per head, concatenate, mix by ``W_O``, with shapes.

    Args:
        d_model: the model width ``D`` (columns of the projected queries).
        num_heads: ``H``, which must divide ``d_model``; each head gets ``E = D / H`` columns.
        tokens: the row labels (``L`` tokens).
        figsize: the figure size in inches.

    Returns:
        The matplotlib ``Figure``. Each head's columns have one colour throughout; the panels are
        labelled ``Q = X W_Q (B, L, D)``, ``head h (B, H, L, E)`` per head, ``Concat (B, L, D)``,
        ``W_O (D, D)`` and ``output (B, L, D)``, with the sizes written out.
    """
    if num_heads < 1 or d_model % num_heads:
        raise ValueError(f"head_split: num_heads={num_heads} must divide d_model={d_model}")
    H, D, L = num_heads, d_model, len(tokens)
    E = D // H
    colours = [_HEAD_COLOURS[j // E % len(_HEAD_COLOURS)] for j in range(D)]
    fig, ax = plt.subplots(figsize=figsize, constrained_layout=True)
    ax.axis("off")
    c = 0.32
    top = 0.5 + max(L, D) * c
    # 1. the projected queries, (B, L, D), columns coloured by head
    _grid(ax, 0.0, top, L, D, colours, cell=c)
    for i, t in enumerate(tokens):
        ax.text(-0.08, top - (i + 0.5) * c, t, ha="right", va="center", fontsize=7.5)
    ax.text(D * c / 2, top + 0.3, f"Q = X W_Q  (B, L, D)\nL = {L}, D = {D}", ha="center", va="bottom", fontsize=7.5)
    # 2. split: one (L, E) block per head, attention inside each
    x_heads = D * c + 1.3
    gap = (L * c + 0.45)
    for h in range(H):
        y = top - h * gap
        _grid(ax, x_heads, y, L, E, [_HEAD_COLOURS[h % len(_HEAD_COLOURS)]] * E, cell=c)
        ax.text(x_heads + E * c + 0.12, y - L * c / 2, f"head {h + 1}: attention\nsoftmax(Q_h K_h^T / √E) V_h",
                ha="left", va="center", fontsize=6.8)
        _arrow(ax, (D * c + 0.05, top - L * c / 2), (x_heads - 0.05, y - L * c / 2), rad=0.0)
    ax.text(x_heads + E * c / 2, top + 0.3, f"split: head h = columns of h\n(B, H, L, E), E = D / H = {E}",
            ha="center", va="bottom", fontsize=7.5)
    # 3. concatenate the H outputs back to (B, L, D), then W_O mixes them
    x_cat = x_heads + E * c + 2.3
    for h in range(H):
        _arrow(ax, (x_heads + E * c + 1.9, top - h * gap - L * c / 2), (x_cat - 0.05, top - L * c / 2))
    _grid(ax, x_cat, top, L, D, colours, cell=c)
    ax.text(x_cat + D * c / 2, top + 0.3, "Concat(head 1, …, head H)\n(B, L, D)", ha="center", va="bottom",
            fontsize=7.5)
    x_wo = x_cat + D * c + 0.55
    ax.text(x_wo - 0.28, top - L * c / 2, "×", ha="center", va="center", fontsize=12)
    _grid(ax, x_wo, top, D, D, [[colours[i]] * D for i in range(D)], cell=c)
    ax.text(x_wo + D * c / 2, top + 0.3, "W_O  (D, D)\nrows of head h: W_O^(h)", ha="center", va="bottom",
            fontsize=7.5)
    x_out = x_wo + D * c + 0.55
    ax.text(x_out - 0.28, top - L * c / 2, "=", ha="center", va="center", fontsize=12)
    _grid(ax, x_out, top, L, D, ["#e9eef5"] * D, cell=c)
    ax.text(x_out + D * c / 2, top + 0.3, "output  (B, L, D)\nevery column mixes all heads", ha="center",
            va="bottom", fontsize=7.5)
    ax.set_xlim(-0.9, x_out + D * c + 0.4)
    ax.set_ylim(top - (H - 1) * gap - L * c - 0.6, top + 1.2)
    ax.set_aspect("equal")
    ax.set_title(f"Multi-head attention: split D = {D} into H = {H} heads of E = {E}, attend, concatenate, mix",
                 fontsize=9.5)
    return fig


def mask_before_softmax(*, tokens: list[str] | tuple[str, ...] = ("the", "cat", "sat"),
                        figsize: tuple[float, float] = (10.0, 3.6)):
    """Draw where a mask enters attention: added to the scaled scores, *before* the softmax.

    Args:
        tokens: the query and key labels (``L = S`` tokens, causal self-attention).
        figsize: the figure size in inches.

    Returns:
        The matplotlib ``Figure``: the scores ``Q K^T / √E (L, S)``, plus the additive mask ``M``
        (``0`` where allowed, ``-∞`` where blocked; ``True`` = may attend in boolean form), the softmax
        row by row, and the weights ``(L, S)`` with exact zeros above the diagonal. A strip below shows
        the wrong order (softmax, then zero the future) and what it breaks.
    """
    n = len(tokens)
    fig, ax = plt.subplots(figsize=figsize, constrained_layout=True)
    ax.axis("off")
    c = 0.42
    top = n * c + 0.9
    allowed = [[j <= i for j in range(n)] for i in range(n)]
    panels = [
        ("scores  Q K^T / √E\n(L, S)", [["#fde2b8"] * n for _ in range(n)],
         [[f"s{i + 1}{j + 1}" for j in range(n)] for i in range(n)]),
        ("mask M, additive\n0 = may attend, -∞ = blocked", [["#ffffff" if a else _BLOCKED for a in r] for r in allowed],
         [["0" if a else "-∞" for a in r] for r in allowed]),
        ("scores + M\n(L, S)", [["#fde2b8" if a else _BLOCKED for a in r] for r in allowed],
         [[f"s{i + 1}{j + 1}" if a else "-∞" for j, a in enumerate(r)] for i, r in enumerate(allowed)]),
        ("softmax over each row\nweights (L, S), rows sum to 1",
         [["#b7e4c7" if a else "#ffffff" for a in r] for r in allowed],
         [[f"a{i + 1}{j + 1}" if a else "0" for j, a in enumerate(r)] for i, r in enumerate(allowed)]),
    ]
    ops = ["+", "=", "softmax\n→"]
    x = 0.0
    for k, (title, colours, texts) in enumerate(panels):
        _grid(ax, x, top, n, n, colours, cell=c, texts=texts, fontsize=7.5)
        ax.text(x + n * c / 2, top + 0.12, title, ha="center", va="bottom", fontsize=7.5)
        if k == 0:
            for i, t in enumerate(tokens):
                ax.text(x - 0.08, top - (i + 0.5) * c, t, ha="right", va="center", fontsize=7.5)
        for j, t in enumerate(tokens):
            ax.text(x + (j + 0.5) * c, top - n * c - 0.08, t, ha="center", va="top", fontsize=6.5, rotation=0)
        if k < len(ops):
            ax.text(x + n * c + 0.45, top - n * c / 2, ops[k], ha="center", va="center",
                    fontsize=12 if k < 2 else 8)
        x += n * c + 0.9
    ax.text(0.0, 0.05, "The mask enters BEFORE the softmax: e^(-∞) = 0, so blocked keys get exactly zero weight and "
            "each row is normalised over the allowed keys only.", fontsize=7.5, va="center")
    ax.text(0.0, -0.35, "Wrong order: softmax(scores), then zero the future. Rows no longer sum to 1, and the "
            "denominator still sums e^s over future keys: the future leaks into the weights of the past.",
            fontsize=7.5, va="center", color="#9c2f2f")
    ax.set_xlim(-0.7, x)
    ax.set_ylim(-0.6, top + 0.9)
    ax.set_aspect("equal")
    ax.set_title("Where the mask enters: causal mask on L = S = 3 tokens, rows = queries, columns = keys",
                 fontsize=9.5)
    return fig


def kv_cache_loop(*, prompt_len: int = 2, steps: int = 3, figsize: tuple[float, float] = (9.0, 4.4)):
    """Draw greedy decoding with a KV cache: one new token per step, the cache growing by one row.

    Args:
        prompt_len: ``P``, the prompt tokens that fill the cache in the first pass.
        steps: the decoding steps drawn after the prompt.
        figsize: the figure size in inches.

    Returns:
        The matplotlib ``Figure``: a row per pass (the prompt, then step 1 to ``steps``), each with the
        tokens fed in (``L`` = ``P`` for the prompt, ``L = 1`` afterwards), the cached keys and values
        (``S = P + t`` rows, the new one highlighted), and the next token fed back into the next step.
    """
    if prompt_len < 1 or steps < 1:
        raise ValueError(f"kv_cache_loop: prompt_len={prompt_len} and steps={steps} must be at least 1")
    fig, ax = plt.subplots(figsize=figsize, constrained_layout=True)
    ax.axis("off")
    c, dy = 0.5, 1.0  # cell size, row spacing
    rows = steps + 1
    old, new = "#cfd8e3", "#ffb703"
    x_in = 2.3  # the tokens fed in
    x_cache = x_in + prompt_len * c + 1.0
    x_out = x_cache + (prompt_len + steps) * c + 1.1
    for r in range(rows):
        y = -r * dy
        n_in = prompt_len if r == 0 else 1
        S = prompt_len + r
        label = f"prompt, L = P = {prompt_len}" if r == 0 else f"step {r}, L = 1"
        ax.text(0.0, y, label, ha="left", va="center", fontsize=7.5, fontweight="bold")
        in_names = [f"x{i + 1}" for i in range(prompt_len)] if r == 0 else [f"x{prompt_len + r}"]
        _grid(ax, x_in, y + c / 2, 1, n_in, [new] * n_in, cell=c, texts=[in_names], fontsize=6.5)
        _arrow(ax, (x_in + n_in * c + 0.08, y), (x_cache - 0.08, y))
        _grid(ax, x_cache, y + c / 2, 1, S, [old] * (S - n_in) + [new] * n_in, cell=c,
              texts=[[f"kv{j + 1}" for j in range(S)]], fontsize=6)
        ax.text(x_cache + S * c + 0.08, y, f"S = {S}", ha="left", va="center", fontsize=7)
        _arrow(ax, (x_cache + (prompt_len + steps) * c + 0.55, y), (x_out - 0.08, y))
        ax.text(x_out, y, f"attend over S = {S} keys\n→ next token x{prompt_len + r + 1}", ha="left", va="center",
                fontsize=7)
        if r + 1 < rows:  # the new token is the next step's input
            _arrow(ax, (x_out + 0.3, y - 0.3), (x_in + c / 2, y - dy + c / 2 + 0.05), rad=-0.08,
                   colour="#4f772d", dashed=True)
    ax.text(x_cache, c / 2 + 0.35, "KV cache (per layer): keys and values so far", fontsize=7.5, ha="left",
            va="center")
    ax.text(x_in, c / 2 + 0.35, "fed in", fontsize=7.5, ha="left", va="center")
    ax.text(0.0, -rows * dy + 0.15, "Orange: computed in this pass. Grey: read from the cache, not recomputed.\n"
            "Each step appends one key/value row, so S = P, P + 1, P + 2, ...; the one new query needs the\n"
            "last row of the causal mask, shape (1, S).", fontsize=7, ha="left", va="center")
    ax.set_xlim(-0.1, x_out + 3.4)
    ax.set_ylim(-rows * dy - 0.4, c / 2 + 0.7)
    ax.set_aspect("equal")
    ax.set_title("Decoding with a KV cache: one new query per step, its key and value appended, the past reused",
                 fontsize=9.5)
    return fig
