"""Figures of "Build it yourself": the tiny GPT the reader writes, with its shapes.

- :func:`tiny_gpt`: token ids ``(B, L)`` -> ``W_E + W_P`` -> ``N`` pre-LN blocks -> final LayerNorm
  -> output layer tied to ``W_E`` -> logits ``(B, L, |V|)``, each part with the step of the chapter
  that writes it and its number of parameters, counted on :class:`attn.variants.GPT` of the same
  sizes.
"""

from __future__ import annotations

import matplotlib.pyplot as plt

from attn import _checks
from attn.book import viz as _viz  # noqa: F401 (in a notebook, importing it sets the book's figure format)
from attn.book.diagram.draw import ATTENTION_COLOURS, arrow, box, note, tokens

__all__ = ["parameter_counts", "tiny_gpt"]

_BLOCK = "#fbe3dc"  # the frame around the stack of blocks
_ATTN = ATTENTION_COLOURS["masked self-attention"]


def parameter_counts(vocab_size: int, d_model: int, num_heads: int, num_layers: int, max_len: int) -> dict[str, int]:
    """Parameters of each part of :class:`attn.variants.GPT` with these sizes: ``"embeddings"``
    (``W_E`` and ``W_P``), ``"block"`` (one block), ``"final LN"`` and ``"head"`` (0: tied to ``W_E``)."""
    from attn.variants import GPT

    model = GPT(vocab_size, d_model, num_heads, num_layers, max_len=max_len)
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    return {"embeddings": count(model.embed) + count(model.pos), "block": count(model.layers[0]),
            "final LN": count(model.norm), "head": 0}


def tiny_gpt(*, vocab_size: int = 48, d_model: int = 64, num_heads: int = 4, num_layers: int = 2,
             max_len: int = 32, tokens_shown: list[str] | tuple[str, ...] = ("t", "h", "e"),
             figsize: tuple[float, float] = (7.6, 6.4)):
    """Draw the tiny GPT of the chapter, bottom to top, with shapes, steps and parameter counts.

    Args:
        vocab_size, d_model, num_heads, num_layers, max_len: the sizes, as for the reader's ``GPT``.
        tokens_shown: the characters drawn as input.
    """
    _checks.positive_int("vocab_size", vocab_size)
    _checks.heads(d_model, num_heads)
    _checks.positive_int("num_layers", num_layers)
    _checks.positive_int("max_len", max_len)
    if not tokens_shown or len(tokens_shown) > 6:
        raise ValueError(f"tokens_shown must hold 1 to 6 tokens, got {len(tokens_shown)}")
    n = parameter_counts(vocab_size, d_model, num_heads, num_layers, max_len)
    fig, ax = plt.subplots(figsize=figsize, constrained_layout=True)
    ax.axis("off")
    x, right = 2.2, 4.45  # the column of boxes; the shapes and counts to its right
    y = {"tok": 0.3, "ids": 1.15, "emb": 2.1, "ln1": 3.25, "attn": 4.0, "ln2": 4.85, "ff": 5.6,
         "lnf": 6.95, "head": 7.75, "out": 8.6}
    tokens(ax, x, y["tok"], list(tokens_shown), width=1.8)
    box(ax, x, y["ids"], "token ids", w=2.6)
    note(ax, right, y["ids"], "(B, L) integers")
    box(ax, x, y["emb"], "W_E[ids] + W_P[positions]", w=3.4)
    note(ax, right, y["emb"], f"(B, L, D)    step 5, {n['embeddings']:,} parameters")
    ax.add_patch(plt.Rectangle((x - 2.0, y["ln1"] - 0.55), 4.0, y["ff"] - y["ln1"] + 1.1, facecolor=_BLOCK,
                               edgecolor="#333333", linewidth=1.0, zorder=0))
    ax.text(x - 1.9, y["ff"] + 0.38, f"pre-LN block  x N = {num_layers}", fontsize=7.5, fontweight="bold", va="center")
    box(ax, x, y["ln1"], "LN_1  (step 3)", w=2.6)
    box(ax, x, y["attn"], f"causal MultiHead, H = {num_heads}  (steps 1, 2)", _ATTN, w=3.4)
    box(ax, x, y["ln2"], "LN_2  (step 3)", w=2.6)
    box(ax, x, y["ff"], "FFN: Linear, GELU, Linear", w=3.4)
    note(ax, right, (y["ln1"] + y["ff"]) / 2, f"(B, L, D)    step 4, {n['block']:,} parameters per block")
    note(ax, right, y["attn"], "x + MultiHead(LN_1(x))")
    note(ax, right, y["ff"], "x + FFN(LN_2(x))")
    box(ax, x, y["lnf"], "final LN", w=2.6)
    note(ax, right, y["lnf"], f"(B, L, D)    {n['final LN']:,} parameters")
    box(ax, x, y["head"], "head: LN(h) W_E^T  (tied)", w=3.4)
    note(ax, right, y["head"], f"{n['head']} new parameters: W_E is reused")
    box(ax, x, y["out"], "logits", w=2.6, bold=True)
    note(ax, right, y["out"], f"(B, L, |V|), |V| = {vocab_size}")
    for a, b in [("tok", "ids"), ("ids", "emb"), ("emb", "ln1"), ("ln1", "attn"), ("attn", "ln2"), ("ln2", "ff"),
                 ("ff", "lnf"), ("lnf", "head"), ("head", "out")]:
        lo = 0.2 if a == "tok" else 0.26
        arrow(ax, (x, y[a] + lo), (x, y[b] - 0.26))
    # the residual path: around each sublayer
    for a, b in [("ln1", "attn"), ("ln2", "ff")]:
        arrow(ax, (x - 1.75, y[a] - 0.4), (x - 1.75, y[b] + 0.1), colour="#666666", rad=0.0, dashed=True)
    note(ax, x - 1.95, y["ln1"] - 0.75, "dashed: residual path", colour="#666666")
    ax.set_xlim(0.0, 8.6)
    ax.set_ylim(-0.1, 9.0)
    ax.set_title(f"The tiny GPT you build: D = {d_model}, max_len = {max_len}", fontsize=9.5)
    return fig
