"""Figures of "Efficient attention": fewer key/value heads, and fewer keys per query.

- :func:`head_sharing`: multi-head, grouped-query and multi-query attention side by side; each query
  head is joined to the key/value head it reads, the map that ``repeat_interleave`` makes in
  :class:`attn.efficient.GroupedQueryAttention`.
- :func:`sparse_patterns`: the sliding window, Longformer's global tokens on top of it and BigBird's
  random keys on top of that, drawn cell by cell from the masks :mod:`attn.masks` computes.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch

from attn import _checks
from attn import masks as _masks
from attn.book import viz as _viz  # noqa: F401 (in a notebook, importing it sets the book's figure format)
from attn.book.diagram.draw import INPUT, arrow, box, grid, note

__all__ = ["GROUP_COLOURS", "PATTERN_COLOURS", "head_sharing", "kv_head_of", "sparse_patterns"]

#: One colour per group of query heads (and its shared key/value head), cycled.
GROUP_COLOURS = ("#f4a259", "#8ab17d", "#84a9c0", "#e76f51", "#c3a6d8", "#f2cc8f", "#9cc5a1", "#e9c46a")
#: The colour of each part of a sparse pattern.
PATTERN_COLOURS = {"window": "#84a9c0", "global": "#f4a259", "random": "#e76f51", "blocked": INPUT}


def kv_head_of(num_heads: int, num_kv_heads: int) -> list[int]:
    """The key/value head each query head reads: ``[h // (H / H_kv) for h in range(H)]``, computed as
    ``GroupedQueryAttention`` repeats its key/value heads (``repeat_interleave`` over the head axis).

    Raises:
        ValueError: if either is not a positive integer or ``num_kv_heads`` does not divide ``num_heads``.
    """
    _checks.positive_int("num_heads", num_heads)
    _checks.positive_int("num_kv_heads", num_kv_heads)
    _checks.divisible("num_heads", num_heads, num_kv_heads, by_name="num_kv_heads")
    kv = torch.arange(num_kv_heads)[None, :, None]  # (1, H_kv, 1): each K/V head tagged with its index
    return kv.repeat_interleave(num_heads // num_kv_heads, dim=1).flatten().tolist()  # (H,)


def head_sharing(num_heads: int = 8, kv_heads: tuple[int, ...] = (8, 2, 1), *,
                 figsize: tuple[float, float] | None = None):
    """Draw which key/value head each query head reads, for a few numbers of key/value heads.

    Args:
        num_heads: ``H``, the query heads of every panel.
        kv_heads: ``H_kv`` of each panel, left to right; each must divide ``num_heads``.
            ``H_kv = H`` is multi-head, ``1`` multi-query, anything between grouped-query attention.
        figsize: the figure size in inches; default: sized to the panels.

    Returns:
        The matplotlib ``Figure`` (one axes, no ticks): per panel a row of ``H`` query boxes
        ``q1 .. qH`` over a row of ``H_kv`` boxes ``k,v 1 ..``, an arrow from each query head to the
        head it shares (gid ``share-<panel>-<query>-<kv>``), and under it the cache size relative to
        multi-head, ``H_kv / H``.

    Raises:
        ValueError: if ``kv_heads`` is empty or one of them does not divide ``num_heads``.
    """
    _checks.positive_int("num_heads", num_heads)
    kv_heads = tuple(kv_heads)
    if not kv_heads:
        raise ValueError("kv_heads needs at least one number of key/value heads, got none")
    maps = [kv_head_of(num_heads, h) for h in kv_heads]  # checks each
    pitch = 0.62  # between query boxes
    panel_w = num_heads * pitch + 0.6
    if figsize is None:
        figsize = (panel_w * len(kv_heads) * 0.68, 2.6)
    fig, ax = plt.subplots(figsize=figsize, constrained_layout=True)
    ax.set_xlim(-0.1, panel_w * len(kv_heads))
    ax.set_ylim(-0.75, 2.6)
    ax.axis("off")
    for p, (h_kv, kv_of) in enumerate(zip(kv_heads, maps, strict=True)):
        x0 = p * panel_w + 0.3 + pitch / 2
        name = ("multi-head" if h_kv == num_heads else "multi-query" if h_kv == 1 else "grouped-query")
        ax.text(x0 - pitch / 2 + num_heads * pitch / 2, 2.4, f"{name}\nH = {num_heads}, H_kv = {h_kv}",
                ha="center", va="center", fontsize=8.5, fontweight="bold")
        group = num_heads // h_kv
        kv_x = [x0 + (g * group + (group - 1) / 2) * pitch for g in range(h_kv)]
        for h in range(num_heads):
            g = kv_of[h]
            box(ax, x0 + h * pitch, 1.6, f"q{h + 1}", GROUP_COLOURS[g % len(GROUP_COLOURS)], w=0.5, h=0.38)
            arrow(ax, (x0 + h * pitch, 1.4), (kv_x[g], 0.52))
            ax.patches[-1].set_gid(f"share-{p}-{h}-{g}")
        for g in range(h_kv):
            w = min(0.5 + (group - 1) * pitch, 0.9) if group > 1 else 0.57
            box(ax, kv_x[g], 0.3, f"k,v {g + 1}", GROUP_COLOURS[g % len(GROUP_COLOURS)], w=w, h=0.38, bold=True)
        note(ax, x0 - pitch / 2 + num_heads * pitch / 2, -0.35, f"KV cache: {h_kv}/{num_heads} of multi-head",
             ha="center")
    return fig


def sparse_patterns(length: int = 16, *, window: int = 3, global_tokens: tuple[int, ...] = (0, 8),
                    num_random: int = 2, seed: int = 0, figsize: tuple[float, float] = (10.5, 4.2)):
    """Draw the sliding window, Longformer and BigBird patterns, each as the mask :mod:`attn.masks` builds.

    Args:
        length: ``L = S``, the sequence length drawn (a cell per query and key).
        window: the reach of the window, ``|i - j| < window``.
        global_tokens: the positions that see and are seen by every token (Longformer, BigBird).
        num_random: random keys per query (BigBird), seeded by ``seed``.
        seed: the seed of the random keys.
        figsize: the figure size in inches.

    Returns:
        The matplotlib ``Figure`` (one axes): three ``(L, L)`` grids, query ``i`` down and key ``j``
        across, titled ``sliding window``, ``+ global tokens (Longformer)`` and ``+ random keys
        (BigBird)``; a cell is coloured by the part of the pattern that allows it
        (:data:`PATTERN_COLOURS`), white where attention is blocked. Under each grid, the number of
        allowed (query, key) pairs out of ``L²``.

    Raises:
        ValueError: if an argument is out of range (as :mod:`attn.masks` checks it).
    """
    _checks.positive_int("length", length)
    _checks.positive_int("window", window)
    _checks.non_negative_int("num_random", num_random)
    for g in global_tokens:
        _checks.integer("global_tokens", g, 0, length - 1, what=" (a position)")
    band = _masks.sliding_window(length, window=window)
    longformer = _masks.local_global(length, window=window, global_tokens=tuple(global_tokens))
    bigbird = _masks.bigbird(length, window=window, global_tokens=tuple(global_tokens), num_random=num_random,
                             seed=seed)
    part = torch.zeros(length, length, dtype=torch.long)  # 0 blocked, 1 window, 2 global, 3 random
    part[bigbird] = 3
    part[longformer] = 2
    part[band] = 1
    names = ("blocked", "window", "global", "random")
    panels = [("sliding window", band), ("+ global tokens (Longformer)", longformer),
              ("+ random keys (BigBird)", bigbird)]
    cell = 3.0 / length
    fig, ax = plt.subplots(figsize=figsize, constrained_layout=True)
    ax.set_xlim(-0.5, 3 * 3.9)
    ax.set_ylim(-3.9, 0.75)
    ax.set_aspect("equal")
    ax.axis("off")
    for p, (title, keep) in enumerate(panels):
        x0 = p * 3.9
        colours = [[PATTERN_COLOURS[names[int(part[i, j])] if keep[i, j] else "blocked"] for j in range(length)]
                   for i in range(length)]
        grid(ax, x0, 0.0, length, length, colours, cell=cell)
        ax.text(x0 + 1.5, 0.45, title, ha="center", va="center", fontsize=9, fontweight="bold")
        ax.text(x0 - 0.1, -1.5, "query i", ha="right", va="center", fontsize=7.5, rotation=90)
        ax.text(x0 + 1.5, 0.12, "key j →", ha="center", va="bottom", fontsize=7.5)
        note(ax, x0 + 1.5, -3.3, f"{int(keep.sum())} of {length * length} pairs allowed", ha="center")
    legend = (f"window |i - j| < {window}", f"global tokens {', '.join(map(str, global_tokens))}",
              f"{num_random} random keys per query (seed {seed})")
    for k, (key, text) in enumerate(zip(("window", "global", "random"), legend, strict=True)):
        x = 0.6 + k * 3.9
        box(ax, x - 0.35, -3.7, "", PATTERN_COLOURS[key], w=0.25, h=0.2)
        note(ax, x - 0.15, -3.7, text)
    return fig
