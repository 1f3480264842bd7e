"""Plots reused across the chapters. Each returns the matplotlib Figure; nothing is printed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch

__all__ = ["Table", "heatmap", "heatmaps", "weights_table"]


def _np(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().to(torch.float32).cpu().numpy()
    return np.asarray(x, dtype=float)


def _draw(ax, m, row_labels, col_labels, title, cmap, vmin, vmax, annotate, xlabel, ylabel):
    im = ax.imshow(m, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    if col_labels is not None:
        ax.set_xticks(range(len(col_labels)), col_labels, rotation=45, ha="right")
    if row_labels is not None:
        ax.set_yticks(range(len(row_labels)), row_labels)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    if annotate:
        for (i, j), val in np.ndenumerate(m):
            ax.text(j, i, f"{val:.2f}", ha="center", va="center", fontsize=7,
                    color=_ink_for(im.cmap(im.norm(val))))
    return im


def _ink_for(rgba) -> str:
    """Black or white text, whichever contrasts more with a cell of colour ``rgba`` (WCAG 2).

    The cell's relative luminance ``Y`` (linearised sRGB) decides: black gives the contrast ratio
    ``(Y + 0.05) / 0.05``, white ``1.05 / (Y + 0.05)``; black wins above ``Y ≈ 0.18``.
    """
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgba[:3]]
    Y = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    return "black" if (Y + 0.05) / 0.05 >= 1.05 / (Y + 0.05) else "white"


def heatmap(
    matrix,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    *,
    title: str = "",
    xlabel: str = "key",
    ylabel: str = "query",
    cmap: str = "viridis",
    vmin: float | None = 0.0,
    vmax: float | None = None,
    annotate: bool = False,
    colorbar_label: str = "attention weight",
    figsize: tuple[float, float] | None = None,
):
    """One labelled heatmap of a ``(L, S)`` matrix, rows = queries, columns = keys."""
    m = _np(matrix)
    if m.ndim != 2:
        raise ValueError(f"matrix must be 2-D (L, S), got shape {m.shape}")
    L, S = m.shape
    fig, ax = plt.subplots(figsize=figsize or (1.2 + 0.45 * S, 0.9 + 0.4 * L), constrained_layout=True)
    im = _draw(ax, m, row_labels, col_labels, title, cmap, vmin, vmax, annotate, xlabel, ylabel)
    fig.colorbar(im, ax=ax, label=colorbar_label, shrink=0.85)
    return fig


def heatmaps(
    matrices,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    *,
    titles: Sequence[str] | None = None,
    suptitle: str = "",
    xlabel: str = "key",
    ylabel: str = "query",
    cmap: str = "viridis",
    vmin: float | None = 0.0,
    vmax: float | None = None,
    colorbar_label: str = "attention weight",
    ncols: int | None = None,
    panel_size: float = 2.6,
):
    """A grid of heatmaps sharing one colour scale (e.g. one per head): ``(N, L, S)``."""
    ms = _np(matrices)
    if ms.ndim != 3:
        raise ValueError(f"matrices must be 3-D (N, L, S), got shape {ms.shape}")
    n = ms.shape[0]
    if n == 0:
        raise ValueError(f"matrices holds no maps (shape {tuple(ms.shape)}); need at least one (N, L, S) with N >= 1")
    if titles is not None and len(titles) < n:
        raise ValueError(f"titles has {len(titles)} entries but matrices holds {n} maps: give one title per map")
    ncols = min(n, 4) if ncols is None else ncols
    nrows = -(-n // ncols)
    vmax = float(np.nanmax(ms)) if vmax is None else vmax
    fig, axes = plt.subplots(nrows, ncols, figsize=(panel_size * ncols + 1, panel_size * nrows + 0.4),
                             constrained_layout=True, squeeze=False)
    im = None
    for idx, ax in enumerate(axes.flat):
        if idx >= n:
            ax.axis("off")
            continue
        t = titles[idx] if titles else ""
        im = _draw(ax, ms[idx], row_labels, col_labels, t, cmap, vmin, vmax, False,
                   xlabel if idx // ncols == nrows - 1 else "", ylabel if idx % ncols == 0 else "")
    fig.colorbar(im, ax=axes, label=colorbar_label, shrink=0.8)
    if suptitle:
        fig.suptitle(suptitle)
    return fig


class Table:
    """A small results table that shows as HTML in a notebook and as aligned text elsewhere.

    ``Table(rows, headers, floatfmt=".3f")``; rows are sequences of numbers or strings.
    """

    def __init__(self, rows: Sequence[Sequence], headers: Sequence[str], floatfmt: str = ".3f"):
        self.headers = [str(h) for h in headers]
        self.rows = [[self._fmt(v, floatfmt) for v in row] for row in rows]
        for r in self.rows:
            if len(r) != len(self.headers):
                raise ValueError(f"every row needs {len(self.headers)} cells, got {len(r)}: {r}")

    @staticmethod
    def _fmt(v, floatfmt: str) -> str:
        if isinstance(v, torch.Tensor):
            v = v.item()
        if isinstance(v, (float, np.floating)):
            return format(float(v), floatfmt)
        return str(v)

    def __repr__(self) -> str:
        widths = [max(len(h), *(len(r[i]) for r in self.rows)) for i, h in enumerate(self.headers)]
        line = lambda cells: "  ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True))  # noqa: E731
        return "\n".join([line(self.headers), line(["-" * w for w in widths]), *map(line, self.rows)])

    def _repr_html_(self) -> str:
        from html import escape

        head = "".join(f"<th>{escape(h)}</th>" for h in self.headers)
        body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in self.rows)
        return f'<table class="attn-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def weights_table(tokens: Sequence[str], weights: Mapping[str, torch.Tensor], *, floatfmt: str = ".3f") -> Table:
    """Self-attention weights of several implementations side by side, one row per query token.

    Args:
        tokens: the ``L`` token labels (queries and keys: self-attention).
        weights: name -> weights ``(L, L)``, in the order the columns take.
        floatfmt: format of the weights.

    Returns:
        A :class:`Table` with the columns ``query``, then ``"<name>: <key token>"`` for each name
        and key.

    Raises:
        ValueError: if a weight matrix is not ``(L, L)`` for the ``L`` tokens given.
    """
    tokens = [str(t) for t in tokens]
    L = len(tokens)
    for name, w in weights.items():
        if tuple(w.shape) != (L, L):
            raise ValueError(f"weights[{name!r}] must be ({L}, {L}) for {L} tokens, got {tuple(w.shape)}")
    rows = [[t, *(v for w in weights.values() for v in w[i].tolist())] for i, t in enumerate(tokens)]
    return Table(rows, ["query", *(f"{name}: {t}" for name in weights for t in tokens)], floatfmt=floatfmt)
