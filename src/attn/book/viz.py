"""Plots reused across the chapters. Each returns the matplotlib Figure; nothing is printed.

Importing this module also sets how the book's figures are shown in a notebook (:func:`book_figures`):
PNG at twice the display resolution (sharp on 2x screens; nbval does not compare PNGs, whereas SVG text
would be compared coordinate by coordinate, and those differ across CPUs), tagged with the size of the
figure's smallest text so that the site can keep it readable on a phone.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch

from attn._locale import language, ljust, rjust, translate, width

__all__ = ["Results", "Table", "book_figures", "cjk_font", "figure_fonts", "figure_texts", "heatmap", "heatmaps",
           "localise_figure", "png_2x", "weights_table"]

#: PNG text keys written by :func:`png_2x`: the smallest text of the figure, in CSS pixels at the image's
#: natural display size (its width and height in the output metadata), and the display dpi.
TEXT_PX_KEY = "attn:min-text-px"


def png_2x(fig, **savefig_kw) -> tuple[bytes, dict] | None:
    """The figure as a PNG at twice its display resolution (``fig.dpi``), in 256 colours, for IPython's display.

    Returns ``(png, {"width": w, "height": h})`` with ``w, h`` the display size in CSS pixels (half the
    PNG's pixels, as IPython's "retina" format does), or None for a figure with nothing drawn. The PNG
    carries, as text chunk ``attn:min-text-px`` (``TEXT_PX_KEY``), the size of the figure's smallest visible text in CSS
    pixels at that display size: the site computes from it how narrow the image may be drawn while its
    text stays readable (``_ext/attn_book.py``). Under a language other than English (:func:`attn.set_language`)
    the figure's words are first written in it (:func:`localise_figure`).
    """
    if not fig.axes and not fig.lines:
        return None
    with figure_fonts(language()):
        return _png_2x(fig, **savefig_kw)


def _png_2x(fig, **savefig_kw):
    import io

    from matplotlib.text import Text
    from PIL import Image
    from PIL.PngImagePlugin import PngInfo

    localise_figure(fig)
    fig.draw_without_rendering()  # lays out the figure: tick labels exist only after a draw
    localise_figure(fig)  # the tick labels the draw made
    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    text_px = min(sizes) * fig.dpi / 72 if sizes else 0.0
    buf = io.BytesIO()
    kw = dict(format="png", dpi=2 * fig.dpi, bbox_inches="tight", facecolor=fig.get_facecolor())
    fig.canvas.print_figure(buf, **(kw | savefig_kw))
    # A 256-colour palette: a third of the bytes of the full-colour 2x PNG, smaller than the 1x one.
    img = Image.open(io.BytesIO(buf.getvalue())).convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT)
    info = PngInfo()
    info.add_text(TEXT_PX_KEY, f"{text_px:.2f}")
    out = io.BytesIO()
    img.save(out, format="png", optimize=True, pnginfo=info)
    return out.getvalue(), {"width": img.size[0] // 2, "height": img.size[1] // 2}


# --- figures in the reader's language ---------------------------------------------------------------------
#
# A figure's words go through the package's string table (attn._locale) when it is shown: under
# attn.set_language("zh") / ATTN_LANG=zh every text of the figure (titles, axis labels, legends, the boxes
# and notes of attn.book.diagram, the labels of a bar chart) that has an entry is drawn in Chinese, in
# Noto Sans CJK SC. Where that font is not installed (a reader's Colab), the figure keeps its English words:
# Chinese characters in a font without them would be drawn as empty boxes.

#: The font the Chinese figures are drawn in (Debian's fonts-noto-cjk, which the book's build installs).
CJK_FONT = "Noto Sans CJK SC"
_CJK = "\u3000-\u303f\u4e00-\u9fff\uff01-\uff5e"


@functools.cache
def cjk_font() -> str | None:
    """The name of the installed font for Chinese figures (``CJK_FONT``), or None where it is missing.

    matplotlib lists the fonts it found when it first ran (its font cache): a CJK font installed after
    that (``apt-get install fonts-noto-cjk`` on a machine that had drawn before) is added here from the
    system's font folders."""
    import os

    from matplotlib import font_manager

    def found() -> bool:
        return any(f.name == CJK_FONT for f in font_manager.fontManager.ttflist)

    if not found():
        for path in font_manager.findSystemFonts():
            if re.match(r"NotoSans(Mono)?CJK", os.path.basename(path)):
                font_manager.fontManager.addfont(path)
    return CJK_FONT if found() else None


def _figure_lang(lang: str | None) -> str:
    lang = lang or language()
    return lang if lang == "en" or cjk_font() else "en"


