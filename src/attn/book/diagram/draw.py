"""Drawing primitives shared by the book's figures: boxes, arrows, notes, token rows and grids.

A chapter's figure module (``attn.book.diagram.<chapter>``) draws with these (``from
attn.book.diagram.draw import box, arrow, ...``); the colours and the
box size are the book's, so every figure looks like one family.
"""

from __future__ import annotations

from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

#: One colour per kind of attention, shared by the figure's boxes and its legend.
ATTENTION_COLOURS: dict[str, str] = {
    "encoder self-attention": "#f4a259",
    "masked self-attention": "#e76f51",
    "cross-attention": "#8ab17d",
}
PLAIN = "#e9eef5"  # embeddings, norms, feed-forward, head
INPUT = "#ffffff"
W, H = 3.2, 0.52  # box width and height, in data units


def box(ax, x: float, y: float, text: str, colour: str = PLAIN, *, w: float | None = None,
         h: float | None = None, bold: bool = False, edge: str = "#333333", fontsize: float = 7.5,
         small: bool = False):
    """A rounded box of width ``w`` and height ``h`` centred at (x, y), with its text in the middle.

    ``small`` is the style of the self-attention figures: 1.5 × 0.5 by default (not the
    architecture boxes' ``W × H``), tighter corners, and a bold box gets a heavier edge too.
    """
    w = (1.5 if small else W) if w is None else w
    h = (0.5 if small else H) if h is None else h
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h,
                                boxstyle=f"round,pad=0.02,rounding_size={0.06 if small else 0.08}",
                                facecolor=colour, edgecolor=edge, linewidth=1.6 if small and bold else 1.0))
    ax.text(x, y, text, ha="center", va="center", fontsize=fontsize, fontweight="bold" if bold else "normal")


def arrow(ax, start: tuple[float, float], end: tuple[float, float], *, colour: str = "#333333",
           style: str = "-|>", rad: float = 0.0, dashed: bool = False):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=9, color=colour, linewidth=1.0,
                                 connectionstyle=f"arc3,rad={rad}", linestyle="--" if dashed else "-"))


def note(ax, x: float, y: float, text: str, *, ha: str = "left", colour: str = "#444444"):
    ax.text(x, y, text, ha=ha, va="center", fontsize=6.8, color=colour, style="italic")


def tokens(ax, x: float, y: float, tokens: list[str], *, width: float = W) -> None:
    """One small white box per token, side by side, centred at (x, y)."""
    w = width / max(len(tokens), 1)
    for i, tok in enumerate(tokens):
        cx = x - width / 2 + w * (i + 0.5)
        ax.add_patch(FancyBboxPatch((cx - w / 2 + 0.04, y - 0.2), w - 0.08, 0.4, boxstyle="round,pad=0.02",
                                    facecolor=INPUT, edgecolor="#333333", linewidth=0.8))
        ax.text(cx, y, tok, ha="center", va="center", fontsize=7.5, family="monospace")


def grid(ax, x: float, y: float, rows: int, cols: int, colours, *, cell: float = 0.32, texts=None,
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


