"""Figures of the ideas, drawn by code: matplotlib figures the chapters show, nothing printed.

- :func:`transformer_diagram`: the whole encoder-decoder Transformer of Vaswani et al. (2017) with
  the book's shape legend (``B`` batch, ``L`` target length, ``S`` source length, ``D`` model width,
  ``H`` heads, ``E = D / H``): the two stacks, the three attentions, where masks and positions enter
  ("Why attention", "The Transformer architecture").
- :func:`soft_lookup` (a dictionary lookup made soft) and :func:`qkv_flow` (queries, keys and
  values for one token), for "Self-attention".
- :func:`head_split` (the heads split and concatenated, with shapes), for "Multi-head attention";
  :func:`mask_before_softmax` and :func:`kv_cache_loop` (the decoding loop with its cache), for
  "Causal attention".
- :func:`encoder_decoder` (the wiring of cross-attention), for "Cross-attention".
- :func:`tiled_pass` (one query's pass over key blocks with its running max and sum), for
  "Efficient attention".

A chapter's further figures live in a module of its own, ``attn.book.diagram.<chapter>`` (for
example ``diagram.transformer_architecture``), loaded on first use as an attribute of this package;
the drawing primitives they share are in ``attn.book.diagram.draw``.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from attn import _checks
from attn.book import viz as _viz  # noqa: F401 (in a notebook, importing it sets the book's figure format)
from attn.book.diagram.draw import ATTENTION_COLOURS
from attn.book.diagram.draw import H as _H
from attn.book.diagram.draw import INPUT as _INPUT
from attn.book.diagram.draw import PLAIN as _PLAIN
from attn.book.diagram.draw import W as _W
from attn.book.diagram.draw import arrow as _arrow
from attn.book.diagram.draw import box as _box
from attn.book.diagram.draw import grid as _grid
from attn.book.diagram.draw import note as _note
from attn.book.diagram.draw import tokens as _tokens

__all__ = ["ATTENTION_COLOURS", "encoder_decoder", "head_split", "kv_cache_loop", "mask_before_softmax", "qkv_flow",
           "soft_lookup", "tiled_pass", "transformer_diagram"]

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
    _box(ax, xd, 9.3, "linear  D → vocabulary  (B, L, |V|)")
    _box(ax, xd, 10.3, "softmax: next-token probs  (B, L, |V|)", _INPUT, bold=True)
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
            "|V| vocabulary size. Masks: True = may attend.", fontsize=7, va="center", color="#333333")
    ax.set_title("The encoder-decoder Transformer: shapes, the three attentions, masks and positions", fontsize=10)
    return fig


# --- self-attention figures --------------------------------------------------------------------
# The soft-lookup motivation and the Q/K/V flow of one token, drawn for the self-attention chapter.



def soft_lookup(keys, values, weights, *, query: str = "query", figsize: tuple[float, float] = (9.0, 3.4)):
    """A dictionary lookup, hard and soft: the motivation for attention.

    Left, a hard lookup: the query matches one key and gets that key's value, weight 1, the others 0.
    Right, the soft lookup attention does: every key gets a weight (the softmax of how well it
    matches the query), and the answer is the weighted mix of all the values.

    Args:
        keys: the dictionary's keys, as labels (``S`` of them).
        values: the value of each key, numbers (``S``).
        weights: the soft weights of the keys for the query (``S`` numbers, non-negative, summing to
            one); the hard lookup picks the key with the largest.
        query: the label of the query box.

    Returns:
        The matplotlib ``Figure``: two axes, "hard lookup" and "soft lookup (attention)", each with
        the query, every key and value with its weight, and the returned value.
    """
    keys, values, weights = list(keys), [float(v) for v in values], [float(w) for w in weights]
    if not (len(keys) == len(values) == len(weights)) or not keys:
        raise ValueError(f"keys, values and weights need the same length >= 1, got {len(keys)}, {len(values)} "
                         f"and {len(weights)}")
    if min(weights) < 0 or abs(sum(weights) - 1) > 1e-3:
        raise ValueError(f"weights must be non-negative and sum to 1, got {weights}")
    best = max(range(len(keys)), key=weights.__getitem__)
    hard = [1.0 if j == best else 0.0 for j in range(len(keys))]
    fig, axes = plt.subplots(1, 2, figsize=figsize, constrained_layout=True)
    n = len(keys)
    for ax, w, title in zip(axes, [hard, weights], ["hard lookup (a Python dict)", "soft lookup (attention)"],
                            strict=True):
        ax.set_xlim(0, 10)
        ax.set_ylim(-1.6, n + 0.2)
        ax.axis("off")
        ax.set_title(title, fontsize=9.5)
        _box(ax, 1.2, (n - 1) / 2, str(query), "#cfe1f2", bold=True, small=True, w=1.6)
        ax.text(5.0, n - 0.35, "key", ha="center", fontsize=7.5, color="#555555")
        ax.text(8.3, n - 0.35, "value", ha="center", fontsize=7.5, color="#555555")
        for j, (k, v, wj) in enumerate(zip(keys, values, w, strict=True)):
            y = n - 1 - j
            on = wj > 0
            _box(ax, 5.0, y, str(k), ATTENTION_COLOURS["encoder self-attention"] if on else _PLAIN,
                 small=True, w=1.6)
            _box(ax, 8.3, y, f"{v:g}", _PLAIN, small=True, w=1.2)
            ax.plot([5.8, 7.7], [y, y], color="#999999", lw=0.8, ls=":")
            _arrow(ax, (2.0, (n - 1) / 2), (4.2, y), colour="#1f4e79" if on else "#bbbbbb",
                   style="-|>" if on else "-")
            ax.patches[-1].set_linewidth(0.6 + 4.0 * wj)
            ax.text(6.75, y + 0.08, f"w = {wj:.2f}", fontsize=7,
                    ha="center", va="bottom", color="#1f4e79" if on else "#999999")
        if w is hard:
            answer = f"returns the value of {keys[best]}: {values[best]:g}"
        else:
            terms = " + ".join(f"{wj:.2f}·{v:g}" for wj, v in zip(w, values, strict=True))
            answer = f"returns Σ w·value = {terms}\n= {sum(wj * v for wj, v in zip(w, values, strict=True)):.2f}"
        ax.text(5.0, -1.0, answer, ha="center", va="center", fontsize=7.5, fontweight="bold")
    return fig


def qkv_flow(tokens, query: int = 0, *, weights=None, figsize: tuple[float, float] = (10.0, 5.6)):
    """Self-attention for one query token, step by step, with the shape of every tensor.

    Every token's embedding ``x_j`` ``(1, D)`` is multiplied by ``W_K`` and ``W_V`` ``(D, E)`` into a key
    ``k_j`` and a value ``v_j`` ``(1, E)``; the query token's is also multiplied by ``W_Q`` into ``q``.
    ``q`` is compared with every key (``q·k_j / √E``: the scores, ``(1, S)``), a softmax turns the scores
    into weights ``a_j`` ``(1, S)``, and the output is ``z = Σ_j a_j v_j`` ``(1, E)``.

    Args:
        tokens: the ``S`` token labels (at most 6 fit).
        query: index of the token whose output is drawn.
        weights: optional ``S`` attention weights of the query, written into the weight boxes.

    Returns:
        The matplotlib ``Figure`` (one axes, no ticks).
    """
    tokens = [str(t) for t in tokens]
    S = len(tokens)
    if not 1 <= S <= 6:
        raise ValueError(f"tokens: need 1 to 6 labels to fit the figure, got {S}")
    _checks.integer("query", query, 0, S, bounds="[)", what=" (an index of tokens)")
    if weights is not None and len(weights) != S:
        raise ValueError(f"weights needs one number per token ({S}), got {len(weights)}")
    fig, ax = plt.subplots(figsize=figsize, constrained_layout=True)
    step = 2.9
    xs = [3.4 + step * j for j in range(S)]
    ax.set_xlim(-1.5, xs[-1] + 1.7)
    ax.set_ylim(-0.9, 7.4)
    ax.axis("off")
    key_c, val_c, q_c = "#f4a259", "#8ab17d", "#cfe1f2"
    yx, ykv, ys, ya, yp, yz = 6.2, 4.9, 3.4, 1.9, 0.8, -0.4

    for y, text in [(yx, "embeddings"), (ykv, "keys, values"), (ys, "scores  (1, S)"),
                    (ya, "weights  (1, S)"), (yp, "weighted values"), (yz, "output")]:
        ax.text(-1.45, y, text, fontsize=7.5, va="center", color="#555555", style="italic")
    # the query: x_query -> W_Q -> q (an arc above the embeddings), then a bus along the scores' row
    xq, bus_y = 1.2, 4.1
    _box(ax, xq, yx, "q = x W_Q\n(1, E)", q_c, bold=True, small=True, w=1.4, h=0.7)
    _arrow(ax, (xs[query], yx + 0.25), (xq, yx + 0.35), colour="#1f4e79", rad=0.25 if query else 0.6)
    ax.text((xq + xs[query]) / 2, yx + 0.75 + 0.1 * query, "× W_Q  (D, E)", fontsize=7, color="#1f4e79",
            ha="center")
    ax.plot([xq, xq, xs[-1] - 0.7], [yx - 0.35, bus_y, bus_y], color="#1f4e79", lw=1.2)
    ax.text(xq + 0.1, bus_y + 0.15, "q to every key", fontsize=7, color="#1f4e79")
    for j, (x, tok) in enumerate(zip(xs, tokens, strict=True)):
        xk, xv = x - 0.7, x + 0.7
        _box(ax, x, yx, f"x ({tok})  (1, D)", "#ffffff", bold=j == query, small=True, w=2.3,
             edge="#1f4e79" if j == query else "#333333")
        _box(ax, xk, ykv, "k = x W_K\n(1, E)", key_c, small=True, w=1.3, h=0.7)
        _box(ax, xv, ykv, "v = x W_V\n(1, E)", val_c, small=True, w=1.3, h=0.7)
        _arrow(ax, (x - 0.3, yx - 0.25), (xk, ykv + 0.35))
        _arrow(ax, (x + 0.3, yx - 0.25), (xv, ykv + 0.35))
        _box(ax, xk, ys, "q·k / √E", "#fde2c8", small=True, w=1.3)
        _arrow(ax, (xk, ykv - 0.35), (xk, ys + 0.25))
        _arrow(ax, (xk - 0.5, bus_y), (xk - 0.35, ys + 0.25), colour="#1f4e79")
        label = "a" if weights is None else f"a = {float(weights[j]):.3f}"
        _box(ax, xk, ya, label, "#fbd3c0", small=True, w=1.3)
        _arrow(ax, (xk, ys - 0.25), (xk, ya + 0.25))
        _box(ax, x, yp, "a · v  (1, E)", _PLAIN, small=True, w=1.5)
        _arrow(ax, (xk, ya - 0.25), (x - 0.3, yp + 0.25))
        _arrow(ax, (xv, ykv - 0.35), (x + 0.3, yp + 0.25), colour="#4f772d")
        _arrow(ax, (x, yp - 0.25), (x, yz + 0.22))
    # the softmax couples the scores of one row; the sum collects the weighted values
    for y, colour, text, fc in [((ys + ya) / 2, "#e76f51", "softmax over the S scores: weights ≥ 0, summing to 1",
                                 "white"),
                                (yz, q_c, f"z = Σ a · v, the output of '{tokens[query]}'  (1, E)", "black")]:
        ax.add_patch(FancyBboxPatch((xs[0] - 1.45, y - 0.2), xs[-1] - xs[0] + 2.9, 0.4,
                                    boxstyle="round,pad=0.02", facecolor=colour, edgecolor="#333333"))
        ax.text((xs[0] + xs[-1]) / 2, y, text, ha="center", va="center", fontsize=7.5, color=fc,
                fontweight="bold")
    ax.set_title(f"Self-attention for one query token ('{tokens[query]}'): D model width, E = d_k, "
                 "S tokens", fontsize=10)
    return fig


# --- efficient figures -------------------------------------------------------------------------------


def tiled_pass(scores=(1.0, 3.0, 0.0, 2.0, 5.0, 1.0, 4.0, 2.0), values=(2.0, 0.0, 1.0, 3.0, 1.0, 2.0, 0.0, 4.0), *,
               block_size: int = 2, figsize: tuple[float, float] = (10.5, 4.8)):
    """Draw one query's pass over its keys in blocks, as tiled ("flash") attention makes it.

    Key blocks are processed left to right. Under each block the running maximum ``m``, the running
    sum ``ℓ = Σ exp(s - m)`` and the unnormalised output ``a = Σ exp(s - m) v`` are written after
    the block, with the factor ``exp(m_old - m)`` that rescales what earlier blocks summed whenever
    the maximum rises. The last box divides, ``a / ℓ``, and sets it beside the softmax over all keys
    at once: the two are equal.

    Args:
        scores: the query's scores ``q · k_j / sqrt(d_k)``, one per key (a few; they are printed).
        values: one number per key (a one-dimensional value, so that the output is one number).
        block_size: keys per block.
        figsize: the figure size in inches.

    Returns:
        The matplotlib ``Figure`` (one axes, no ticks).

    Raises:
        ValueError: if ``scores`` and ``values`` differ in length, are empty, or ``block_size`` is
            not a positive integer.
    """
    from attn.efficient.tiled import online_softmax_steps  # the package's own update, block by block

    scores, values = [float(x) for x in scores], [float(x) for x in values]
    steps = list(online_softmax_steps(scores, values, block_size))  # checks the arguments
    n, cell = len(scores), 1.0
    gap = 0.35  # between blocks
    x_of = [j * cell + (j // block_size) * gap for j in range(n)]  # left edge of key j
    width = x_of[-1] + cell
    fig, ax = plt.subplots(figsize=figsize, constrained_layout=True)
    ax.set_xlim(-0.3, width + 3.4)
    ax.set_ylim(-0.2, 5.2)
    ax.axis("off")
    block_colours = ("#e9eef5", "#fdebd3")

    # --- the keys, in blocks --------------------------------------------------------------------
    for j, (s, v) in enumerate(zip(scores, values, strict=True)):
        colour = block_colours[(j // block_size) % 2]
        ax.add_patch(FancyBboxPatch((x_of[j] + 0.05, 3.55), cell - 0.1, 0.9, boxstyle="round,pad=0.02",
                                    facecolor=colour, edgecolor="#333333", linewidth=0.8))
        ax.text(x_of[j] + cell / 2, 4.0, f"key {j + 1}\ns = {s:g}\nv = {v:g}", ha="center", va="center", fontsize=7)
    ax.text(0, 4.85, "key blocks, processed left to right  →", fontsize=8.5, fontweight="bold", va="center")

    # --- the running state under each block ----------------------------------------------------
    for b, st in enumerate(steps):
        first, last = st["start"], min(st["start"] + block_size, n) - 1
        left, right = x_of[first], x_of[last] + cell
        mid = (left + right) / 2
        ax.text(mid, 3.35, f"block {b + 1}", ha="center", va="center", fontsize=7.5, fontweight="bold")
        rose = b > 0 and st["m"] > st["m_old"]
        r = f"{st['rescale']:.2f} × "
        lines = [f"m = {st['m']:.2f}",
                 f"ℓ = {r if b else ''}{st['ell_old']:.2f} + {st['block_ell']:.2f}\n   = {st['ell']:.2f}",
                 f"a = {r if b else ''}{st['a_old']:.2f} + {st['block_a']:.2f}\n   = {st['a']:.2f}"]
        if b == 0:
            lines.append("(first block: nothing carried)")
        elif rose:
            lines.append(f"max rose: carried ℓ, a\n× e^(m_old − m) = {st['rescale']:.2f}")
        else:
            lines.append("max kept: × e^0 = 1")
        ax.add_patch(FancyBboxPatch((left + 0.05, 0.55), right - left - 0.1, 2.35, boxstyle="round,pad=0.02",
                                    facecolor="#fff4e6" if rose else "#ffffff",
                                    edgecolor="#e76f51" if rose else "#333333", linewidth=1.2 if rose else 0.8))
        ax.text(mid, 1.72, "\n".join(lines), ha="center", va="center", fontsize=7.5,
                color="#9c2f14" if rose else "#222222")
        _arrow(ax, (mid, 3.5), (mid, 2.95))
        if b + 1 < len(steps):  # carry m, ℓ, a to the next block
            nxt = x_of[steps[b + 1]["start"]]
            _arrow(ax, (right - 0.05, 1.2), (nxt + 0.05, 1.2), colour="#555555")
    ax.text(0, 0.25, "carried from block to block: m (running max), ℓ = Σ e^(s − m) (running sum), "
            "a = Σ e^(s − m) v (output, not yet divided); each line: carried × rescale + this block",
            fontsize=7.5, style="italic", color="#444444")

    # --- the result -----------------------------------------------------------------------------
    out = steps[-1]["a"] / steps[-1]["ell"]
    top = max(scores)
    z = sum(math.exp(s - top) for s in scores)
    direct = sum(math.exp(s - top) * v for s, v in zip(scores, values, strict=True)) / z
    x0 = width + 0.3
    ax.add_patch(FancyBboxPatch((x0, 0.85), 2.9, 1.8, boxstyle="round,pad=0.02", facecolor="#d8e2dc",
                                edgecolor="#333333", linewidth=1.0))
    ax.text(x0 + 1.45, 1.75, f"output = a / ℓ = {out:.3f}\n\nsoftmax(s) · v over\nall keys at once = {direct:.3f}",
            ha="center", va="center", fontsize=7.5, fontweight="bold")
    _arrow(ax, (x_of[-1] + cell - 0.05, 1.2), (x0, 1.2), colour="#555555")
    ax.set_title("Tiled attention for one query: a running max m and sum ℓ, earlier sums rescaled when m rises",
                 fontsize=10)
    return fig


# --- cross-attention and positional figures -------------------------------------------------------


def encoder_decoder(source: tuple[str, ...] | list[str] = ("the", "cat", "sat"),
                    target: tuple[str, ...] | list[str] = ("<s>", "le", "chat"), *,
                    figsize: tuple[float, float] = (8.0, 6.4)) -> plt.Figure:
    """Draw the wiring of an encoder-decoder: where cross-attention gets its queries, keys and values.

    The source tokens run through the encoder stack into the memory (no letter: ``M`` is a mask); the decoder input runs
    through masked self-attention, then cross-attention (queries from the decoder, keys and values
    from the memory), then the feed-forward network, to the logits. Each sublayer's residual connection
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
    _box(ax, xe, 4.3, "memory  (B, S, D)", "#cfd8e3", bold=True)
    _arrow(ax, (xe, 0.42), (xe, 1.1 - _H / 2))
    _arrow(ax, (xe, 1.1 + _H / 2), (xe, 2.1))
    _arrow(ax, (xe, 3.1), (xe, 4.3 - _H / 2))
    _note(ax, xe, 4.85, "computed once per source;\nevery decoder layer reads the same memory", ha="center")

    # decoder: tokens -> embedding -> masked self-attention -> cross-attention -> FFN -> logits
    _tokens(ax, xd, 0.2, target)
    ax.text(xd, -0.2, f"decoder input, target shifted right  (B, L),  L = {len(target)}", ha="center",
            va="top", fontsize=7)
    steps = [(1.1, "embedding + positions  (B, L, D)", _PLAIN, _H),
             (2.05, "masked self-attention\nQ, K, V from the decoder  (B, L, D)",
              ATTENTION_COLOURS["masked self-attention"], 0.62),
             (3.35, "cross-attention\nQ from the decoder, K, V from the memory\nweights (B, H, L, S)", cross_colour, 0.84),
             (4.6, "feed-forward  D → 4D → D  (B, L, D)", _PLAIN, _H),
             (6.0, "linear: logits  (B, L, $|\\mathcal{V}|$)", _INPUT, _H)]
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
    _note(ax, (xe + xd) / 2 + 0.1, 4.72, "K = memory · W_K\nV = memory · W_V", ha="center", colour="#4f772d")

    ax.text(-0.3, 7.1, "Each sublayer (attention or feed-forward) is wrapped as LayerNorm(x + sublayer(x)):\n"
            "a residual connection adds its input back, a LayerNorm rescales each position.",
            fontsize=7, va="center", color="#333333")
    ax.text(-0.3, 6.45, "B batch, H heads, L target length,\nS source length, D width, $|\\mathcal{V}|$ vocabulary size.",
            fontsize=7, va="center", color="#333333")
    ax.set_title("Encoder-decoder wiring: cross-attention takes Q from the decoder, K and V from the memory",
                 fontsize=9.5)
    return fig


# --- multi-head and causal figures ----------------------------------------------------------------
# Three pictures of the idea, not of data: the head split and concatenation with their shapes
# (multi-head chapter), the mask entering before the softmax, and the decoding loop with its KV cache
# growing one row per step (causal chapter). They take sizes and labels only.


_HEAD_COLOURS = ("#8ecae6", "#ffb703", "#b5e48c", "#cdb4db", "#f4a261", "#90be6d", "#e5989b", "#a8dadc")
_BLOCKED = "#d9d9d9"


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
    E = _checks.heads(d_model, num_heads)
    H, D, L = num_heads, d_model, len(tokens)
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
    _checks.positive_int("prompt_len", prompt_len)
    _checks.positive_int("steps", steps)
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


def __getattr__(name: str):
    """``diagram.<chapter>``: a chapter's own figure module, imported on first use."""
    import importlib
    import pkgutil

    if name in {m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")}:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