def figure_fonts(lang: str | None = None):
    """A context in which matplotlib draws ``lang``'s figures: for Chinese, each font family followed by
    ``CJK_FONT`` (Latin letters, digits and symbols as in the English figures, Chinese characters in
    the CJK font: matplotlib falls back along a list of families, not within a generic family such as
    "sans-serif"); English or no CJK font: matplotlib's settings as they are."""
    import contextlib

    import matplotlib as mpl

    if _figure_lang(lang) == "en":
        return contextlib.nullcontext()
    return mpl.rc_context({"font.family": _with_cjk(mpl.rcParams["font.family"])})


def _with_cjk(families) -> list[str]:
    """The font families ``families`` with each generic one ("sans-serif") resolved to the font matplotlib
    uses for it, then ``CJK_FONT``."""
    from matplotlib import font_manager

    named = []
    for family in [families] if isinstance(families, str) else families:
        if family in font_manager.font_family_aliases:
            path = font_manager.findfont(font_manager.FontProperties(family=[family]))
            family = font_manager.get_font(path).family_name
        if family not in named:
            named.append(family)
    return [f for f in named if f != CJK_FONT] + [CJK_FONT]


def _translate_label(text: str, lang: str) -> str:
    """One text of a figure in ``lang``: its entry in the string table, else each of its lines' entries."""
    new = translate(text, lang)
    if new == text and "\n" in text:
        new = "\n".join(translate(line, lang) for line in text.split("\n"))
    return new


def localise_figure(fig, lang: str | None = None) -> bool:
    """Write ``fig``'s texts in ``lang`` (default: the package's language, :func:`attn.set_language`) through
    the string table, in place: every text object, and the labels of axes whose ticks carry fixed labels.
    Texts without an entry stay as they are (names, tokens, numbers). Returns whether the figure is drawn
    in that language: False for English, and where no font for it is installed (the figure stays English)."""
    from matplotlib.category import StrCategoryFormatter
    from matplotlib.text import Text
    from matplotlib.ticker import FixedFormatter, FuncFormatter

    lang = _figure_lang(lang)
    if lang == "en":
        return False
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            # labels given to the ticks (set_yticks(range(n), labels): a FuncFormatter over them in matplotlib
            # 3.11, a FixedFormatter before) and a bar chart's categories; numbers' formatters are left alone
            fmt = axis.get_major_formatter()
            if isinstance(fmt, (FixedFormatter, FuncFormatter, StrCategoryFormatter)):
                axis.set_major_formatter(_Translated(fmt, lang))
                for tick in axis.get_major_ticks():  # drawn before their labels change: the CJK font already
                    for label in (tick.label1, tick.label2):
                        label.set_fontfamily(_with_cjk(label.get_fontfamily()))
    for t in fig.findobj(Text):
        text = t.get_text()
        if text.strip():
            new = _translate_label(text, lang)
            if re.search(f"[{_CJK}]", new):  # mathtext draws its plain text in its own font, without CJK
                new = re.sub(r"\$([^$]*)\$", lambda m: re.sub(r"\\math\w+\{(\w+)\}", r"\1", m.group(1)), new)
            if new != text:
                t.set_text(new)
            if re.search(f"[{_CJK}]", new) and CJK_FONT not in t.get_fontfamily():
                t.set_fontfamily(_with_cjk(t.get_fontfamily()))
    return True


def _Translated(fmt, lang: str):
    """A tick formatter writing ``fmt``'s labels through the string table."""
    from matplotlib.ticker import Formatter

    class Translated(Formatter):
        translates = fmt

        def __call__(self, x, pos=None):
            return _translate_label(fmt(x, pos), lang)

        def format_ticks(self, values):
            return [_translate_label(t, lang) for t in fmt.format_ticks(values)]

    return Translated()


def figure_texts(fig) -> list[str]:
    """The visible texts of a drawn figure, as drawn (tick labels included), in drawing order."""
    from matplotlib.text import Text

    with figure_fonts():
        fig.draw_without_rendering()
    hidden = {id(t) for ax in fig.axes if not ax.axison for t in [*ax.get_xticklabels(), *ax.get_yticklabels()]}
    return [t.get_text() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip() and id(t) not in hidden]


def book_figures() -> bool:
    """Show matplotlib figures in this IPython session with :func:`png_2x`.

    Called when ``attn.book.viz`` is imported (every chapter with figures imports it); returns whether an IPython
    session was found. Text sizes stay matplotlib's (10 pt ticks and labels, 12 pt titles); the numbers
    printed in heatmap cells are 9 pt (:func:`heatmap`).
    """
    from matplotlib.figure import Figure

    ip = None
    try:
        from IPython import get_ipython

        ip = get_ipython()
    except ImportError:  # pragma: no cover - IPython comes with matplotlib-inline
        return False
    if ip is None:
        return False
    # matplotlib loads its backend on first use, and the inline backend then registers its own PNG formatter:
    # load it now, so that the formatter set here is the one that stays.
    plt.switch_backend(plt.get_backend())
    ip.display_formatter.formatters["image/png"].for_type(Figure, png_2x)
    return True


def _np(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().to(torch.float32).cpu().numpy()
    return np.asarray(x, dtype=float)


def _draw(ax, m, row_labels, col_labels, title, cmap, vmin, vmax, annotate, xlabel, ylabel):
    vmin, vmax = _scale(m, vmin, vmax)
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
            ax.text(j, i, f"{val:.2f}", ha="center", va="center", fontsize=9,
                    color=_ink_for(im.cmap(im.norm(val))))
    return im


def _scale(m, vmin, vmax) -> tuple[float | None, float | None]:
    """The colour scale: given limits, else the data's range (``vmax=None``: the largest value), so that
    weights of ~0.04 spread over 25 keys fill the scale instead of looking blank on a 0-1 scale."""
    finite = m[np.isfinite(m)]
    if vmax is None and finite.size:
        vmax = float(finite.max())
    if vmin is None and finite.size:
        vmin = float(finite.min())
    if vmin is not None and vmax is not None and vmax <= vmin:
        vmax = vmin + 1.0  # a constant map: one colour, a readable colour bar
    return vmin, vmax


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

    def _shown(self) -> tuple[list[str], list[list[str]]]:
        """The headers and rows in the reader's language (:mod:`attn._locale`; English: as given)."""
        return [translate(h) for h in self.headers], [[translate(c) for c in r] for r in self.rows]

    def __repr__(self) -> str:
        headers, rows = self._shown()
        widths = [max(width(h), *(width(r[i]) for r in rows)) for i, h in enumerate(headers)]
        line = lambda cells: "  ".join(rjust(c, w) for c, w in zip(cells, widths, strict=True))  # noqa: E731
        return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])

    def _repr_html_(self) -> str:
        from html import escape

        headers, rows = self._shown()
        head = "".join(f"<th>{escape(h)}</th>" for h in headers)
        body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in rows)
        return f'<table class="attn-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


class Results:
    """A cell's named results, shown as a two-column table (HTML) or as aligned ``name: value`` lines.

    What a chapter would otherwise ``print``: ``Results({"row sums": A.sum(-1), "largest weight
    above the diagonal": 0.0})``, or ``Results(rows_sums=...)`` with keyword names (``_`` becomes a
    space). Numbers are formatted with ``floatfmt``; a tensor or a list of numbers shows as a
    bracketed list of formatted numbers; anything else as its ``str``.

    Raises:
        ValueError: if no result is given.
    """

    def __init__(self, items: Mapping[str, object] | None = None, /, *, floatfmt: str = ".3f", **named):
        pairs = {**(items or {}), **{k.replace("_", " "): v for k, v in named.items()}}
        if not pairs:
            raise ValueError("Results needs at least one named result, got none")
        self.items = [(str(k), self._fmt(v, floatfmt)) for k, v in pairs.items()]

    @classmethod
    def _fmt(cls, v, floatfmt: str) -> str:
        if isinstance(v, torch.Tensor):
            v = v.item() if v.numel() == 1 and v.dim() == 0 else v.tolist()
        if isinstance(v, np.ndarray):
            v = v.tolist()
        if isinstance(v, (list, tuple)) and not isinstance(v, str):
            inner = ", ".join(cls._fmt(x, floatfmt) for x in v)
            return f"({inner})" if isinstance(v, tuple) else f"[{inner}]"
        if isinstance(v, bool):
            return str(v)
        return Table._fmt(v, floatfmt)

    def _shown(self) -> list[tuple[str, str]]:
        """The names and values in the reader's language (:mod:`attn._locale`; English: as given)."""
        return [(translate(k), translate(v)) for k, v in self.items]

    def __repr__(self) -> str:
        items = self._shown()
        w = max(width(k) for k, _ in items)
        return "\n".join(f"{ljust(k + ':', w + 1)} {v}" for k, v in items)

    def _repr_html_(self) -> str:
        from html import escape

        body = "".join(f'<tr><th scope="row">{escape(k)}</th><td>{escape(v)}</td></tr>' for k, v in self._shown())
        return f'<table class="attn-table attn-results"><tbody>{body}</tbody></table>'


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


book_figures()
